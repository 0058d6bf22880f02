package fulltext

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/blugelabs/bluge"
	"github.com/blugelabs/bluge/analysis"
)

// Limits of a query.
const (
	DefaultTopK = 10
	MaxTopK     = 100
	// excerptRadius is how many bytes of context an excerpt keeps around
	// its first match.
	excerptRadius = 160
	// Marks around matched words in an excerpt.
	MarkOpen, MarkClose = "«", "»"
)

// ErrEmptyQuery is returned for a query with no searchable words.
var ErrEmptyQuery = errors.New("query has no searchable words")

// Query is a search request.
type Query struct {
	// Text is in the query syntax (query.go): quoted phrases are required.
	// NaturalQuery turns an agent's words into a query of those words.
	Text string
	TopK int
	// AgentID limits results to one agent ("" = all).
	AgentID string
	// Layer 1 or 2 limits to that layer; 0 means Layer 1, logic and sources —
	// never Layer 2, which is read only on explicit request.
	Layer int
	// Kinds limits to these kinds of file.
	Kinds []string
	// PathPrefix limits to files under this prefix.
	PathPrefix string
	// OmitExcerpts leaves Hit.Excerpt empty, for callers that read the
	// chunk's lines themselves: marking an excerpt analyses the chunk's
	// text again.
	OmitExcerpts bool
	// Expand adds words of the first pass's best chunks to the query
	// (pseudo-relevance feedback, expand.go) when it has no phrase.
	Expand bool
	// KeepQuestionWords searches the optional words' question framing
	// too (what, did, would, her …), which a query drops by default
	// (textanalysis.NewQueryAnalyzer) unless they are all it has.
	KeepQuestionWords bool
}

// Hit is one matching chunk.
type Hit struct {
	Score     float64
	Path      string
	Excerpt   string
	Layer     int
	AgentID   string
	Kind      string
	StartLine int
	EndLine   int
	Version   string
}

// Result is a search's answer.
type Result struct {
	Hits      []Hit
	TotalHits int
	Took      time.Duration
	State     State
}

// Search runs q against the current generation.
func (ix *Index) Search(ctx context.Context, q Query) (*Result, error) {
	start := time.Now()
	topK := q.TopK
	if topK <= 0 {
		topK = DefaultTopK
	}
	if topK > MaxTopK {
		topK = MaxTopK
	}
	parsed := parseQuery(q.Text) // query.go: the syntax
	text, phrases := parsed.words, parsed.phrases
	if len(ix.terms(ix.analyzer, q.Text)) == 0 {
		return nil, ErrEmptyQuery
	}
	wordAnalyzer, wordTerms := ix.words(q, text)
	marked := maps.Clone(wordTerms) // what an excerpt marks: what ranks
	match := bluge.NewBooleanQuery()
	for _, p := range phrases {
		if pt := ix.terms(ix.analyzer, p); len(pt) > 0 {
			maps.Copy(marked, pt)
			match.AddMust(bluge.NewMatchPhraseQuery(p).SetField(fieldBody).SetAnalyzer(ix.analyzer))
		}
	}
	var wanted *queryMarks
	if !q.OmitExcerpts {
		wanted = newQueryMarks(marked)
	}
	if len(wordTerms) > 0 {
		words := bluge.NewMatchQuery(text).SetField(fieldBody).SetAnalyzer(wordAnalyzer)
		if len(phrases) == 0 {
			match.AddMust(words)
		} else {
			match.AddShould(words) // phrases must match; other words rank
		}
	}

	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var query bluge.Query = match
	if q.Expand && len(phrases) == 0 {
		// Pseudo-relevance feedback (expand.go): the first pass's best
		// chunks lend their words to the second.
		fb, _, err := ix.collect(ctx, q, ix.filtered(q, match), feedbackDocs, true)
		if err != nil {
			return nil, err
		}
		if expanded := ix.expanded(wordAnalyzer, q.Text, fb); expanded != nil {
			query = expanded
		}
	}
	hits, total, err := ix.collect(ctx, q, ix.filtered(q, query), topK, !q.OmitExcerpts)
	if err != nil {
		return nil, err
	}
	res := &Result{State: ix.cur.state, TotalHits: total}
	for _, h := range hits {
		if !q.OmitExcerpts {
			h.Excerpt = ix.excerpt(h.text, wanted)
		}
		res.Hits = append(res.Hits, h.Hit)
	}
	res.Took = time.Since(start)
	return res, nil
}

