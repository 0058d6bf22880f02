package odb

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/klauspost/compress/zlib"

	"github.com/garden-bloom/memory/pkg/gitdelta"
)

// New objects are written as packs, not as loose objects: one pack (plus its
// .idx) per WriteNew, that is per memrepo Commit or CommitChain, whatever
// the number of objects. On the filesystems we run on, creating a file
// costs far more than writing a few KiB into one (inode allocation plus one
// fsync per file: on a 2-core ext4 VM about 2,500 durable loose objects per
// second at best, whatever the batching), so a proposal's commit of seven
// loose objects was bound by file creation, and a chain of fifty commits
// would create 350 files. A pack makes it two files and two fsyncs per
// chain.
//
// Entries are whole zlib-compressed objects, except trees that replace a
// tree written earlier in the same pack (the memory/ tree of each commit of
// a chain after the first): those are REF_DELTAs against it, found from the
// common prefix and suffix of the two versions, so no delta search runs on
// the hot path. A REF_DELTA names its base by hash, not by position, so
// Compact still merges packs by copying entries byte for byte. git reads
// them like any other pack; `git gc` deltifies the rest when an operator
// runs it.

// packDir returns objects/pack.
func (s *Store) packDir() string { return filepath.Join(s.dir, "pack") }

// WriteNew makes a chain's objects durable: objects already in the
// repository are reused instead of written again (see reuse), the rest go
// into one new pack. It returns once everything is on disk.
func (s *Store) WriteNew(set *ObjectSet) error {
	fresh, err := s.withoutStored(set.list)
	if err != nil {
		return err
	}
	if len(fresh) == 0 {
		return nil
	}
	if err := s.ensurePackDir(); err != nil {
		return err
	}
	pw, err := newPackWriter(s.packDir(), len(fresh))
	if err != nil {
		return err
	}
	defer pw.abort()
	written := make(map[plumbing.Hash]bool, len(fresh))
	for _, o := range fresh {
		h := o.Hash()
		entry, err := set.encode(o, written)
		if err != nil {
			return fmt.Errorf("memrepo: encode object %s: %w", h, err)
		}
		if err := pw.add(h, entry, crc32.ChecksumIEEE(entry)); err != nil {
			return err
		}
		written[h] = true
	}
	p, err := pw.finish()
	if err != nil {
		return err
	}
	s.replacePacks(nil, p)
	return nil
}

// withoutStored returns the objects that are not in the repository yet;
// those that are get reused (see reuse). If reusing fails (the file vanished
// or is not ours to touch), the object is written again.
func (s *Store) withoutStored(objs []plumbing.EncodedObject) ([]plumbing.EncodedObject, error) {
	packs, err := s.packList(false)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	reused := map[string]bool{}
	var fresh []plumbing.EncodedObject
	for _, o := range objs {
		path := s.storedAt(o.Hash(), packs)
		if path != "" && !reused[path] && reuse(path, now) == nil {
			reused[path] = true
		}
		if !reused[path] {
			fresh = append(fresh, o)
		}
	}
	return fresh, nil
}

// reuse prepares the loose file or pack at path to be referenced by a new
// commit. Its mtime is refreshed, as git does, so that a concurrent `git gc`
// does not prune an old unreachable copy. A loose object is also fsynced
// with its directory: git does not fsync loose objects by default, so one a
// push wrote moments ago may not be durable yet (packs it does fsync). Both
// are cheap when nothing is dirty, and reuse is rare (repeated content).
func reuse(path string, now time.Time) error {
	if err := os.Chtimes(path, now, now); err != nil {
		return err
	}
	if filepath.Ext(path) == ".pack" {
		return nil
	}
	if err := SyncFile(path); err != nil {
		return err
	}
	fanout := filepath.Dir(path)
	if err := SyncDir(fanout); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(fanout)) // objects/: the fan-out directory may be new too
}

