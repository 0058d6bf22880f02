package chunker

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSplitProperties runs Split over random Markdown-ish documents built
// from the shapes memory files contain (and some awkward ones) and checks
// the invariants of checkInvariants plus determinism. The seed is fixed so a
// failure reproduces; the failing document is printed.
func TestSplitProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(2026, 217))
	iterations := 3000
	if testing.Short() {
		iterations = 300
	}
	for it := 0; it < iterations; it++ {
		md := randomDoc(rng)
		max := DefaultMaxChars
		if rng.IntN(2) == 0 {
			max = 10 + rng.IntN(200)
		}
		got := Split(md, Options{MaxChars: max})
		ok := t.Run(fmt.Sprintf("doc%d", it), func(t *testing.T) {
			checkInvariants(t, md, got, max)
			require.Equal(t, got, Split(md, Options{MaxChars: max}), "deterministic")
			// CRLF and LF give the same chunks.
			require.Equal(t, got, Split(strings.ReplaceAll(md, "\n", "\r\n"), Options{MaxChars: max}))
		})
		if !ok {
			t.Fatalf("MaxChars=%d document:\n%s", max, md)
		}
	}
}

var words = []string{
	"garden", "bloom", "MinIO", "bucket", "loop_007", "proposal", "→", "—",
	"факт", "пам'ять", "агент", "рішення", "`code`", "**bold**", "a|b", "x",
	"2026-02-17", "run_abc", "#42", "*", "1.", "-", "[ ]",
}

func randWords(rng *rand.Rand, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = words[rng.IntN(len(words))]
	}
	// Never start a line with a marker by accident: the generator decides
	// the block shapes explicitly.
	return "w " + strings.Join(ws, " ")
}

func randomDoc(rng *rand.Rand) string {
	var lines []string
	blocks := rng.IntN(12)
	for b := 0; b < blocks; b++ {
		switch rng.IntN(3) { // separator before the block
		case 0:
			lines = append(lines, "")
		case 1:
			lines = append(lines, "", "  ")
		}
		lines = append(lines, randomBlock(rng)...)
	}
	md := strings.Join(lines, "\n")
	switch rng.IntN(4) {
	case 1, 2:
		md += "\n"
	case 3: // trailing blank lines, e.g. inside an unclosed fence
		md += "\n\n  \n"
	}
	return md
}

func randomBlock(rng *rand.Rand) []string {
	switch rng.IntN(14) {
	case 0:
		return []string{strings.Repeat("#", 1+rng.IntN(6)) + " " + randWords(rng, rng.IntN(4))}
	case 1: // bullet with optional sub-items, continuation and inner paragraph
		out := []string{"- " + randWords(rng, 1+rng.IntN(6))}
		for i := rng.IntN(3); i > 0; i-- {
			switch rng.IntN(4) {
			case 0:
				out = append(out, "  - "+randWords(rng, 3))
			case 1:
				out = append(out, "    * "+randWords(rng, 3))
			case 2:
				out = append(out, randWords(rng, 2)) // lazy continuation
			case 3:
				out = append(out, "", "  "+randWords(rng, 4))
			}
		}
		return out
	case 2:
		mark := []string{"[ ]", "[x]", "[X]"}[rng.IntN(3)]
		return []string{"- " + mark + " loop_00" + fmt.Sprint(rng.IntN(9)) + ": " + randWords(rng, 5)}
	case 3:
		return []string{fmt.Sprint(1+rng.IntN(12)) + []string{". ", ") "}[rng.IntN(2)] + randWords(rng, 4), "   - " + randWords(rng, 2)}
	case 4: // paragraph
		out := make([]string, 1+rng.IntN(4))
		for i := range out {
			out[i] = randWords(rng, 1+rng.IntN(10))
			if rng.IntN(4) == 0 {
				out[i] = "   " + out[i]
			}
		}
		return out
	case 5: // decisions entry
		out := []string{"## 2026-02-17 — " + randWords(rng, 3)}
		for i := 1 + rng.IntN(4); i > 0; i-- {
			out = append(out, "**"+[]string{"Status", "Context", "Статус"}[rng.IntN(3)]+":** "+randWords(rng, 3))
		}
		return out
	case 6: // fenced code, sometimes with heading- and list-like content
		fence := []string{"```", "~~~", "````"}[rng.IntN(3)]
		out := []string{fence + []string{"", "go", "yaml"}[rng.IntN(3)]}
		for i := rng.IntN(5); i > 0; i-- {
			out = append(out, []string{"# not a heading", "- not an item", "", "| a | b |", "---", randWords(rng, 3)}[rng.IntN(6)])
		}
		if rng.IntN(6) > 0 {
			out = append(out, fence)
		}
		return out
	case 7: // item with an indented fence holding flush-left lines
		out := []string{"- example:", "  ```"}
		for i := rng.IntN(4); i > 0; i-- {
			out = append(out, []string{"flush left", "", "  # comment", "- not an item"}[rng.IntN(4)])
		}
		return append(out, "  ```")
	case 8:
		out := []string{"| Metric | Value |", "|---|:---:|"}
		for i := rng.IntN(4); i > 0; i-- {
			out = append(out, "| "+randWords(rng, 2)+" | 1 |")
		}
		return out
	case 9:
		return []string{[]string{"---", "***", "___", "- - -", " * * *"}[rng.IntN(5)]}
	case 10: // long line
		n := 20 + rng.IntN(400)
		if rng.IntN(3) == 0 {
			return []string{strings.Repeat("ї", n*3)}
		}
		return []string{randWords(rng, n)}
	case 11:
		return []string{"<!-- " + randWords(rng, 3) + " -->"}
	case 12:
		return []string{"#tag " + randWords(rng, 2), "```inline``` " + randWords(rng, 2)}
	default:
		return []string{"**Key:** " + randWords(rng, 3), "+ " + randWords(rng, 2), "\t" + randWords(rng, 2)}
	}
}