// filtered is match within q's filters. Filters score nothing (boost 0):
// they select, BM25 alone ranks.
func (ix *Index) filtered(q Query, match bluge.Query) bluge.Query {
	root := bluge.NewBooleanQuery().AddMust(match)
	filter := func(field, value string) {
		root.AddMust(bluge.NewTermQuery(value).SetField(field).SetBoost(0))
	}
	if q.AgentID != "" {
		filter(fieldAgent, q.AgentID)
	}
	switch q.Layer {
	case 1, 2:
		filter(fieldLayer, strconv.Itoa(q.Layer))
	default:
		root.AddMustNot(bluge.NewTermQuery("2").SetField(fieldLayer))
	}
	if len(q.Kinds) > 0 {
		kinds := bluge.NewBooleanQuery().SetBoost(0)
		for _, k := range q.Kinds {
			kinds.AddShould(bluge.NewTermQuery(k).SetField(fieldKind))
		}
		root.AddMust(kinds)
	}
	if q.PathPrefix != "" {
		root.AddMust(bluge.NewPrefixQuery(q.PathPrefix).SetField(fieldPath).SetBoost(0))
	}
	return root
}

// textHit is a hit with its chunk's text (when asked for).
type textHit struct {
	Hit
	text string
}

// collect runs root for the topK best chunks; ix.mu is read-locked.
func (ix *Index) collect(ctx context.Context, q Query, root bluge.Query, topK int, wantText bool) ([]textHit, int, error) {
	req := bluge.NewTopNSearch(topK, root).WithStandardAggregations()
	it, err := ix.cur.reader.Search(ctx, req)
	if err != nil {
		return nil, 0, err
	}
	var out []textHit
	for m, err := it.Next(); m != nil || err != nil; m, err = it.Next() {
		if err != nil {
			return nil, 0, err
		}
		h := textHit{Hit: Hit{Score: m.Score}}
		var id string
		if err := m.VisitStoredFields(func(field string, value []byte) bool {
			switch field {
			case "_id":
				id = string(value)
			case fieldText:
				if wantText {
					h.text = string(value)
				}
			case fieldPath:
				h.Path = string(value)
			case fieldAgent:
				h.AgentID = string(value)
			case fieldLayer:
				h.Layer, _ = strconv.Atoi(string(value))
			case fieldKind:
				h.Kind = string(value)
			case fieldStart: // positional chunks only (chunkids.go)
				h.StartLine, _ = strconv.Atoi(string(value))
			case fieldEnd:
				h.EndLine, _ = strconv.Atoi(string(value))
			}
			return true
		}); err != nil {
			return nil, 0, err
		}
		// Chunks a new version left unchanged are not rewritten, so the
		// version and span come from the file's bookkeeping.
		fm := ix.cur.files[h.Path]
		h.Version = fm.Version
		if start, end, ok := fm.span(h.Path, id); ok {
			h.StartLine, h.EndLine = start, end
		}
		out = append(out, h)
	}
	return out, int(it.Aggregations().Count()), nil
}

// span is a matched word's bytes in a text.
type span struct{ start, end int }

// excerptMarks returns where text's words are query terms, in order, at
// least from the first one to 2×excerptRadius past it: all that an excerpt
// shows. Analysing a whole chunk (up to 4,000 bytes) for a 320-byte excerpt
// is mostly wasted work, paid for every hit, so a long text's first
// 640 bytes are analysed first, and the rest only when they do not hold
// the first match and the excerpt after it. The prefix ends before a space
// or a newline, where a word always ends, so its words are exactly the
// text's words there.
func (ix *Index) excerptMarks(text string, q *queryMarks) []span {
	if prefix := 4 * excerptRadius; len(text) > prefix {
		if cut := strings.LastIndexAny(text[:prefix], " \n"); cut > 0 {
			if marks := ix.marksIn(text[:cut], q); len(marks) > 0 && marks[0].start+2*excerptRadius <= cut {
				return marks
			}
		}
	}
	return ix.marksIn(text, q)
}

