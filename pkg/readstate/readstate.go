// Package readstate shares a read-plane service's state (the entity graph's
// snapshot, a copy of the search index) through the object store, so a new
// read replica — whose data dir starts empty — loads it and replays only
// the commits after it instead of all of history. Any replica may publish;
// the object is replaced atomically, and a replica that loads an older copy
// just replays a longer tail.
package readstate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/garden-bloom/memory/pkg/blob"
)

// Prefix is where the shared states live in the object store.
const Prefix = "read-state/"

// StopTimeout bounds a publish at shutdown: with the drain
// (--shutdown-timeout, 15 s) it must fit a pod's 30 s grace period.
const StopTimeout = 10 * time.Second

// Shared is one service's shared state object. A nil *Shared is disabled:
// Open finds nothing and Publish does nothing.
type Shared struct {
	blobs       blob.Store
	key         string
	every       time.Duration
	stopTimeout time.Duration
	tmpDir      string
	logger      *slog.Logger
	now         func() time.Time

	mu         sync.Mutex
	lastCommit string // what this replica published last
	lastAt     time.Time
}

// New returns the shared state stored under Prefix+name, published at most
// every interval; nil (disabled) without a store or with every <= 0.
// Uploads are staged in tmpDir. stopTimeout bounds the publish at
// shutdown (0: StopTimeout); the one-off job that publishes for a new
// deployment (memoryd publish-read-state) waits as long as it takes.
func New(blobs blob.Store, name string, every, stopTimeout time.Duration, tmpDir string, logger *slog.Logger) *Shared {
	if blobs == nil || every <= 0 {
		return nil
	}
	return &Shared{blobs: blobs, key: Prefix + name, every: every, stopTimeout: cmp.Or(stopTimeout, StopTimeout),
		tmpDir: tmpDir, logger: logger, now: time.Now}
}

// StopTimeout bounds the publish at shutdown.
func (s *Shared) StopTimeout() time.Duration {
	if s == nil {
		return StopTimeout
	}
	return s.stopTimeout
}

// Open returns the shared state; blob.ErrNotFound when none was published.
func (s *Shared) Open(ctx context.Context) (io.ReadCloser, error) {
	if s == nil {
		return nil, blob.ErrNotFound
	}
	rc, _, err := s.blobs.Get(ctx, s.key)
	return rc, err
}

// Due reports whether the state at commit should be published: it moved
// since this replica's last upload, and the interval passed (or force, at
// shutdown).
func (s *Shared) Due(commit string, force bool) bool {
	if s == nil || commit == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return commit != s.lastCommit && (force || s.now().Sub(s.lastAt) >= s.every)
}

// Publish writes the state with write, which returns the commit the state
// is at, staged in a temporary file (a large state is never held in
// memory), and uploads it.
func (s *Shared) Publish(ctx context.Context, write func(io.Writer) (commit string, err error)) error {
	if s == nil {
		return nil
	}
	start := s.now()
	f, err := os.CreateTemp(s.tmpDir, ".read-state-*")
	if err != nil {
		return fmt.Errorf("readstate: stage %s: %w", s.key, err)
	}
	defer func() {
		_ = f.Close() // uploaded or abandoned: nothing left to keep
		if err := os.Remove(f.Name()); err != nil {
			s.logger.Warn("read state staging file not removed", "path", f.Name(), "err", err)
		}
	}()
	commit, err := write(f)
	if err != nil {
		return fmt.Errorf("readstate: write %s: %w", s.key, err)
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		return err
	}
	return s.upload(ctx, f, size, commit, start)
}

// PublishFile uploads a state already written to a file (which may be
// replaced while it is read: the open file stays the one uploaded).
func (s *Shared) PublishFile(ctx context.Context, path, commit string) error {
	if s == nil {
		return nil
	}
	start := s.now()
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("readstate: open %s: %w", path, err)
	}
	defer func() { _ = f.Close() }() // read only
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return s.upload(ctx, f, fi.Size(), commit, start)
}

func (s *Shared) upload(ctx context.Context, r io.Reader, size int64, commit string, start time.Time) error {
	if _, err := s.blobs.Put(ctx, s.key, r, size, blob.PutOptions{ContentType: "application/octet-stream"}); err != nil {
		return fmt.Errorf("readstate: upload %s: %w", s.key, err)
	}
	s.mu.Lock()
	s.lastCommit, s.lastAt = commit, s.now()
	s.mu.Unlock()
	s.logger.Info("read state published", "key", s.key, "commit", commit, "bytes", size, "duration_ms", s.now().Sub(start).Milliseconds())
	return nil
}

// Load opens the shared state and hands it to restore; found is false when
// none was published (not an error: the caller builds from history).
func (s *Shared) Load(ctx context.Context, restore func(io.Reader) (commit string, err error)) (found bool, err error) {
	rc, err := s.Open(ctx)
	if errors.Is(err, blob.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("readstate: open %s: %w", s.key, err)
	}
	defer func() { _ = rc.Close() }() // read only
	start := s.now()
	commit, err := restore(rc)
	if err != nil {
		return true, fmt.Errorf("readstate: load %s: %w", s.key, err)
	}
	s.mu.Lock()
	s.lastCommit, s.lastAt = commit, s.now() // no need to publish it back
	s.mu.Unlock()
	s.logger.Info("read state loaded from the object store", "key", s.key, "commit", commit, "duration_ms", s.now().Sub(start).Milliseconds())
	return true, nil
}
