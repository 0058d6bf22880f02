package odb

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/klauspost/compress/zlib"

	"github.com/garden-bloom/memory/pkg/gitdelta"
)

// Pack entries are read here rather than through go-git's packfile reader,
// a large cost of the read plane while it follows the write plane (issue #9;
// docs/performance.md): go-git inflates with compress/zlib (slower than
// klauspost/compress on memory files), builds a scanner per read, and
// hashes every object it returns although the index already names it. Here an entry is one buffered read (a single pread for most),
// an inflate into a buffer of the size its header gives, and for deltas
// the base (from the object cache when it is there) patched once.

// packedObject is an object read from a pack: its hash is the one the pack
// index gave, never recomputed, and its content is shared through the
// object cache, so it is read-only.
type packedObject struct {
	h    plumbing.Hash
	t    plumbing.ObjectType
	cont []byte
}

var _ plumbing.EncodedObject = (*packedObject)(nil)

func (o *packedObject) Hash() plumbing.Hash             { return o.h }
func (o *packedObject) Type() plumbing.ObjectType       { return o.t }
func (o *packedObject) Size() int64                     { return int64(len(o.cont)) }
func (o *packedObject) SetType(plumbing.ObjectType)     { panic("memrepo: packed objects are read-only") }
func (o *packedObject) SetSize(int64)                   { panic("memrepo: packed objects are read-only") }
func (o *packedObject) Writer() (io.WriteCloser, error) { return nil, errReadOnlyStore }
func (o *packedObject) Reader() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(o.cont)), nil
}

// errCorruptPack marks entries that cannot be what git wrote.
var errCorruptPack = errors.New("corrupt pack entry")

// maxDeltaChain bounds how many bases one read follows (git's own packs go
// to 50 by default; 4095 is the most git allows), so a corrupt pack whose
// REF_DELTAs form a cycle fails instead of recursing forever.
const maxDeltaChain = 4096

// Pack entry types beyond the object types (gitformat-pack(5)).
const (
	entryOfsDelta = 6
	entryRefDelta = 7
)

// readEntry returns the object h stored at off of pack p.
func (s *Store) readEntry(p *packIndex, f *os.File, h plumbing.Hash, off int64, depth int) (*packedObject, error) {
	if depth > maxDeltaChain {
		return nil, fmt.Errorf("%w: delta chain at %d longer than %d", errCorruptPack, off, maxDeltaChain)
	}
	typ, data, baseOff, baseHash, err := readRaw(f, off)
	if err != nil {
		return nil, err
	}
	var bh plumbing.Hash
	switch typ {
	case int(plumbing.CommitObject), int(plumbing.TreeObject), int(plumbing.BlobObject), int(plumbing.TagObject):
		return &packedObject{h: h, t: plumbing.ObjectType(typ), cont: data}, nil
	case entryOfsDelta:
		if bh, err = p.idx.FindHash(baseOff); err != nil {
			return nil, fmt.Errorf("%w: no object starts at base offset %d of %s", errCorruptPack, baseOff, p.name)
		}
	case entryRefDelta:
		// Packs on disk are self-contained (git completes thin packs
		// before keeping them), so the base is in this one.
		bh = baseHash
		if baseOff, err = p.idx.FindOffset(bh); err != nil {
			return nil, fmt.Errorf("%w at %d: base %s not in %s", errCorruptPack, off, bh, p.name)
		}
	default:
		return nil, fmt.Errorf("%w at %d: type %d", errCorruptPack, off, typ)
	}
	base, err := s.cachedBase(p, f, bh, baseOff, depth)
	if err != nil {
		return nil, err
	}
	cont, err := gitdelta.Patch(base.cont, data, maxEntrySize)
	if err != nil {
		return nil, fmt.Errorf("%w at %d: %w", errCorruptPack, off, err)
	}
	return &packedObject{h: h, t: base.t, cont: cont}, nil
}

