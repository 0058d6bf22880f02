package tokens

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dlclark/regexp2/v2"
	"github.com/stretchr/testify/require"
	"github.com/tiktoken-go/tokenizer"
	"github.com/tiktoken-go/tokenizer/codec"
)

// cl100kPattern is the codec's split pattern. Compiled with the same
// options it runs the codec's own generated matcher, so codecSplit shows
// exactly the pre-tokens the codec encodes.
const cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

var cl100kSplitter = regexp2.MustCompile(cl100kPattern, regexp2.None)

func codecSplit(t testing.TB, s string) []string {
	var out []string
	m, err := cl100kSplitter.FindStringMatch(s)
	for ; m != nil && err == nil; m, err = cl100kSplitter.FindNextMatch(m) {
		out = append(out, m.String())
	}
	require.NoError(t, err)
	return out
}

func fastSplit(t testing.TB, s string) []string {
	var out []string
	for len(s) > 0 {
		k := cl100kNext(s)
		require.Positive(t, k, "fast split stopped at %q", s)
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

// plainCount is the codec's count, without anything of Counter.
func plainCount(t testing.TB, encoding, s string) int {
	c, err := tokenizer.Get(tokenizer.Encoding(encoding))
	require.NoError(t, err)
	n, err := c.Count(s)
	require.NoError(t, err)
	return n
}

// fastFragments are the edge cases of the pattern within the fast alphabet.
var fastFragments = []string{
	"a", "Z", "x", "word", "Word", "WORD", "s", "t", "re", "ll", "e",
	"0", "7", "12", "123", "2026", "99999",
	" ", " ", " ", "  ", "   ", "\t", " \t", "\t ",
	"\n", "\n", "\r", "\r\n", "\n\n", " \n", "\n ", "\r\r\n",
	"'", "'s", "'S", "'t", "'T", "'re", "'RE", "'Re", "'rE", "'ve", "'VE", "'m", "'M",
	"'ll", "'LL", "'lL", "'l", "'d", "'D", "'x", "'r", "'v", "''",
	"-", "*", "#", "[", "]", "(", ")", "/", ":", ".", ",", "`", "|", "_",
	"!", "?", "\"", "~", "{", "}", "@", "$", "%", "^", "&", "+", "=", "<", ">", ";", "\\",
	"- ", "* ", "## ", "[ ]", "**", "```", "...", "://", "---",
}

func randomText(r *rand.Rand, fragments []string, n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(fragments[r.IntN(len(fragments))])
	}
	return b.String()[:n]
}

// The fast split is the codec's split, pre-token for pre-token, and the
// fast count the codec's count, on random fast-alphabet text.
func TestFastPathMatchesCodec(t *testing.T) {
	c, err := New(DefaultEncoding)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(42, 1))
	pretokens := map[string]bool{}
	for i := range 3000 {
		text := randomText(r, fastFragments, r.IntN(2001))
		split := fastSplit(t, text)
		require.Equal(t, codecSplit(t, text), split, "#%d: %q", i, text)
		want := plainCount(t, DefaultEncoding, text)
		require.Equal(t, want, c.countCl100k(text), "#%d: %q", i, text)
		require.Equal(t, want, c.Count(text), "#%d: %q", i, text)
		require.Equal(t, want, c.Count(text), "#%d from the caches: %q", i, text)
		for _, p := range split {
			pretokens[p] = true
		}
	}
	// Each pre-token alone splits to itself, so the codec counts it as in
	// context; bpeCount agrees with it, and a single byte is one token.
	for p := range pretokens {
		require.Equal(t, []string{p}, codecSplit(t, p))
		want := plainCount(t, DefaultEncoding, p)
		if len(p) == 1 {
			require.Equal(t, 1, want, "%q", p)
		} else if len(p) <= maxBPE {
			require.Equal(t, want, bpeCount(c.vocab, p), "%q", p)
		}
	}
}

func TestFastSplitEdgeCases(t *testing.T) {
	for text, want := range map[string][]string{
		"'sa":             {"'s", "a"}, // the first alternative wins, not the longest
		"don't":           {"don", "'t"},
		"WE'RE'LL":        {"WE", "'RE", "'LL"},
		"'rx 'l":          {"'rx", " '", "l"},
		"12345 6":         {"123", "45", " ", "6"},
		"a  b":            {"a", " ", " b"},
		"a\t\tb":          {"a", "\t", "\tb"},
		"a \t.b":          {"a", " ", "\t", ".b"},
		"\t-x":            {"\t", "-x"},
		" ..\n\nx":        {" ..\n\n", "x"},
		"x  ":             {"x", "  "},
		"x \n  \n\ny":     {"x", " \n", "  \n\n", "y"}, // the codec's first-CR/LF-run quirk
		"\n \nx":          {"\n", " \n", "x"},
		"  \r\n \t\r\r z": {"  \r\n", " \t\r\r", " z"},
	} {
		require.Equal(t, want, codecSplit(t, text), "codec %q", text)
		require.Equal(t, want, fastSplit(t, text), "fast %q", text)
	}
}

