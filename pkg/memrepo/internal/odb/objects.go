// Package odb is the object database of the memory repository: it stores
// and finds git objects (loose files and packs under objects/), writes new
// ones as fsynced packs, merges packs, and caches objects by hash. It knows
// nothing of refs, trees' meaning or commits' history; that is memrepo's
// repository API, the only user of this package.
//
// It exists as its own package so the durability and pack-format code can be
// read, tested and changed without the repository logic around it (issue
// #26). Objects handed out are shared through the cache: read-only. Errors
// keep memrepo's "memrepo:" prefix, since they reach its callers as they are.
package odb

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/objfile"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/klauspost/compress/zlib"

	"github.com/garden-bloom/memory/pkg/lru"
)

// Store reads and writes the repository's object database (objects/)
// directly instead of going through go-git's filesystem storage, for three
// reasons:
//
//   - go-git loads the list of pack indexes once and never notices packs that
//     appear later (every Commit writes one; so do git gc, git repack, and a
//     push of receive.unpackLimit or more objects, which git keeps as a
//     pack). A long-lived reader would then fail to find new objects.
//     Store rescans objects/pack whenever a lookup misses, the way git
//     itself does (reprepare_packed_git).
//   - go-git's lazy index loading mutates shared maps without a lock, so one
//     go-git Repository is not safe for concurrent readers. Here the pack
//     list is guarded by a mutex and everything else is immutable or
//     goroutine-safe (the mapped pack indexes of idx.go, cache.ObjectLRU).
//   - go-git's object writers never fsync, so an object could be lost or
//     truncated by a power failure after the ref already points at it.
//     WriteNew (pack.go) follows git's own durable write protocol instead.
//
// Objects are immutable, so caching them by hash is always correct; refs are
// not this package's business (memrepo reads them from disk).
//
// Store implements storer.EncodedObjectStorer (read-only) so that
// decoded *object.Commit and *object.Tree values handed to callers can still
// use their storer-backed methods (Tree(), Parents(), File(), ...) safely.
type Store struct {
	dir   string      // absolute path of <repo>/objects
	cache objectCache // goroutine-safe LRU of decoded-to-memory objects

	mu          sync.Mutex
	packs       []*packIndex // snapshot, replaced (never mutated) on rescan
	packsLoaded bool
	// retired are packs a merge replaced, by when: a rescan leaves them
	// out (the merged pack holds their objects), and a compact at least
	// retiredGrace later deletes them (compact.go).
	retired      map[string]time.Time
	retiredGrace time.Duration

	// unmergeable names packs Compact must skip (deltas, corruption). Only
	// Compact uses it, and its callers serialise it (memrepo's compactMu).
	unmergeable map[string]bool
}

// packIndex is one pack and its index (idx.go), which is safe for
// concurrent use.
type packIndex struct {
	name string // "pack-<sha>", without extension
	idx  *packIdx

	// The .pack, opened on first read and kept open until the pack leaves
	// the list (an open per object read was most of a read's syscalls).
	mu     sync.Mutex
	file   *os.File
	closed bool
}

// errPackReplaced is what reading a pack that left the list gives; it
// wraps fs.ErrNotExist, so lookup rescans and finds the object elsewhere.
var errPackReplaced = fmt.Errorf("%w: pack replaced", fs.ErrNotExist)

// open returns the pack's file, opening it on first use.
func (p *packIndex) open(dir string) (*os.File, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errPackReplaced
	}
	if p.file == nil {
		f, err := os.Open(filepath.Join(dir, p.name+".pack"))
		if err != nil {
			return nil, err
		}
		p.file = f
	}
	return p.file, nil
}

// close closes the pack's file; reads under way fail with os.ErrClosed
// (the runtime keeps the descriptor until they return). Its index stays
// readable, and is unmapped once no snapshot of the list holds p (idx.go).
func (p *packIndex) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.file != nil {
		_ = p.file.Close()
		p.file = nil
	}
}

