package odb

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"
)

// writeBlobPacks writes packs packs of perPack distinct blobs each through
// WriteNew (one pack per call, as memrepo's commits do) and returns the
// blobs' hashes.
func writeBlobPacks(tb testing.TB, s *Store, packs, perPack int) []plumbing.Hash {
	tb.Helper()
	var hs []plumbing.Hash
	body := strings.Repeat("- a durable fact the agent relies on\n", 8)
	for p := range packs {
		set := NewObjectSet()
		for i := range perPack {
			o := &plumbing.MemoryObject{}
			o.SetType(plumbing.BlobObject)
			_, _ = fmt.Fprintf(o, "# facts %d/%d\n%s", p, i, body) // into memory: cannot fail
			hs = append(hs, set.Add(o))
		}
		require.NoError(tb, s.WriteNew(set))
	}
	return hs
}

// benchStore is a store of 16 packs × 512 blobs (the number of packs
// Compact lets pile up) and the blobs' hashes in random order.
func benchStore(b *testing.B) (*Store, []*packIndex, []plumbing.Hash) {
	dir := bareRepo(b)
	s := New(dir)
	hs := writeBlobPacks(b, s, CompactMinPacks, 512)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(hs), func(i, j int) { hs[i], hs[j] = hs[j], hs[i] })
	packs, err := New(dir).packList(true) // loaded from disk, as at start
	require.NoError(b, err)
	return New(dir), packs, hs
}

// BenchmarkFindObject is the index part of a lookup that misses the object
// cache: the packs are probed newest first until one holds the object.
func BenchmarkFindObject(b *testing.B) {
	_, packs, hs := benchStore(b)
	b.Run("serial", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if _, ok := benchFind(packs, hs[i%len(hs)]); !ok {
				b.Fatal("not found")
			}
			i++
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			i := rand.IntN(len(hs))
			for pb.Next() {
				if _, ok := benchFind(packs, hs[i%len(hs)]); !ok {
					b.Error("not found")
					return
				}
				i++
			}
		})
	})
}

// BenchmarkReadPacked is a whole lookup that misses the object cache:
// index probes, the pread and the inflate.
func BenchmarkReadPacked(b *testing.B) {
	s, packs, hs := benchStore(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := s.readPacked(packs, hs[i%len(hs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkReadOfsDelta reads objects of a pack git repacked with deep
// OFS_DELTA chains through a small object cache, so most reads resolve
// bases by offset (the index's offset → hash lookup).
func BenchmarkReadOfsDelta(b *testing.B) {
	dir := bareRepo(b)
	var commits [][]file
	lines := []string{}
	for i := range 200 {
		lines = append(lines, fmt.Sprintf("- fact %d about [[entity %d]]", i, i%9))
		commits = append(commits, []file{{fmt.Sprintf("memory/a%d/facts.md", i%10), strings.Join(lines, "\n")}})
	}
	importCommits(b, dir, "main", commits)
	mustGit(b, dir, "", "repack", "-a", "-d", "-f", "-q", "--window=50", "--depth=50")
	s := New(dir)
	s.cache.Resize(32 << 10)
	packs, err := s.packList(true)
	require.NoError(b, err)
	require.Len(b, packs, 1)
	var hs []plumbing.Hash
	for _, l := range strings.Split(mustGit(b, dir, "", "cat-file", "--batch-all-objects", "--batch-check=%(objectname)"), "\n") {
		if l != "" {
			hs = append(hs, plumbing.NewHash(l))
		}
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(hs), func(i, j int) { hs[i], hs[j] = hs[j], hs[i] })
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := s.readPacked(packs, hs[i%len(hs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// benchFind probes packs as readPacked does.
func benchFind(packs []*packIndex, h plumbing.Hash) (int64, bool) {
	for _, p := range packs {
		if off, err := p.idx.FindOffset(h); err == nil {
			return off, true
		}
	}
	return 0, false
}

// BenchmarkFindHash is the offset → hash lookup of an OFS_DELTA's base,
// alone, in a pack git wrote without a .rev (and then with one).
func BenchmarkFindHash(b *testing.B) {
	for _, rev := range []bool{false, true} {
		b.Run(fmt.Sprintf("rev=%v", rev), func(b *testing.B) {
			dir := bareRepo(b)
			var commits [][]file
			for i := range 2000 {
				commits = append(commits, []file{{fmt.Sprintf("memory/a%d/facts.md", i%50), fmt.Sprint("fact ", i)}})
			}
			importCommits(b, dir, "main", commits)
			mustGit(b, dir, "", "-c", fmt.Sprintf("pack.writeReverseIndex=%v", rev), "repack", "-a", "-d", "-q")
			packs, err := New(dir).packList(true)
			require.NoError(b, err)
			require.Len(b, packs, 1)
			var offs []int64
			for _, l := range strings.Split(mustGit(b, dir, "", "verify-pack", "-v", filepath.Join(dir, "objects", "pack", packs[0].name+".idx")), "\n") {
				if f := strings.Fields(l); len(f) >= 5 && len(f[0]) == 40 {
					off, err := strconv.ParseInt(f[4], 10, 64)
					require.NoError(b, err)
					offs = append(offs, off)
				}
			}
			rand.New(rand.NewPCG(1, 2)).Shuffle(len(offs), func(i, j int) { offs[i], offs[j] = offs[j], offs[i] })
			idx := packs[0].idx
			i := 0
			for b.Loop() {
				if _, err := idx.FindHash(offs[i%len(offs)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
