package odb

import (
	"bytes"
	"cmp"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/stretchr/testify/require"
)

// gitIdxEntries returns what git reads from the index at path (git
// show-index: offset, name, CRC-32), in pack order.
func gitIdxEntries(t *testing.T, path string) []idxEntry {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []idxEntry
	for _, l := range strings.Split(strings.TrimSpace(mustGit(t, t.TempDir(), string(data), "show-index")), "\n") {
		f := strings.Fields(l) // <offset> <sha> (<crc>)
		require.Len(t, f, 3, l)
		off, err := strconv.ParseInt(f[0], 10, 64)
		require.NoError(t, err)
		crc, err := strconv.ParseUint(strings.Trim(f[2], "()"), 16, 32)
		require.NoError(t, err)
		out = append(out, idxEntry{hash: plumbing.NewHash(f[1]), offset: off, crc: uint32(crc)})
	}
	slices.SortFunc(out, func(a, b idxEntry) int { return cmp.Compare(a.offset, b.offset) })
	return out
}

// requireIdxMatches checks every lookup of x against want (git's reading).
func requireIdxMatches(t *testing.T, x *packIdx, want []idxEntry) {
	t.Helper()
	require.Equal(t, int64(len(want)), x.Count())
	got, err := x.entriesByOffset()
	require.NoError(t, err)
	require.Equal(t, want, got)
	for _, e := range want {
		require.True(t, x.Contains(e.hash))
		off, err := x.FindOffset(e.hash)
		require.NoError(t, err)
		require.Equal(t, e.offset, off, e.hash.String())
		i, _ := x.find(e.hash)
		require.Equal(t, e.crc, x.crcAt(i))
		h, err := x.FindHash(e.offset)
		require.NoError(t, err)
		require.Equal(t, e.hash, h)
	}
	missing := plumbing.ComputeHash(plumbing.BlobObject, []byte("in no pack"))
	require.False(t, x.Contains(missing))
	_, err = x.FindOffset(missing)
	require.ErrorIs(t, err, plumbing.ErrObjectNotFound)
	_, err = x.FindHash(want[len(want)-1].offset + 1)
	require.ErrorIs(t, err, plumbing.ErrObjectNotFound)
}

// Packs git wrote (with OFS_DELTA entries, with and without a .rev) and
// packs WriteNew and Compact wrote read exactly as git reads them: names,
// offsets and CRC-32s (git show-index), and in the same pack order as git
// verify-pack lists them, which also checks our indexes' checksums.
func TestIdxMatchesGit(t *testing.T) {
	check := func(t *testing.T, idxPath string, wantRev bool) {
		want := gitIdxEntries(t, idxPath)
		var order []string
		for _, l := range strings.Split(mustGit(t, t.TempDir(), "", "verify-pack", "-v", idxPath), "\n") {
			if f := strings.Fields(l); len(f) >= 5 && len(f[0]) == 40 {
				order = append(order, f[0]+" "+f[4]) // name, offset
			}
		}
		var gotOrder []string
		for _, e := range want {
			gotOrder = append(gotOrder, e.hash.String()+" "+strconv.FormatInt(e.offset, 10))
		}
		slices.Sort(order)
		slices.Sort(gotOrder)
		require.Equal(t, order, gotOrder)

		x, err := openIdx(idxPath, strings.TrimSuffix(idxPath, ".idx")+".rev")
		require.NoError(t, err)
		requireIdxMatches(t, x, want)
		require.Equal(t, wantRev, x.rev != nil, "the .rev is used when there is one")
		require.Equal(t, !wantRev, x.revDerived != nil)
	}
	for _, rev := range []bool{false, true} {
		t.Run(fmt.Sprintf("git-rev=%v", rev), func(t *testing.T) {
			dir := bareRepo(t)
			var commits [][]file
			for i := range 40 {
				commits = append(commits, []file{{"memory/a/facts.md", strings.Repeat(fmt.Sprintf("- fact %d\n", i), i+1)}})
			}
			importCommits(t, dir, "main", commits)
			mustGit(t, dir, "", "-c", fmt.Sprintf("pack.writeReverseIndex=%v", rev), "repack", "-a", "-d", "-f", "-q")
			packs := packFiles(t, dir)
			require.Len(t, packs, 1)
			check(t, strings.TrimSuffix(packs[0], ".pack")+".idx", rev)
		})
	}
	t.Run("ours", func(t *testing.T) {
		dir := bareRepo(t)
		s := New(dir)
		s.SetRetiredGrace(0)
		writeBlobPacks(t, s, CompactMinPacks, 20)
		require.NoError(t, s.Compact()) // a merged pack too
		packs := packFiles(t, dir)
		require.NotEmpty(t, packs)
		for _, p := range packs {
			check(t, strings.TrimSuffix(p, ".pack")+".idx", false)
		}
	})
}

