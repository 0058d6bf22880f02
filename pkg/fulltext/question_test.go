package fulltext

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A question's framing words (what, did, do, you) must not rank a chunk
// that shares only them above one that holds the question's subject.
func TestQuestionWordsDoNotRank(t *testing.T) {
	ix, err := OpenMemory()
	require.NoError(t, err)
	defer func() { require.NoError(t, ix.Close()) }()
	var b strings.Builder
	b.WriteString("# Talk\n\n")
	for i := range 12 {
		fmt.Fprintf(&b, "- Caroline mentioned topic number %d at the meeting\n", i)
	}
	b.WriteString("- What did you do? What did they do?\n")
	require.NoError(t, ix.Apply(context.Background(), Batch{Upserts: []File{
		file("memory/a/facts.md", "a", 1, "facts", "c", b.String()),
	}}))
	const questionLine = 15 // the line of framing words only
	first := func(q Query) int {
		res, err := ix.Search(context.Background(), q)
		require.NoError(t, err)
		require.NotEmpty(t, res.Hits)
		return res.Hits[0].StartLine
	}
	require.NotEqual(t, questionLine, first(Query{Text: "What did Caroline do?", TopK: 5}))
	// Switched off (the ablation), the framing words rank again.
	require.Equal(t, questionLine, first(Query{Text: "What did Caroline do?", TopK: 5, KeepQuestionWords: true}))
	// A query of framing words only still searches them.
	require.Equal(t, questionLine, first(Query{Text: "what did they do", TopK: 5}))
	// A phrase keeps every word.
	require.Equal(t, questionLine, first(Query{Text: `"what did you do"`, TopK: 5}))
}
