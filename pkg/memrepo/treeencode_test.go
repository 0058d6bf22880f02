package memrepo

import (
	"bytes"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/stretchr/testify/require"
)

// The tree builder sorts and encodes trees itself; both must match go-git's
// TreeEntrySorter and Tree.Encode byte for byte, above all where a
// directory's name is a prefix of another name ("a" before "a.b" as a file,
// after it as a directory, since git compares "a/").
func TestTreeEncodingAndDecodingMatchGoGit(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 13))
	names := []string{"a", "a.b", "a-b", "a0", "a/", "ab", "b", "facts.md", "facts", "facts.md.bak", "timeline", "timeline-2", "z", "é", "A"}
	modes := []filemode.FileMode{filemode.Regular, filemode.Dir, filemode.Executable, filemode.Symlink, filemode.Submodule}
	raw := func(o plumbing.EncodedObject) []byte {
		rd, err := o.Reader()
		require.NoError(t, err)
		b, err := io.ReadAll(rd)
		require.NoError(t, err)
		return b
	}
	for range 5000 {
		seen := map[string]bool{}
		var entries []object.TreeEntry
		for range r.IntN(8) {
			name := names[r.IntN(len(names))]
			if r.IntN(3) == 0 {
				name += names[r.IntN(len(names))]
			}
			if seen[name] || bytes.ContainsRune([]byte(name), '/') {
				continue
			}
			seen[name] = true
			var h plumbing.Hash
			for i := range h {
				h[i] = byte(r.IntN(256))
			}
			entries = append(entries, object.TreeEntry{Name: name, Mode: modes[r.IntN(len(modes))], Hash: h})
		}
		want := slices.Clone(entries)
		sort.Sort(object.TreeEntrySorter(want))
		got := slices.Clone(entries)
		slices.SortFunc(got, compareTreeEntries)
		require.Equal(t, want, got)

		wantObj := &plumbing.MemoryObject{}
		require.NoError(t, (&object.Tree{Entries: want}).Encode(wantObj))
		gotObj, err := encodeTree(got)
		require.NoError(t, err)
		require.Equal(t, wantObj.Hash(), gotObj.Hash())
		require.Equal(t, raw(wantObj), raw(gotObj))

		// And decodeTree reads it back as go-git's decoder does.
		var decoded object.Tree
		require.NoError(t, decoded.Decode(wantObj))
		back, err := decodeTree(raw(gotObj))
		require.NoError(t, err)
		require.Equal(t, decoded.Entries, back)
	}
	for _, bad := range []string{"100644 a", "100644 a\x00short", "10x644 a\x00" + string(make([]byte, 20)), " a\x00" + string(make([]byte, 20))} {
		_, err := decodeTree([]byte(bad))
		require.Error(t, err, "%q", bad)
	}
	_, err := encodeTree([]object.TreeEntry{{Name: "a\x00b", Mode: filemode.Regular}})
	require.Error(t, err)
}
