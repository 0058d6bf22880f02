package fulltext

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// Expand (RM3): a chunk that shares no word with the query, but several
// with the chunks the query finds, is found by the expanded query and not
// by the query alone; a query with a phrase is not expanded; without
// feedback words nothing changes.
func TestExpandFindsWhatSharesNoWordWithTheQuery(t *testing.T) {
	ix, err := Open(t.TempDir())
	require.NoError(t, err)
	defer func() { require.NoError(t, ix.Close()) }()
	require.NoError(t, ix.Apply(context.Background(), Batch{Upserts: []File{
		file("memory/a/facts.md", "a", 1, "facts", "c", "# F\n\n## D\n"+
			"- The zeppelin flight left from the airship hangar at dawn\n"+
			"- Our zeppelin flight was delayed: the airship hangar doors jammed\n"+
			"- The airship hangar at Friedrichshafen holds three hulls\n"+
			"- Tomatoes need watering twice a week\n"),
	}}))
	search := func(text string, expand bool) []string {
		res, err := ix.Search(context.Background(), Query{Text: text, Expand: expand, TopK: 10})
		require.NoError(t, err)
		var lines []string
		for _, h := range res.Hits {
			lines = append(lines, h.Path+":"+strconv.Itoa(h.StartLine))
		}
		return lines
	}
	plain := search("zeppelin flight", false)
	require.ElementsMatch(t, []string{"memory/a/facts.md:4", "memory/a/facts.md:5"}, plain)
	expanded := search("zeppelin flight", true)
	require.Contains(t, expanded, "memory/a/facts.md:6", "found through the words of the first pass's hits")
	require.NotContains(t, expanded, "memory/a/facts.md:7", "the tomatoes share no word with anything found")
	require.Equal(t, expanded[:2], plain[:2], "the query's own hits stay first")
	require.Equal(t, search(`"zeppelin flight"`, false), search(`"zeppelin flight"`, true), "a phrase query is not expanded")
}
