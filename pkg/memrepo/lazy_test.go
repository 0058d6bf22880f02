package memrepo

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Services of one process share one handle (one set of caches); without a
// shared one each opens the path itself once it exists.
func TestLazyHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory.git")
	own := LazyFor(nil, path)
	_, err := own.Get()
	require.Error(t, err, "not there yet")

	r, err := Init(context.Background(), path, InitOptions{})
	require.NoError(t, err)
	shared := Opened(r)
	require.Same(t, shared, LazyFor(shared, path))
	got, err := LazyFor(shared, path).Get()
	require.NoError(t, err)
	require.Same(t, r, got, "the open repository itself")

	opened, err := own.Get()
	require.NoError(t, err)
	require.NotSame(t, r, opened, "a handle of its own")
	again, err := own.Get()
	require.NoError(t, err)
	require.Same(t, opened, again, "opened once")
}
