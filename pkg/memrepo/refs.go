package memrepo

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/garden-bloom/memory/pkg/memrepo/internal/odb"
)

var (
	// ErrHeadMoved means refs/heads/main no longer points at the parent the
	// commit was built on (another writer, possibly a person using git, got
	// there first). Nothing was changed; rebuild on the new head and retry.
	ErrHeadMoved = errors.New("memrepo: main moved since the parent was read")
	// ErrLocked means refs/heads/main.lock stayed in place for the whole
	// lock wait. Either another writer is slow or a crashed writer left the
	// lock behind; see Repo.RecoverStaleLock.
	ErrLocked = errors.New("memrepo: refs/heads/main is locked")
)

// lockWait is how long Commit waits for refs/heads/main.lock to disappear.
// git itself gives up after core.filesRefLockTimeout (100 ms); we wait
// longer because our only competitor is an occasional human push. A
// variable so tests can shorten it.
var lockWait = 2 * time.Second

// refPath returns the path of the loose file for ref name.
func (r *Repo) refPath(name plumbing.ReferenceName) string {
	return filepath.Join(r.path, filepath.FromSlash(string(name)))
}

// errRefNotFound is internal; callers translate it to ErrNoMainBranch or
// ErrRevisionNotFound.
var errRefNotFound = errors.New("memrepo: reference not found")

// readRef resolves a ref exactly the way git's files backend does, straight
// from disk every time (refs are never cached, so changes made by the git
// binary are seen immediately): the loose file wins over packed-refs, and
// symbolic refs ("ref: ...", e.g. HEAD) are followed.
func (r *Repo) readRef(name plumbing.ReferenceName) (plumbing.Hash, error) {
	for depth := 0; depth < 5; depth++ {
		h, target, err := r.readRefOnce(name)
		if err != nil || target == "" {
			return h, err
		}
		name = target
	}
	return plumbing.ZeroHash, fmt.Errorf("memrepo: symbolic ref loop at %s", name)
}

// readRefOnce reads one level of ref name: either its hash or, for a
// symbolic ref, its target.
func (r *Repo) readRefOnce(name plumbing.ReferenceName) (plumbing.Hash, plumbing.ReferenceName, error) {
	data, err := os.ReadFile(r.refPath(name))
	switch {
	case err == nil:
		s := strings.TrimRight(string(data), " \t\r\n")
		if target, ok := strings.CutPrefix(s, "ref:"); ok {
			return plumbing.ZeroHash, plumbing.ReferenceName(strings.TrimSpace(target)), nil
		}
		h, ok := odb.ParseHash(s)
		if !ok {
			return plumbing.ZeroHash, "", fmt.Errorf("memrepo: malformed ref %s: %q", name, s)
		}
		return h, "", nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		// No loose ref: it may be packed.
	default:
		return plumbing.ZeroHash, "", fmt.Errorf("memrepo: read ref %s: %w", name, err)
	}
	h, err := r.readPackedRef(name)
	return h, "", err
}

