package odb

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"
)

func TestGeometricRollup(t *testing.T) {
	sizes := func(ms []mergeable) []int64 {
		var out []int64
		for _, m := range ms {
			out = append(out, m.objects)
		}
		return out
	}
	packs := func(n ...int64) []mergeable {
		var out []mergeable
		for _, x := range n {
			out = append(out, mergeable{objects: x})
		}
		return out
	}
	// Already a progression: nothing to do.
	require.Empty(t, geometricRollup(packs(1, 2, 4, 8, 100)))
	// Equal small packs are rolled up; the big one stays.
	require.Equal(t, []int64{10, 10, 10, 10}, sizes(geometricRollup(packs(10, 10, 1000, 10, 10))))
	// The rolled-up pack would break the progression with the next one, so
	// that one joins too.
	require.Equal(t, []int64{10, 10, 10, 50}, sizes(geometricRollup(packs(10, 10, 10, 50, 1000))))
}

// Packs holding the same objects (what a crash between a merge's publish
// and its deletes leaves) merge into a pack holding each object once, that
// git reads and verifies.
func TestMergeDropsDuplicates(t *testing.T) {
	dir, other := bareRepo(t), bareRepo(t)
	s := New(dir)
	s.SetRetiredGrace(0)
	half := CompactMinPacks / 2
	ours := writeBlobPacks(t, s, half, 20)
	// The same objects again, in packs of another repository copied in.
	theirs := writeBlobPacks(t, New(other), half, 20)
	require.Equal(t, ours, theirs)
	for i, p := range packFiles(t, other) {
		for _, ext := range []string{".pack", ".idx"} {
			b, err := os.ReadFile(strings.TrimSuffix(p, ".pack") + ext)
			require.NoError(t, err)
			name := filepath.Join(dir, "objects", "pack", fmt.Sprintf("pack-%040x%s", i+1, ext))
			require.NoError(t, os.WriteFile(name, b, 0o444))
		}
	}
	require.Len(t, packFiles(t, dir), 2*half)

	s = New(dir) // one that lists the packs copied in
	s.SetRetiredGrace(0)
	require.NoError(t, s.Compact())
	packs := packFiles(t, dir)
	require.Len(t, packs, 1, "equal packs all merge")
	out := mustGit(t, dir, "", "verify-pack", "-v", packs[0])
	require.Contains(t, out, fmt.Sprintf("non delta: %d objects", len(ours)), "each object once:\n%s", out)
	for _, h := range ours {
		o, err := s.EncodedObject(plumbing.BlobObject, h)
		require.NoError(t, err)
		require.Equal(t, h, o.Hash())
	}
}
