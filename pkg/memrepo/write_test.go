package memrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"
)

const gitBin = "/usr/bin/git"

// gitEnv isolates the git binary from the developer's configuration and
// gives it an identity for commits made in tests.
func gitEnv(home string) []string {
	return append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+home,
		"GIT_AUTHOR_NAME=Human", "GIT_AUTHOR_EMAIL=human@example.org",
		"GIT_COMMITTER_NAME=Human", "GIT_COMMITTER_EMAIL=human@example.org",
		"GIT_TERMINAL_PROMPT=0",
	)
}

// runGit runs git in dir (a worktree or a bare repository) and returns its
// combined output. It does not need a *testing.T so goroutines can use it.
func runGit(dir string, stdin string, args ...string) (string, error) {
	cmd := exec.Command(gitBin, append([]string{"-C", dir}, args...)...)
	cmd.Env = gitEnv(os.TempDir())
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("git %v: %w\n%s", args, err, out)
	}
	return string(out), nil
}

func mustGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	if _, err := os.Stat(gitBin); err != nil {
		t.Skip("git binary not available")
	}
	out, err := runGit(dir, "", args...)
	require.NoError(t, err)
	return out
}

// requireFsckClean runs the strictest fsck git offers. --no-dangling hides
// the unreferenced objects a lost compare-and-swap legitimately leaves
// behind; anything else printed is a problem.
func requireFsckClean(t testing.TB, repo string) {
	t.Helper()
	out := mustGit(t, repo, "fsck", "--strict", "--full", "--no-dangling")
	require.Empty(t, strings.TrimSpace(out), "git fsck output")
}

func newTestRepo(t testing.TB) *Repo {
	t.Helper()
	r, err := Init(context.Background(), filepath.Join(t.TempDir(), "memory.git"), testOpts())
	require.NoError(t, err)
	r.objs.SetRetiredGrace(0) // merged packs deleted at once, so tests can count packs
	return r
}

func head(t testing.TB, r *Repo) plumbing.Hash {
	t.Helper()
	h, err := r.Head(context.Background())
	require.NoError(t, err)
	return h
}

// commit commits changes on top of the current head.
func commit(t testing.TB, r *Repo, msg string, changes ...Change) plumbing.Hash {
	t.Helper()
	h, err := r.Commit(context.Background(), CommitRequest{
		Parent:  head(t, r),
		Changes: changes,
		Message: msg,
		Author:  Signature{Name: "Proposal Apply", Email: "apply@example.org", When: fixedNow()},
	})
	require.NoError(t, err)
	return h
}

func put(path, content string) Change { return Change{Path: path, Content: []byte(content)} }
func del(path string) Change          { return Change{Path: path, Delete: true} }

func lsTree(t testing.TB, repo, rev string) []string {
	t.Helper()
	out := strings.TrimSpace(mustGit(t, repo, "ls-tree", "-r", "--name-only", rev))
	if out == "" {
		return []string{}
	}
	names := strings.Split(out, "\n")
	sort.Strings(names)
	return names
}

