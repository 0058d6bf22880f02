package memrepo

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMirrorFollowsTheRemote(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src, err := Init(ctx, filepath.Join(dir, "canonical.git"), InitOptions{})
	require.NoError(t, err)
	m := NewMirror(src.Path(), filepath.Join(dir, "mirror.git"))
	require.NoError(t, m.Sync(ctx))
	mirror, err := Open(m.Path())
	require.NoError(t, err)
	h1, _ := src.Head(ctx)
	got, err := mirror.Head(ctx)
	require.NoError(t, err)
	require.Equal(t, h1, got)

	h2, err := src.Commit(ctx, CommitRequest{Parent: h1, Message: "more", Changes: []Change{{Path: "memory/a/facts.md", Content: []byte("x")}}})
	require.NoError(t, err)
	require.NoError(t, m.Sync(ctx))
	got, err = mirror.Head(ctx)
	require.NoError(t, err)
	require.Equal(t, h2, got, "a fetch brings the new commit; the open mirror sees it")
	data, err := mirror.ReadFile(ctx, h2, "memory/a/facts.md")
	require.NoError(t, err)
	require.Equal(t, "x", string(data))

	bad := NewMirror(filepath.Join(dir, "missing.git"), filepath.Join(dir, "m2.git"))
	require.Error(t, bad.Sync(ctx))
}
