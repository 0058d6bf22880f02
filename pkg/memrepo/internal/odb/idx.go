package odb

import (
	"bytes"
	"cmp"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// Pack indexes are read in place from their .idx files, mapped read-only
// (as git does), instead of decoded into go-git's idxfile.MemoryIndex. A
// MemoryIndex copies every name, CRC and offset onto the heap, in three
// allocations per first byte in use, and its FindOffset adds an offset →
// hash map entry for every object it ever finds: 3.7 KiB a pack plus
// ~175 bytes an object once looked up (TestIdxHeap), so the heap grew with
// every commit (issue #25). A mapped index costs the heap ~380 bytes a pack
// whatever its size; its pages are page cache, which the kernel can drop
// and read again.
//
// The format is git's pack index v2 (gitformat-pack(5)): a 4-byte magic and
// version, 256 cumulative counts by first hash byte (the fanout), the
// sorted 20-byte names, their CRC-32s, their 4-byte offsets (high bit set:
// an index into the table of 8-byte offsets that follows, for packs over
// 2 GiB), then the pack's checksum and the index's own.

const (
	idxHeaderLen  = 8
	idxFanoutLen  = 256 * 4
	idxTrailerLen = 2 * hashLen
	idxEntryLen   = hashLen + 4 + 4 // name, CRC-32, offset
	idxMinLen     = idxHeaderLen + idxFanoutLen + idxTrailerLen
	hashLen       = len(plumbing.ZeroHash)
	revHeaderLen  = 12 // magic, version, hash function
	largeOffset   = 1 << 31
)

var (
	idxMagic = []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}
	revMagic = []byte{'R', 'I', 'D', 'X', 0, 0, 0, 1, 0, 0, 0, 1} // version 1, SHA-1
)

// errCorruptIdx marks an index (or .rev) that cannot be what git wrote.
var errCorruptIdx = errors.New("corrupt pack index")

// packIdx is one pack's index. Every table is read from data in place, with
// bounds checked at open (sizes) or on use (large offsets, .rev positions),
// so a corrupt file gives errors, never a crash. It is safe for concurrent
// use.
//
// The mapping lives as long as the packIdx: a runtime cleanup unmaps it
// once the packIdx is unreachable, that is once the pack has left the list
// (a merge retired it, a repack deleted it) and the last lookup holding an
// older snapshot of the list is done. So no lookup can ever find it
// unmapped, at no cost to lookups. Unmapping when the pack leaves the list
// instead needs a count of the lookups under way: its atomic adds on every
// pack probed (eight per lookup, on average, among the 16 packs Compact
// allows) made parallel lookups about twice as slow on 2 cores (a
// refcounted version measured ~500 ns in BenchmarkFindObject/parallel,
// this one ~250). Retired indexes are unmapped at the next GC cycle after
// their last reader (TestIdxUnmappedWhenRetired). To hold:
// nothing read from data outlives the call that read it (hashes and entries
// are copies), and each method that reads data keeps its receiver alive to
// its end (runtime.KeepAlive), since the slice alone does not.
type packIdx struct {
	data   []byte   // the whole .idx: mapped, or on the heap (tests)
	n      int      // objects
	nLarge int      // 8-byte offsets
	m      *mapping // nil when data is on the heap

	// The reverse index (pack order → index position), for FindHash:
	// git's .rev file when it wrote one (mapped), else derived on first
	// use. Only packs with OFS_DELTA entries (git's repacks) ever need it.
	revPath    string
	revOnce    sync.Once
	rev        []byte   // the .rev's table of big-endian positions, or
	revDerived []uint32 // the same, derived from the offsets
	revErr     error
}

// mapping is what must be unmapped when the index goes: the .idx, and a
// .rev mapped later. It is apart from packIdx because the cleanup's
// argument must not keep the packIdx reachable.
type mapping struct {
	mu      sync.Mutex
	regions [][]byte
}

func (m *mapping) add(b []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.regions = append(m.regions, b)
}

// unmap unmaps every region once.
func (m *mapping) unmap() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.regions {
		_ = munmap(r)
	}
	m.regions = nil
}