func TestCommitAddModifyDelete(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	init := head(t, r)

	h1 := commit(t, r, "memory-update: a / run_1 / proposal_1",
		put("memory/a/facts.md", "# Facts\n- sky is blue\n"),
		put("memory/a/timeline/2025-03-14.md", "pi day\n"),
		put("logic/a/current.pseudo.md", "do things\n"),
	)
	require.Equal(t, h1, head(t, r))
	require.Equal(t, "# Facts\n- sky is blue\n", mustGit(t, r.Path(), "show", "main:memory/a/facts.md"))
	require.Equal(t, "pi day\n", mustGit(t, r.Path(), "show", "main:memory/a/timeline/2025-03-14.md"))
	require.Equal(t, "do things\n", mustGit(t, r.Path(), "show", "main:logic/a/current.pseudo.md"))
	require.Equal(t, []string{"README.md", "logic/a/current.pseudo.md", "memory/a/facts.md", "memory/a/timeline/2025-03-14.md"},
		lsTree(t, r.Path(), "main"))

	// Exactly one commit, on top of the old head, with our metadata.
	require.Equal(t, init.String()+"\n", mustGit(t, r.Path(), "rev-parse", "main~1"))
	require.Equal(t, "memory-update: a / run_1 / proposal_1\n\nProposal Apply <apply@example.org>\nProposal Apply <apply@example.org>\n",
		mustGit(t, r.Path(), "log", "-1", "--format=%B%n%an <%ae>%n%cn <%ce>", "main"))
	c, err := r.CommitInfo(ctx, h1)
	require.NoError(t, err)
	require.Equal(t, "memory-update: a / run_1 / proposal_1\n", c.Message)
	require.True(t, fixedNow().Equal(c.Author.When))
	require.Equal(t, []plumbing.Hash{init}, c.ParentHashes)

	// Modify one file and add a sibling.
	h2 := commit(t, r, "memory-update: a / run_2 / proposal_2",
		put("memory/a/facts.md", "# Facts\n- sky is blue\n- grass is green\n"),
		put("memory/a/snapshot.md", "here\n"),
	)
	require.Equal(t, "# Facts\n- sky is blue\n- grass is green\n", mustGit(t, r.Path(), "show", "main:memory/a/facts.md"))
	files, err := r.ChangedFiles(ctx, h2)
	require.NoError(t, err)
	require.Equal(t, []string{"memory/a/facts.md", "memory/a/snapshot.md"}, files)
	require.Equal(t, "memory/a/facts.md\nmemory/a/snapshot.md\n",
		mustGit(t, r.Path(), "diff-tree", "--no-commit-id", "--name-only", "-r", h2.String()))

	// Deleting the only file of a directory prunes the directory.
	commit(t, r, "memory-update: a / run_3 / proposal_3", del("memory/a/timeline/2025-03-14.md"))
	require.Equal(t, []string{"README.md", "logic/a/current.pseudo.md", "memory/a/facts.md", "memory/a/snapshot.md"},
		lsTree(t, r.Path(), "main"))
	require.NotContains(t, mustGit(t, r.Path(), "ls-tree", "-r", "-t", "main"), "timeline")

	// Deleting everything under logic/ prunes logic/ itself; the root tree
	// can become README.md only again.
	commit(t, r, "cleanup: remove agent a",
		del("logic/a/current.pseudo.md"), del("memory/a/facts.md"), del("memory/a/snapshot.md"))
	require.Equal(t, []string{"README.md"}, lsTree(t, r.Path(), "main"))
	require.Equal(t, mustGit(t, r.Path(), "rev-parse", init.String()+"^{tree}"),
		mustGit(t, r.Path(), "rev-parse", "main^{tree}"), "same tree as the init commit")

	require.Equal(t, "5\n", mustGit(t, r.Path(), "rev-list", "--count", "main"))
	requireFsckClean(t, r.Path())
}

func TestCommitMessageAndIdentity(t *testing.T) {
	r := newTestRepo(t)
	ctx := context.Background()
	h, err := r.Commit(ctx, CommitRequest{
		Parent:  head(t, r),
		Changes: []Change{put("a.md", "x")},
		Message: "msg with newline\n",
	})
	require.NoError(t, err)
	c, err := r.CommitInfo(ctx, h)
	require.NoError(t, err)
	require.Equal(t, "msg with newline\n", c.Message)
	require.Equal(t, DefaultAuthorName, c.Author.Name)
	require.Equal(t, c.Author, c.Committer)
	require.WithinDuration(t, time.Now(), c.Author.When, time.Minute)

	// A committer distinct from the author is kept.
	h, err = r.Commit(ctx, CommitRequest{
		Parent: h, Changes: []Change{put("a.md", "y")}, Message: "m",
		Author:    Signature{Name: "A", Email: "a@x", When: fixedNow()},
		Committer: Signature{Name: "C", Email: "c@x", When: fixedNow().Add(time.Hour)},
	})
	require.NoError(t, err)
	require.Equal(t, "A a@x|C c@x\n", mustGit(t, r.Path(), "log", "-1", "--format=%an %ae|%cn %ce", h.String()))
	requireFsckClean(t, r.Path())
}

