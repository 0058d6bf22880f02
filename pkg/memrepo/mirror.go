package memrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Mirror keeps a local, read-only copy of a remote memory repository for a
// read plane on another host than the writer. It uses the git binary, whose
// fetch updates refs with git's own locking, so readers of the mirror (which
// read refs from disk on every call) never see a half-written ref.
type Mirror struct {
	url, path string
	token     func() (string, error)
	mu        sync.Mutex
}

// MirrorOption configures a [Mirror].
type MirrorOption func(*Mirror)

// WithBearerToken makes every clone and fetch send "Authorization: Bearer
// <token>", with the token token returns at that moment (so it can mint a
// fresh, short-lived one each time). This is how a read plane fetches from
// the write plane's authenticated smart-HTTP endpoint.
//
// The header reaches git through the GIT_CONFIG_COUNT / GIT_CONFIG_KEY_n /
// GIT_CONFIG_VALUE_n environment variables, never through its argument list,
// and is not written to the mirror's config. The token is also cut out of
// git's output before that goes into an error. Redirects are not followed
// while a token is sent, so it cannot be carried to another host.
func WithBearerToken(token func() (string, error)) MirrorOption {
	return func(m *Mirror) { m.token = token }
}

// NewMirror returns the mirror of url kept at path.
func NewMirror(url, path string, opts ...MirrorOption) *Mirror {
	m := &Mirror{url: url, path: path}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Path is the local mirror.
func (m *Mirror) Path() string { return m.path }

// Sync clones the remote on first use (into a temporary sibling, renamed into
// place, so a crash leaves no half clone) and fetches it afterwards.
func (m *Mirror) Sync(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, err := m.git()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(m.path, "HEAD")); err == nil {
		return g.run(ctx, "--git-dir", m.path, "fetch", "--quiet", "--prune", "origin")
	}
	tmp, err := os.MkdirTemp(filepath.Dir(m.path), "."+filepath.Base(m.path)+".clone-")
	if err != nil {
		return err
	}
	// Empty once renamed into place; a failed clone's leftover is a hidden
	// sibling of the mirror, cleared best effort.
	defer func() { _ = os.RemoveAll(tmp) }()
	dst := filepath.Join(tmp, "repo.git")
	if err := g.run(ctx, "clone", "--quiet", "--mirror", m.url, dst); err != nil {
		return err
	}
	return os.Rename(dst, m.path)
}

// Has reports whether the mirror's main has commit sha (is at it or past
// it), so a follower told of sha by proposal-apply's commit stream can skip
// a fetch: the fetch that brought it ran after that commit landed. It checks
// main, not only the object, since a commit can come in on another ref
// before main moves to it. False when it cannot tell (no mirror yet, an
// unknown commit, git failing): the caller then fetches.
func (m *Mirror) Has(ctx context.Context, sha string) bool {
	// A full hex sha only: nothing git would read as an option or a revision expression.
	if len(sha) != 40 && len(sha) != 64 || strings.Trim(sha, "0123456789abcdef") != "" {
		return false
	}
	err := exec.CommandContext(ctx, "git", "--git-dir", m.path, "merge-base", "--is-ancestor", sha, string(MainBranch)).Run()
	return err == nil
}

// git prepares one Sync's git invocations: with a fresh token, when the
// mirror sends one.
func (m *Mirror) git() (gitRunner, error) {
	if m.token == nil {
		return gitRunner{}, nil
	}
	tok, err := m.token()
	if err != nil {
		return gitRunner{}, fmt.Errorf("mirror token: %w", err)
	}
	// The token goes into an HTTP header: it must be one printable field.
	if tok == "" || strings.ContainsFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return gitRunner{}, errors.New("mirror token: empty or not a single header token")
	}
	return gitRunner{secret: tok, config: [][2]string{
		{"http.extraHeader", "Authorization: Bearer " + tok},
		{"http.followRedirects", "false"},
	}}, nil
}

// gitRunner runs git with extra configuration passed in the environment, and
// keeps secret out of the errors it returns.
type gitRunner struct {
	config [][2]string
	secret string
}

func (g gitRunner) run(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	if len(g.config) > 0 {
		cmd.Env = append(cmd.Env, configEnv(os.Getenv("GIT_CONFIG_COUNT"), g.config)...)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if g.secret != "" {
			msg = strings.ReplaceAll(msg, g.secret, "[redacted]")
		}
		return fmt.Errorf("git %s: %w: %s", args[len(args)-2], err, msg)
	}
	return nil
}

// configEnv appends kv to the GIT_CONFIG_COUNT entries the environment
// already holds (count is its current value), so neither set is lost.
func configEnv(count string, kv [][2]string) []string {
	n, err := strconv.Atoi(count)
	if err != nil || n < 0 {
		n = 0
	}
	env := make([]string, 0, 2*len(kv)+1)
	for i, p := range kv {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", n+i, p[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n+i, p[1]))
	}
	return append(env, fmt.Sprintf("GIT_CONFIG_COUNT=%d", n+len(kv)))
}
