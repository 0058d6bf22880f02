package odb

import (
	"bufio"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Every WriteNew adds a pack, and every lookup that misses the cache probes
// each pack's index, so packs must not pile up. Compact merges them the way
// `git repack --geometric=2` does, which bounds their number by about
// log2(objects) while copying each object only O(log) times over its life.
const (
	// CompactMinPacks: below this many packs Compact does nothing, so the
	// merge cost is shared by that many commits.
	CompactMinPacks = 16
	// compactMaxPackBytes: bigger packs are never merged here; they are
	// `git gc`'s business. Merges run beside commits, so the bound is not
	// for their sake but for the merge's memory, about 110 bytes an object
	// merged (the new index, one source pack's entries): a few MB for
	// packs this size. At 32 MiB, the 1-hour soak (whose decisions.md files
	// grow all along, rewritten whole at each apply) left 144 packs open
	// and probed by every lookup that misses the cache.
	compactMaxPackBytes = 256 << 20
)

// mergeable is a pack Compact may merge.
type mergeable struct {
	*packIndex
	objects int64
	size    int64 // bytes of the .pack
}

// Compact merges small packs into one when there are at least
// CompactMinPacks of them, and deletes the packs earlier merges replaced
// once their grace is over; it returns quickly when there is nothing to do.
// Callers must not run two at once (memrepo's Repo.CompactPacks holds a
// mutex); WriteNew and readers may run alongside. See Repo.CompactPacks for
// which packs are merged and why every object stays present meanwhile.
func (s *Store) Compact() error {
	if err := s.deleteRetired(time.Now()); err != nil {
		return err
	}
	// Cheap early exit, the common case after a commit.
	if packs, err := s.packList(false); err != nil || len(packs) < CompactMinPacks {
		return err
	}
	cands, err := s.mergeCandidates()
	if err != nil || len(cands) < CompactMinPacks {
		return err
	}
	sel := geometricRollup(cands)
	if len(sel) < 2 {
		return nil
	}
	if err := s.merge(sel); err != nil {
		return err
	}
	return s.deleteRetired(time.Now()) // without a grace (tests): at once
}

// mergeCandidates lists the packs Compact may merge (see memrepo's
// Repo.CompactPacks).
func (s *Store) mergeCandidates() ([]mergeable, error) {
	packs, err := s.packList(true) // include packs other processes added
	if err != nil {
		return nil, err
	}
	names, err := readDirNames(s.packDir())
	if err != nil {
		return nil, fmt.Errorf("memrepo: list packs: %w", err)
	}
	special := map[string]bool{}
	for _, n := range names {
		for _, ext := range []string{".keep", ".promisor", ".mtimes", ".bitmap"} {
			if base, ok := strings.CutSuffix(n, ext); ok {
				special[base] = true
			}
		}
	}
	var out []mergeable
	for _, p := range packs {
		if special[p.name] || s.unmergeable[p.name] {
			continue
		}
		fi, err := os.Stat(filepath.Join(s.packDir(), p.name+".pack"))
		if err != nil || fi.Size() > compactMaxPackBytes {
			continue // gone (repacked meanwhile) or too big
		}
		out = append(out, mergeable{packIndex: p, objects: p.idx.Count(), size: fi.Size()})
	}
	return out, nil
}

// geometricRollup returns the packs to merge so that, afterwards, every pack
// holds at least twice as many objects as the next smaller one: the rule of
// `git repack --geometric=2`. Sorted by size, it finds the largest packs
// that already form such a progression and rolls everything smaller into
// one pack, plus any pack of the progression that the new pack would not be
// at most half the size of.
func geometricRollup(packs []mergeable) []mergeable {
	sort.Slice(packs, func(i, j int) bool { return packs[i].objects < packs[j].objects })
	split := 0
	for i := len(packs) - 1; i > 0; i-- {
		if packs[i].objects < 2*packs[i-1].objects {
			split = i + 1
			break
		}
	}
	var total int64
	for _, p := range packs[:split] {
		total += p.objects
	}
	for split < len(packs) && packs[split].objects < 2*total {
		total += packs[split].objects
		split++
	}
	return packs[:split]
}

// errOffsetDelta marks a pack with OFS_DELTA entries (git's repacks): their
// bases are named by position, which copying would change, so not merged.
var errOffsetDelta = errors.New("pack has offset delta entries")

// merge copies the entries of packs into one new pack (each object once),
// publishes it and only then deletes the old packs.
//
// Its memory is the new pack's index (what every pack writer holds) and one
// source pack's entries at a time: an object is a duplicate when a pack
// before its own in packs holds it, which the mapped indexes answer, so no
// set of every object merged is built.
func (s *Store) merge(packs []mergeable) error {
	count := 0
	for i, p := range packs {
		count += int(p.objects) - duplicates(packs[:i], p)
	}
	pw, err := newPackWriter(s.packDir(), count)
	if err != nil {
		return err
	}
	defer pw.abort()
	for i, p := range packs {
		entries, err := p.idx.entriesByOffset()
		if err == nil {
			err = s.copyEntries(pw, p, entries, packs[:i])
		}
		if errors.Is(err, errOffsetDelta) {
			s.unmergeable[p.name] = true
			return nil // try again without it next time
		}
		if err != nil {
			s.unmergeable[p.name] = true // do not trip over it at every commit
			return fmt.Errorf("memrepo: merge %s: %w", p.name, err)
		}
	}
	merged, err := pw.finish()
	if err != nil {
		return err
	}
	removed := map[string]bool{}
	for _, p := range packs {
		if p.name != merged.name {
			removed[p.name] = true
		}
	}
	// Readers switch to the merged pack before the old files go away; one
	// that still holds an old snapshot retries after a rescan (lookup).
	s.replacePacks(removed, merged)
	return nil
}

// duplicates counts the objects of p that a pack of earlier holds too.
func duplicates(earlier []mergeable, p mergeable) int {
	n := 0
	for i := range int(p.objects) {
		if inAny(earlier, p.idx.hashAt(i)) {
			n++
		}
	}
	return n
}

// inAny reports whether one of packs holds h.
func inAny(packs []mergeable, h plumbing.Hash) bool {
	for _, q := range packs {
		if _, ok := q.idx.find(h); ok {
			return true
		}
	}
	return false
}

// defaultRetiredGrace is how long packs a merge replaced stay on disk. A directory
// listing that runs while the merged pack is renamed in and the old ones
// are deleted may show neither (readdir promises nothing about entries
// changed meanwhile), and a reader in another process that lists then
// finds no pack holding the object it needs. Deleting the old packs well
// after the rename keeps every object in some listed pack at every instant.
const defaultRetiredGrace = time.Second

// SetRetiredGrace replaces defaultRetiredGrace for this store. Tests that
// count packs set 0, so a merge deletes the packs it replaced at once.
func (s *Store) SetRetiredGrace(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retiredGrace = d
}

// deleteRetired deletes the packs retired at least s.retiredGrace ago. They
// stay retired (out of rescans) until their files are gone.
func (s *Store) deleteRetired(now time.Time) error {
	due := map[string]bool{}
	s.mu.Lock()
	for name, at := range s.retired {
		if now.Sub(at) >= s.retiredGrace {
			due[name] = true
		}
	}
	s.mu.Unlock()
	if len(due) == 0 {
		return nil
	}
	err := s.deletePacks(due)
	s.mu.Lock()
	for name := range due {
		delete(s.retired, name)
	}
	s.mu.Unlock()
	return err
}

// copyEntries appends the entries of p (in pack order) whose objects no
// pack of earlier holds to pw, byte for byte, checking each against the
// CRC-32 in p's index.
func (s *Store) copyEntries(pw *packWriter, p mergeable, entries []idxEntry, earlier []mergeable) error {
	f, err := os.Open(filepath.Join(s.packDir(), p.name+".pack"))
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read only
	r := bufio.NewReaderSize(f, 64<<10)
	pos := int64(0)
	var buf []byte // one entry at a time: a merge copies hundreds of MB
	for i, e := range entries {
		end := p.size - 20 // the SHA-1 trailer
		if i+1 < len(entries) {
			end = entries[i+1].offset
		}
		off := e.offset
		if off < 12 || end <= off || off < pos {
			return fmt.Errorf("entry %s at %d does not fit the pack", e.hash, off)
		}
		if _, err := r.Discard(int(off - pos)); err != nil {
			return err
		}
		if int64(cap(buf)) < end-off {
			buf = make([]byte, end-off)
		}
		entry := buf[:end-off]
		if _, err := io.ReadFull(r, entry); err != nil {
			return err
		}
		pos = end
		if crc32.ChecksumIEEE(entry) != e.crc {
			return fmt.Errorf("entry %s: CRC-32 mismatch (corrupt pack)", e.hash)
		}
		// A REF_DELTA's base is in the same pack (packs on disk are
		// self-contained), so it is copied too, or was already.
		if t := entryType(entry); t != entryRefDelta && (t < plumbing.CommitObject || t > plumbing.TagObject) {
			return errOffsetDelta
		}
		if inAny(earlier, e.hash) {
			continue // copied from that pack
		}
		if err := pw.add(e.hash, entry, e.crc); err != nil {
			return err
		}
	}
	return nil
}

// deletePacks removes packs the way git does (.idx first, so no reader
// picks up a pack about to lose its data), then makes that durable: old
// packs coming back after a crash would only be duplicates, but why keep them.
func (s *Store) deletePacks(names map[string]bool) error {
	var first error
	for name := range names {
		base := filepath.Join(s.packDir(), name)
		for _, ext := range []string{".idx", ".pack", ".rev"} {
			if err := os.Remove(base + ext); err != nil && !errors.Is(err, fs.ErrNotExist) && first == nil {
				first = fmt.Errorf("memrepo: remove merged pack: %w", err)
			}
		}
	}
	if err := SyncDir(s.packDir()); err != nil && first == nil {
		first = fmt.Errorf("memrepo: sync %s: %w", s.packDir(), err)
	}
	return first
}
