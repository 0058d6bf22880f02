package memrepo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"
)

var fixedNow = func() time.Time { return time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC) }

func testOpts() InitOptions { return InitOptions{Now: fixedNow} }

// gitCmd runs the real git binary against a bare repo. Global/system config
// is ignored so the developer's settings cannot change the outcome.
func gitCmd(t *testing.T, gitDir string, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git binary not available")
	}
	cmd := exec.Command(bin, append([]string{"--git-dir=" + gitDir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v:\n%s", args, out)
	return string(out)
}

func TestInitCreatesBareRepo(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) string
	}{
		{"missing path", func(t *testing.T) string { return filepath.Join(t.TempDir(), "memory.git") }},
		{"missing parent", func(t *testing.T) string { return filepath.Join(t.TempDir(), "data", "memory.git") }},
		{"empty dir", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "memory.git")
			require.NoError(t, os.Mkdir(p, 0o755))
			return p
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.setup(t)
			r, err := Init(ctx, path, testOpts())
			require.NoError(t, err)
			require.Equal(t, path, r.Path())

			// Bare: config says so and there is no worktree.
			cfg, err := r.Git().Config()
			require.NoError(t, err)
			require.True(t, cfg.Core.IsBare)
			_, err = r.Git().Worktree()
			require.ErrorIs(t, err, git.ErrIsBareRepository)

			// HEAD is symbolic to main, main resolves to the init commit.
			head, err := r.Git().Reference(plumbing.HEAD, false)
			require.NoError(t, err)
			require.Equal(t, plumbing.SymbolicReference, head.Type())
			require.Equal(t, MainBranch, head.Target())

			h, err := r.Head(ctx)
			require.NoError(t, err)
			c, err := r.Git().CommitObject(h)
			require.NoError(t, err)
			require.Equal(t, InitCommitMessage+"\n", c.Message)
			require.Equal(t, DefaultAuthorName, c.Author.Name)
			require.Equal(t, DefaultAuthorEmail, c.Author.Email)
			require.Equal(t, c.Author, c.Committer)
			require.True(t, fixedNow().Equal(c.Author.When))
			require.Zero(t, c.NumParents())

			f, err := c.File("README.md")
			require.NoError(t, err)
			body, err := f.Contents()
			require.NoError(t, err)
			require.Equal(t, string(readmeLayout), body)

			// No temp sibling left behind.
			siblings, err := os.ReadDir(filepath.Dir(path))
			require.NoError(t, err)
			require.Len(t, siblings, 1)
		})
	}
}

func TestInitValidWithRealGit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory.git")
	_, err := Init(context.Background(), path, testOpts())
	require.NoError(t, err)

	log := gitCmd(t, path, "log", "--oneline", "main")
	lines := strings.Split(strings.TrimSpace(log), "\n")
	require.Len(t, lines, 1)
	require.Contains(t, lines[0], InitCommitMessage)

	require.Equal(t, "refs/heads/main\n", gitCmd(t, path, "symbolic-ref", "HEAD"))
	require.Equal(t, "true\n", gitCmd(t, path, "rev-parse", "--is-bare-repository"))
	gitCmd(t, path, "fsck", "--strict", "--no-dangling", "--full")

	readme := gitCmd(t, path, "show", "main:README.md")
	require.Equal(t, string(readmeLayout), readme)
	for _, want := range []string{"snapshot.md", "facts.md", "open_loops.md", "Layer 1", "Layer 2",
		"decisions.md", "timeline/", "runs/run_<id>.md", "meta.json", "current.drakon.json",
		"memory-update: <agentId> / run_<id> / proposal_<id>"} {
		require.Contains(t, readme, want)
	}
	require.Equal(t, "Garden Bloom Memory <memory@gardenbloom.local>\n",
		gitCmd(t, path, "log", "-1", "--format=%an <%ae>", "main"))
}

func TestInitCustomIdentity(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory.git")
	r, err := Init(context.Background(), path, InitOptions{Name: "Ops", Email: "ops@example.org", Now: fixedNow})
	require.NoError(t, err)
	h, err := r.Head(context.Background())
	require.NoError(t, err)
	c, err := r.Git().CommitObject(h)
	require.NoError(t, err)
	require.Equal(t, "Ops", c.Committer.Name)
	require.Equal(t, "ops@example.org", c.Committer.Email)
}

