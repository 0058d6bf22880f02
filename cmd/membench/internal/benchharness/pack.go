package benchharness

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/garden-bloom/memory/pkg/gitdelta"
)

// A git pack (format v2) and its index (v2), written directly. `git
// fast-import` was the first choice, but it deltas each blob against the
// blob written just before it and re-serialises every tree on the path of a
// change with printf: with a 1,000-entry memory/ tree it ran at ~0.8 ms per
// commit on our 2-core machines, ~10× that at 10,000 agents. Here each file
// version is a delta against the previous version of the same path (common
// prefix and suffix, which is exactly what appends and replaces change), and
// memory/'s tree is patched in place, so a commit costs tens of µs. The
// tests check the result with `git fsck`.

// Object types of the pack format.
const (
	objCommit   = 1
	objTree     = 2
	objBlob     = 3
	objOfsDelta = 6
)

var typeNames = map[int]string{objCommit: "commit", objTree: "tree", objBlob: "blob"}

// maxDeltaDepth bounds delta chains (git's default is 50; the engine's own
// commits are loose objects, so keep reads cheap).
const maxDeltaDepth = 10

type oid [20]byte

func (o oid) String() string { return hex.EncodeToString(o[:]) }

func hashObject(typ int, content []byte) oid {
	h := sha1.New()
	h.Write([]byte(typeNames[typ] + " " + strconv.Itoa(len(content)) + "\x00"))
	h.Write(content)
	var o oid
	h.Sum(o[:0])
	return o
}

// encoder turns objects into packed entries. Not safe for concurrent use;
// each worker has its own.
type encoder struct {
	zbuf   bytes.Buffer
	zw     *zlib.Writer // BestSpeed
	stored *zlib.Writer // NoCompression, for small payloads
}

// storeBelow is the payload size under which deflate's per-block Huffman
// tables cost more time than the few bytes they save.
const storeBelow = 1024

func newEncoder() *encoder {
	e := &encoder{}
	e.zw, _ = zlib.NewWriterLevel(&e.zbuf, zlib.BestSpeed)
	e.stored, _ = zlib.NewWriterLevel(&e.zbuf, zlib.NoCompression)
	return e
}

// entry is one packed object: its id and its packed bytes (type-and-size
// header and zlib data). A delta's base offset is inserted when the entry is
// placed, since only then is the distance to its base known.
type entry struct {
	id   oid
	body []byte
	// base is the delta base (placed earlier in the pack), or nil.
	base *placed
	// baseIdx is the base as an index into the same chunk (worker-built
	// entries, resolved by the writer), or -1.
	baseIdx int
	depth   int
}

// placed is an entry's position in the pack and its delta depth.
type placed struct {
	off   int64
	depth int
}

func (e *encoder) compress(b []byte) []byte {
	e.zbuf.Reset()
	zw := e.zw
	if len(b) < storeBelow {
		zw = e.stored
	}
	zw.Reset(&e.zbuf)
	// Into a bytes.Buffer: neither can fail.
	_, _ = zw.Write(b)
	_ = zw.Close()
	return bytes.Clone(e.zbuf.Bytes())
}

func entryHeader(typ int, size int) []byte {
	b := []byte{byte(typ<<4) | byte(size&0x0f)}
	size >>= 4
	for size > 0 {
		b[len(b)-1] |= 0x80
		b = append(b, byte(size&0x7f))
		size >>= 7
	}
	return b
}

// full packs content as a whole object.
func (e *encoder) full(typ int, content []byte) entry {
	return entry{id: hashObject(typ, content), body: append(entryHeader(typ, len(content)), e.compress(content)...), baseIdx: -1}
}

// delta packs content as a delta against an object whose content is old
// and whose delta depth is baseDepth (-1: there is none), or whole when that
// does not pay or the chain is deep enough. The caller sets the base.
func (e *encoder) delta(typ int, content, old []byte, baseDepth int) (entry, bool) {
	if baseDepth < 0 || baseDepth >= maxDeltaDepth {
		return e.full(typ, content), false
	}
	d, ok := gitdelta.PrefixSuffix(old, content)
	if !ok {
		return e.full(typ, content), false
	}
	return entry{id: hashObject(typ, content), body: append(entryHeader(objOfsDelta, len(d)), e.compress(d)...),
		baseIdx: -1, depth: baseDepth + 1}, true
}

// spliceDelta packs content, which is the previous version with
// content[at:at+n] changed (or appended, when at is the old length), as a
// delta; full when base's chain is maxDepth long.
func (e *encoder) spliceDelta(typ int, content []byte, oldLen, at, n, baseDepth, maxDepth int) (entry, bool) {
	if baseDepth < 0 || baseDepth >= maxDepth {
		return e.full(typ, content), false
	}
	d := gitdelta.AppendHeader(nil, oldLen, len(content))
	d = gitdelta.AppendCopy(d, 0, at)
	d = gitdelta.AppendInsert(d, content[at:at+n])
	if at < oldLen {
		d = gitdelta.AppendCopy(d, at+n, oldLen-at-n)
	}
	return entry{id: hashObject(typ, content), body: append(entryHeader(objOfsDelta, len(d)), e.compress(d)...),
		baseIdx: -1, depth: baseDepth + 1}, true
}

// packWriter appends entries to objects/pack/tmp-*.pack and writes the
// index at the end.
type packWriter struct {
	dir   string
	f     *os.File
	w     *bufio.Writer
	off   int64
	count uint32
	index []idxEntry
	seen  map[oid]*placed
}

type idxEntry struct {
	id  oid
	off int64
	crc uint32
}