func TestCommitManyFsckClean(t *testing.T) {
	r := newTestRepo(t)
	const n = 150
	for i := range n {
		agent := fmt.Sprintf("agent-%d", i%7)
		changes := []Change{put("memory/"+agent+"/facts.md", fmt.Sprintf("fact %d\n", i))}
		if i%3 == 0 {
			changes = append(changes, put(fmt.Sprintf("memory/%s/timeline/day-%d.md", agent, i), "day\n"))
		}
		if i%3 == 0 && i >= 21 {
			changes = append(changes, del(fmt.Sprintf("memory/%s/timeline/day-%d.md", agent, i-21)))
		}
		commit(t, r, fmt.Sprintf("memory-update: %s / run_%d / proposal_%d", agent, i, i), changes...)
	}
	require.Equal(t, fmt.Sprint(n+1)+"\n", mustGit(t, r.Path(), "rev-list", "--count", "main"))
	require.Equal(t, "0\n", mustGit(t, r.Path(), "rev-list", "--count", "--merges", "main"))
	requireFsckClean(t, r.Path())

	// Our view of the head tree matches git's.
	files, err := r.ListFiles(context.Background(), head(t, r), "")
	require.NoError(t, err)
	require.Equal(t, lsTree(t, r.Path(), "main"), files)
}

func TestCommitDeleteMissing(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	h := commit(t, r, "m", put("memory/a/facts.md", "x"))
	for _, p := range []string{"memory/a/nope.md", "memory/b/facts.md", "nope/deeper/x.md", "memory/a", "memory",
		"README.md/x", "memory/a/facts.md/x"} {
		t.Run(p, func(t *testing.T) {
			_, err := r.Commit(ctx, CommitRequest{Parent: h, Changes: []Change{del(p)}, Message: "m"})
			require.ErrorIs(t, err, ErrFileNotFound)
			require.Equal(t, h, head(t, r))
		})
	}
	// A valid change followed by an invalid delete: nothing is committed.
	_, err := r.Commit(ctx, CommitRequest{Parent: h, Changes: []Change{put("b.md", "b"), del("c.md")}, Message: "m"})
	require.ErrorIs(t, err, ErrFileNotFound)
	require.Equal(t, h, head(t, r))
}

func TestCommitNoChanges(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	h := commit(t, r, "m", put("memory/a/facts.md", "x"))
	for name, changes := range map[string][]Change{
		"none":            nil,
		"same content":    {put("memory/a/facts.md", "x")},
		"same README":     {put("README.md", string(readmeLayout))},
		"add then delete": {put("memory/b/new.md", "n"), del("memory/b/new.md")},
		"change and back": {put("memory/a/facts.md", "y"), put("memory/a/facts.md", "x")},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := r.Commit(ctx, CommitRequest{Parent: h, Changes: changes, Message: "m"})
			require.ErrorIs(t, err, ErrNoChanges)
			require.Equal(t, h, head(t, r))
		})
	}
}

func TestCommitHeadMoved(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	stale := head(t, r)
	h := commit(t, r, "m", put("a.md", "a"))

	_, err := r.Commit(ctx, CommitRequest{Parent: stale, Changes: []Change{put("b.md", "b")}, Message: "m"})
	require.ErrorIs(t, err, ErrHeadMoved)
	require.Equal(t, h, head(t, r))
	// An unknown parent is just another stale parent.
	_, err = r.Commit(ctx, CommitRequest{Parent: plumbing.NewHash("1234567890123456789012345678901234567890"),
		Changes: []Change{put("b.md", "b")}, Message: "m"})
	require.ErrorIs(t, err, ErrHeadMoved)
	require.Equal(t, h, head(t, r))
	require.Equal(t, "2\n", mustGit(t, r.Path(), "rev-list", "--count", "main"))

	// The authoritative check under the lock: main moves after the early
	// check (simulated by a second Repo on the same directory, which does
	// not share the first one's mutex).
	other, err := Open(r.Path())
	require.NoError(t, err)
	h2 := commit(t, other, "other", put("c.md", "c"))
	_, err = r.lockMain(ctx, h)
	require.ErrorIs(t, err, ErrHeadMoved)
	require.Equal(t, h2, head(t, r))
	_, err = os.Stat(r.refPath(MainBranch) + ".lock")
	require.ErrorIs(t, err, os.ErrNotExist, "lock released after a failed compare-and-swap")
}

// casCommit is the loop every writer is expected to run: read the head,
// build on it, retry when somebody else got there first.
func casCommit(ctx context.Context, r *Repo, changes ...Change) (plumbing.Hash, int, error) {
	for tries := 1; ; tries++ {
		h, err := r.Head(ctx)
		if err != nil {
			return h, tries, err
		}
		nh, err := r.Commit(ctx, CommitRequest{Parent: h, Changes: changes, Message: "memory-update: cas"})
		if errors.Is(err, ErrHeadMoved) {
			continue
		}
		return nh, tries, err
	}
}