// storedAt returns the loose file or .pack that holds h, or "" when none does
// as far as this store knows. A pack added by another process since the last
// rescan is missed; the object is then written once more, which is harmless.
func (s *Store) storedAt(h plumbing.Hash, packs []*packIndex) string {
	if p := s.loosePath(h); fileExists(p) {
		return p
	}
	for _, p := range packs {
		if p.idx.Contains(h) {
			return filepath.Join(s.packDir(), p.name+".pack")
		}
	}
	return ""
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// ensurePackDir creates objects/pack if a repository lacks it, durably.
func (s *Store) ensurePackDir() error {
	err := os.Mkdir(s.packDir(), 0o755)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("memrepo: create %s: %w", s.packDir(), err)
	}
	return SyncDir(s.dir)
}

// replacePacks publishes a new pack list snapshot without the removed packs
// and with added (if not nil), so readers find new objects without a rescan.
func (s *Store) replacePacks(removed map[string]bool, added *packIndex) {
	// Load the list first so a later packList(false) does not replace our
	// snapshot with a directory scan of its own (harmless, just wasted).
	_, _ = s.packList(false)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for name := range removed {
		s.retired[name] = now // until deleteRetired removes the files
	}
	packs := make([]*packIndex, 0, len(s.packs)+1)
	if added != nil {
		packs = append(packs, added) // newest first: that is where recent objects are
	}
	for _, p := range s.packs {
		if !removed[p.name] && (added == nil || p.name != added.name) {
			packs = append(packs, p)
		}
	}
	closeDropped(s.packs, packs)
	s.packs = packs
}