// readRaw reads the entry at off: its type, its inflated data (for deltas,
// the delta) and, for deltas, where its base is. Small entries take one
// pread.
func readRaw(f *os.File, off int64) (typ int, data []byte, baseOff int64, baseHash plumbing.Hash, err error) {
	br := inflateBufs.Get().(*bufio.Reader)
	defer inflateBufs.Put(br)
	br.Reset(io.NewSectionReader(f, off, 1<<62))
	// The longest header: 10 bytes of type and size, then a 20-byte base
	// name (REF_DELTA) or at most 10 bytes of base offset (OFS_DELTA).
	b, err := br.Peek(32)
	if len(b) == 0 {
		return 0, nil, 0, baseHash, fmt.Errorf("read pack entry at %d: %w", off, err)
	}
	typ, size, pos, err := entryHeader(b)
	if err != nil {
		return 0, nil, 0, baseHash, fmt.Errorf("%w at %d: %w", errCorruptPack, off, err)
	}
	switch typ {
	case entryOfsDelta:
		back, k, err := baseDistance(b[pos:])
		if err != nil || back >= off {
			return 0, nil, 0, baseHash, fmt.Errorf("%w at %d: bad base offset", errCorruptPack, off)
		}
		pos += k
		baseOff = off - back
	case entryRefDelta:
		if len(b) < pos+len(baseHash) {
			return 0, nil, 0, baseHash, fmt.Errorf("%w at %d: short base name", errCorruptPack, off)
		}
		copy(baseHash[:], b[pos:])
		pos += len(baseHash)
	}
	if _, err := br.Discard(pos); err != nil {
		return 0, nil, 0, baseHash, err
	}
	if data, err = inflate(br, size); err != nil {
		return 0, nil, 0, baseHash, fmt.Errorf("%w at %d: %w", errCorruptPack, off, err)
	}
	return typ, data, baseOff, baseHash, nil
}

// cachedBase returns delta base h (stored at off), from the object cache
// when it is there, else read and cached: walking history resolves the
// same bases again and again.
func (s *Store) cachedBase(p *packIndex, f *os.File, h plumbing.Hash, off int64, depth int) (*packedObject, error) {
	if o, ok := s.cache.Get(h); ok {
		if po, ok := o.(*packedObject); ok {
			return po, nil
		}
		// A loose copy of the same object: same content.
		cont, err := CopyContent(o)
		if err != nil {
			return nil, err
		}
		return &packedObject{h: h, t: o.Type(), cont: cont}, nil
	}
	o, err := s.readEntry(p, f, h, off, depth+1)
	if err != nil {
		return nil, err
	}
	s.cache.put(o)
	return o, nil
}

// entryHeader parses an entry's type and inflated size (3 type bits, then
// the size 4 + 7n bits at a time, little end first) and returns how many
// bytes they took.
func entryHeader(b []byte) (typ int, size int64, n int, err error) {
	if len(b) == 0 {
		return 0, 0, 0, io.ErrUnexpectedEOF
	}
	c := b[0]
	typ, size, n = int(c>>4)&7, int64(c&0x0f), 1
	for shift := 4; c&0x80 != 0; shift += 7 {
		if n >= len(b) || shift > 56 {
			return 0, 0, 0, errors.New("bad size")
		}
		c = b[n]
		n++
		size |= int64(c&0x7f) << shift
	}
	return typ, size, n, nil
}

// baseDistance parses an OFS_DELTA's distance back to its base: big end
// first, 7 bits a byte, each continuation adding one (so no value has two
// encodings).
func baseDistance(b []byte) (int64, int, error) {
	if len(b) == 0 {
		return 0, 0, io.ErrUnexpectedEOF
	}
	c := b[0]
	d, n := int64(c&0x7f), 1
	for c&0x80 != 0 {
		if n >= len(b) || d > (1<<55) {
			return 0, 0, errors.New("bad base offset")
		}
		c = b[n]
		n++
		d = (d+1)<<7 | int64(c&0x7f)
	}
	if d == 0 {
		return 0, 0, errors.New("zero base offset")
	}
	return d, n, nil
}

// Readers for entries, reused: a zlib reader holds ~40 KB of tables.
var (
	inflateBufs    = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 16<<10) }}
	inflateReaders sync.Pool // io.ReadCloser that is a zlib.Resetter
)

// maxEntrySize bounds what one entry may claim to inflate to, so a corrupt
// header cannot make us allocate without bound. Memory files are KBs; git
// itself stores objects far bigger, but not in a memory repository.
const maxEntrySize = 1 << 30

// inflate inflates the zlib stream br is at, which must hold exactly size
// bytes (the stream's end and checksum are checked).
func inflate(br *bufio.Reader, size int64) ([]byte, error) {
	if size < 0 || size > maxEntrySize {
		return nil, fmt.Errorf("entry size %d out of range", size)
	}
	var zr io.ReadCloser
	if r, ok := inflateReaders.Get().(io.ReadCloser); ok {
		if err := r.(zlib.Resetter).Reset(br, nil); err != nil {
			return nil, err
		}
		zr = r
	} else {
		r, err := zlib.NewReader(br)
		if err != nil {
			return nil, err
		}
		zr = r
	}
	defer inflateReaders.Put(zr)
	out := make([]byte, size)
	if _, err := io.ReadFull(zr, out); err != nil {
		return nil, err
	}
	// Reading past the end checks the Adler-32 and that the stream is
	// not longer than the header said.
	var one [1]byte
	if n, err := zr.Read(one[:]); n != 0 || !errors.Is(err, io.EOF) {
		if err == nil || errors.Is(err, io.EOF) {
			err = errors.New("data longer than its header says")
		}
		return nil, err
	}
	return out, nil
}
