package memrepo

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Head stats the ref file and reads it only when it changed: a commit, a
// ref replaced the way git replaces it, and a ref moved into packed-refs
// are all seen at once, also right after the cache has settled on a file.
func TestHeadSeesEveryChange(t *testing.T) {
	ctx := context.Background()
	r, err := Init(ctx, filepath.Join(t.TempDir(), "m.git"), testOpts())
	require.NoError(t, err)
	refFile := r.refPath(MainBranch)
	settle := func() { // as if the ref had been written long ago
		old := time.Now().Add(-time.Hour)
		require.NoError(t, os.Chtimes(refFile, old, old))
	}

	first, err := r.Head(ctx)
	require.NoError(t, err)
	settle()
	cached, err := r.Head(ctx)
	require.NoError(t, err)
	require.Equal(t, first, cached)
	require.Equal(t, first, r.head.hash, "a settled ref file is cached")

	second, err := r.Commit(ctx, CommitRequest{Parent: first, Message: "x", Changes: []Change{{Path: "a.md", Content: []byte("a")}}})
	require.NoError(t, err)
	got, err := r.Head(ctx)
	require.NoError(t, err)
	require.Equal(t, second, got, "a commit is seen at once")

	// Replaced by hand (temp file and rename, as git does), then settled.
	settle()
	_, err = r.Head(ctx)
	require.NoError(t, err)
	tmp := refFile + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(first.String()+"\n"), 0o644))
	require.NoError(t, os.Rename(tmp, refFile))
	got, err = r.Head(ctx)
	require.NoError(t, err)
	require.Equal(t, first, got, "a ref reset with git is seen at once")

	// Only in packed-refs.
	gitCmd(t, r.Path(), "pack-refs", "--all")
	_, statErr := os.Stat(refFile)
	require.ErrorIs(t, statErr, os.ErrNotExist)
	got, err = r.Head(ctx)
	require.NoError(t, err)
	require.Equal(t, first, got)
}
