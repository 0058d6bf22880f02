package proposalapply

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/blob"
)

// A fact read all the time rewrites its agent's index at most once per
// UsageResolution, and a flush saves exactly the changed documents.
func TestFactUsageResolution(t *testing.T) {
	ctx := context.Background()
	store, err := blob.NewFS(t.TempDir())
	require.NoError(t, err)
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	f := newFactTimes(store, func() time.Time { return t0 })

	n, err := f.Used(ctx, "a", map[string]time.Time{"h1": t0})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.True(t, f.dirty["a"])
	require.NoError(t, f.Flush(ctx))
	require.Empty(t, f.dirty)

	n, err = f.Used(ctx, "a", map[string]time.Time{"h1": t0.Add(10 * time.Minute)})
	require.NoError(t, err)
	require.Equal(t, 1, n, "the report is accepted")
	require.False(t, f.dirty["a"], "but within the resolution nothing needs saving")

	_, err = f.Used(ctx, "a", map[string]time.Time{"h1": t0.Add(UsageResolution)})
	require.NoError(t, err)
	require.True(t, f.dirty["a"])
	require.NoError(t, f.Flush(ctx))

	reloaded := newFactTimes(store, func() time.Time { return t0 })
	doc, err := reloaded.load(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, t0.Add(UsageResolution), doc.Facts["h1"].Used, "the flushed document holds the newer use")
}