func (p *packIndex) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// objectCacheSize bounds the in-memory object cache (its share of the
// process's memory budget scales it). Memory files are small (a few KiB),
// so this holds the hot trees and blobs of thousands of agents.
const objectCacheSize = 32 << 20

// objectCost is what a cached object costs beyond its content: the
// object, its list element and map entry.
const objectCost = 160

// objectCache holds objects by hash, each costing its size.
type objectCache struct {
	*lru.Cache[plumbing.Hash, plumbing.EncodedObject]
}

// put caches o; it computes o.Hash() before the object is shared.
func (c objectCache) put(o plumbing.EncodedObject) {
	c.Put(o.Hash(), o, o.Size()+objectCost)
}

// NewCache returns an object cache of the default size.
func NewCache() *lru.Cache[plumbing.Hash, plumbing.EncodedObject] {
	return lru.New[plumbing.Hash, plumbing.EncodedObject](objectCacheSize)
}

// New returns the object database of the repository at gitDir (a bare
// repository's directory; objects are in gitDir/objects). It reads nothing
// yet: packs are listed on first use.
func New(gitDir string) *Store { return NewWithCache(gitDir, NewCache()) }

// NewWithCache is New with the object cache it keeps objects in.
func NewWithCache(gitDir string, c *lru.Cache[plumbing.Hash, plumbing.EncodedObject]) *Store {
	return &Store{
		dir:          filepath.Join(gitDir, "objects"),
		cache:        objectCache{c},
		unmergeable:  map[string]bool{},
		retired:      map[string]time.Time{},
		retiredGrace: defaultRetiredGrace,
	}
}

var _ storer.EncodedObjectStorer = (*Store)(nil)

// errReadOnlyStore is returned by the storer methods that would modify the
// object database: every write must go through memrepo's Repo.Commit (and
// so WriteNew), which knows how to make it durable.
var errReadOnlyStore = errors.New("memrepo: object store is read-only; use Repo.Commit")

// NewEncodedObject implements storer.EncodedObjectStorer.
func (s *Store) NewEncodedObject() plumbing.EncodedObject { return &plumbing.MemoryObject{} }

// SetEncodedObject implements storer.EncodedObjectStorer; it always fails.
func (s *Store) SetEncodedObject(plumbing.EncodedObject) (plumbing.Hash, error) {
	return plumbing.ZeroHash, errReadOnlyStore
}

// IterEncodedObjects implements storer.EncodedObjectStorer; enumerating the
// whole object database is never needed by memory services.
func (s *Store) IterEncodedObjects(plumbing.ObjectType) (storer.EncodedObjectIter, error) {
	return nil, errors.New("memrepo: iterating all objects is not supported")
}

// AddAlternate implements storer.EncodedObjectStorer; it always fails.
func (s *Store) AddAlternate(string) error { return errReadOnlyStore }

// HasEncodedObject implements storer.EncodedObjectStorer.
func (s *Store) HasEncodedObject(h plumbing.Hash) error {
	_, err := s.Get(plumbing.AnyObject, h)
	return err
}

// EncodedObjectSize implements storer.EncodedObjectStorer.
func (s *Store) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	o, err := s.Get(plumbing.AnyObject, h)
	if err != nil {
		return 0, err
	}
	return o.Size(), nil
}

// EncodedObject implements storer.EncodedObjectStorer.
func (s *Store) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	return s.Get(t, h)
}

// Get returns the object h if it exists and has type t (any type for
// plumbing.AnyObject), and otherwise an error wrapping
// plumbing.ErrObjectNotFound. The returned object may be shared through the
// cache: callers must only read it.
func (s *Store) Get(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	o, err := s.lookup(h)
	if err != nil {
		return nil, err
	}
	if t != plumbing.AnyObject && o.Type() != t {
		return nil, plumbing.ErrObjectNotFound
	}
	return o, nil
}

// maxLookupRounds bounds the rescans of one lookup that keeps finding its
// pack replaced or the pack list changed.
const maxLookupRounds = 16