func TestCommitConcurrentCAS(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	// Half the goroutines use a second Repo on the same directory: they do
	// not share writeMu, so they really contend on refs/heads/main.lock, as
	// two processes would.
	r2, err := Open(r.Path())
	require.NoError(t, err)

	// This test is about compare-and-swap, not lock timeouts: on a shared
	// disk a single fsync can stall for over a second, and several stalls
	// in a row would otherwise turn into ErrLocked.
	defer func(old time.Duration) { lockWait = old }(lockWait)
	lockWait = time.Minute

	const workers, perWorker = 16, 8
	var totalTries atomic.Int64
	defer func() { t.Logf("%d commits took %d attempts", workers*perWorker, totalTries.Load()) }()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	stop := make(chan struct{})
	// Readers run alongside the writers (under -race this checks the read
	// plane is goroutine-safe).
	var readers sync.WaitGroup
	for range 4 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				h, err := r.Head(ctx)
				if err != nil {
					errs <- err
					return
				}
				if _, err := r.ListFiles(ctx, h, "memory"); err != nil {
					errs <- err
					return
				}
				if _, err := r.ReadFile(ctx, h, "README.md"); err != nil {
					errs <- err
					return
				}
				time.Sleep(time.Millisecond) // leave the CPUs to the writers
			}
		}()
	}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			repo := r
			if w%2 == 1 {
				repo = r2
			}
			for i := range perWorker {
				_, tries, err := casCommit(ctx, repo, put(fmt.Sprintf("memory/agent-%d/facts.md", w), fmt.Sprintf("w%d i%d\n", w, i)))
				totalTries.Add(int64(tries))
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, fmt.Sprint(1+workers*perWorker)+"\n", mustGit(t, r.Path(), "rev-list", "--count", "main"))
	require.Equal(t, "0\n", mustGit(t, r.Path(), "rev-list", "--count", "--merges", "main"))
	for w := range workers {
		got, err := r.ReadFile(ctx, head(t, r), fmt.Sprintf("memory/agent-%d/facts.md", w))
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("w%d i%d\n", w, perWorker-1), string(got))
	}
	requireFsckClean(t, r.Path())
}