// openIdx maps and parses the index at path. revPath names the .rev git
// may have written beside it (read only if FindHash is ever called).
func openIdx(path, revPath string) (*packIdx, error) {
	data, err := mapFile(path, idxMinLen)
	if err != nil {
		return nil, err
	}
	x, err := parseIdx(data)
	if err != nil {
		_ = munmap(data)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	x.revPath = revPath
	x.m = &mapping{regions: [][]byte{data}}
	runtime.AddCleanup(x, (*mapping).unmap, x.m)
	return x, nil
}

// parseIdx checks data is a whole pack index v2 and returns it, unmapped
// and without a .rev (FindHash derives the reverse index).
func parseIdx(data []byte) (*packIdx, error) {
	if len(data) < idxMinLen || !bytes.Equal(data[:idxHeaderLen], idxMagic) {
		return nil, fmt.Errorf("%w: not a version 2 index", errCorruptIdx)
	}
	prev := uint32(0)
	for i := range 256 {
		c := binary.BigEndian.Uint32(data[idxHeaderLen+4*i:])
		if c < prev {
			return nil, fmt.Errorf("%w: fanout decreases at %d", errCorruptIdx, i)
		}
		prev = c
	}
	// In 64 bits, so that no count overflows (a uint32 of entries times 28
	// fits); at most one 8-byte offset per object.
	n, size := int64(prev), int64(len(data))
	minLen := int64(idxMinLen) + n*int64(idxEntryLen)
	if size < minLen || (size-minLen)%8 != 0 || (size-minLen)/8 > n {
		return nil, fmt.Errorf("%w: %d bytes for %d objects", errCorruptIdx, size, n)
	}
	// As go-git's decoder did: the checksum covers everything before it.
	end := len(data) - hashLen
	if sum := sha1.Sum(data[:end]); !bytes.Equal(sum[:], data[end:]) {
		return nil, fmt.Errorf("%w: checksum mismatch", errCorruptIdx)
	}
	return &packIdx{data: data, n: int(n), nLarge: int((size - minLen) / 8)}, nil
}

// Count returns the number of objects.
func (x *packIdx) Count() int64 { return int64(x.n) }

func (x *packIdx) fanout(b int) int {
	return int(binary.BigEndian.Uint32(x.data[idxHeaderLen+4*b:]))
}

// The tables, in file order. Their callers keep x alive.
func (x *packIdx) nameAt(i int) []byte {
	o := idxHeaderLen + idxFanoutLen + i*hashLen
	return x.data[o : o+hashLen]
}

func (x *packIdx) crcAt(i int) uint32 {
	return binary.BigEndian.Uint32(x.data[idxHeaderLen+idxFanoutLen+x.n*hashLen+4*i:])
}

func (x *packIdx) offsetAt(i int) (int64, error) {
	large := idxHeaderLen + idxFanoutLen + x.n*(hashLen+4+4)
	v := binary.BigEndian.Uint32(x.data[large-4*x.n+4*i:])
	if v < largeOffset {
		return int64(v), nil
	}
	j := int(v - largeOffset)
	if j >= x.nLarge {
		return 0, fmt.Errorf("%w: 8-byte offset %d of %d", errCorruptIdx, j, x.nLarge)
	}
	o := binary.BigEndian.Uint64(x.data[large+8*j:])
	if o > math.MaxInt64 {
		return 0, fmt.Errorf("%w: offset %d", errCorruptIdx, o)
	}
	return int64(o), nil
}

func (x *packIdx) hashAt(i int) (h plumbing.Hash) {
	copy(h[:], x.nameAt(i))
	return h
}

// find returns h's position: a binary search among the names that share
// its first byte, which the fanout delimits.
func (x *packIdx) find(h plumbing.Hash) (int, bool) {
	lo, hi := 0, x.fanout(int(h[0]))
	if h[0] > 0 {
		lo = x.fanout(int(h[0]) - 1)
	}
	// Checked at open, but the file could be rewritten in place since
	// (git never does): never index past the names.
	hi = min(hi, x.n)
	lo = min(lo, hi)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		switch c := bytes.Compare(x.nameAt(mid), h[:]); {
		case c == 0:
			return mid, true
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return lo, false
}

// Contains reports whether the pack holds h.
func (x *packIdx) Contains(h plumbing.Hash) bool {
	defer runtime.KeepAlive(x)
	_, ok := x.find(h)
	return ok
}

// FindOffset returns where h's entry starts in the pack, or
// plumbing.ErrObjectNotFound.
func (x *packIdx) FindOffset(h plumbing.Hash) (int64, error) {
	defer runtime.KeepAlive(x)
	i, ok := x.find(h)
	if !ok {
		return 0, plumbing.ErrObjectNotFound
	}
	return x.offsetAt(i)
}

// FindHash returns the object whose entry starts at off (an OFS_DELTA's
// base), or plumbing.ErrObjectNotFound: a binary search of the reverse
// index, which lists positions in pack order.
func (x *packIdx) FindHash(off int64) (plumbing.Hash, error) {
	defer runtime.KeepAlive(x)
	x.revOnce.Do(x.loadRev)
	if x.revErr != nil {
		return plumbing.ZeroHash, x.revErr
	}
	lo, hi := 0, x.n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		pos := x.revAt(mid)
		if pos >= x.n {
			return plumbing.ZeroHash, fmt.Errorf("%w: .rev position %d of %d", errCorruptIdx, pos, x.n)
		}
		o, err := x.offsetAt(pos)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		switch {
		case o == off:
			return x.hashAt(pos), nil
		case o < off:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return plumbing.ZeroHash, plumbing.ErrObjectNotFound
}

func (x *packIdx) revAt(k int) int {
	if x.revDerived != nil {
		return int(x.revDerived[k])
	}
	return int(binary.BigEndian.Uint32(x.rev[revHeaderLen+4*k:]))
}

// loadRev maps the .rev git wrote (git ≥ 2.41 by default), checked like
// the index; without a usable one it derives the table: 4 bytes of heap
// per object, for the rest of the pack's life, and a sort of the offsets
// once (~2 ms for 20,000 objects: TestIdxHeap logs it). MemoryIndex kept a
// map instead, ~10× the bytes; its lookup took ~25 ns where this binary
// search takes ~140 (BenchmarkFindHash), a few percent of reading the
// delta it serves (BenchmarkReadOfsDelta).
func (x *packIdx) loadRev() {
	if x.revPath != "" && x.m != nil {
		if rev, err := mapFile(x.revPath, revHeaderLen+idxTrailerLen); err == nil {
			if x.revValid(rev) {
				x.m.add(rev)
				x.rev = rev
				return
			}
			_ = munmap(rev)
		}
	}
	pos := make([]uint32, x.n)
	offs := make([]int64, x.n) // only while sorting
	for i := range pos {
		o, err := x.offsetAt(i)
		if err != nil {
			x.revErr = err
			return
		}
		pos[i], offs[i] = uint32(i), o
	}
	slices.SortFunc(pos, func(a, b uint32) int { return cmp.Compare(offs[a], offs[b]) })
	x.revDerived = pos
}

// revValid checks a .rev's header, size, checksum and that it belongs to
// this pack (the pack checksum both files end with).
func (x *packIdx) revValid(rev []byte) bool {
	size := len(rev)
	if size != revHeaderLen+4*x.n+idxTrailerLen || !bytes.Equal(rev[:revHeaderLen], revMagic) {
		return false
	}
	packSum := x.data[len(x.data)-idxTrailerLen : len(x.data)-hashLen]
	sum := sha1.Sum(rev[:size-hashLen])
	return bytes.Equal(rev[size-idxTrailerLen:size-hashLen], packSum) && bytes.Equal(sum[:], rev[size-hashLen:])
}

// idxEntry is one object of a pack index, copied out of it.
type idxEntry struct {
	hash   plumbing.Hash
	offset int64
	crc    uint32
}

// entriesByOffset returns every entry in pack order (Compact copies them
// in that order). The slice is the caller's, and only lives that long.
func (x *packIdx) entriesByOffset() ([]idxEntry, error) {
	defer runtime.KeepAlive(x)
	out := make([]idxEntry, x.n)
	for i := range out {
		o, err := x.offsetAt(i)
		if err != nil {
			return nil, err
		}
		out[i] = idxEntry{hash: x.hashAt(i), offset: o, crc: x.crcAt(i)}
	}
	slices.SortFunc(out, func(a, b idxEntry) int { return cmp.Compare(a.offset, b.offset) })
	return out, nil
}

// hashesWithPrefix calls add for every object whose name starts with the
// bytes of lower and whose hex name has prefix: one contiguous run of the
// sorted names.
func (x *packIdx) hashesWithPrefix(lower []byte, prefix string, add func(plumbing.Hash)) {
	defer runtime.KeepAlive(x)
	var h plumbing.Hash
	copy(h[:], lower)
	i, _ := x.find(h) // where lower would be: the first name ≥ it
	for ; i < x.n; i++ {
		h := x.hashAt(i)
		if !strings.HasPrefix(h.String(), prefix) {
			return
		}
		add(h)
	}
}

// encodeIdx returns the pack index v2 of a pack's entries (sorted here by
// name) and the pack's checksum, as git writes it.
func encodeIdx(entries []idxEntry, packSum plumbing.Hash) []byte {
	slices.SortFunc(entries, func(a, b idxEntry) int { return bytes.Compare(a.hash[:], b.hash[:]) })
	out := make([]byte, 0, idxMinLen+len(entries)*idxEntryLen)
	out = append(out, idxMagic...)
	var fanout [256]uint32
	for _, e := range entries {
		fanout[e.hash[0]]++
	}
	for i, c := 0, uint32(0); i < 256; i++ {
		c += fanout[i]
		out = binary.BigEndian.AppendUint32(out, c)
	}
	for _, e := range entries {
		out = append(out, e.hash[:]...)
	}
	for _, e := range entries {
		out = binary.BigEndian.AppendUint32(out, e.crc)
	}
	var large []byte
	for _, e := range entries {
		if e.offset < largeOffset {
			out = binary.BigEndian.AppendUint32(out, uint32(e.offset))
			continue
		}
		out = binary.BigEndian.AppendUint32(out, largeOffset|uint32(len(large)/8))
		large = binary.BigEndian.AppendUint64(large, uint64(e.offset))
	}
	out = append(append(out, large...), packSum[:]...)
	sum := sha1.Sum(out)
	return append(out, sum[:]...)
}

// mapFile maps the whole file at path read-only; files shorter than min
// are not mapped (mmap of an empty file fails, and no shorter file is
// valid anyway).
func mapFile(path string, minLen int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only; the mapping stays
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() < int64(minLen) || fi.Size() != int64(int(fi.Size())) {
		return nil, fmt.Errorf("%w: %s: %d bytes", errCorruptIdx, path, fi.Size())
	}
	return mmap(f, int(fi.Size()))
}
