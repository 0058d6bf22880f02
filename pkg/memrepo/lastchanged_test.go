package memrepo

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLastChanged(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	commit(t, r, "c1", put("memory/a/runs/run_1.md", "1"), put("memory/b/runs/run_2.md", "2"))
	c2 := commit(t, r, "c2", put("memory/a/runs/run_1.md", "1b"), put("x.md", "x"))
	commit(t, r, "c3", put("x.md", "y"))
	c2info, err := r.CommitInfo(ctx, c2)
	require.NoError(t, err)

	got, err := r.LastChanged(ctx, head(t, r), "memory/", map[string]bool{
		"memory/a/runs/run_1.md": true, "memory/b/runs/run_2.md": true, "memory/c/runs/none.md": true,
	})
	require.NoError(t, err)
	require.Len(t, got, 2, "a file never changed is absent")
	require.True(t, got["memory/a/runs/run_1.md"].Equal(c2info.Committer.When.Truncate(time.Second)), "the newest change counts")
	require.Contains(t, got, "memory/b/runs/run_2.md")

	_, err = r.LastChanged(ctx, head(t, r), "../x", map[string]bool{"a": true})
	require.ErrorIs(t, err, ErrInvalidPath)
}
