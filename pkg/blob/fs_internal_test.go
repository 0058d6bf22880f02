package blob

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// List describes objects with fresh sidecars from the sidecar and a stat
// of the data file, through their directories; only objects whose sidecar
// is missing or stale take the slow way (Stat, which opens the file).
func TestListReadsFreshSidecarsThroughTheirDirectory(t *testing.T) {
	ctx := context.Background()
	s, err := NewFS(t.TempDir())
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	for i := range 6 {
		_, err := PutBytes(ctx, s, fmt.Sprintf("agents/a%d/sources/s.md", i), []byte(fmt.Sprint("source ", i)), PutOptions{})
		require.NoError(t, err)
	}
	_, err = PutBytes(ctx, s, "agents/top.md", []byte("top"), PutOptions{})
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(s.Dir(), metaDir, "agents", "a3", "sources", "s.md")))

	var slow []string
	testHookListStat = func(key string) { slow = append(slow, key) }
	defer func() { testHookListStat = func(string) {} }()
	var keys []string
	for info, err := range s.List(ctx, "agents/") {
		require.NoError(t, err)
		want, err := s.Stat(ctx, info.Key)
		require.NoError(t, err)
		require.Equal(t, want, info)
		keys = append(keys, info.Key)
	}
	require.Len(t, keys, 7)
	require.Equal(t, []string{"agents/a3/sources/s.md"}, slow, "only the object without a sidecar is described the slow way")
}
