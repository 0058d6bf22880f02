package temporalgraph

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A snapshot taken part-way, then the remaining commits, equals applying
// every commit: a restart can resume from a snapshot instead of replaying.
func TestSnapshotResumesExactly(t *testing.T) {
	commits := history()
	full := build(commits)
	for cut := 0; cut <= len(commits); cut++ {
		part := build(commits[:cut])
		var buf bytes.Buffer
		require.NoError(t, part.EncodeSnapshot(gob.NewEncoder(&buf)))
		resumed, err := DecodeSnapshot(gob.NewDecoder(&buf))
		require.NoError(t, err)
		require.Equal(t, part.Dump(), resumed.Dump(), "round trip at %d", cut)
		for _, c := range commits[cut:] {
			resumed.ApplyCommit(c)
		}
		require.Equal(t, full.Dump(), resumed.Dump(), "resumed after %d commits", cut)
	}
	_, err := DecodeSnapshot(gob.NewDecoder(bytes.NewReader([]byte("not gob"))))
	require.Error(t, err)
}

// A snapshot larger than a chunk round-trips, and a truncated one is an
// error rather than a partial graph.
func TestSnapshotChunksAndTruncation(t *testing.T) {
	g := New()
	for i := range 3 * snapChunkSize {
		content := fmt.Sprintf("# Facts\n\n- [[person:p%d|P %d]] works with [[project:x%d|X]]\n", i, i, i%7)
		g.ApplyCommit(Commit{Sha: fmt.Sprintf("%040x", i), Time: time.Unix(int64(i), 0),
			Files: map[string]*string{fmt.Sprintf("memory/a%d/facts.md", i): &content}})
	}
	var buf bytes.Buffer
	require.NoError(t, g.EncodeSnapshot(gob.NewEncoder(&buf)))
	back, err := DecodeSnapshot(gob.NewDecoder(bytes.NewReader(buf.Bytes())))
	require.NoError(t, err)
	require.Equal(t, g.Dump(), back.Dump())

	_, err = DecodeSnapshot(gob.NewDecoder(bytes.NewReader(buf.Bytes()[:buf.Len()/2])))
	require.Error(t, err)
}
