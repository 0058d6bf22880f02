// Package textanalysis provides the multilingual (English, Ukrainian,
// Russian) text analyzer used for BM25 indexing and querying of memory
// documents with bluge.
//
// The same analyzer must be used for indexing and for queries: every step is
// a pure function of one token, so a query term is analysed exactly like the
// same word inside a document, without any per-document language detection
// (which is not available at query time).
//
// Pipeline (see NewAnalyzer):
//
//  1. apostropheCharFilter: a grave accent or acute accent typed between two
//     Cyrillic letters (пам`ять, пам´ять) becomes an apostrophe, so the
//     tokenizer keeps the word whole.
//  2. Unicode word segmentation (bluge's unicode tokenizer), implementing
//     UAX #29 like Lucene's StandardTokenizer. Apostrophes between letters
//     (', ’, ‘, ＇ and the letter ʼ) keep a word together; v1.2 and
//     run_abc123 are single tokens; 2026-02-17 becomes 2026, 02, 17.
//  3. normalizeFilter: English possessive 's removed (as Lucene's
//     EnglishPossessiveFilter), full Unicode case folding, apostrophe variants
//     unified, Cyrillic stress marks removed, ё→е, NFC.
//  4. dropFilter of the stop words: Lucene's 33 English stop words plus short Ukrainian and
//     Russian function-word lists.
//  5. stemFilter: classic Porter for Latin tokens (Lucene PorterStemFilter
//     parity), a combined Ukrainian/Russian light stemmer for Cyrillic
//     tokens, nothing for tokens containing digits or mixing scripts.
package textanalysis

import (
	"unicode"
	"unicode/utf8"

	porterstemmer "github.com/blevesearch/go-porterstemmer"
	"github.com/blugelabs/bluge/analysis"
	"github.com/blugelabs/bluge/analysis/tokenizer"
)

// NewAnalyzer returns the analyzer for memory text in English, Ukrainian and
// Russian. It is meant for both indexed fields and query text, and is safe
// for concurrent use (no filter keeps state between calls).
//
// English handling mirrors Lucene's EnglishAnalyzer as used by Anserini for
// BEIR baselines (possessive filter, lowercase, 33-word stop set, classic
// Porter), so BM25 scores are comparable with the published Lucene numbers.
func NewAnalyzer() *analysis.Analyzer {
	return &analysis.Analyzer{
		CharFilters: []analysis.CharFilter{apostropheCharFilter{}},
		Tokenizer:   tokenizer.NewUnicodeTokenizer(),
		TokenFilters: []analysis.TokenFilter{
			normalizeFilter{},
			dropFilter{stopWords},
			stemFilter{},
		},
	}
}

// NewQueryAnalyzer returns NewAnalyzer's pipeline for a query's optional
// words: it also drops the question's framing words (questionWords: what,
// did, would, her, ми, который …), which name no content. A chunk that
// shares only them with a question — in a conversation, any other question
// — must not rank. Documents and phrases are analysed by NewAnalyzer.
func NewQueryAnalyzer() *analysis.Analyzer {
	a := NewAnalyzer()
	a.TokenFilters = []analysis.TokenFilter{normalizeFilter{}, dropFilter{stopWords}, dropFilter{questionWords}, stemFilter{}}
	return a
}

// defaultAnalyzer and queryAnalyzer back Analyze and AnalyzeQuery;
// analyzers are stateless, so sharing is safe.
var (
	defaultAnalyzer = NewAnalyzer()
	queryAnalyzer   = NewQueryAnalyzer()
)

// Analyze runs text through NewAnalyzer's pipeline and returns the resulting
// terms in order (stop words removed). It is meant for tests, debugging and
// tools that need the exact terms the index sees. Empty input yields nil.
func Analyze(text string) []string { return analyzeText(defaultAnalyzer, text) }

// AnalyzeQuery is Analyze with NewQueryAnalyzer's pipeline: the terms a
// query's optional words search.
func AnalyzeQuery(text string) []string { return analyzeText(queryAnalyzer, text) }

func analyzeText(a *analysis.Analyzer, text string) []string {
	if text == "" {
		return nil
	}
	// []byte(text) copies, and terms are copied out as strings, so nothing
	// returned aliases the analyzer's buffers.
	tokens := a.Analyze([]byte(text))
	if len(tokens) == 0 {
		return nil
	}
	out := make([]string, len(tokens))
	for i, t := range tokens {
		out[i] = string(t.Term)
	}
	return out
}

// apostropheCharFilter rewrites apostrophe look-alikes that UAX #29 treats as
// word breaks (` U+0060 and ´ U+00B4) into apostrophes the tokenizer keeps
// inside words, but only between two Cyrillic letters: Ukrainian users type
// пам`ять on keyboards without an apostrophe key, while a backtick next to
// Latin text is usually Markdown code quoting and must keep splitting.
// Replacements have the same UTF-8 length, so token offsets stay valid.
type apostropheCharFilter struct{}

