package searchindex

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/blugelabs/bluge"
	"github.com/blugelabs/bluge/index"
	"github.com/stretchr/testify/require"
)

// newFiles is batch i of a pass: n files no other batch has, each naming
// its batch and file in a word of its own.
func newFiles(i, n int) Batch {
	var b Batch
	for j := range n {
		b.Upserts = append(b.Upserts, file(fmt.Sprintf("memory/a%02d/facts.md", i*n+j), fmt.Sprintf("a%02d", i*n+j), 1, "facts", "c1",
			fmt.Sprintf("# Facts\n\n## D\n- batch%d file%d fact one\n- another fact of file%d\n", i, j, j)))
	}
	b.Pass = &Pass{To: "c1", Done: b.Upserts[n-1].Path}
	return b
}

func hitCount(t *testing.T, ix *Index, q string) int {
	t.Helper()
	res, err := ix.Search(context.Background(), Query{Text: q, TopK: MaxTopK})
	require.NoError(t, err)
	return len(res.Hits)
}

// A pass of new files writes two batches at once, and each state document
// claims only what was published before its batch was prepared, so
// whichever bluge introduces last never claims a file not yet written.
func TestPipelineOverlapsNewFilesAndClaimsOnlyPublished(t *testing.T) {
	dir := t.TempDir()
	ix, err := Open(dir)
	require.NoError(t, err)
	ctx := context.Background()
	pl := ix.Pipeline()
	var recorded []*Pass
	for i := range 6 {
		b := newFiles(i, 3)
		require.NoError(t, pl.Apply(ctx, b))
		in := pl.inflight[len(pl.inflight)-1]
		recorded = append(recorded, in.p.state.Pass)
		if i > 0 {
			require.Len(t, pl.inflight, pipelineDepth, "batch %d overlaps the one before", i)
		}
	}
	require.Nil(t, recorded[0], "nothing was published before the first two batches")
	require.Nil(t, recorded[1])
	for i := 2; i < 6; i++ {
		require.Equal(t, newFiles(i-2, 3).Pass, recorded[i], "batch %d claims what batch %d did", i, i-2)
	}
	require.NoError(t, pl.Close())

	st := ix.State()
	require.Equal(t, newFiles(5, 3).Pass, st.Pass, "Close records the whole pass")
	require.Equal(t, 18, st.Documents)
	require.Equal(t, 36, st.Chunks)
	for i := range 6 {
		require.Equal(t, 3, hitCount(t, ix, fmt.Sprintf("batch%d", i)))
	}
	require.NoError(t, ix.Close())

	ix, err = Open(dir)
	require.NoError(t, err)
	defer ix.Close()
	st = ix.State()
	require.Equal(t, newFiles(5, 3).Pass, st.Pass)
	require.Equal(t, 18, st.Documents)
	require.Equal(t, 36, st.Chunks)
	require.Len(t, ix.Files(), 18)
}

// A batch that changes a file indexed or being written waits for every
// earlier batch, so its deletes and inserts land after theirs.
func TestPipelineAppliesUpdatesInOrder(t *testing.T) {
	ix, err := Open(t.TempDir())
	require.NoError(t, err)
	defer ix.Close()
	ctx := context.Background()
	pl := ix.Pipeline()
	v := func(n int) Batch {
		return Batch{Upserts: []File{file("memory/a/facts.md", "a", 1, "facts", fmt.Sprint(n),
			fmt.Sprintf("# Facts\n\n## D\n- steady fact\n- version%d fact\n", n))}}
	}
	require.NoError(t, pl.Apply(ctx, v(1)))
	require.NoError(t, pl.Apply(ctx, newFiles(1, 2)))
	require.NoError(t, pl.Apply(ctx, v(2)))
	require.Empty(t, pl.inflight, "an update is applied alone")
	require.NoError(t, pl.Apply(ctx, newFiles(2, 2)))
	require.NoError(t, pl.Apply(ctx, Batch{Deletes: []string{newFiles(2, 2).Upserts[0].Path}}))
	require.NoError(t, pl.Apply(ctx, v(3)))
	require.NoError(t, pl.Apply(ctx, Batch{Commit: "c9"}))
	require.NoError(t, pl.Close())

	require.Equal(t, 1, hitCount(t, ix, "steady"))
	require.Zero(t, hitCount(t, ix, "version1")+hitCount(t, ix, "version2"))
	require.Equal(t, 1, hitCount(t, ix, "version3"))
	require.Equal(t, 1, hitCount(t, ix, "batch2"))
	st := ix.State()
	require.Equal(t, "c9", st.LastCommit)
	require.Nil(t, st.Pass)
	require.Equal(t, 1+2+1, st.Documents)
}

// When a write fails, the batches written beside it are published anyway:
// they are in the index, and a retried pass must update them, not add
// their chunks a second time.
func TestPipelineFailurePublishesWhatWasWritten(t *testing.T) {
	ix, err := Open(t.TempDir())
	require.NoError(t, err)
	defer ix.Close()
	ctx := context.Background()
	// The first two writes wait until the second is marked to fail.
	var failing atomic.Pointer[index.Batch]
	gate := make(chan struct{})
	boom := errors.New("disk full")
	writeBatch = func(w *bluge.Writer, b *index.Batch) error {
		<-gate
		if failing.Load() == b {
			return boom
		}
		return w.Batch(b)
	}
	t.Cleanup(func() { writeBatch = (*bluge.Writer).Batch })

	pl := ix.Pipeline()
	require.NoError(t, pl.Apply(ctx, newFiles(0, 2)))
	require.NoError(t, pl.Apply(ctx, newFiles(1, 2)))
	failing.Store(pl.inflight[1].p.batch)
	close(gate)
	require.NoError(t, pl.Apply(ctx, newFiles(2, 2)), "batch 0 is published")
	require.ErrorIs(t, pl.Apply(ctx, newFiles(3, 2)), boom, "batch 1 failed")
	require.ErrorIs(t, pl.Close(), boom)
	require.Len(t, ix.Files(), 4, "batches 0 and 2 were written")
	require.Equal(t, 2, hitCount(t, ix, "batch2"))
	require.Zero(t, hitCount(t, ix, "batch1"))

	pl = ix.Pipeline()
	for i := range 4 {
		require.NoError(t, pl.Apply(ctx, newFiles(i, 2)))
	}
	require.NoError(t, pl.Close())
	for i := range 4 {
		require.Equal(t, 2, hitCount(t, ix, fmt.Sprintf("batch%d", i)), "batch %d once", i)
	}
	require.Equal(t, 8, ix.State().Documents)
}
