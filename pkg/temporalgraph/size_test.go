package temporalgraph

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Size counts what the graph keeps, history included: a fact that comes
// and goes adds fact changes each time though the graph looks the same.
func TestSizeGrowsWithHistory(t *testing.T) {
	g := New()
	require.Equal(t, Size{}, g.Size())
	with := ptr("- [[A]] and [[B]]\n")
	without := ptr("- [[A]] alone\n- [[B]] alone\n")
	var sizes []Size
	for i, c := range []*string{with, without, with, without} {
		g.ApplyCommit(Commit{Sha: string(rune('a' + i)), Time: at(i), Files: map[string]*string{factsPath: c}})
		sizes = append(sizes, g.Size())
	}
	require.Equal(t, sizes[0].Nodes, sizes[2].Nodes, "the same entities")
	require.Greater(t, sizes[2].FactChanges, sizes[0].FactChanges, "history is kept")
	require.Greater(t, sizes[3].FactChanges, sizes[1].FactChanges)
	require.Positive(t, sizes[0].Edges)
}

// Size counts the bytes of the graph's file too, once anything is on disk,
// for the operator: the file grows with history and live state alike.
func TestSizeCountsTheFile(t *testing.T) {
	g := NewIn(t.TempDir())
	defer func() { _ = g.Close() }()
	g.flushAt = 10
	require.Zero(t, g.Size().FileBytes, "nothing written yet")
	for i := range 200 {
		g.ApplyCommit(growingCommit(i))
	}
	require.NoError(t, g.Err())
	require.Positive(t, g.Size().FileBytes)
}
