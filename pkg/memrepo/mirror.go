package memrepo

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Mirror keeps a local, read-only copy of a remote memory repository for a
// read plane on another host than the writer. It uses the git binary, whose
// fetch updates refs with git's own locking, so readers of the mirror (which
// read refs from disk on every call) never see a half-written ref.
type Mirror struct {
	url, path string
	mu        sync.Mutex
}

// NewMirror returns the mirror of url kept at path.
func NewMirror(url, path string) *Mirror { return &Mirror{url: url, path: path} }

// Path is the local mirror.
func (m *Mirror) Path() string { return m.path }

// Sync clones the remote on first use (into a temporary sibling, renamed into
// place, so a crash leaves no half clone) and fetches it afterwards.
func (m *Mirror) Sync(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := os.Stat(filepath.Join(m.path, "HEAD")); err == nil {
		return gitRun(ctx, "", "--git-dir", m.path, "fetch", "--quiet", "--prune", "origin")
	}
	tmp, err := os.MkdirTemp(filepath.Dir(m.path), "."+filepath.Base(m.path)+".clone-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	dst := filepath.Join(tmp, "repo.git")
	if err := gitRun(ctx, "", "clone", "--quiet", "--mirror", m.url, dst); err != nil {
		return err
	}
	return os.Rename(dst, m.path)
}

func gitRun(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("git %s: %w: %s", args[len(args)-2], err, strings.TrimSpace(string(out)))
	}
	return nil
}
