package memrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/stretchr/testify/require"
)

func TestReadFileAndListFiles(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	init := head(t, r)
	h := commit(t, r, "m",
		put("memory/a/facts.md", "facts"),
		put("memory/a/timeline/2025-03-14.md", "day"),
		put("memory/a.md", "a file next to dir a"),
		put("memory/b/facts.md", "b facts"),
		put("logic/a/current.pseudo.md", "logic"),
		put("empty.md", ""),
	)

	got, err := r.ReadFile(ctx, h, "memory/a/facts.md")
	require.NoError(t, err)
	require.Equal(t, "facts", string(got))
	got, err = r.ReadFile(ctx, h, "empty.md")
	require.NoError(t, err)
	require.Empty(t, got)

	for _, p := range []string{"memory/a/nope.md", "memory/a", "memory", "nope/x.md", "memory/a/facts.md/x", "README.md/x"} {
		_, err := r.ReadFile(ctx, h, p)
		require.ErrorIs(t, err, ErrFileNotFound, p)
	}
	// At the older commit the file does not exist yet.
	_, err = r.ReadFile(ctx, init, "memory/a/facts.md")
	require.ErrorIs(t, err, ErrFileNotFound)
	_, err = r.ReadFile(ctx, plumbing.NewHash("1234567890123456789012345678901234567890"), "README.md")
	require.ErrorIs(t, err, ErrRevisionNotFound)
	// A tree hash is not a commit.
	tree := plumbing.NewHash(strings.TrimSpace(mustGit(t, r.Path(), "rev-parse", "main^{tree}")))
	_, err = r.ReadFile(ctx, tree, "README.md")
	require.ErrorIs(t, err, ErrRevisionNotFound)

	all := []string{"README.md", "empty.md", "logic/a/current.pseudo.md", "memory/a.md", "memory/a/facts.md",
		"memory/a/timeline/2025-03-14.md", "memory/b/facts.md"}
	for _, dir := range []string{"", ".", "./"} {
		files, err := r.ListFiles(ctx, h, dir)
		require.NoError(t, err)
		require.Equal(t, all, files)
	}
	require.Equal(t, lsTree(t, r.Path(), h.String()), all, "same order as git")
	for dir, want := range map[string][]string{
		"memory/a":          {"memory/a/facts.md", "memory/a/timeline/2025-03-14.md"},
		"memory/a/":         {"memory/a/facts.md", "memory/a/timeline/2025-03-14.md"},
		"memory":            {"memory/a.md", "memory/a/facts.md", "memory/a/timeline/2025-03-14.md", "memory/b/facts.md"},
		"memory/a/timeline": {"memory/a/timeline/2025-03-14.md"},
		"memory/zzz":        {},
		"nope/deeper":       {},
	} {
		files, err := r.ListFiles(ctx, h, dir)
		require.NoError(t, err, dir)
		require.Equal(t, want, files, dir)
	}
	_, err = r.ListFiles(ctx, h, "memory/a.md")
	require.ErrorIs(t, err, ErrInvalidPath)
	_, err = r.ListFiles(ctx, h, "../x")
	require.ErrorIs(t, err, ErrInvalidPath)

	// ListDirs: the folders directly under a folder, not its files.
	for dir, want := range map[string][]string{
		"memory": {"a", "b"}, "memory/a": {"timeline"}, "memory/b": {}, "memory/zzz": {}, "logic": {"a"},
	} {
		dirs, err := r.ListDirs(ctx, h, dir)
		require.NoError(t, err, dir)
		require.Equal(t, want, dirs, dir)
	}
	dirs, err := r.ListDirs(ctx, init, "memory")
	require.NoError(t, err)
	require.Empty(t, dirs, "no agent had memory at the first commit")
	_, err = r.ListDirs(ctx, h, "memory/a.md")
	require.ErrorIs(t, err, ErrInvalidPath)
	_, err = r.ListDirs(ctx, h, "../x")
	require.ErrorIs(t, err, ErrInvalidPath)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = r.ReadFile(cctx, h, "README.md")
	require.ErrorIs(t, err, context.Canceled)
	_, err = r.ListFiles(cctx, h, "")
	require.ErrorIs(t, err, context.Canceled)
}