// encode returns the pack entry of o: a REF_DELTA against the tree it
// replaced when that one is in written (this pack, earlier) and the delta
// pays, else the whole object.
func (set *ObjectSet) encode(o plumbing.EncodedObject, written map[plumbing.Hash]bool) ([]byte, error) {
	base, ok := set.deltaBases[o.Hash()]
	if !ok || !written[base.hash] {
		return encodeEntry(o)
	}
	delta, ok := gitdelta.PrefixSuffix(set.treeContent[base.hash], set.treeContent[o.Hash()])
	if !ok {
		return encodeEntry(o)
	}
	var buf bytes.Buffer
	writeEntryHeader(&buf, entryRefDelta, int64(len(delta)))
	buf.Write(base.hash[:])
	if err := compressInto(&buf, bytes.NewReader(delta)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encodeEntry returns the pack entry of o: git's type-and-size header
// followed by the zlib-compressed content.
func encodeEntry(o plumbing.EncodedObject) ([]byte, error) {
	var buf bytes.Buffer
	writeEntryHeader(&buf, int(o.Type()), o.Size())
	r, err := o.Reader()
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }() // read only
	if err := compressInto(&buf, r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeEntryHeader writes an entry's type and size: 3 type bits, then the
// size 4 + 7n bits at a time, little end first.
func writeEntryHeader(buf *bytes.Buffer, typ int, size int64) {
	c := byte(typ)<<4 | byte(size&0x0f)
	for size >>= 4; size > 0; size >>= 7 {
		buf.WriteByte(c | 0x80)
		c = byte(size & 0x7f)
	}
	buf.WriteByte(c)
}

// compressInto appends the zlib stream of r's bytes to buf.
func compressInto(buf *bytes.Buffer, r io.Reader) error {
	zw := zlibPool.Get().(*zlib.Writer)
	defer zlibPool.Put(zw)
	zw.Reset(buf)
	if _, err := io.Copy(zw, r); err != nil {
		return err
	}
	return zw.Close()
}

// entryType returns the object type of a pack entry from its first byte.
func entryType(entry []byte) plumbing.ObjectType {
	if len(entry) == 0 {
		return plumbing.InvalidObject
	}
	return plumbing.ObjectType((entry[0] >> 4) & 7)
}

// packWriter streams a new pack into a temp file in objects/pack and builds
// its index. finish publishes both the way git does: .pack and .idx are
// fsynced, then renamed (.idx last, since readers only use packs that have
// one), then the directory is fsynced. A crash before that leaves only
// tmp_pack_*/tmp_idx_* files, which git gc removes.
type packWriter struct {
	dir     string
	tmp     string // the temp .pack; "" once published
	idxTmp  string
	f       *os.File
	w       *bufio.Writer
	sum     hash.Hash // SHA-1 of all bytes so far: the trailer, and the pack's name
	off     int64
	entries []idxEntry // written so far, for the index
	count   int        // entries announced in the header
}

// newPackWriter starts a pack that will hold exactly count entries (the
// count is part of the header, so it must be known up front).
func newPackWriter(dir string, count int) (*packWriter, error) {
	tmp, f, err := createTemp(dir, "tmp_pack_", 0o444)
	if err != nil {
		return nil, fmt.Errorf("memrepo: create temp pack: %w", err)
	}
	p := &packWriter{dir: dir, tmp: tmp, f: f, w: bufio.NewWriterSize(f, 16<<10), sum: sha1.New(), count: count}
	hdr := []byte{'P', 'A', 'C', 'K', 0, 0, 0, 2, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(hdr[8:], uint32(count))
	if err := p.write(hdr); err != nil {
		p.abort()
		return nil, err
	}
	return p, nil
}

func (p *packWriter) write(b []byte) error {
	p.sum.Write(b)
	p.off += int64(len(b))
	if _, err := p.w.Write(b); err != nil {
		return fmt.Errorf("memrepo: write pack: %w", err)
	}
	return nil
}

// add appends one complete entry (header and compressed content) of object
// h; crc is the CRC-32 of entry, recorded in the index.
func (p *packWriter) add(h plumbing.Hash, entry []byte, crc uint32) error {
	p.entries = append(p.entries, idxEntry{hash: h, offset: p.off, crc: crc})
	return p.write(entry)
}

// finish completes, syncs and publishes the pack and its index and returns
// the index as readers will load it.
func (p *packWriter) finish() (*packIndex, error) {
	if len(p.entries) != p.count {
		return nil, fmt.Errorf("memrepo: pack has %d entries, header says %d", len(p.entries), p.count)
	}
	var checksum plumbing.Hash
	copy(checksum[:], p.sum.Sum(nil))
	if _, err := p.w.Write(checksum[:]); err != nil {
		return nil, fmt.Errorf("memrepo: write pack: %w", err)
	}
	if err := p.w.Flush(); err != nil {
		return nil, fmt.Errorf("memrepo: write pack: %w", err)
	}
	if err := p.f.Sync(); err != nil {
		return nil, fmt.Errorf("memrepo: sync pack: %w", err)
	}
	if err := p.f.Close(); err != nil {
		return nil, fmt.Errorf("memrepo: close pack: %w", err)
	}
	p.f = nil

	var err error
	if p.idxTmp, err = writeSynced(p.dir, "tmp_idx_", encodeIdx(p.entries, checksum)); err != nil {
		return nil, err
	}
	p.entries = nil
	name := "pack-" + checksum.String()
	base := filepath.Join(p.dir, name)
	// Readers get the index mapped from the file, exactly what a fresh
	// process would load; mapped before the renames (the mapping follows
	// the file), so a bad index is never published.
	idx, err := openIdx(p.idxTmp, base+".rev")
	if err != nil {
		return nil, fmt.Errorf("memrepo: load new pack index: %w", err)
	}
	if err := os.Rename(p.tmp, base+".pack"); err != nil {
		return nil, fmt.Errorf("memrepo: publish pack: %w", err)
	}
	p.tmp = ""
	if err := os.Rename(p.idxTmp, base+".idx"); err != nil {
		return nil, fmt.Errorf("memrepo: publish pack index: %w", err)
	}
	p.idxTmp = ""
	if err := SyncDir(p.dir); err != nil {
		return nil, fmt.Errorf("memrepo: sync %s: %w", p.dir, err)
	}
	return &packIndex{name: name, idx: idx}, nil
}

// abort removes whatever finish did not publish; a no-op after finish.
func (p *packWriter) abort() {
	if p.f != nil {
		_ = p.f.Close()
		p.f = nil
	}
	for _, tmp := range []*string{&p.tmp, &p.idxTmp} {
		if *tmp != "" {
			_ = os.Remove(*tmp)
			*tmp = ""
		}
	}
}

// writeSynced writes data to a new temp file dir/<prefix>* and fsyncs it.
func writeSynced(dir, prefix string, data []byte) (string, error) {
	tmp, f, err := createTemp(dir, prefix, 0o444)
	if err != nil {
		return "", fmt.Errorf("memrepo: create %s*: %w", prefix, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("memrepo: write %s: %w", tmp, err)
	}
	return tmp, nil
}