func (s *Store) lookup(h plumbing.Hash) (plumbing.EncodedObject, error) {
	if o, ok := s.cache.Get(h); ok {
		return o, nil
	}
	// Packs first: the memory services write only packs, so nearly every
	// object is in one, and probing for a loose file first cost a failed
	// open per object read. Two rounds: the second one rescans
	// objects/pack. Loose objects are retried too because git gc first
	// writes a pack and then deletes the loose files, so an object can move
	// from "loose" to "in a pack we have not seen yet" between our probes.
	//
	// While packs come and go (the writer merges them after every commit
	// batch), a round that found its pack replaced, or whose rescan changed
	// the list, earns another: a pack a rescan found can be merged away
	// before it is read, and a directory listing that runs during a merge
	// may show neither the merged pack nor the ones it replaced. With two
	// rounds only, a reader failed about once in a million reads under load
	// (memrepo's TestLookupDuringCompaction).
	inFlux := false
	for round := 0; round < 2 || (inFlux && round < maxLookupRounds); round++ {
		packs, changed, err := s.listPacks(round > 0)
		if err != nil {
			return nil, err
		}
		o, err := s.readPacked(packs, h)
		if err == nil {
			s.cache.put(o)
			return o, nil
		}
		// fs.ErrNotExist: a pack we knew about was deleted by a repack.
		replaced := errors.Is(err, fs.ErrNotExist)
		inFlux = replaced || changed
		if !errors.Is(err, plumbing.ErrObjectNotFound) && !replaced {
			return nil, fmt.Errorf("memrepo: read packed object %s: %w", h, err)
		}
		o, err = s.readLoose(h)
		if err == nil {
			s.cache.put(o)
			return o, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("memrepo: read loose object %s: %w", h, err)
		}
	}
	return nil, plumbing.ErrObjectNotFound
}

// loosePath returns objects/xx/yyyy... for h.
func (s *Store) loosePath(h plumbing.Hash) string {
	hx := h.String()
	return filepath.Join(s.dir, hx[:2], hx[2:])
}

func (s *Store) readLoose(h plumbing.Hash) (plumbing.EncodedObject, error) {
	f, err := os.Open(s.loosePath(h))
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	r, err := objfile.NewReader(f)
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	t, size, err := r.Header()
	if err != nil {
		return nil, err
	}
	o := &plumbing.MemoryObject{}
	o.SetType(t)
	buf := make([]byte, size)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	if _, err := o.Write(buf); err != nil {
		return nil, err
	}
	return o, nil
}

// readPacked looks h up in the given packs. It returns an error wrapping
// fs.ErrNotExist if the pack holding h has disappeared (repacked).
func (s *Store) readPacked(packs []*packIndex, h plumbing.Hash) (plumbing.EncodedObject, error) {
	for _, p := range packs {
		off, err := p.idx.FindOffset(h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err) // a corrupt 8-byte offset
		}
		f, err := p.open(s.packDir())
		if err != nil {
			return nil, err
		}
		o, err := s.readEntry(p, f, h, off, 0)
		if err != nil && p.isClosed() {
			return nil, errPackReplaced // a repack or compaction replaced it mid-read
		}
		return o, err
	}
	return nil, plumbing.ErrObjectNotFound
}

// packList returns the current pack indexes, loading them on first use and
// rescanning objects/pack when rescan is set. Indexes already loaded are
// reused, so a rescan costs one readdir plus the new .idx files.
func (s *Store) packList(rescan bool) ([]*packIndex, error) {
	packs, _, err := s.listPacks(rescan)
	return packs, err
}

