package fulltext

import (
	"cmp"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/blugelabs/bluge"
	"github.com/blugelabs/bluge/analysis"
)

// Pseudo-relevance feedback, RM3 (Lavrenko and Croft's relevance model,
// interpolated with the query as Anserini does): the best chunks of a first
// pass are taken as relevant; the words they use most, weighted by how well
// each chunk scored, join the query's own words for the second pass. A
// question that shares no word with its answer often shares one with the
// chunks around the answer that it does find — the vocabulary gap closed
// from our own index, with no model and no word list.
//
// The parameters are Anserini's RM3 defaults but for the query's weight.
const (
	// feedbackDocs is how many first-pass chunks lend their words.
	feedbackDocs = 10
	// feedbackTerms is how many of their words join the query.
	feedbackTerms = 10
	// originalWeight is the query's own words' share of the expanded
	// query's weight: 0.8, not Anserini's 0.5, which drifted to the
	// speakers' names of a conversation (docs/quality.md).
	originalWeight = 0.8
)

// expanded is the RM3 query of text given the first pass's chunks fb (with
// their text), or nil when they lend no word. a analyses the query and the
// chunks alike, so a word the query drops is never lent.
func (ix *Index) expanded(a *analysis.Analyzer, text string, fb []textHit) bluge.Query {
	// The query model: each analysed query word by its share of the query.
	query := map[string]float64{}
	n := 0.0
	for _, t := range a.Analyze([]byte(text)) {
		query[string(t.Term)]++
		n++
	}
	if n == 0 || len(fb) == 0 {
		return nil
	}
	// The relevance model: Σ over chunks of P(w|chunk) · the chunk's share
	// of the first pass's score.
	total := 0.0
	for _, h := range fb {
		total += h.Score
	}
	if total <= 0 {
		return nil
	}
	rel := map[string]float64{}
	for _, h := range fb {
		tf := map[string]float64{}
		words := 0.0
		for _, t := range a.Analyze([]byte(h.text)) {
			if w := string(t.Term); feedbackWord(w) {
				tf[w]++
				words++
			}
		}
		for w, c := range tf {
			rel[w] += c / words * h.Score / total
		}
	}
	type weighted struct {
		term string
		w    float64
	}
	var top []weighted
	for t, w := range rel {
		top = append(top, weighted{t, w})
	}
	slices.SortFunc(top, func(a, b weighted) int {
		if c := cmp.Compare(b.w, a.w); c != 0 {
			return c
		}
		return cmp.Compare(a.term, b.term)
	})
	top = top[:min(len(top), feedbackTerms)]
	relSum := 0.0
	for _, t := range top {
		relSum += t.w
	}
	if relSum == 0 {
		return nil
	}
	weights := map[string]float64{}
	for t, c := range query {
		weights[t] += originalWeight * c / n
	}
	for _, t := range top {
		weights[t.term] += (1 - originalWeight) * t.w / relSum
	}
	terms := make([]string, 0, len(weights))
	for t := range weights {
		terms = append(terms, t)
	}
	slices.Sort(terms) // the same query for the same input
	q := bluge.NewBooleanQuery().SetMinShould(1)
	for _, t := range terms {
		q.AddShould(bluge.NewTermQuery(t).SetField(fieldBody).SetBoost(weights[t]))
	}
	return q
}

// feedbackWord reports whether an analysed word may join a query: two to
// twenty letters or digits, not a number alone (a turn's "2" or a year
// says little about what a question is about).
func feedbackWord(w string) bool {
	n := utf8.RuneCountInString(w)
	if n < 2 || n > 20 {
		return false
	}
	letter := false
	for _, r := range w {
		switch {
		case unicode.IsLetter(r):
			letter = true
		case unicode.IsDigit(r):
		default:
			return false
		}
	}
	return letter
}
