package searchindex

import (
	"testing"

	"github.com/stretchr/testify/require"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// Search's query keeps its syntax (docs/search.md, "Query syntax"): a quoted phrase must
// match as a phrase, while context assembly's hints are plain words
// (services/contextassembly, TestQueryHintIsNaturalLanguage).
func TestSearchQuotedPhraseIsRequired(t *testing.T) {
	e := newEnv(t)
	e.commit(put("memory/a/facts.md", "# Facts: a\n\n## D\n- the exact phrase is here\n"),
		put("memory/b/facts.md", "# Facts: b\n\n## D\n- a phrase that is not exact\n"),
		put("memory/c/facts.md", "# Facts: c\n\n## D\n- nothing of the kind\n"))
	e.current()

	require.ElementsMatch(t, []string{"memory/a/facts.md", "memory/b/facts.md"}, e.search(&memoryv1.SearchRequest{Query: "exact phrase"}))
	require.Equal(t, []string{"memory/a/facts.md"}, e.search(&memoryv1.SearchRequest{Query: `"exact phrase"`}))
	require.Equal(t, []string{"memory/a/facts.md"}, e.search(&memoryv1.SearchRequest{Query: `"exact phrase" nothing`}),
		"the phrase is required, other words only rank")
	require.Empty(t, e.search(&memoryv1.SearchRequest{Query: `"phrase exact"`}), "word order counts")
}
