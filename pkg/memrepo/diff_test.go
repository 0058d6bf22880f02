package memrepo

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"
)

func TestDiffCommits(t *testing.T) {
	ctx := context.Background()
	r, err := Init(ctx, filepath.Join(t.TempDir(), "m.git"), InitOptions{})
	require.NoError(t, err)
	base, err := r.Head(ctx)
	require.NoError(t, err)
	c1, err := r.Commit(ctx, CommitRequest{Parent: base, Message: "one", Changes: []Change{
		{Path: "memory/a/facts.md", Content: []byte("a")}, {Path: "memory/b/facts.md", Content: []byte("b")}}})
	require.NoError(t, err)
	c2, err := r.Commit(ctx, CommitRequest{Parent: c1, Message: "two", Changes: []Change{
		{Path: "memory/a/facts.md", Content: []byte("a2")}, {Path: "memory/b/facts.md", Delete: true}, {Path: "logic/a/current.pseudo.md", Content: []byte("x")}}})
	require.NoError(t, err)

	got, err := r.DiffCommits(ctx, base, c2)
	require.NoError(t, err)
	require.Equal(t, []string{"logic/a/current.pseudo.md", "memory/a/facts.md"}, got)
	got, err = r.DiffCommits(ctx, c1, c2)
	require.NoError(t, err)
	require.Equal(t, []string{"logic/a/current.pseudo.md", "memory/a/facts.md", "memory/b/facts.md"}, got)
	all, err := r.DiffCommits(ctx, plumbing.ZeroHash, c2)
	require.NoError(t, err)
	require.Equal(t, []string{"README.md", "logic/a/current.pseudo.md", "memory/a/facts.md"}, all)
	none, err := r.DiffCommits(ctx, c2, c2)
	require.NoError(t, err)
	require.Empty(t, none)
}