func TestInteropGitPush(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	ours := commit(t, r, "memory-update: a / run_1 / proposal_1", put("memory/a/facts.md", "ours\n"))

	wt := filepath.Join(t.TempDir(), "wt")
	mustGit(t, filepath.Dir(wt), "clone", "-q", r.Path(), wt)
	require.NoError(t, os.MkdirAll(filepath.Join(wt, "memory", "a"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(wt, "memory", "a", "facts.md"), []byte("edited by a human\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(wt, "notes.md"), []byte("human notes\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(wt, "tool.sh"), []byte("#!/bin/sh\n"), 0o755))
	mustGit(t, wt, "add", "-A")
	mustGit(t, wt, "commit", "-q", "-m", "manual: fix facts")
	mustGit(t, wt, "push", "-q", "origin", "main")
	theirs := plumbing.NewHash(strings.TrimSpace(mustGit(t, wt, "rev-parse", "HEAD")))

	// The same Repo (nothing cached) sees the pushed commit.
	require.Equal(t, theirs, head(t, r))
	got, err := r.ReadFile(ctx, theirs, "memory/a/facts.md")
	require.NoError(t, err)
	require.Equal(t, "edited by a human\n", string(got))
	files, err := r.ChangedFiles(ctx, theirs)
	require.NoError(t, err)
	require.Equal(t, []string{"memory/a/facts.md", "notes.md", "tool.sh"}, files)

	// Committing on the stale parent fails; on the new head it works.
	_, err = r.Commit(ctx, CommitRequest{Parent: ours, Changes: []Change{put("x.md", "x")}, Message: "m"})
	require.ErrorIs(t, err, ErrHeadMoved)
	next := commit(t, r, "memory-update: a / run_2 / proposal_2", put("memory/a/facts.md", "ours again\n"),
		put("tool.sh", "#!/bin/sh\necho hi\n"))
	// Rewriting a file a person made executable keeps the bit.
	require.True(t, strings.HasPrefix(mustGit(t, r.Path(), "ls-tree", "main", "tool.sh"), "100755 blob"))
	c, err := r.CommitInfo(ctx, next)
	require.NoError(t, err)
	require.Equal(t, []plumbing.Hash{theirs}, c.ParentHashes)

	// And the human sees ours with a plain pull.
	mustGit(t, wt, "pull", "-q", "--ff-only")
	data, err := os.ReadFile(filepath.Join(wt, "memory", "a", "facts.md"))
	require.NoError(t, err)
	require.Equal(t, "ours again\n", string(data))
	requireFsckClean(t, r.Path())
}

// TestInteropConcurrentGitUpdateRef races Commit against the git binary
// doing its own compare-and-swap (git update-ref <ref> <new> <old>) on the
// same branch: both must honour refs/heads/main.lock, so no update is lost
// and history stays linear.
func TestInteropConcurrentGitUpdateRef(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	mustGit(t, r.Path(), "--version")
	defer func(old time.Duration) { lockWait = old }(lockWait)
	lockWait = time.Minute // see TestCommitConcurrentCAS
	const ours, theirs = 25, 25
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range ours {
			if _, _, err := casCommit(ctx, r, put("memory/ours.md", fmt.Sprint(i))); err != nil {
				errs <- err
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < theirs; {
			old, err := runGit(r.Path(), "", "rev-parse", "main")
			if err != nil {
				errs <- err
				return
			}
			old = strings.TrimSpace(old)
			nc, err := runGit(r.Path(), "", "commit-tree", old+"^{tree}", "-p", old, "-m", fmt.Sprintf("manual %d", i))
			if err != nil {
				errs <- err
				return
			}
			// Fails (and is retried) if main moved or our lock is held.
			if _, err := runGit(r.Path(), "", "update-ref", "refs/heads/main", strings.TrimSpace(nc), old); err == nil {
				i++
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, fmt.Sprint(1+ours+theirs)+"\n", mustGit(t, r.Path(), "rev-list", "--count", "main"))
	require.Equal(t, fmt.Sprint(theirs)+"\n", mustGit(t, r.Path(), "rev-list", "--count", "--grep=^manual", "main"))
	got, err := r.ReadFile(ctx, head(t, r), "memory/ours.md")
	require.NoError(t, err)
	require.Equal(t, fmt.Sprint(ours-1), string(got))
	requireFsckClean(t, r.Path())
}

func TestCommitLocked(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	h := head(t, r)
	defer func(old time.Duration) { lockWait = old }(lockWait)
	lockWait = 300 * time.Millisecond

	lock := r.refPath(MainBranch) + ".lock"
	require.NoError(t, os.WriteFile(lock, nil, 0o644))
	start := time.Now()
	_, err := r.Commit(ctx, CommitRequest{Parent: h, Changes: []Change{put("a.md", "a")}, Message: "m"})
	require.ErrorIs(t, err, ErrLocked)
	require.GreaterOrEqual(t, time.Since(start), lockWait, "waited for the lock before giving up")
	require.Equal(t, h, head(t, r))
	_, err = os.Stat(lock)
	require.NoError(t, err, "Commit must never remove a lock it does not own")

	// A fresh lock is not stale; with maxAge 0 any lock is.
	removed, err := r.RecoverStaleLock(time.Hour)
	require.NoError(t, err)
	require.False(t, removed)
	old := time.Now().Add(-2 * time.Hour)
	require.NoError(t, os.Chtimes(lock, old, old))
	removed, err = r.RecoverStaleLock(time.Hour)
	require.NoError(t, err)
	require.True(t, removed)
	removed, err = r.RecoverStaleLock(0)
	require.NoError(t, err)
	require.False(t, removed, "nothing left to remove")
	require.NoError(t, os.WriteFile(lock, nil, 0o644))
	removed, err = r.RecoverStaleLock(0)
	require.NoError(t, err)
	require.True(t, removed)

	// A lock released while Commit waits: Commit goes through.
	lockWait = 5 * time.Second
	require.NoError(t, os.WriteFile(lock, nil, 0o644))
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = os.Remove(lock)
	}()
	h2, err := r.Commit(ctx, CommitRequest{Parent: h, Changes: []Change{put("a.md", "a")}, Message: "m"})
	require.NoError(t, err)
	require.Equal(t, h2, head(t, r))

	// Cancellation ends the wait early.
	require.NoError(t, os.WriteFile(lock, nil, 0o644))
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = r.Commit(cctx, CommitRequest{Parent: h2, Changes: []Change{put("b.md", "b")}, Message: "m"})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, h2, head(t, r))
	requireFsckClean(t, r.Path())
}

func TestInvalidPaths(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	h := commit(t, r, "m", put("memory/a/facts.md", "x"))
	for _, p := range []string{
		"", "/abs.md", "/", "a//b.md", "a/", "./a.md", "a/./b.md", "../a.md", "a/../b.md", "..",
		".git", ".git/config", "a/.git/HEAD", ".GIT/x", "a/.Git", ".git.", ".git ", ".gitmodules",
		".gitattributes", "a/.gitignore", "x/.github/y", "git~1/x", "GITMOD~1", "gi7eba~2", "gi7d29~1",
		".g\u200cit/x", "\ufeff.git", ".git::$INDEX_ALLOCATION",
		"a\\b.md", "a\x00b", "bad\xffutf8.md", "line\nbreak.md", "tab\t.md", "del\x7f.md",
	} {
		t.Run(fmt.Sprintf("%q", p), func(t *testing.T) {
			require.ErrorIs(t, CheckPath(p), ErrInvalidPath)
			_, err := r.Commit(ctx, CommitRequest{Parent: h, Changes: []Change{put(p, "x")}, Message: "m"})
			require.ErrorIs(t, err, ErrInvalidPath)
			_, err = r.Commit(ctx, CommitRequest{Parent: h, Changes: []Change{del(p)}, Message: "m"})
			require.ErrorIs(t, err, ErrInvalidPath)
			if p != "" {
				_, err = r.ReadFile(ctx, h, p)
				require.ErrorIs(t, err, ErrInvalidPath)
			}
		})
	}
	for _, p := range []string{"a.md", "memory/agent-1/timeline/2025-03-14.md", "logic/x/versions/3/current.drakon.json",
		"ünïcode/файл.md", "with space.md", "a.git", "git", "...", ".hidden", "git~x", "progit~1"} {
		require.NoError(t, CheckPath(p), p)
	}
}

func TestCommitPathConflicts(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	h := commit(t, r, "m", put("memory/a/facts.md", "x"))
	for _, p := range []string{"README.md/x.md", "memory/a/facts.md/x", "memory/a", "memory"} {
		_, err := r.Commit(ctx, CommitRequest{Parent: h, Changes: []Change{put(p, "x")}, Message: "m"})
		require.ErrorIs(t, err, ErrInvalidPath, p)
	}
	require.Equal(t, h, head(t, r))
}

func TestInvalidCommitRequest(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	h := head(t, r)
	ch := []Change{put("a.md", "a")}
	for name, req := range map[string]CommitRequest{
		"zero parent":   {Changes: ch, Message: "m"},
		"empty message": {Parent: h, Changes: ch, Message: " \n"},
		"NUL message":   {Parent: h, Changes: ch, Message: "a\x00b"},
		"bad name":      {Parent: h, Changes: ch, Message: "m", Author: Signature{Name: "a <b>"}},
		"bad email":     {Parent: h, Changes: ch, Message: "m", Committer: Signature{Email: "a>b"}},
		"newline name":  {Parent: h, Changes: ch, Message: "m", Author: Signature{Name: "a\nb"}},
		"before 1970":   {Parent: h, Changes: ch, Message: "m", Author: Signature{When: time.Unix(-10, 0)}},
	} {
		_, err := r.Commit(ctx, req)
		require.ErrorIs(t, err, ErrInvalidCommit, name)
	}
	require.Equal(t, h, head(t, r))
}

// A TextChange commits the string's bytes as they are, the empty string
// as an empty file, and what git and a read give back is that text.
func TestTextChangeCommitsTheString(t *testing.T) {
	r := newTestRepo(t)
	text := strings.Repeat("## 2026-11-27 — a decision\n**Status:** accepted\n", 100)
	h := commit(t, r, "m", TextChange("memory/a/decisions.md", text), TextChange("memory/a/empty.md", ""))
	require.Equal(t, text, mustGit(t, r.Path(), "show", h.String()+":memory/a/decisions.md"))
	require.Empty(t, mustGit(t, r.Path(), "show", h.String()+":memory/a/empty.md"))
	got, _, err := r.ReadTextBlob(context.Background(), h, "memory/a/decisions.md")
	require.NoError(t, err)
	require.Equal(t, text, got)
	requireFsckClean(t, r.Path())
}