// readPackedRef looks name up in packed-refs ("<sha> <name>" lines; '#'
// header and '^' peeled-tag lines are skipped).
func (r *Repo) readPackedRef(name plumbing.ReferenceName) (plumbing.Hash, error) {
	data, err := os.ReadFile(filepath.Join(r.path, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return plumbing.ZeroHash, fmt.Errorf("%w: %s", errRefNotFound, name)
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("memrepo: read packed-refs: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		sha, ref, ok := strings.Cut(line, " ")
		if !ok || ref != string(name) {
			continue
		}
		h, ok := odb.ParseHash(sha)
		if !ok {
			return plumbing.ZeroHash, fmt.Errorf("memrepo: malformed packed-refs line %q", line)
		}
		return h, nil
	}
	if err := sc.Err(); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("memrepo: read packed-refs: %w", err)
	}
	return plumbing.ZeroHash, fmt.Errorf("%w: %s", errRefNotFound, name)
}

// readMain returns the current value of refs/heads/main.
func (r *Repo) readMain() (plumbing.Hash, error) {
	h, err := r.readRef(MainBranch)
	if errors.Is(err, errRefNotFound) {
		return plumbing.ZeroHash, fmt.Errorf("%w in %s", ErrNoMainBranch, r.path)
	}
	return h, err
}

// acquireRefLock creates lockPath with O_CREATE|O_EXCL, which is git's
// whole locking protocol for the files ref backend: whoever creates
// <ref>.lock owns the ref until the lock is renamed over it or removed. An
// existing lock is retried with exponential backoff for up to wait.
func acquireRefLock(ctx context.Context, lockPath string, wait time.Duration) (*os.File, error) {
	deadline := time.Now().Add(wait)
	backoff := time.Millisecond
	for {
		// 0666 minus umask, as git creates ref files.
		f, err := os.OpenFile(lockPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("memrepo: create %s: %w", lockPath, err)
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return nil, fmt.Errorf("%w: %s exists (held for more than %v)", ErrLocked, lockPath, wait)
		}
		// Jitter keeps two waiters from retrying in lockstep. The cap is low
		// because locks are held for a few milliseconds only, and a waiter
		// that oversleeps also delays everything queued behind its writeMu.
		sleep := min(backoff/2+rand.N(backoff), remaining)
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		backoff = min(backoff*2, 8*time.Millisecond)
	}
}

// mainLock is a held refs/heads/main.lock. Updating main uses git's lock
// protocol, so it serialises correctly against `git push`, `git update-ref`,
// `git pack-refs` and anything else using the git binary:
//
//  1. lockMain: create refs/heads/main.lock exclusively (wait, then
//     ErrLocked) and re-read main under the lock (loose file, else
//     packed-refs): unless it is still the expected parent, ErrHeadMoved;
//  2. write: put "<new>\n" in the lock file and fsync it;
//  3. commit: rename the lock over refs/heads/main and fsync refs/heads so
//     the rename itself survives a crash.
//
// Until step 3's rename nobody sees a change; a crash before it leaves main
// untouched (plus a stale lock, see RecoverStaleLock). Steps 1 and 2 are
// separate so Commit can fsync the lock file concurrently with the new
// objects, saving one round trip to the disk; the rename still happens only
// after every object is durable. The reflog is not written: bare
// repositories do not keep one by default (core.logAllRefUpdates).
type mainLock struct {
	refPath, lockPath string
	f                 *os.File
	closed, renamed   bool
}

// lockMain acquires refs/heads/main.lock and checks that main is expect.
// On success the caller must call release (after commit, it is a no-op).
func (r *Repo) lockMain(ctx context.Context, expect plumbing.Hash) (*mainLock, error) {
	refPath := r.refPath(MainBranch)
	l := &mainLock{refPath: refPath, lockPath: refPath + ".lock"}
	f, err := acquireRefLock(ctx, l.lockPath, lockWait)
	if err != nil {
		return nil, err
	}
	l.f = f
	cur, err := r.readMain()
	if err == nil && cur != expect {
		err = fmt.Errorf("%w: main is %s, parent was %s", ErrHeadMoved, cur, expect)
	}
	if err != nil {
		l.release()
		return nil, err
	}
	return l, nil
}

// write stores the new value in the lock file and makes it durable.
func (l *mainLock) write(h plumbing.Hash) error {
	if _, err := l.f.WriteString(h.String() + "\n"); err != nil {
		return fmt.Errorf("memrepo: write %s: %w", l.lockPath, err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("memrepo: sync %s: %w", l.lockPath, err)
	}
	return nil
}

// commit publishes the value written by write. If only the final directory
// fsync fails, main has already moved; the error says so.
func (l *mainLock) commit() error {
	l.closed = true
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("memrepo: close %s: %w", l.lockPath, err)
	}
	if err := os.Rename(l.lockPath, l.refPath); err != nil {
		return fmt.Errorf("memrepo: rename %s: %w", l.lockPath, err)
	}
	l.renamed = true
	if err := odb.SyncDir(filepath.Dir(l.refPath)); err != nil {
		return fmt.Errorf("memrepo: main updated but syncing %s failed (not yet durable): %w",
			filepath.Dir(l.refPath), err)
	}
	return nil
}

// release gives the lock up without changing main, unless commit renamed it.
func (l *mainLock) release() {
	if !l.closed {
		l.closed = true
		_ = l.f.Close()
	}
	if !l.renamed {
		l.renamed = true // only once: a later lock may belong to someone else
		_ = os.Remove(l.lockPath)
	}
}

// RecoverStaleLock removes refs/heads/main.lock if it is older than maxAge
// (any existing lock if maxAge <= 0) and reports whether it removed one.
//
// A lock that outlives its writer (kill -9, power loss between lock and
// rename) blocks every later Commit with ErrLocked; Commit deliberately
// never breaks locks itself, because a lock it did not create may belong to
// a live git process. The single writer (proposal-apply) calls this once at
// start-up, before its first Commit: at that point no lock can be its own,
// and a lock older than maxAge cannot belong to a git push either (git holds
// it for milliseconds). Pass maxAge 0 only when it is known that no other
// process, git included, can be writing to the repository. The main ref
// itself is never modified: a stale lock means the update it guarded did not
// happen.
func (r *Repo) RecoverStaleLock(maxAge time.Duration) (bool, error) {
	// Holding writeMu guarantees we do not delete the lock of one of our
	// own in-flight commits.
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	lockPath := r.refPath(MainBranch) + ".lock"
	fi, err := os.Lstat(lockPath)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("memrepo: stat %s: %w", lockPath, err)
	}
	if maxAge > 0 && time.Since(fi.ModTime()) < maxAge {
		return false, nil
	}
	if err := os.Remove(lockPath); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil // released meanwhile
		}
		return false, fmt.Errorf("memrepo: remove stale %s: %w", lockPath, err)
	}
	if err := odb.SyncDir(filepath.Dir(lockPath)); err != nil {
		return true, fmt.Errorf("memrepo: sync %s: %w", filepath.Dir(lockPath), err)
	}
	return true, nil
}

