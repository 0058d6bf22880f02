package readstate

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/blob"
)

func TestPublishAndLoad(t *testing.T) {
	ctx := context.Background()
	store, err := blob.NewFS(t.TempDir())
	require.NoError(t, err)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	s := New(store, "graph.snapshot", 10*time.Minute, 0, t.TempDir(), logger)
	s.now = func() time.Time { return now }

	found, err := s.Load(ctx, func(io.Reader) (string, error) { t.Fatal("nothing was published"); return "", nil })
	require.NoError(t, err)
	require.False(t, found)

	require.True(t, s.Due("c1", false), "never published")
	require.False(t, s.Due("", true), "no state yet")
	require.NoError(t, s.Publish(ctx, func(w io.Writer) (string, error) {
		_, err := io.WriteString(w, "state at c1")
		return "c1", err
	}))
	require.False(t, s.Due("c1", true), "unchanged since the last upload")
	require.False(t, s.Due("c2", false), "moved, but the interval has not passed")
	require.True(t, s.Due("c2", true), "shutdown publishes what moved")
	now = now.Add(10 * time.Minute)
	require.True(t, s.Due("c2", false))

	other := New(store, "graph.snapshot", 10*time.Minute, 0, t.TempDir(), logger)
	var got string
	found, err = other.Load(ctx, func(r io.Reader) (string, error) {
		data, err := io.ReadAll(r)
		got = string(data)
		return "c1", err
	})
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "state at c1", got)
	require.False(t, other.Due("c1", true), "a loaded state is not published back")

	// A failed write uploads nothing and keeps the previous state.
	require.Error(t, s.Publish(ctx, func(w io.Writer) (string, error) { return "c3", errors.New("disk full") }))
	rc, err := s.Open(ctx)
	require.NoError(t, err)
	data, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	require.Equal(t, "state at c1", string(data))

	// A restore that fails is reported.
	_, err = other.Load(ctx, func(r io.Reader) (string, error) { return "", errors.New("corrupt") })
	require.ErrorContains(t, err, "corrupt")
}

func TestDisabled(t *testing.T) {
	s := New(nil, "x", time.Minute, 0, "", nil)
	require.Nil(t, s)
	require.False(t, s.Due("c1", true))
	require.NoError(t, s.Publish(context.Background(), func(w io.Writer) (string, error) { return "c1", nil }))
	found, err := s.Load(context.Background(), func(r io.Reader) (string, error) { return "", nil })
	require.NoError(t, err)
	require.False(t, found)
	store, err := blob.NewFS(t.TempDir())
	require.NoError(t, err)
	require.Nil(t, New(store, "x", 0, 0, "", nil), "every = 0 turns it off")
}