// Offsets past 2 GiB (the 8-byte offset table) read as git reads them,
// from an index our encoder wrote (git show-index needs no pack) and from
// one go-git's encoder wrote; an 8-byte offset index out of range is an
// error.
func TestIdxLargeOffsets(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var entries []idxEntry
	off := int64(12)
	for i := range 300 {
		var h plumbing.Hash
		for j := range h {
			h[j] = byte(rng.UintN(256))
		}
		entries = append(entries, idxEntry{hash: h, offset: off, crc: rng.Uint32()})
		off += 1 + rng.Int64N(40<<20) // ~6 GiB in all: both tables used
		if i == 150 {
			off = largeOffset - 1 // the last 4-byte one, then the first 8-byte one
		}
	}
	want := slices.Clone(entries)
	slices.SortFunc(want, func(a, b idxEntry) int { return cmp.Compare(a.offset, b.offset) })
	require.Greater(t, want[len(want)-1].offset, int64(1)<<32)

	data := encodeIdx(slices.Clone(entries), plumbing.ComputeHash(plumbing.BlobObject, []byte("pack")))
	path := filepath.Join(t.TempDir(), "pack-large.idx")
	require.NoError(t, os.WriteFile(path, data, 0o444))
	require.Equal(t, want, gitIdxEntries(t, path))
	x, err := openIdx(path, "")
	require.NoError(t, err)
	require.Greater(t, x.nLarge, 100)
	requireIdxMatches(t, x, want)

	// The same index from go-git's writer and encoder, on the heap.
	var w idxfile.Writer
	for _, e := range entries {
		w.Add(e.hash, uint64(e.offset), e.crc)
	}
	require.NoError(t, w.OnFooter(plumbing.ComputeHash(plumbing.BlobObject, []byte("pack"))))
	mi, err := w.Index()
	require.NoError(t, err)
	var buf bytes.Buffer
	_, err = idxfile.NewEncoder(&buf).Encode(mi)
	require.NoError(t, err)
	require.Equal(t, data, buf.Bytes(), "byte for byte what go-git wrote")
	x, err = parseIdx(buf.Bytes())
	require.NoError(t, err)
	requireIdxMatches(t, x, want)

	// Point an entry past the 8-byte table (and fix the checksum).
	bad := slices.Clone(data)
	offsets := idxHeaderLen + idxFanoutLen + x.n*(hashLen+4)
	binary.BigEndian.PutUint32(bad[offsets+4*7:], largeOffset|uint32(x.nLarge))
	resum(bad)
	y, err := parseIdx(bad)
	require.NoError(t, err)
	_, err = y.FindOffset(y.hashAt(7))
	require.ErrorIs(t, err, errCorruptIdx)
	_, err = y.entriesByOffset()
	require.ErrorIs(t, err, errCorruptIdx)
	_, err = y.FindHash(12)
	require.ErrorIs(t, err, errCorruptIdx)
}

// resum rewrites the checksum an index ends with.
func resum(idx []byte) {
	sum := sha1.Sum(idx[:len(idx)-hashLen])
	copy(idx[len(idx)-hashLen:], sum[:])
}