func TestChangedFilesAndWalk(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	root := head(t, r)
	c1 := commit(t, r, "c1", put("memory/a/facts.md", "1"), put("memory/a/timeline/d1.md", "d"), put("x.md", "x"))
	c2 := commit(t, r, "c2", put("memory/a/facts.md", "2"), del("memory/a/timeline/d1.md"), put("memory/b/new.md", "n"))
	c3 := commit(t, r, "c3", del("x.md"))
	// A file replaced by a directory of the same name (by a person).
	wt := filepath.Join(t.TempDir(), "wt")
	mustGit(t, filepath.Dir(wt), "clone", "-q", r.Path(), wt)
	require.NoError(t, os.Remove(filepath.Join(wt, "memory", "b", "new.md")))
	require.NoError(t, os.MkdirAll(filepath.Join(wt, "memory", "b", "new.md"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(wt, "memory", "b", "new.md", "inner.md"), []byte("i"), 0o644))
	mustGit(t, wt, "add", "-A")
	mustGit(t, wt, "commit", "-q", "-m", "c4")
	mustGit(t, wt, "push", "-q", "origin", "main")
	c4 := head(t, r)

	for h, want := range map[plumbing.Hash][]string{
		root: {"README.md"},
		c1:   {"memory/a/facts.md", "memory/a/timeline/d1.md", "x.md"},
		c2:   {"memory/a/facts.md", "memory/a/timeline/d1.md", "memory/b/new.md"},
		c3:   {"x.md"},
		c4:   {"memory/b/new.md", "memory/b/new.md/inner.md"},
	} {
		got, err := r.ChangedFiles(ctx, h)
		require.NoError(t, err)
		require.Equal(t, want, got, h.String())
		// Cross-check against git (--root lists a root commit's files).
		out := strings.TrimSpace(mustGit(t, r.Path(), "diff-tree", "--root", "--no-commit-id", "--name-only", "-r", h.String()))
		require.Equal(t, want, strings.Split(out, "\n"))
	}
	_, err := r.ChangedFiles(ctx, plumbing.NewHash("1234567890123456789012345678901234567890"))
	require.ErrorIs(t, err, ErrRevisionNotFound)

	var seen []string
	require.NoError(t, r.Walk(ctx, c4, func(c *object.Commit) error {
		seen = append(seen, strings.TrimSpace(c.Message))
		return nil
	}))
	require.Equal(t, []string{"c4", "c3", "c2", "c1", InitCommitMessage}, seen)

	// ErrStopWalk (even wrapped) ends the walk with a nil error.
	seen = nil
	require.NoError(t, r.Walk(ctx, c4, func(c *object.Commit) error {
		seen = append(seen, strings.TrimSpace(c.Message))
		if c.Hash == c2 {
			return fmt.Errorf("found it: %w", ErrStopWalk)
		}
		return nil
	}))
	require.Equal(t, []string{"c4", "c3", "c2"}, seen)

	// Other errors are returned as is.
	boom := errors.New("boom")
	require.ErrorIs(t, r.Walk(ctx, c4, func(*object.Commit) error { return boom }), boom)
	require.ErrorIs(t, r.Walk(ctx, plumbing.NewHash("1234567890123456789012345678901234567890"),
		func(*object.Commit) error { return nil }), ErrRevisionNotFound)

	// The returned commits are usable objects (storer-backed).
	ci, err := r.CommitInfo(ctx, c2)
	require.NoError(t, err)
	tree, err := ci.Tree()
	require.NoError(t, err)
	f, err := tree.File("memory/a/facts.md")
	require.NoError(t, err)
	body, err := f.Contents()
	require.NoError(t, err)
	require.Equal(t, "2", body)
	parent, err := ci.Parent(0)
	require.NoError(t, err)
	require.Equal(t, c1, parent.Hash)
}

func TestResolveRevision(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	c0 := head(t, r)
	c1 := commit(t, r, "c1", put("a.md", "1"))
	c2 := commit(t, r, "c2", put("a.md", "2"))
	c3 := commit(t, r, "c3", put("a.md", "3"))
	blob := strings.TrimSpace(mustGit(t, r.Path(), "rev-parse", "main:a.md"))

	for rev, want := range map[string]plumbing.Hash{
		"HEAD":                       c3,
		"@":                          c3,
		"main":                       c3,
		"heads/main":                 c3,
		"refs/heads/main":            c3,
		c2.String():                  c2,
		strings.ToUpper(c2.String()): c2,
		c2.String()[:4]:              c2,
		c2.String()[:7]:              c2,
		c2.String()[:39]:             c2,
		"HEAD~0":                     c3,
		"HEAD~":                      c2,
		"HEAD~1":                     c2,
		"HEAD~3":                     c0,
		"main~2":                     c1,
		"HEAD^":                      c2,
		"HEAD^1":                     c2,
		"HEAD^0":                     c3,
		"HEAD~1~1":                   c1,
		"HEAD^^":                     c1,
		c3.String() + "~2":           c1,
		c3.String()[:8] + "~3":       c0,
	} {
		got, err := r.ResolveRevision(ctx, rev)
		require.NoError(t, err, rev)
		require.Equal(t, want, got, rev)
		// git agrees.
		require.Equal(t, want.String()+"\n", mustGit(t, r.Path(), "rev-parse", "--verify", "-q", rev+"^{commit}"), rev)
	}

	for _, rev := range []string{
		"", "HEAD~4", "HEAD~10000", "HEAD^2", "nope", "refs/heads/nope", "abc", c2.String()[:3],
		"1234567890123456789012345678901234567890", "12345678", blob, blob[:10], "HEAD~x", "HEAD@{1}", "main..HEAD",
		c2.String() + "0", "HEAD~-1", "HEAD:a.md",
	} {
		_, err := r.ResolveRevision(ctx, rev)
		require.ErrorIs(t, err, ErrRevisionNotFound, rev)
	}
}

func TestResolveRevisionAmbiguous(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	// Make commits until two share a 4-digit prefix.
	byPrefix := map[string]plumbing.Hash{}
	var a, b plumbing.Hash
	for i := 0; a.IsZero(); i++ {
		h := commit(t, r, fmt.Sprint(i), put("a.md", fmt.Sprint(i)))
		p := h.String()[:4]
		if o, ok := byPrefix[p]; ok {
			a, b = o, h
		}
		byPrefix[p] = h
	}
	_, err := r.ResolveRevision(ctx, a.String()[:4])
	require.ErrorIs(t, err, ErrRevisionNotFound)
	require.Contains(t, err.Error(), "ambiguous")
	// A longer prefix disambiguates.
	n := 5
	for a.String()[:n] == b.String()[:n] {
		n++
	}
	got, err := r.ResolveRevision(ctx, a.String()[:n])
	require.NoError(t, err)
	require.Equal(t, a, got)
}

// TestReadAfterGitGC: a person runs git gc, which packs every object and
// ref and deletes the loose files. A Repo opened (and used) before must
// keep reading and committing.
func TestReadAfterGitGC(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	var hs []plumbing.Hash
	for i := range 10 {
		hs = append(hs, commit(t, r, fmt.Sprint("c", i), put(fmt.Sprintf("memory/a/f%d.md", i%3), fmt.Sprint(i))))
	}
	// Warm the pack list (the packs our commits wrote) and the object cache.
	_, err := r.ResolveRevision(ctx, hs[3].String()[:6])
	require.NoError(t, err)

	// A second Repo opened now has a cold cache: only the packs can serve it.
	cold, err := Open(r.Path())
	require.NoError(t, err)
	_, err = cold.ResolveRevision(ctx, hs[2].String()[:6]) // loads the pack list
	require.NoError(t, err)

	mustGit(t, r.Path(), "gc", "-q", "--prune=now")
	_, err = os.Stat(r.refPath(MainBranch))
	require.ErrorIs(t, err, os.ErrNotExist, "git gc packed refs/heads/main")
	loose, err := filepath.Glob(filepath.Join(r.Path(), "objects", "??", "*"))
	require.NoError(t, err)
	require.Empty(t, loose, "git gc packed every object")

	for _, repo := range []*Repo{r, cold} {
		require.Equal(t, hs[9], head(t, repo))
		got, err := repo.ReadFile(ctx, hs[4], "memory/a/f1.md")
		require.NoError(t, err)
		require.Equal(t, "4", string(got))
		files, err := repo.ListFiles(ctx, hs[9], "memory")
		require.NoError(t, err)
		require.Equal(t, []string{"memory/a/f0.md", "memory/a/f1.md", "memory/a/f2.md"}, files)
		h, err := repo.ResolveRevision(ctx, hs[7].String()[:7]+"~2")
		require.NoError(t, err)
		require.Equal(t, hs[5], h)
		changed, err := repo.ChangedFiles(ctx, hs[8])
		require.NoError(t, err)
		require.Equal(t, []string{"memory/a/f2.md"}, changed)
	}
	// main lives only in packed-refs now; the compare-and-swap reads it from
	// there and writes a loose ref that overrides it, like git does.
	c := commit(t, cold, "after gc", put("memory/a/f0.md", "new"))
	require.Equal(t, c, head(t, r))
	require.Equal(t, c.String()+"\n", mustGit(t, r.Path(), "rev-parse", "main"))
	requireFsckClean(t, r.Path())

	// Repack again (old pack deleted, new pack created) and read through
	// the stale pack list, from many goroutines at once with cold caches
	// (under -race this checks the pack reader is goroutine-safe).
	mustGit(t, r.Path(), "repack", "-a", "-d", "-q")
	var wg sync.WaitGroup
	errs := make(chan error, 8*len(hs))
	for _, repo := range []*Repo{cold, mustOpen(t, r.Path())} {
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i, h := range hs {
					got, err := repo.ReadFile(ctx, h, fmt.Sprintf("memory/a/f%d.md", i%3))
					if err == nil && string(got) != fmt.Sprint(i) {
						err = fmt.Errorf("goroutine %d: commit %d: got %q", g, i, got)
					}
					if err != nil {
						errs <- err
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func mustOpen(t *testing.T, path string) *Repo {
	t.Helper()
	r, err := Open(path)
	require.NoError(t, err)
	return r
}

func TestReadTextBlob(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	h := commit(t, r, "seed", put("memory/a/facts.md", "- one\n"), put("memory/a/snapshot.md", "# S\n"))
	want := strings.TrimSpace(mustGit(t, r.Path(), "rev-parse", h.String()+":memory/a/facts.md"))
	// The writer's objects are cached as written; a fresh handle reads the pack.
	for _, repo := range []*Repo{r, mustOpen(t, r.Path())} {
		text, blob, err := repo.ReadTextBlob(ctx, h, "memory/a/facts.md")
		require.NoError(t, err)
		require.Equal(t, "- one\n", text)
		require.Equal(t, want, blob.String())
	}
	_, _, err := r.ReadTextBlob(ctx, h, "memory/a/nope.md")
	require.ErrorIs(t, err, ErrFileNotFound)
	_, _, err = r.ReadTextBlob(ctx, h, "memory/a")
	require.ErrorIs(t, err, ErrFileNotFound, "a directory is not a file")
	_, _, err = r.ReadTextBlob(ctx, h, "../x")
	require.ErrorIs(t, err, ErrInvalidPath)
}

// A file read as text comes from the object cache without a copy: the
// writer and both followers read an agent's decisions.md (which grows all
// its life) after every commit, and copying it for each of them was the
// largest allocation of a loaded memoryd (issue #25's soak profiles). The
// version just committed is cached too, so the first reads after a commit
// do not inflate it from the pack either.
func TestReadTextOfCachedBlobDoesNotCopy(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	content := strings.Repeat("- a decision record, appended\n", 10_000) // 290 KB
	h := commit(t, r, "m", put("memory/a/decisions.md", content))

	read := func() (string, plumbing.Hash) {
		text, blob, err := r.ReadTextBlob(ctx, h, "memory/a/decisions.md")
		require.NoError(t, err)
		return text, blob
	}
	text, blob := read()
	require.Equal(t, content, text)
	byHash, err := r.ReadBlobText(ctx, blob)
	require.NoError(t, err)
	require.Equal(t, content, byHash)

	allocated := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	const reads = 50
	bytes := allocated(func() {
		for range reads {
			read()
			_, _ = r.ReadBlobText(ctx, blob)
		}
	})
	require.Less(t, bytes, uint64(len(content)), "%d reads of a %d-byte file allocated %d bytes", 2*reads, len(content), bytes)
}
