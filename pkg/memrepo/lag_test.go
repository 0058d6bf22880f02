package memrepo

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"
)

// Behind is what the lag metrics of the search index, the entity graph and
// the pusher report: commits after the follower's and the age of the
// oldest of them.
func TestBehindCountsCommitsAfterTheFollowers(t *testing.T) {
	ctx := context.Background()
	r, err := Init(ctx, filepath.Join(t.TempDir(), "m.git"), testOpts())
	require.NoError(t, err)
	root, err := r.Head(ctx)
	require.NoError(t, err)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	head := root
	var commits []plumbing.Hash
	for i := range 3 {
		sig := Signature{Name: "t", Email: "t@x", When: t0.Add(time.Duration(i) * time.Minute)}
		head, err = r.Commit(ctx, CommitRequest{Parent: head, Message: "c", Author: sig, Committer: sig,
			Changes: []Change{{Path: "a.md", Content: []byte{byte('a' + i)}}}})
		require.NoError(t, err)
		commits = append(commits, head)
	}

	lag, err := r.Behind(ctx, head, head, 100)
	require.NoError(t, err)
	require.Equal(t, Lag{}, lag, "caught up")
	require.Zero(t, lag.Age(t0))

	lag, err = r.Behind(ctx, head, commits[0], 100)
	require.NoError(t, err)
	require.Equal(t, 2, lag.Commits)
	require.True(t, lag.Oldest.Equal(t0.Add(time.Minute)), "%v", lag.Oldest)
	require.Equal(t, 9*time.Minute, lag.Age(t0.Add(10*time.Minute)))
	require.False(t, lag.Capped)

	lag, err = r.Behind(ctx, head, plumbing.ZeroHash, 100)
	require.NoError(t, err)
	require.Equal(t, 4, lag.Commits, "nothing yet: all of history, the init commit too")

	lag, err = r.Behind(ctx, head, plumbing.ZeroHash, 2)
	require.NoError(t, err)
	require.Equal(t, Lag{Commits: 2, Oldest: t0.Add(time.Minute), Capped: true}, Lag{Commits: lag.Commits, Oldest: lag.Oldest.UTC(), Capped: lag.Capped})
}