// Every fast-alphabet token Decode yields is in the fast vocabulary under
// its id.
func TestFastVocab(t *testing.T) {
	v := cl100kVocab()
	codec := codec.NewCl100kBase()
	seen := 0
	for id := uint(0); id < 100256; id++ {
		tok, err := codec.Decode([]uint{id})
		require.NoError(t, err)
		if fastOnly(tok) {
			require.Equal(t, uint32(id), v.rank(tok), "%q", tok)
			seen++
		}
	}
	require.Greater(t, seen, 90000)
	require.Equal(t, uint32(noRank), v.rank("zzqqxx"))
}

func markdownFiles(t *testing.T) map[string]string {
	files := map[string]string{}
	for _, pattern := range []string{"../../*.md", "../../*/*.md", "../../*/*/*.md", "../../pkg/*/testdata/*.md"} {
		paths, err := filepath.Glob(pattern)
		require.NoError(t, err)
		for _, p := range paths {
			if rel := strings.TrimPrefix(p, "../../"); strings.HasPrefix(rel, ".") || strings.Contains(rel, "/.") {
				continue // .cache and the like
			}
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			files[p] = string(b)
		}
	}
	require.Contains(t, files, "../../README.md")
	require.Contains(t, files, "../../pkg/memrepo/README.layout.md")
	return files
}

// Real Markdown, as it is (mostly ASCII with "—", "→", Cyrillic), made
// plain ASCII, and generated facts.md-like documents count as the codec
// counts them, also after an append.
func TestCountMarkdownFiles(t *testing.T) {
	c, err := New(DefaultEncoding)
	require.NoError(t, err)
	docs := markdownFiles(t)
	for name, text := range docs {
		docs[name+" (ASCII)"] = strings.Map(func(r rune) rune {
			if r > '~' {
				return '?'
			}
			return r
		}, text)
	}
	for seed := range uint64(4) {
		docs[fmt.Sprint("facts ", seed)] = factsDoc(seed, 20<<10)
	}
	for name, text := range docs {
		want := plainCount(t, DefaultEncoding, text)
		require.Equal(t, want, c.Count(text), name)
		appended := text + "- a new fact: the west region's `api_gw` moved to 10.0.0.7 (2026-03-01)\n\n"
		require.Equal(t, plainCount(t, DefaultEncoding, appended), c.Count(appended), name)
		require.Equal(t, want, c.Count(text), name)
	}
}

// Text outside the fast alphabet, alone or mixed into fast text, and every
// text in other encodings, counts as the codec counts it.
func TestFallbackMatchesCodec(t *testing.T) {
	other := []string{
		"é", "Я", "факт", "—", "→", "\u00a0", "\u0085", "\u2028", "\u3000", "e\u0301", "\u0301",
		"😀", "٣", "Ⅻ", "²", "\x7f", "\x00", "\x01", "\v", "\f", "\xff", "\xe2\x80",
	}
	mixed := append(append([]string{}, fastFragments...), other...)
	fixed := []string{
		"Виявлено нові технічні факти",
		"naïve café — résumé → done",
		"a\vb\fc", "del\x7fete", "nul\x00l", "x\u00a0y", "a \u00a0b", "1²3", "x\xffy",
	}
	for _, enc := range []string{"cl100k_base", "o200k_base"} {
		c, err := New(enc)
		require.NoError(t, err)
		require.Equal(t, enc == "cl100k_base", c.vocab != nil)
		r := rand.New(rand.NewPCG(7, uint64(len(enc))))
		texts := append([]string{}, fixed...)
		for range 1000 {
			texts = append(texts, randomText(r, mixed, r.IntN(400)))
		}
		for range 100 {
			texts = append(texts, randomText(r, fastFragments, r.IntN(400)))
		}
		for i, text := range texts {
			want := plainCount(t, enc, text)
			if c.vocab != nil {
				require.Equal(t, want, c.countCl100k(text), "%s #%d: %q", enc, i, text)
			}
			require.Equal(t, want, c.Count(text), "%s #%d: %q", enc, i, text)
			require.Equal(t, want, c.Count(text), "%s #%d from the caches: %q", enc, i, text)
		}
	}
}

func TestConcurrentFastPath(t *testing.T) {
	c, err := New(DefaultEncoding)
	require.NoError(t, err)
	docs := make([]string, 4)
	want := make([]int, len(docs))
	for i := range docs {
		docs[i] = factsDoc(uint64(10+i), 8<<10)
		want[i] = plainCount(t, DefaultEncoding, docs[i])
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 20 {
				d := (g + i) % len(docs)
				require.Equal(t, want[d], c.Count(docs[d]))
			}
		})
	}
	wg.Wait()
}
