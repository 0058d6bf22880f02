package memrepo

import (
	"fmt"
	"os"
	"sync"

	"github.com/garden-bloom/memory/pkg/membudget"
)

// Lazy opens a repository on first use once it exists: on a fresh deployment
// the write plane (or the mirror) creates it, possibly after a read service
// started.
type Lazy struct {
	path   string
	caches *caches // the repository's, made before it opens
	mu     sync.Mutex
	repo   *Repo
}

// NewLazy returns a Lazy for path.
func NewLazy(path string) *Lazy { return &Lazy{path: path, caches: newCaches()} }

// LazyFor is shared when set (a handle several services of one process
// use), else a Lazy of its own for path.
func LazyFor(shared *Lazy, path string) *Lazy {
	if shared != nil {
		return shared
	}
	return NewLazy(path)
}

// Opened returns a Lazy for a repository that is already open, so services
// in one process share its caches (a Repo is safe for concurrent use).
func Opened(r *Repo) *Lazy { return &Lazy{path: r.Path(), caches: r.caches, repo: r} }

// Caches are the repository's caches, open or not yet (membudget).
func (l *Lazy) Caches() []membudget.Named { return l.caches.named() }

// Get opens the repository, or returns it when already open.
func (l *Lazy) Get() (*Repo, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.repo != nil {
		return l.repo, nil
	}
	if _, err := os.Stat(l.path); err != nil {
		return nil, fmt.Errorf("memory repository not there yet: %w", err)
	}
	r, err := open(l.path, l.caches)
	if err != nil {
		return nil, err
	}
	l.repo = r
	return r, nil
}

// Opened returns the repository if it is open already, without opening it
// (for metrics, which must not open it as a side effect).
func (l *Lazy) Opened() (*Repo, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.repo, l.repo != nil
}