// A truncated or corrupt .idx is an error: every truncation and byte flip
// of a real one, with and without a fixed-up checksum, and on disk.
func TestIdxCorrupt(t *testing.T) {
	dir := bareRepo(t)
	s := New(dir)
	hs := writeBlobPacks(t, s, 1, 40)
	idxPath := strings.TrimSuffix(packFiles(t, dir)[0], ".pack") + ".idx"
	orig, err := os.ReadFile(idxPath)
	require.NoError(t, err)
	for n := range len(orig) {
		_, err := parseIdx(orig[:n])
		require.ErrorIs(t, err, errCorruptIdx, "truncated to %d", n)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 2000 {
		data := slices.Clone(orig)
		data[rng.IntN(len(data))] ^= byte(1 + rng.IntN(255))
		_, err := parseIdx(data)
		require.ErrorIs(t, err, errCorruptIdx)
		resum(data)
		exerciseIdx(data) // may parse (a flipped name or CRC): must not panic
	}
	for _, data := range [][]byte{nil, orig[:idxMinLen-1], orig[:len(orig)-1]} {
		require.NoError(t, os.Chmod(idxPath, 0o644))
		require.NoError(t, os.WriteFile(idxPath, data, 0o644))
		_, err := New(dir).Get(plumbing.AnyObject, hs[0])
		require.ErrorIs(t, err, errCorruptIdx)
		require.Contains(t, err.Error(), "memrepo: load pack-")
	}
}

// exerciseIdx parses data and, if it is an index, runs every lookup on
// every entry; errors are fine, panics are not.
func exerciseIdx(data []byte) {
	x, err := parseIdx(data)
	if err != nil {
		return
	}
	for i := range x.n {
		h := x.hashAt(i)
		x.Contains(h)
		_ = x.crcAt(i)
		if off, err := x.FindOffset(h); err == nil {
			_, _ = x.FindHash(off)
		}
		_, _ = x.FindHash(int64(i))
	}
	_, _ = x.entriesByOffset()
	for _, p := range []string{"00", "7f", "ff", "abc"} {
		lower, _ := hexLower(p)
		x.hashesWithPrefix(lower, p, func(plumbing.Hash) {})
	}
}

func hexLower(prefix string) ([]byte, error) {
	h, ok := ParseHash((prefix + strings.Repeat("0", 40))[:40])
	if !ok {
		return nil, fmt.Errorf("bad prefix %q", prefix)
	}
	return h[:], nil
}

// FuzzIdx feeds arbitrary bytes to the index parser and lookups, as they
// are and with their checksum made valid (else nearly every input stops
// there).
func FuzzIdx(f *testing.F) {
	var entries []idxEntry
	for i := range 5 {
		entries = append(entries, idxEntry{hash: plumbing.ComputeHash(plumbing.BlobObject, []byte{byte(i)}), offset: int64(12 + i*100), crc: uint32(i)})
	}
	entries = append(entries, idxEntry{hash: plumbing.ComputeHash(plumbing.BlobObject, []byte("big")), offset: 5 << 30})
	valid := encodeIdx(entries, plumbing.ZeroHash)
	f.Add(valid)
	f.Add(valid[:len(valid)-30])
	f.Add(encodeIdx(nil, plumbing.ZeroHash))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		exerciseIdx(data)
		if len(data) >= hashLen {
			data = slices.Clone(data)
			resum(data)
			exerciseIdx(data)
		}
	})
}