func TestInitDeterministic(t *testing.T) {
	// Same clock and identity => same commit hash, whatever the path.
	ctx := context.Background()
	a, err := Init(ctx, filepath.Join(t.TempDir(), "a.git"), testOpts())
	require.NoError(t, err)
	b, err := Init(ctx, filepath.Join(t.TempDir(), "b.git"), testOpts())
	require.NoError(t, err)
	ha, err := a.Head(ctx)
	require.NoError(t, err)
	hb, err := b.Head(ctx)
	require.NoError(t, err)
	require.Equal(t, ha, hb)
}

func TestInitIdempotent(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "memory.git")
	r1, err := Init(ctx, path, testOpts())
	require.NoError(t, err)
	h1, err := r1.Head(ctx)
	require.NoError(t, err)

	// A different clock would produce a different commit if Init wrote one.
	later := InitOptions{Now: func() time.Time { return fixedNow().Add(time.Hour) }}
	r2, err := Init(ctx, path, later)
	require.NoError(t, err)
	h2, err := r2.Head(ctx)
	require.NoError(t, err)
	require.Equal(t, h1, h2)

	log := gitCmd(t, path, "rev-list", "--all", "--count")
	require.Equal(t, "1\n", log)
}

func TestInitRejects(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T) string
		wantErr error
	}{
		{"non-empty non-repo dir", func(t *testing.T) string {
			p := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(p, "notes.txt"), []byte("hi"), 0o644))
			return p
		}, ErrNotRepository},
		{"regular file", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "memory.git")
			require.NoError(t, os.WriteFile(p, []byte("hi"), 0o644))
			return p
		}, ErrNotRepository},
		{"non-bare repo", func(t *testing.T) string {
			p := t.TempDir()
			_, err := git.PlainInit(p, false)
			require.NoError(t, err)
			return p
		}, ErrNotBare},
		{"bare repo without main", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "memory.git")
			_, err := git.PlainInitWithOptions(p, &git.PlainInitOptions{
				Bare: true, InitOptions: git.InitOptions{DefaultBranch: MainBranch},
			})
			require.NoError(t, err)
			return p
		}, ErrNoMainBranch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.setup(t)
			before := listTree(t, path)
			_, err := Init(ctx, path, testOpts())
			require.ErrorIs(t, err, tc.wantErr)
			require.Equal(t, before, listTree(t, path), "Init must not modify a path it rejects")
			_, err = Open(path)
			require.ErrorIs(t, err, tc.wantErr)
		})
	}
}

func TestInitCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	path := filepath.Join(t.TempDir(), "memory.git")
	_, err := Init(ctx, path, testOpts())
	require.ErrorIs(t, err, context.Canceled)
	_, err = os.Stat(path)
	require.ErrorIs(t, err, fs.ErrNotExist)
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Empty(t, entries, "temp dir must be cleaned up")
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "memory.git")
	created, err := Init(ctx, path, testOpts())
	require.NoError(t, err)
	want, err := created.Head(ctx)
	require.NoError(t, err)

	before := listTree(t, path)
	r, err := Open(path)
	require.NoError(t, err)
	got, err := r.Head(ctx)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, before, listTree(t, path), "Open must not write")

	_, err = Open(filepath.Join(t.TempDir(), "nope.git"))
	require.ErrorIs(t, err, fs.ErrNotExist)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = r.Head(cctx)
	require.True(t, errors.Is(err, context.Canceled))
}

// listTree returns every path under root with its size and mtime, to prove
// an operation did not write.
func listTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = fmt.Sprint(fi.Mode(), fi.ModTime(), fi.Size())
		return nil
	})
	require.NoError(t, err)
	return out
}

func TestInitConcurrent(t *testing.T) {
	// Several processes (here goroutines) racing to create the repo must all
	// end up with the same single-commit repository.
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "memory.git")
	const n = 8
	heads := make(chan plumbing.Hash, n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			// Distinct clocks: if two inits both "won" the heads would differ.
			opts := InitOptions{Now: func() time.Time { return fixedNow().Add(time.Duration(i) * time.Minute) }}
			r, err := Init(ctx, path, opts)
			if err != nil {
				errs <- err
				return
			}
			h, err := r.Head(ctx)
			if err != nil {
				errs <- err
				return
			}
			heads <- h
		}()
	}
	var first plumbing.Hash
	for i := range n {
		select {
		case err := <-errs:
			t.Fatalf("init %d: %v", i, err)
		case h := <-heads:
			if first.IsZero() {
				first = h
			}
			require.Equal(t, first, h)
		}
	}
	require.Equal(t, "1\n", gitCmd(t, path, "rev-list", "--all", "--count"))
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temp siblings left behind")
}
