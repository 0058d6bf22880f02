package odb

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/stretchr/testify/require"
)

// BenchmarkEncodeEntry compresses the two big objects every commit of
// membench's default data set writes: memory/ (1,000 agents' entries) and a
// near-limit facts.md.
func BenchmarkEncodeEntry(b *testing.B) {
	var tree []object.TreeEntry
	for i := range 1000 {
		h := plumbing.ComputeHash(plumbing.BlobObject, []byte(strconv.Itoa(i)))
		tree = append(tree, object.TreeEntry{Name: fmt.Sprintf("agent-%05d", i), Mode: filemode.Dir, Hash: h})
	}
	// Sorted already; go-git encodes it as memrepo does (its
	// TestTreeEncodingAndDecodingMatchGoGit).
	treeObj := &plumbing.MemoryObject{}
	require.NoError(b, (&object.Tree{Entries: tree}).Encode(treeObj))
	facts := &plumbing.MemoryObject{}
	facts.SetType(plumbing.BlobObject)
	for i := range 260 {
		_, _ = fmt.Fprintf(facts, "- The service-%d release depends on the schema-%d migration since 2025-12-%02d\n", i, i*7%97, i%28+1) // into memory: cannot fail
	}
	for _, o := range []struct {
		name string
		obj  *plumbing.MemoryObject
	}{{"memory-tree", treeObj}, {"facts", facts}} {
		b.Run(o.name, func(b *testing.B) {
			b.SetBytes(o.obj.Size())
			for b.Loop() {
				if _, err := encodeEntry(o.obj); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
