package memrepo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"
)

func TestDiffCommits(t *testing.T) {
	ctx := context.Background()
	r, err := Init(ctx, filepath.Join(t.TempDir(), "m.git"), InitOptions{})
	require.NoError(t, err)
	base, err := r.Head(ctx)
	require.NoError(t, err)
	c1, err := r.Commit(ctx, CommitRequest{Parent: base, Message: "one", Changes: []Change{
		{Path: "memory/a/facts.md", Content: []byte("a")}, {Path: "memory/b/facts.md", Content: []byte("b")}}})
	require.NoError(t, err)
	c2, err := r.Commit(ctx, CommitRequest{Parent: c1, Message: "two", Changes: []Change{
		{Path: "memory/a/facts.md", Content: []byte("a2")}, {Path: "memory/b/facts.md", Delete: true}, {Path: "logic/a/current.pseudo.md", Content: []byte("x")}}})
	require.NoError(t, err)

	got, err := r.DiffCommits(ctx, base, c2)
	require.NoError(t, err)
	require.Equal(t, []string{"logic/a/current.pseudo.md", "memory/a/facts.md"}, got)
	got, err = r.DiffCommits(ctx, c1, c2)
	require.NoError(t, err)
	require.Equal(t, []string{"logic/a/current.pseudo.md", "memory/a/facts.md", "memory/b/facts.md"}, got)
	all, err := r.DiffCommits(ctx, plumbing.ZeroHash, c2)
	require.NoError(t, err)
	require.Equal(t, []string{"README.md", "logic/a/current.pseudo.md", "memory/a/facts.md"}, all)
	none, err := r.DiffCommits(ctx, c2, c2)
	require.NoError(t, err)
	require.Empty(t, none)
}

// DiffCommits agrees with git on random histories over names that test the
// order of tree entries ("d" as a file and as a directory, "d.f" and "d-f"
// sorting before "d/", names that are prefixes of others).
func TestDiffCommitsMatchesGit(t *testing.T) {
	checkDiffsAgainstGit(t, []string{"d", "d/f", "d/g/h", "d.f", "d-f", "d0/f", "e", "e/d", "dd/f", "d/f.md", "d/f/x"}, 9)
}

// The same over a wide directory, as memory/ is (an entry per agent): the
// diff skips the entries both trees share at their start and end.
func TestDiffCommitsMatchesGitWideTree(t *testing.T) {
	var paths []string
	for i := range 60 {
		paths = append(paths, fmt.Sprintf("m/a%02d/f", i), fmt.Sprintf("m/a%02d/g/h", i))
	}
	paths = append(paths, "m/a07", "m/a07.x", "m/a59-", "m/b", "m/a")
	checkDiffsAgainstGit(t, paths, 10)
}

func checkDiffsAgainstGit(t *testing.T, paths []string, seed uint64) {
	ctx := context.Background()
	r, err := Init(ctx, filepath.Join(t.TempDir(), "m.git"), InitOptions{})
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(seed, seed))
	commits := []plumbing.Hash{}
	head, err := r.Head(ctx)
	require.NoError(t, err)
	for len(commits) < 40 {
		var changes []Change
		for range 1 + rng.IntN(3) {
			p := paths[rng.IntN(len(paths))]
			if rng.IntN(4) == 0 {
				changes = append(changes, Change{Path: p, Delete: true})
			} else {
				changes = append(changes, Change{Path: p, Content: []byte(fmt.Sprint(rng.IntN(3)))})
			}
		}
		next, err := r.Commit(ctx, CommitRequest{Parent: head, Message: "c", Changes: changes})
		if err != nil {
			continue // a file where a directory is (or the reverse), or nothing changed
		}
		head = next
		commits = append(commits, next)
	}
	for range 200 {
		a, b := commits[rng.IntN(len(commits))], commits[rng.IntN(len(commits))]
		got, err := r.DiffCommits(ctx, a, b)
		require.NoError(t, err)
		want := strings.Fields(gitCmd(t, r.Path(), "diff", "--name-only", "--no-renames", a.String(), b.String()))
		sort.Strings(want)
		if len(want) == 0 {
			want = nil
		}
		if len(got) == 0 {
			got = nil
		}
		require.Equal(t, want, got, "%s..%s", a, b)

		// DiffFiles lists the same paths, each with its blob in b, or
		// none where b has no file (deleted, or a directory now).
		files, err := r.DiffFiles(ctx, a, b)
		require.NoError(t, err)
		require.Len(t, files, len(got))
		for i, f := range files {
			require.Equal(t, got[i], f.Path)
			content, err := r.ReadFile(ctx, b, f.Path)
			if errors.Is(err, ErrFileNotFound) {
				require.True(t, f.Deleted(), "%s in %s", f.Path, b)
				continue
			}
			require.NoError(t, err)
			blob, err := r.ReadBlob(ctx, f.Blob)
			require.NoError(t, err)
			require.Equal(t, content, blob, "%s in %s", f.Path, b)
			text, err := r.ReadBlobText(ctx, f.Blob)
			require.NoError(t, err)
			require.Equal(t, string(content), text, "%s in %s", f.Path, b)
		}
	}
	_, err = r.ReadBlob(ctx, commits[0])
	require.ErrorIs(t, err, ErrFileNotFound, "a commit is no blob")
	_, err = r.ReadBlobText(ctx, commits[0])
	require.ErrorIs(t, err, ErrFileNotFound, "a commit is no blob")
}
