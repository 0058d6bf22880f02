package entitygraph

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A snapshot taken part-way, then the remaining commits, equals applying
// every commit: a restart can resume from a snapshot instead of replaying.
func TestSnapshotResumesExactly(t *testing.T) {
	commits := history()
	full := build(commits)
	for cut := 0; cut <= len(commits); cut++ {
		part := build(commits[:cut])
		data, err := part.MarshalBinary()
		require.NoError(t, err)
		resumed := New()
		require.NoError(t, resumed.UnmarshalBinary(data))
		require.Equal(t, part.Dump(), resumed.Dump(), "round trip at %d", cut)
		for _, c := range commits[cut:] {
			resumed.ApplyCommit(c)
		}
		require.Equal(t, full.Dump(), resumed.Dump(), "resumed after %d commits", cut)
	}
	require.Error(t, New().UnmarshalBinary([]byte("not gob")))
}
