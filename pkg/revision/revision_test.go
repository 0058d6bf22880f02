package revision

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/memrepo"
)

func TestResolve(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)
	repo, err := memrepo.Init(ctx, filepath.Join(t.TempDir(), "memory.git"), memrepo.InitOptions{Now: func() time.Time { return t0 }})
	require.NoError(t, err)
	first, err := repo.Head(ctx)
	require.NoError(t, err)
	second, err := repo.Commit(ctx, memrepo.CommitRequest{Parent: first, Message: "m",
		Changes: []memrepo.Change{{Path: "memory/a/facts.md", Content: []byte("x")}},
		Author:  memrepo.Signature{Name: "n", Email: "e@example.org", When: t0.Add(time.Hour)}})
	require.NoError(t, err)

	for rev, want := range map[string]string{
		"":                  second.String(),
		"HEAD~1":            first.String(),
		second.String()[:8]: second.String(),
		t0.Add(30 * time.Minute).Format(time.RFC3339): first.String(),
		t0.Add(2 * time.Hour).Format(time.RFC3339):    second.String(),
	} {
		c, err := Resolve(ctx, repo, rev)
		require.NoError(t, err, rev)
		require.Equal(t, want, c.Hash.String(), rev)
	}
	// A time before the first commit, an unknown sha and option-like
	// strings name nothing.
	for _, rev := range []string{t0.Add(-time.Second).Format(time.RFC3339), "ffffffff", "--upload-pack=touch x", "-h", "HEAD~5"} {
		_, err := Resolve(ctx, repo, rev)
		require.ErrorIs(t, err, ErrNotFound, rev)
	}
	_, ok := Time("main")
	require.False(t, ok)
}