// heapInUse returns the live heap after a full collection.
func heapInUse() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// The heap the pack indexes take does not grow with the number of objects:
// 200 packs of 100 objects each take what 200 packs of one object take (a
// few hundred bytes a pack, for the pack list's entry), after a lookup of
// every object. go-git's MemoryIndex, which they replace, is logged for
// comparison: ~18 KiB a pack plus ~60 bytes an object found.
func TestIdxHeap(t *testing.T) {
	packs, perPack := 200, 100
	if testing.Short() {
		packs = 50
	}
	// Each returns the heap the loaded indexes take after a lookup of
	// every object, as readPacked looks them up.
	mapped := func(dir string, hs []plumbing.Hash) int64 {
		base := heapInUse()
		list, err := New(dir).packList(true)
		require.NoError(t, err)
		require.Len(t, list, packs)
		for _, h := range hs {
			_, ok := benchFind(list, h)
			require.True(t, ok)
		}
		defer runtime.KeepAlive(list)
		return heapInUse() - base
	}
	memoryIndex := func(dir string, hs []plumbing.Hash) int64 {
		base := heapInUse()
		var mis []*idxfile.MemoryIndex
		for _, p := range packFiles(t, dir) {
			data, err := os.ReadFile(strings.TrimSuffix(p, ".pack") + ".idx")
			require.NoError(t, err)
			mi := idxfile.NewMemoryIndex()
			require.NoError(t, idxfile.NewDecoder(bytes.NewReader(data)).Decode(mi))
			mis = append(mis, mi)
		}
		for _, h := range hs {
			for _, mi := range mis {
				if _, err := mi.FindOffset(h); err == nil {
					break
				}
			}
		}
		defer runtime.KeepAlive(mis)
		return heapInUse() - base
	}
	measure := func(perPack int) (ours, memIdx int64) {
		dir := bareRepo(t)
		hs := writeBlobPacks(t, New(dir), packs, perPack)
		return mapped(dir, hs), memoryIndex(dir, hs)
	}
	oursMany, memMany := measure(perPack)
	oursOne, memOne := measure(1)
	t.Logf("%d packs × %d objects: mapped indexes %d KiB of heap, MemoryIndex %d KiB", packs, perPack, oursMany>>10, memMany>>10)
	t.Logf("%d packs × 1 object: mapped indexes %d KiB of heap, MemoryIndex %d KiB", packs, oursOne>>10, memOne>>10)
	require.Less(t, oursMany, int64(packs)*1024, "under 1 KiB a pack")
	require.Less(t, oursMany-oursOne, int64(packs*perPack), "under a byte an object (noise)")
	require.Greater(t, memMany-memOne, int64(packs*perPack)*20, "MemoryIndex grows with objects")

	// What a pack without a .rev costs the first time an OFS_DELTA base is
	// looked up by offset: 4 bytes an object, kept, and a sort.
	var entries []idxEntry
	for i := range 20000 {
		entries = append(entries, idxEntry{hash: plumbing.ComputeHash(plumbing.BlobObject, []byte(strconv.Itoa(i))), offset: int64(12 + 100*i)})
	}
	x, err := parseIdx(encodeIdx(entries, plumbing.ZeroHash))
	require.NoError(t, err)
	base := heapInUse()
	start := time.Now()
	h, err := x.FindHash(12 + 100*777)
	took := time.Since(start)
	require.NoError(t, err)
	require.Equal(t, plumbing.ComputeHash(plumbing.BlobObject, []byte("777")), h)
	t.Logf("reverse index derived for 20,000 objects in %v, %d KiB of heap kept", took, (heapInUse()-base)>>10)
	runtime.KeepAlive(x)
}

// mappedIdx lists the .idx files of dir mapped into this process.
func mappedIdx(t *testing.T, dir string) []string {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip("no /proc/self/maps")
	}
	var out []string
	for _, l := range strings.Split(string(maps), "\n") {
		if i := strings.Index(l, dir); i >= 0 && strings.Contains(l, ".idx") {
			out = append(out, l[i:])
		}
	}
	return out
}

// A merge's retired packs stay mapped while a lookup may still use them (a
// reader holding the old pack list reads on, after the files are gone),
// and are unmapped once nothing can.
func TestIdxUnmappedWhenRetired(t *testing.T) {
	dir := bareRepo(t)
	s := New(dir)
	s.SetRetiredGrace(0)
	hs := writeBlobPacks(t, s, CompactMinPacks, 10)
	old, err := s.packList(false)
	require.NoError(t, err)
	require.Len(t, mappedIdx(t, dir), CompactMinPacks)

	require.NoError(t, s.Compact())
	require.Len(t, packFiles(t, dir), 1, "merged, old packs deleted")
	for range 3 {
		runtime.GC()
	}
	for _, h := range hs {
		_, ok := benchFind(old, h) // the old snapshot still works
		require.True(t, ok)
	}
	require.Len(t, mappedIdx(t, dir), CompactMinPacks+1)

	old = nil //nolint:ineffassign,wastedassign // drops the last reference
	require.Eventually(t, func() bool {
		runtime.GC()
		return len(mappedIdx(t, dir)) == 1
	}, 5*time.Second, 10*time.Millisecond, "retired indexes unmapped")
	for _, h := range hs {
		_, err := s.Get(plumbing.AnyObject, h)
		require.NoError(t, err)
	}
}