func newPackWriter(repo string) (*packWriter, error) {
	dir := filepath.Join(repo, "objects", "pack")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, "tmp-gen-*.pack")
	if err != nil {
		return nil, err
	}
	pw := &packWriter{dir: dir, f: f, w: bufio.NewWriterSize(f, 1<<20), seen: map[oid]*placed{}}
	// Header; the object count is patched in by finish.
	_, err = pw.w.Write([]byte{'P', 'A', 'C', 'K', 0, 0, 0, 2, 0, 0, 0, 0})
	pw.off = 12
	return pw, err
}

// put appends e unless an object with its id is in the pack already, and
// returns where it is.
func (pw *packWriter) put(e entry) (*placed, error) {
	if p, ok := pw.seen[e.id]; ok {
		return p, nil
	}
	p := &placed{off: pw.off}
	body := e.body
	if e.base != nil {
		p.depth = e.base.depth + 1
		// An OFS_DELTA's base offset follows the type-and-size header.
		hdr := 0
		for body[hdr]&0x80 != 0 {
			hdr++
		}
		hdr++
		rel := ofsEncoding(pw.off - e.base.off)
		body = slices.Concat(body[:hdr], rel, body[hdr:])
	}
	if _, err := pw.w.Write(body); err != nil {
		return nil, err
	}
	pw.index = append(pw.index, idxEntry{id: e.id, off: pw.off, crc: crc32.ChecksumIEEE(body)})
	pw.off += int64(len(body))
	pw.count++
	pw.seen[e.id] = p
	return p, nil
}

// ofsEncoding is the OFS_DELTA negative-offset encoding of n.
func ofsEncoding(n int64) []byte {
	var buf [16]byte
	pos := len(buf) - 1
	buf[pos] = byte(n & 127)
	for n >>= 7; n > 0; n >>= 7 {
		n--
		pos--
		buf[pos] = 128 | byte(n&127)
	}
	return buf[pos:]
}

// finish patches the count, appends the pack checksum, writes the .idx and
// moves both into place as pack-<sha>.{pack,idx}.
func (pw *packWriter) finish() error {
	if err := pw.w.Flush(); err != nil {
		return err
	}
	var cnt [4]byte
	binary.BigEndian.PutUint32(cnt[:], pw.count)
	if _, err := pw.f.WriteAt(cnt[:], 8); err != nil {
		return err
	}
	if _, err := pw.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	h := sha1.New()
	if _, err := io.Copy(h, bufio.NewReaderSize(pw.f, 1<<20)); err != nil {
		return err
	}
	sum := h.Sum(nil)
	if _, err := pw.f.Write(sum); err != nil {
		return err
	}
	if err := pw.f.Close(); err != nil {
		return err
	}
	name := "pack-" + hex.EncodeToString(sum)
	if err := pw.writeIndex(filepath.Join(pw.dir, name+".idx"), sum); err != nil {
		return err
	}
	return os.Rename(pw.f.Name(), filepath.Join(pw.dir, name+".pack"))
}

func (pw *packWriter) writeIndex(path string, packSum []byte) error {
	slices.SortFunc(pw.index, func(a, b idxEntry) int { return bytes.Compare(a.id[:], b.id[:]) })
	var buf bytes.Buffer
	buf.Write([]byte{0xff, 't', 'O', 'c', 0, 0, 0, 2})
	var fan [256]uint32
	for _, e := range pw.index {
		fan[e.id[0]]++
	}
	var total uint32
	for i := range fan {
		total += fan[i]
		buf.Write(binary.BigEndian.AppendUint32(nil, total))
	}
	for _, e := range pw.index {
		buf.Write(e.id[:])
	}
	for _, e := range pw.index {
		buf.Write(binary.BigEndian.AppendUint32(nil, e.crc))
	}
	var large []int64
	for _, e := range pw.index {
		if e.off < 1<<31 {
			buf.Write(binary.BigEndian.AppendUint32(nil, uint32(e.off)))
			continue
		}
		buf.Write(binary.BigEndian.AppendUint32(nil, 1<<31|uint32(len(large))))
		large = append(large, e.off)
	}
	for _, off := range large {
		buf.Write(binary.BigEndian.AppendUint64(nil, uint64(off)))
	}
	buf.Write(packSum)
	idxSum := sha1.Sum(buf.Bytes())
	buf.Write(idxSum[:])
	if err := os.WriteFile(path+".tmp", buf.Bytes(), 0o444); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// treeEntry is one entry of a git tree.
type treeEntry struct {
	name string
	dir  bool
	id   oid
}

// encodeTree renders entries (any order) as a git tree object.
func encodeTree(entries []treeEntry) []byte {
	slices.SortFunc(entries, compareTreeNames)
	var b []byte
	for _, e := range entries {
		if e.dir {
			b = append(b, "40000 "...)
		} else {
			b = append(b, "100644 "...)
		}
		b = append(b, e.name...)
		b = append(b, 0)
		b = append(b, e.id[:]...)
	}
	return b
}

// compareTreeNames is git's tree order: a directory sorts as if its name
// ended with '/'.
func compareTreeNames(a, b treeEntry) int {
	an, bn := a.name, b.name
	if a.dir {
		an += "/"
	}
	if b.dir {
		bn += "/"
	}
	switch {
	case an < bn:
		return -1
	case an > bn:
		return 1
	}
	return 0
}

// encodeCommit renders a commit object.
func encodeCommit(tree, parent oid, who string, msg string) []byte {
	return fmt.Appendf(nil, "tree %s\nparent %s\nauthor %s\ncommitter %s\n\n%s", tree, parent, who, who, msg)
}