// marksIn returns where text's words are query terms, in order (runs are
// taken in order, and a run's tokens come in order).
//
// Analysing every word of every hit is paid on every search, and most
// words are not query terms. A word never spans whitespace (UAX #29), so
// text is analysed one whitespace-separated run at a time, each run exactly
// as within the whole text, and a run of ASCII only where it can hold a
// query term (queryMarks.mayHold).
func (ix *Index) marksIn(text string, q *queryMarks) []span {
	var marks []span
	for start := 0; start < len(text); {
		if isASCIISpace(text[start]) {
			start++
			continue
		}
		end := start + 1
		ascii := text[start] < utf8.RuneSelf
		for end < len(text) && !isASCIISpace(text[end]) {
			ascii = ascii && text[end] < utf8.RuneSelf
			end++
		}
		if !ascii || q.mayHold(text[start:end]) {
			for _, t := range ix.analyzer.Analyze([]byte(text[start:end])) {
				if q.terms[string(t.Term)] {
					marks = append(marks, span{start + t.Start, start + t.End})
				}
			}
		}
		start = end
	}
	return marks
}

func isASCIISpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f'
}

// queryMarks is what marksIn looks for: the query's terms, and for an ASCII
// run a cheap test that it may hold one of them.
type queryMarks struct {
	terms map[string]bool
	// keys are the ASCII terms less their last two bytes. An ASCII word's
	// term is its lower case, less a possessive 's, stemmed by Porter's
	// algorithm, which rewrites at most the last two letters of what it
	// keeps (ies → i, y → i, bili → ble …; TestPorterStemsKeepTheWordsStart):
	// so a run holding a word whose term is t holds keys(t) in lower case.
	keys []string
	// anyRun: some ASCII term is too short for a key; every run may hold it.
	anyRun bool
}

func newQueryMarks(terms map[string]bool) *queryMarks {
	q := &queryMarks{terms: terms}
	for t := range terms {
		if utf8.RuneCountInString(t) != len(t) {
			continue // not ASCII: an ASCII run's terms are ASCII
		}
		if len(t) <= 2 {
			q.anyRun = true
			continue
		}
		q.keys = append(q.keys, t[:len(t)-2])
	}
	return q
}

// mayHold reports whether the ASCII run may hold a word whose term is a
// query term.
func (q *queryMarks) mayHold(run string) bool {
	if q.anyRun {
		return true
	}
	for _, k := range q.keys {
		if containsLowerASCII(run, k) {
			return true
		}
	}
	return false
}

// containsLowerASCII reports whether s, in ASCII lower case, contains the
// lower-case key.
func containsLowerASCII(s, key string) bool {
	for i := 0; i+len(key) <= len(s); i++ {
		j := 0
		for j < len(key) && lowerASCII(s[i+j]) == key[j] {
			j++
		}
		if j == len(key) {
			return true
		}
	}
	return false
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// terms are the analyzed terms of s.
func (ix *Index) terms(a *analysis.Analyzer, s string) map[string]bool {
	out := map[string]bool{}
	for _, t := range a.Analyze([]byte(s)) {
		out[string(t.Term)] = true
	}
	return out
}

// words analyses q's optional words with the query analyzer, which drops
// the question's framing words, unless q keeps them or they are all the
// words have (then with the document analyzer): the analyzer and the
// terms.
func (ix *Index) words(q Query, words string) (*analysis.Analyzer, map[string]bool) {
	if !q.KeepQuestionWords {
		if terms := ix.terms(ix.queryAnalyzer, words); len(terms) > 0 {
			return ix.queryAnalyzer, terms
		}
	}
	return ix.analyzer, ix.terms(ix.analyzer, words)
}

// excerpt returns the part of text around its first match, with every
// matching word marked «like this».
func (ix *Index) excerpt(text string, q *queryMarks) string {
	return renderExcerpt(text, ix.excerptMarks(text, q))
}

// renderExcerpt cuts text around the first of marks (sorted) and marks them.
func renderExcerpt(text string, marks []span) string {
	from, to := 0, len(text)
	if len(marks) > 0 && len(text) > 2*excerptRadius {
		from = max(0, marks[0].start-excerptRadius/2)
		to = min(len(text), from+2*excerptRadius)
	} else if len(text) > 2*excerptRadius {
		to = 2 * excerptRadius
	}
	for from > 0 && !utf8.RuneStart(text[from]) {
		from--
	}
	for to < len(text) && !utf8.RuneStart(text[to]) {
		to++
	}
	var b strings.Builder
	if from > 0 {
		b.WriteString("…")
	}
	pos := from
	for _, m := range marks {
		if m.start < pos || m.end > to {
			continue
		}
		b.WriteString(text[pos:m.start])
		b.WriteString(MarkOpen)
		b.WriteString(text[m.start:m.end])
		b.WriteString(MarkClose)
		pos = m.end
	}
	b.WriteString(text[pos:to])
	if to < len(text) {
		b.WriteString("…")
	}
	return b.String()
}
