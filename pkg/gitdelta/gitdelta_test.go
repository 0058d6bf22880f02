package gitdelta

import (
	"bytes"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/stretchr/testify/require"
)

// Deltas of the edits the engine makes patch back to the new version, by
// our Patch and by go-git's.
func TestPrefixSuffix(t *testing.T) {
	old := []byte(strings.Repeat("0123456789", 20000))
	for name, nw := range map[string][]byte{
		"insert":  append(append([]byte{}, old[:100]...), append([]byte("inserted"), old[100:]...)...),
		"append":  append(append([]byte{}, old...), "tail"...),
		"prepend": append([]byte("head"), old...),
		"replace": append(append(append([]byte{}, old[:70000]...), strings.Repeat("x", 300)...), old[70300:]...),
		"cut":     append(append([]byte{}, old[:5000]...), old[9000:]...),
		"same":    old,
	} {
		d, ok := PrefixSuffix(old, nw)
		require.True(t, ok, name)
		require.Less(t, len(d), 400, name)
		got, err := Patch(old, d, 1<<30)
		require.NoError(t, err, name)
		require.Equal(t, nw, got, name)
		theirs, err := packfile.PatchDelta(old, d)
		require.NoError(t, err, name)
		require.Equal(t, nw, theirs, name)
	}
	_, ok := PrefixSuffix([]byte("abc"), []byte("xyz"))
	require.False(t, ok, "nothing in common")
}

func TestPatchRefusesLargeResults(t *testing.T) {
	d := AppendHeader(nil, 3, 1<<40)
	_, err := Patch([]byte("abc"), AppendCopy(d, 0, 3), 1<<30)
	require.ErrorContains(t, err, "out of range")
}

// Patch agrees with go-git's PatchDelta on random deltas, valid or not.
func FuzzPatch(f *testing.F) {
	base := []byte("the base text of a delta, long enough to copy ranges out of\n")
	f.Add(base, []byte{byte(len(base)), 5, 0x90, 5, 0x91, 0, 0})
	f.Add(base, []byte{byte(len(base)), 3, 3, 'a', 'b', 'c'})
	f.Add(base, []byte{byte(len(base)), 0})
	f.Fuzz(func(t *testing.T, base, delta []byte) {
		if len(base) == 0 {
			return // go-git refuses empty bases outright
		}
		want, werr := packfile.PatchDelta(base, delta)
		got, gerr := Patch(base, delta, 1<<30)
		if gerr == nil && werr == nil {
			require.True(t, bytes.Equal(want, got), "go-git %q, ours %q", want, got)
		}
		if gerr == nil && werr != nil {
			t.Fatalf("accepted a delta go-git refuses (%v): %q", werr, got)
		}
	})
}
