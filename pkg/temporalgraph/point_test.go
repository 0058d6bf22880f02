package temporalgraph

import (
	"bytes"
	"encoding/gob"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sameSecond is three commits in one second: an edge added by the first,
// removed by the second, a node first seen in the third.
func sameSecond() []Commit {
	s := at(1)
	return []Commit{
		{Sha: "s0", Time: at(0), Files: map[string]*string{factsPath: ptr("# Facts\n\n- [[Kafka]] is a broker\n")}},
		{Sha: "s1", Time: s, Files: map[string]*string{factsPath: ptr("# Facts\n\n- [[Kafka]] is a broker\n- [[Kafka]] feeds [[Search]]\n")}},
		{Sha: "s2", Time: s, Files: map[string]*string{factsPath: ptr("# Facts\n\n- [[Kafka]] is a broker\n")}},
		{Sha: "s3", Time: s, Files: map[string]*string{factsPath: ptr("# Facts\n\n- [[Kafka]] is a broker\n- [[Zookeeper]] too\n")}},
	}
}

func holds(es []Edge, to string) bool {
	for _, e := range es {
		if e.Relation == RelRelatesTo && (e.To == to || e.From == to) && e.ValidTo.IsZero() {
			return true
		}
	}
	return false
}

// Points in commit order tell apart commits of one second; a time is the
// newest commit at or before it; an interval that closed after a point is
// open as seen from it.
func TestPointsAreExactWithinOneSecond(t *testing.T) {
	g := build(sameSecond())
	edgesAt := func(p Point) []Edge {
		_, es, ok := g.NodeAt("kafka", p)
		require.True(t, ok)
		return es
	}
	require.False(t, holds(edgesAt(AtCommit(at(0), 0)), "search"))
	require.True(t, holds(edgesAt(AtCommit(at(1), 0)), "search"), "right after s1")
	require.False(t, holds(edgesAt(AtCommit(at(1), 1)), "search"), "right after s2")
	require.False(t, holds(edgesAt(AtTime(at(1))), "search"), "a time is its second's newest commit")
	require.False(t, holds(edgesAt(Point{}), "search"))
	ns, es := g.NeighborsAt("kafka", 1, []string{RelRelatesTo}, AtCommit(at(1), 0))
	require.Equal(t, []string{"search"}, ids(ns))
	require.Len(t, es, 1)
	require.True(t, es[0].ValidTo.IsZero(), "it had not closed yet")
	ns, _ = g.NeighborsAt("kafka", 1, []string{RelRelatesTo}, AtCommit(at(1), 1))
	require.Empty(t, ns)

	_, _, ok := g.NodeAt("zookeeper", AtCommit(at(1), 1))
	require.False(t, ok, "first seen in s3")
	_, _, ok = g.NodeAt("zookeeper", AtCommit(at(1), 2))
	require.True(t, ok)
	require.Empty(t, ids(g.Nodes(NodeFilter{Query: "zoo", Point: AtCommit(at(1), 1)})))
	require.Equal(t, []string{"zookeeper"}, ids(g.Nodes(NodeFilter{Query: "zoo", Point: AtCommit(at(1), 2)})))
	require.Equal(t, []string{"zookeeper"}, ids(g.Nodes(NodeFilter{Query: "zoo", At: at(1)})))

	// The whole interval, with its positions.
	all := find(g.allEdges(), "kafka", RelRelatesTo, "search")
	require.Len(t, all, 1)
	require.Equal(t, [2]uint32{0, 1}, [2]uint32{all[0].FromOrd, all[0].ToOrd})
	require.Equal(t, at(1), all[0].ValidTo)

	// Replaying the last commit keeps its position; snapshots keep them all,
	// and a resumed graph counts on from where it stopped.
	commits := sameSecond()
	for cut := 0; cut <= len(commits); cut++ {
		part := build(commits[:cut])
		var buf bytes.Buffer
		require.NoError(t, part.EncodeSnapshot(gob.NewEncoder(&buf)))
		resumed, err := DecodeSnapshot(gob.NewDecoder(&buf))
		require.NoError(t, err)
		for _, c := range commits[cut:] {
			resumed.ApplyCommit(c)
		}
		require.Equal(t, g.Dump(), resumed.Dump(), "resumed after %d commits", cut)
	}
	g.ApplyCommit(commits[3])
	require.Equal(t, build(commits).Dump(), g.Dump())
	g.ApplyCommit(Commit{Sha: "s4", Time: at(1).Add(500 * time.Millisecond).Truncate(time.Second)})
	require.Equal(t, uint32(3), g.ord)
}
