package tokens

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCount(t *testing.T) {
	c, err := New("")
	require.NoError(t, err)
	require.Equal(t, "cl100k_base", c.Encoding())
	require.Equal(t, 0, c.Count(""))
	// "hello world" is two tokens in cl100k_base.
	require.Equal(t, 2, c.Count("hello world"))
	// Cyrillic text costs more tokens than characters/4 would suggest.
	require.Greater(t, c.Count("Виявлено нові технічні факти"), 5)
	require.Equal(t, 2000, c.Count(strings.Repeat(" a", 2000)))
}

func TestOtherEncodingAndErrors(t *testing.T) {
	c, err := New("o200k_base")
	require.NoError(t, err)
	require.Equal(t, "o200k_base", c.Encoding())
	_, err = New("no_such_encoding")
	require.ErrorContains(t, err, "no_such_encoding")
}

func TestConcurrentUse(t *testing.T) {
	c, err := New(DefaultEncoding)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				require.Equal(t, 2, c.Count("hello world"))
			}
		})
	}
	wg.Wait()
}

// Count splits text into pieces and caches their counts; the sum must be
// exactly tiktoken's count of the whole text, for any text.
func TestCountAddsUpOverPieces(t *testing.T) {
	alphabet := []string{"\n", "\n", "\n", "\r\n", " ", "  ", "\t", "/", ".", ",", "'s", "'", "s", "word", "Word", "A", "1", "42", "2026",
		"Я", "факт", "é", "e\u0301", "\u0301", "—", "\u00a0", "\u2028", "#", "## ", "- ", "* ", "[ ]", "**", "😀", "\x7f", "\x01", ":", "`", "(", ")"}
	for _, enc := range []string{"cl100k_base", "o200k_base"} {
		c, err := New(enc)
		require.NoError(t, err)
		r := rand.New(rand.NewPCG(1, uint64(len(enc))))
		for i := range 3000 {
			var b strings.Builder
			for range 1 + r.IntN(120) {
				b.WriteString(alphabet[r.IntN(len(alphabet))])
			}
			text := b.String()
			want, err := c.codec.Count(text)
			require.NoError(t, err)
			require.Equal(t, want, c.Count(text), "%s #%d: %q", enc, i, text)
			require.Equal(t, want, c.Count(text), "%s #%d from the cache: %q", enc, i, text)
		}
	}
}

// A typical memory file after an append: counted right, new lines only.
func TestCountMemoryFile(t *testing.T) {
	c, err := New(DefaultEncoding)
	require.NoError(t, err)
	var b strings.Builder
	b.WriteString("# Facts: agent-1\n\n## Domain\n")
	for i := range 300 {
		fmt.Fprintf(&b, "- fact %d: the storage cluster keeps replicas in three zones — https://example.org/x/%d\n", i, i)
	}
	text := b.String()
	want, _ := c.codec.Count(text)
	require.Equal(t, want, c.Count(text))
	appended := text + "- a new fact about the west region\n  continued on an indented line\n"
	want, _ = c.codec.Count(appended)
	require.Equal(t, want, c.Count(appended))
}