// listPacks is packList that also reports whether the rescan changed the
// list.
func (s *Store) listPacks(rescan bool) (_ []*packIndex, changed bool, _ error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.packsLoaded && !rescan {
		return s.packs, false, nil
	}
	packDir := s.packDir()
	names, err := readDirNames(packDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("memrepo: list packs: %w", err)
	}
	have := make(map[string]bool, len(names))
	for _, n := range names {
		have[n] = true
	}
	old := make(map[string]*packIndex, len(s.packs))
	for _, p := range s.packs {
		old[p.name] = p
	}
	var packs []*packIndex
	for _, n := range names {
		base, ok := strings.CutSuffix(n, ".idx")
		// git renames the .pack into place before the .idx, and only
		// packs with both files are usable.
		if !ok || !strings.HasPrefix(base, "pack-") || !have[base+".pack"] || !s.retired[base].IsZero() {
			continue
		}
		if p := old[base]; p != nil {
			packs = append(packs, p)
			continue
		}
		idx, err := openIdx(filepath.Join(packDir, n), filepath.Join(packDir, base+".rev"))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted by a concurrent repack
		}
		if err != nil {
			return nil, false, fmt.Errorf("memrepo: load %s: %w", n, err)
		}
		packs = append(packs, &packIndex{name: base, idx: idx})
	}
	changed = len(packs) != len(s.packs)
	for _, p := range packs {
		changed = changed || old[p.name] != p
	}
	closeDropped(s.packs, packs)
	s.packs = packs // a new slice: earlier snapshots stay valid for readers
	s.packsLoaded = true
	return packs, changed, nil
}

// closeDropped closes the files of the packs in old that are not in now.
func closeDropped(old, now []*packIndex) {
	for _, p := range old {
		if !slices.Contains(now, p) {
			p.close()
		}
	}
}

func readDirNames(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer func() { _ = d.Close() }() // read only
	return d.Readdirnames(-1)
}

// HashesWithPrefix returns every object (loose or packed) whose hex name
// starts with prefix (lower-case hex, at least 2 digits).
func (s *Store) HashesWithPrefix(prefix string) ([]plumbing.Hash, error) {
	seen := map[plumbing.Hash]bool{}
	var out []plumbing.Hash
	add := func(h plumbing.Hash) {
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	names, err := readDirNames(filepath.Join(s.dir, prefix[:2]))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, n := range names {
		if len(n) == 38 && strings.HasPrefix(n, prefix[2:]) {
			if h, ok := ParseHash(prefix[:2] + n); ok {
				add(h)
			}
		}
	}

	// Rescan so that objects packed since the last lookup are included.
	packs, err := s.packList(true)
	if err != nil {
		return nil, err
	}
	lower, err := hex.DecodeString((prefix + strings.Repeat("0", 40))[:40])
	if err != nil {
		return nil, err
	}
	for _, p := range packs {
		p.idx.hashesWithPrefix(lower, prefix, add)
	}
	return out, nil
}

// ParseHash parses a full 40-digit lower- or upper-case hex object name.
func ParseHash(s string) (plumbing.Hash, bool) {
	var h plumbing.Hash
	if len(s) != 40 {
		return h, false
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, false
	}
	return h, true
}

// createTemp creates a new file dir/<prefix><random> with O_EXCL and mode.
// os.CreateTemp cannot be used because it forces mode 0600.
func createTemp(dir, prefix string, mode os.FileMode) (string, *os.File, error) {
	for try := 0; ; try++ {
		name := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if err == nil {
			return name, f, nil
		}
		if !errors.Is(err, fs.ErrExist) || try >= 100 {
			return "", nil, err
		}
	}
}

// zlibPool recycles compressors; zlib.NewWriterLevel allocates ~256 KiB.
// BestSpeed, like git's loose objects: every new object is compressed once
// on the commit path, and `git gc` recompresses when it repacks. The
// klauspost/compress encoder (already in the build through minio-go) writes
// the same standard zlib streams as compress/zlib, 1.3–1.9× faster and a
// little smaller (BenchmarkEncodeEntry); reading stays with go-git.
var zlibPool = sync.Pool{New: func() any {
	w, _ := zlib.NewWriterLevel(nil, zlib.BestSpeed)
	return w
}}
