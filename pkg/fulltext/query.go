package fulltext

import (
	"regexp"
	"strings"
)

// The query syntax of Query.Text (Search's `query`, REST `?q=`;
// docs/search.md, "Query syntax"), kept small on purpose:
//
//   - "a quoted phrase" must occur in a chunk, its words in this order;
//   - every other word is optional: a chunk matches when it holds one of
//     them (or every phrase, when there are phrases), and BM25 ranks;
//   - nothing else is an operator. AND, OR, NOT, -word, +word, field:value,
//     *, ? and parentheses are text, analysed like a document's words: the
//     analyser drops the punctuation and the stop words (and, or, not are
//     stop words), and field:value stays one word. Filters are the
//     request's own fields (agent, layer, kinds, path prefix, at).
//
// Text that is not written in this syntax — a question from an agent, such
// as context assembly's query_hint — goes through NaturalQuery first, so
// nothing in it can require or filter.

// phraseRe finds the quoted phrases of a query.
var phraseRe = regexp.MustCompile(`"([^"]+)"`)

// parsedQuery is a query's text read in the syntax.
type parsedQuery struct {
	// words are the optional words, every phrase cut out.
	words string
	// phrases must each match as a phrase.
	phrases []string
}

// parseQuery reads text in the query syntax.
func parseQuery(text string) parsedQuery {
	var p parsedQuery
	for _, m := range phraseRe.FindAllStringSubmatch(text, -1) {
		p.phrases = append(p.phrases, m[1])
	}
	p.words = strings.TrimSpace(phraseRe.ReplaceAllString(text, " "))
	return p
}

// NaturalQuery returns the query that searches text as natural language:
// every word of text optional, ranked by BM25, with nothing required and
// nothing filtered — for text an agent wrote as words, not as query
// syntax (context assembly's query_hint). It takes the syntax's operators
// out of text: a double quote becomes a space, so "Caroline" is the word
// Caroline, as if the quotes were not there. The words and their analysed
// terms are unchanged (but for a double quote inside a word, as in Hebrew
// acronyms, which becomes a word break), and so is the length.
func NaturalQuery(text string) string {
	return strings.ReplaceAll(text, `"`, " ")
}