// Filter implements analysis.CharFilter.
func (apostropheCharFilter) Filter(input []byte) []byte {
	var out []byte // allocated lazily: most inputs contain neither character
	for i := 0; i < len(input); i++ {
		var repl []byte
		size := 1
		switch {
		case input[i] == '`':
			repl = []byte{'\''}
		case input[i] == 0xC2 && i+1 < len(input) && input[i+1] == 0xB4: // ´
			repl = []byte("ʼ") // U+02BC, also two bytes
			size = 2
		default:
			continue
		}
		prev, _ := utf8.DecodeLastRune(input[:i])
		next, _ := utf8.DecodeRune(input[i+size:])
		if !isCyrillicLetter(prev) || !isCyrillicLetter(next) {
			continue
		}
		if out == nil {
			out = make([]byte, len(input))
			copy(out, input)
		}
		copy(out[i:], repl)
		i += size - 1
	}
	if out == nil {
		return input
	}
	return out
}

// normalizeFilter applies possessive stripping, case folding and
// orthographic normalisation (see normalizeTerm).
type normalizeFilter struct{}

// Filter implements analysis.TokenFilter.
func (normalizeFilter) Filter(input analysis.TokenStream) analysis.TokenStream {
	for _, tok := range input {
		tok.Term = normalizeTerm(tok.Term)
	}
	return input
}

// dropFilter drops the words of a list (and terms that normalisation
// emptied). Like Lucene's StopFilter it adds the removed positions to the
// next token's position increment, so phrase queries still see the gap.
type dropFilter struct{ words map[string]struct{} }

// Filter implements analysis.TokenFilter. The map index with a converted
// []byte does not allocate.
func (f dropFilter) Filter(input analysis.TokenStream) analysis.TokenStream {
	j, skipped := 0, 0
	for _, tok := range input {
		if _, drop := f.words[string(tok.Term)]; drop || len(tok.Term) == 0 {
			skipped += tok.PositionIncr
			continue
		}
		tok.PositionIncr += skipped
		skipped = 0
		input[j] = tok
		j++
	}
	return input[:j]
}

// stemFilter picks a stemmer per token from the token's own letters, so the
// choice is identical at index and query time.
type stemFilter struct{}

// Filter implements analysis.TokenFilter.
func (stemFilter) Filter(input analysis.TokenStream) analysis.TokenStream {
	for _, tok := range input {
		if tok.KeyWord {
			continue
		}
		tok.Term = stemTerm(tok.Term)
	}
	return input
}

// script classifies the letters of a normalised term.
type script int

const (
	scriptNone     script = iota // no letters (punctuation only)
	scriptLatin                  // only Latin letters
	scriptCyrillic               // only Cyrillic letters
	scriptOther                  // digits, other scripts, or a mix
)

// classify reports which stemmer, if any, may touch term. Any digit makes the
// term scriptOther: identifiers, versions and dates must stay verbatim.
func classify(term []byte) script {
	latin, cyr := false, false
	for i := 0; i < len(term); {
		c := term[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
				latin = true
			case c >= '0' && c <= '9':
				return scriptOther
			}
			continue
		}
		r, size := utf8.DecodeRune(term[i:])
		i += size
		switch {
		case isCyrillicLetter(r):
			cyr = true
		case unicode.IsNumber(r):
			return scriptOther
		case unicode.Is(unicode.Latin, r):
			latin = true
		case unicode.IsLetter(r):
			return scriptOther
		}
	}
	switch {
	case latin && cyr:
		return scriptOther
	case latin:
		return scriptLatin
	case cyr:
		return scriptCyrillic
	}
	return scriptNone
}

// stemTerm applies the stemmer selected by classify. It returns term itself
// when the stemmer changes nothing.
func stemTerm(term []byte) []byte {
	var buf [64]rune // avoids a heap allocation for all but huge tokens
	var stemmed []rune
	switch classify(term) {
	case scriptLatin:
		// Lucene's PorterStemmer is Martin Porter's reference
		// implementation, including its two "departures" (bli→ble,
		// logi→log) and leaving words of one or two letters alone;
		// go-porterstemmer implements exactly that, whereas snowball's
		// "porter" does not (it stems "as"→"a", keeps "analogi").
		stemmed = porterstemmer.StemWithoutLowerCasing(appendRunes(buf[:0], term))
	case scriptCyrillic:
		stemmed = stemSlavic(appendRunes(buf[:0], term))
	default:
		return term
	}
	if runesEqualBytes(stemmed, term) {
		return term
	}
	out := make([]byte, 0, len(term))
	for _, r := range stemmed {
		out = utf8.AppendRune(out, r)
	}
	return out
}

// appendRunes decodes b into dst.
func appendRunes(dst []rune, b []byte) []rune {
	for _, r := range string(b) { // no allocation: the compiler ranges over b
		dst = append(dst, r)
	}
	return dst
}

// runesEqualBytes reports whether runes encode to exactly b.
func runesEqualBytes(runes []rune, b []byte) bool {
	i := 0
	for _, r := range runes {
		if i >= len(b) {
			return false
		}
		got, size := utf8.DecodeRune(b[i:])
		if got != r {
			return false
		}
		i += size
	}
	return i == len(b)
}

// isCyrillicLetter reports whether r is a letter of the Cyrillic script.
func isCyrillicLetter(r rune) bool {
	if r >= 0x0400 && r <= 0x04FF { // the main block: all of Ukrainian and Russian
		return r < 0x0482 || r > 0x0489 // 0482–0489: Cyrillic signs and combining marks
	}
	return r >= 0x0500 && unicode.Is(unicode.Cyrillic, r) && unicode.IsLetter(r)
}