// headCache remembers main's hash with the identity (inode, size, mtime) of
// the loose ref file it was read from, so that reads — every request reads
// the head — stat the file instead of opening and reading it. Ref files are
// replaced, never rewritten in place, so a changed ref has a new identity,
// with one exception: a new file can reuse a freed inode, and file times are
// as coarse as the kernel's clock tick, so a ref written within a tick of
// the one cached, with the same size, could look the same. A file is
// therefore cached only once it is older than refSettle: no later file can
// share its mtime then.
type headCache struct {
	mu   sync.Mutex
	id   refFileID
	hash plumbing.Hash
}

type refFileID struct {
	ino, size uint64
	mtimeNs   int64
}

// refSettle is far above any filesystem's timestamp granularity (a few ms).
const refSettle = 100 * time.Millisecond

func refIdentity(fi fs.FileInfo) (refFileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return refFileID{}, false
	}
	return refFileID{ino: uint64(st.Ino), size: uint64(fi.Size()), mtimeNs: fi.ModTime().UnixNano()}, true
}

func (c *headCache) get(fi fs.FileInfo) (plumbing.Hash, bool) {
	id, ok := refIdentity(fi)
	if !ok {
		return plumbing.ZeroHash, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hash, c.id == id && !c.hash.IsZero()
}

// load reads the loose ref file at path and caches its hash under the
// identity of the very file read (fstat on the open file), if it is settled.
// ok is false when the file is missing or does not hold a plain hash.
func (c *headCache) load(path string) (plumbing.Hash, bool) {
	f, err := os.Open(path)
	if err != nil {
		return plumbing.ZeroHash, false
	}
	defer func() { _ = f.Close() }() // read only
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return plumbing.ZeroHash, false
	}
	data, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return plumbing.ZeroHash, false
	}
	h, ok := odb.ParseHash(strings.TrimRight(string(data), " \t\r\n"))
	if !ok {
		return plumbing.ZeroHash, false
	}
	if id, ok := refIdentity(fi); ok && time.Since(fi.ModTime()) >= refSettle {
		c.mu.Lock()
		c.id, c.hash = id, h
		c.mu.Unlock()
	}
	return h, true
}
