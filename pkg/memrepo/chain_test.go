package memrepo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/memrepo/internal/odb"
)

// chainReq is a proposal-like request with a fixed identity, so that the
// same request yields the same commit hash in any repository.
func chainReq(msg string, changes ...Change) CommitRequest {
	return CommitRequest{Changes: changes, Message: msg,
		Author: Signature{Name: "Proposal Apply", Email: "apply@example.org", When: fixedNow()}}
}

func packFiles(t testing.TB, r *Repo) []string {
	t.Helper()
	packs, err := filepath.Glob(filepath.Join(r.Path(), "objects", "pack", "pack-*.pack"))
	require.NoError(t, err)
	return packs
}

// tmpPackFiles are pack or index files a writer has not published (yet).
func tmpPackFiles(t testing.TB, r *Repo) []string {
	t.Helper()
	tmp, err := filepath.Glob(filepath.Join(r.Path(), "objects", "pack", "tmp_*"))
	require.NoError(t, err)
	return tmp
}

func looseObjects(t testing.TB, r *Repo) []string {
	t.Helper()
	loose, err := filepath.Glob(filepath.Join(r.Path(), "objects", "??", "*"))
	require.NoError(t, err)
	return loose
}

func TestCommitChain(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	parent := commit(t, r, "seed", put("memory/a/facts.md", "a0\n"), put("memory/b/facts.md", "b0\n"))
	packsBefore, looseBefore := len(packFiles(t, r)), len(looseObjects(t, r))
	_, err := r.Git().CommitObject(parent) // go-git would load its pack list now, once
	require.NoError(t, err)

	reqs := []CommitRequest{
		chainReq("memory-update: a / run_1 / proposal_1", put("memory/a/facts.md", "a1\n")),
		chainReq("memory-update: b / run_2 / proposal_2", put("memory/b/facts.md", "b1\n"), put("memory/b/timeline/d.md", "d\n")),
		chainReq("memory-update: c / run_3 / proposal_3", put("memory/c/facts.md", "c1\n")),
		// Builds on the tree the earlier commits of the chain left.
		chainReq("memory-update: b / run_4 / proposal_4", del("memory/b/timeline/d.md"), put("memory/b/facts.md", "b2\n")),
	}
	hashes, err := r.CommitChain(ctx, parent, reqs)
	require.NoError(t, err)
	require.Len(t, hashes, len(reqs))
	require.Equal(t, hashes[3], head(t, r))

	// Linear, in request order, each commit with its own message.
	log := strings.TrimSpace(mustGit(t, r.Path(), "log", "--first-parent", "--format=%H %P %s", "-n", "4", "main"))
	lines := strings.Split(log, "\n")
	for i, line := range lines {
		k := len(reqs) - 1 - i
		prev := parent
		if k > 0 {
			prev = hashes[k-1]
		}
		require.Equal(t, fmt.Sprintf("%s %s %s", hashes[k], prev, reqs[k].Message), line)
	}
	require.Equal(t, "0\n", mustGit(t, r.Path(), "rev-list", "--count", "--merges", "main"))

	// Every commit has its own tree.
	require.Equal(t, "a1\n", mustGit(t, r.Path(), "show", hashes[0].String()+":memory/a/facts.md"))
	require.Equal(t, "b0\n", mustGit(t, r.Path(), "show", hashes[0].String()+":memory/b/facts.md"))
	require.Equal(t, "d\n", mustGit(t, r.Path(), "show", hashes[2].String()+":memory/b/timeline/d.md"))
	require.Equal(t, []string{"README.md", "memory/a/facts.md", "memory/b/facts.md", "memory/c/facts.md"}, lsTree(t, r.Path(), "main"))
	require.Equal(t, "b2\n", mustGit(t, r.Path(), "show", "main:memory/b/facts.md"))

	// One pack for the whole chain, no loose object, nothing missing.
	require.Len(t, packFiles(t, r), packsBefore+1)
	require.Len(t, looseObjects(t, r), looseBefore)
	requireFsckClean(t, r.Path())

	// A Repo opened before the chain finds the new pack; so does go-git.
	for _, repo := range []*Repo{mustOpen(t, r.Path()), r} {
		got, err := repo.ReadFile(ctx, hashes[1], "memory/b/timeline/d.md")
		require.NoError(t, err)
		require.Equal(t, "d\n", string(got))
		c, err := repo.Git().CommitObject(hashes[2])
		require.NoError(t, err)
		require.Equal(t, reqs[2].Message+"\n", c.Message)
	}
}

// A chain gives exactly the commits that committing the same requests one
// by one gives; a chain of one is Commit.
func TestCommitChainEqualsCommits(t *testing.T) {
	ctx := context.Background()
	reqs := []CommitRequest{
		chainReq("one", put("memory/a/facts.md", "1")),
		chainReq("two", put("memory/b/facts.md", "2"), put("memory/a/facts.md", "1b")),
		chainReq("three", del("memory/a/facts.md")),
	}
	single := newTestRepo(t)
	var want []plumbing.Hash
	for _, req := range reqs {
		req.Parent = head(t, single)
		h, err := single.Commit(ctx, req)
		require.NoError(t, err)
		want = append(want, h)
	}

	chained := newTestRepo(t)
	got, err := chained.CommitChain(ctx, head(t, chained), reqs)
	require.NoError(t, err)
	require.Equal(t, want, got)

	one := newTestRepo(t)
	got1, err := one.CommitChain(ctx, head(t, one), reqs[:1])
	require.NoError(t, err)
	require.Equal(t, want[:1], got1)
	requireFsckClean(t, chained.Path())
}

func TestCommitChainErrors(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	h := commit(t, r, "m", put("memory/a/facts.md", "x"))
	packs := len(packFiles(t, r))
	ok := chainReq("ok", put("memory/b/facts.md", "y"))

	for name, tc := range map[string]struct {
		reqs  []CommitRequest
		index int
		want  error
	}{
		"no changes":   {[]CommitRequest{ok, chainReq("same", put("memory/a/facts.md", "x"))}, 1, ErrNoChanges},
		"undone later": {[]CommitRequest{ok, chainReq("undo", put("memory/b/facts.md", "y"))}, 1, ErrNoChanges},
		"bad path":     {[]CommitRequest{chainReq("p", put("../x", "y")), ok}, 0, ErrInvalidPath},
		"missing file": {[]CommitRequest{ok, chainReq("z", put("z.md", "z")), chainReq("d", del("memory/c/facts.md"))}, 2, ErrFileNotFound},
		"no message":   {[]CommitRequest{ok, chainReq("", put("z.md", "z"))}, 1, ErrInvalidCommit},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := r.CommitChain(ctx, h, tc.reqs)
			var ce *ChainError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tc.index, ce.Index)
			require.ErrorIs(t, err, tc.want)
			require.Equal(t, h, head(t, r), "nothing committed")
			require.Len(t, packFiles(t, r), packs, "nothing written")
		})
	}

	_, err := r.CommitChain(ctx, h, nil)
	require.ErrorIs(t, err, ErrInvalidCommit)
	_, err = r.CommitChain(ctx, plumbing.ZeroHash, []CommitRequest{ok})
	require.ErrorIs(t, err, ErrInvalidCommit)

	// A stale parent moves nothing, whatever the chain holds.
	h2 := commit(t, r, "moved", put("memory/c/facts.md", "c"))
	_, err = r.CommitChain(ctx, h, []CommitRequest{ok, chainReq("z", put("z.md", "z"))})
	require.ErrorIs(t, err, ErrHeadMoved)
	require.Equal(t, h2, head(t, r))

	// Commit reports a single request's error as is, not as a ChainError.
	_, err = r.Commit(ctx, CommitRequest{Parent: h2, Message: "m", Changes: []Change{put("memory/c/facts.md", "c")}})
	require.ErrorIs(t, err, ErrNoChanges)
	var ce *ChainError
	require.NotErrorAs(t, err, &ce)
	requireFsckClean(t, r.Path())
}

// Objects the repository already has are not written again (the pack or
// loose file holding them is freshened instead).
func TestCommitChainSkipsStoredObjects(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	commit(t, r, "first", put("memory/a/facts.md", "shared content\n"))
	blob := plumbing.ComputeHash(plumbing.BlobObject, []byte("shared content\n"))

	_, err := r.CommitChain(ctx, head(t, r), []CommitRequest{
		chainReq("second", put("memory/b/facts.md", "shared content\n")),
		chainReq("third", put("memory/c/facts.md", "shared content\n")),
	})
	require.NoError(t, err)
	holders := 0
	for _, p := range packFiles(t, r) {
		if _, ok := verifyPack(t, r, p)[blob.String()]; ok {
			holders++
		}
	}
	require.Equal(t, 1, holders, "the shared blob is stored once")

	// Same for a loose object, e.g. from a push of a few objects.
	out, err := runGit(r.Path(), "loose content\n", "hash-object", "-w", "--stdin")
	require.NoError(t, err)
	loose := plumbing.NewHash(strings.TrimSpace(out))
	commit(t, r, "fourth", put("memory/d/facts.md", "loose content\n"))
	for _, p := range packFiles(t, r) {
		require.NotContains(t, verifyPack(t, r, p), loose.String(), "the loose blob is not copied into a pack")
	}
	require.FileExists(t, filepath.Join(r.Path(), "objects", loose.String()[:2], loose.String()[2:]))
	requireFsckClean(t, r.Path())
}

func TestCompactPacks(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	var hs []plumbing.Hash
	for i := range 40 {
		hs = append(hs, commit(t, r, fmt.Sprint("c", i), put(fmt.Sprintf("memory/a%d/facts.md", i%5), fmt.Sprint("fact ", i))))
	}
	require.GreaterOrEqual(t, len(packFiles(t, r)), 40)

	// Readers with a stale pack list keep working while packs are merged.
	stale := mustOpen(t, r.Path())
	_, err := stale.ReadFile(ctx, hs[0], "memory/a0/facts.md")
	require.NoError(t, err)
	// unread knows the old pack list but has read nothing else: after the
	// merge its lookups miss the deleted packs and must rescan (stale's
	// goroutines may have cached everything before the merge).
	unread := mustOpen(t, r.Path())
	_, err = unread.ReadFile(ctx, hs[0], "memory/a0/facts.md")
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for g := range 4 {
		wg.Go(func() {
			for i, h := range hs {
				got, err := stale.ReadFile(ctx, h, fmt.Sprintf("memory/a%d/facts.md", i%5))
				if err == nil && string(got) != fmt.Sprint("fact ", i) {
					err = fmt.Errorf("goroutine %d: commit %d: got %q", g, i, got)
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	require.NoError(t, r.CompactPacks(ctx))
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	after := len(packFiles(t, r))
	require.Less(t, after, odb.CompactMinPacks, "packs were merged")
	require.Empty(t, tmpPackFiles(t, r))
	requireFsckClean(t, r.Path())
	for _, repo := range []*Repo{unread, r, stale, mustOpen(t, r.Path())} {
		for i, h := range hs {
			got, err := repo.ReadFile(ctx, h, fmt.Sprintf("memory/a%d/facts.md", i%5))
			require.NoError(t, err)
			require.Equal(t, fmt.Sprint("fact ", i), string(got))
		}
	}
	// Nothing to do right after a merge.
	require.NoError(t, r.CompactPacks(ctx))
	require.Len(t, packFiles(t, r), after)
}

// Merging packs while commits go on (as the apply engine does) loses
// nothing: every commit reads back, from this handle and a fresh one, and
// git finds the repository whole; the packs stay few.
func TestCompactPacksConcurrentWithCommits(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	stop := make(chan struct{})
	merged := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				merged <- nil
				return
			default:
			}
			if err := r.CompactPacks(ctx); err != nil {
				merged <- err
				return
			}
		}
	}()
	var hs []plumbing.Hash
	for i := range 6 * odb.CompactMinPacks {
		// Repeated contents make commits reuse objects in packs a merge
		// may be deleting.
		hs = append(hs, commit(t, r, fmt.Sprint("c", i),
			put(fmt.Sprintf("memory/a%d/facts.md", i%7), fmt.Sprint("fact ", i)),
			put("memory/shared.md", fmt.Sprint("shared ", i%3))))
	}
	close(stop)
	require.NoError(t, <-merged)
	require.NoError(t, r.CompactPacks(ctx))
	require.Less(t, len(packFiles(t, r)), odb.CompactMinPacks)
	require.Empty(t, tmpPackFiles(t, r))
	requireFsckClean(t, r.Path())
	for _, repo := range []*Repo{r, mustOpen(t, r.Path())} {
		for i, h := range hs {
			got, err := repo.ReadFile(ctx, h, fmt.Sprintf("memory/a%d/facts.md", i%7))
			require.NoError(t, err)
			require.Equal(t, fmt.Sprint("fact ", i), string(got))
			got, err = repo.ReadFile(ctx, h, "memory/shared.md")
			require.NoError(t, err)
			require.Equal(t, fmt.Sprint("shared ", i%3), string(got))
		}
	}
}

// deltaPackRepo commits versions of one file of the given number of lines,
// has git repack them (so it stores deltas) and returns the repository and
// its one pack, and the file's last version.
func deltaPackRepo(t *testing.T, lines, versions int) (r *Repo, pack, last string) {
	t.Helper()
	r = newTestRepo(t)
	body := strings.Repeat("a line that makes git want to store deltas\n", lines)
	for i := range versions {
		last = fmt.Sprint(body, i)
		commit(t, r, fmt.Sprint("c", i), put("memory/a/facts.md", last))
	}
	mustGit(t, r.Path(), "repack", "-a", "-d", "-f", "-q", "--window=50")
	packs := packFiles(t, r)
	require.Len(t, packs, 1)
	return r, packs[0], last
}

// Packs git made (with deltas) or is holding (.keep) are not ours to merge.
func TestCompactPacksLeavesGitPacksAlone(t *testing.T) {
	ctx := context.Background()
	r, gitPack, last := deltaPackRepo(t, 200, 6)
	gitPacks := []string{gitPack}
	require.Contains(t, mustGit(t, r.Path(), "verify-pack", "-v", strings.TrimSuffix(gitPacks[0], ".pack")+".idx"), "chain length", "git stored deltas")

	commit(t, r, "kept", put("memory/k/facts.md", "k"))
	var kept string
	for _, p := range packFiles(t, r) {
		if p != gitPacks[0] {
			kept = p
		}
	}
	require.NoError(t, os.WriteFile(strings.TrimSuffix(kept, ".pack")+".keep", nil, 0o644))

	for i := range 2 * odb.CompactMinPacks {
		commit(t, r, fmt.Sprint("d", i), put(fmt.Sprintf("memory/b%d/facts.md", i%3), fmt.Sprint("fact ", i)))
	}
	require.NoError(t, r.CompactPacks(ctx))
	require.NoError(t, r.CompactPacks(ctx)) // once more: the delta pack is now known to be skipped
	packs := packFiles(t, r)
	require.Contains(t, packs, gitPacks[0])
	require.Contains(t, packs, kept)
	require.Less(t, len(packs), odb.CompactMinPacks)
	requireFsckClean(t, r.Path())
	require.Equal(t, last, mustGit(t, r.Path(), "show", "main:memory/a/facts.md"))
}

// Readers in the writer's process and in another one never miss an object
// while commits land and packs are merged without pause. With two lookup
// rounds and merged packs deleted at once, about one read in a million
// failed: a rescan found a pack that was merged away before it was read,
// or listed objects/pack while a merge renamed and deleted packs and saw
// neither the new pack nor the old ones. MEMREPO_STRESS (a duration) runs
// it longer.
func TestLookupDuringCompaction(t *testing.T) {
	ctx := context.Background()
	// Not newTestRepo: packs a merge replaced keep their default grace.
	r, err := Init(ctx, filepath.Join(t.TempDir(), "memory.git"), testOpts())
	require.NoError(t, err)
	run := 3 * time.Second
	if d, err := time.ParseDuration(os.Getenv("MEMREPO_STRESS")); err == nil {
		run = d
	}
	const agents = 300
	body := strings.Repeat("- a fact line of some length, read while packs are merged\n", 60)
	var seed []Change
	for i := range agents {
		seed = append(seed, put(fmt.Sprintf("memory/a%d/facts.md", i), body))
	}
	commit(t, r, "seed", seed...)
	other := mustOpen(t, r.Path()) // as the read plane's process
	stop := make(chan struct{})
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	var wg sync.WaitGroup
	var reads, failed atomic.Int64
	wg.Go(func() {
		for !stopped() {
			if err := r.CompactPacks(ctx); err != nil {
				t.Error("compact:", err)
				return
			}
		}
	})
	wg.Go(func() {
		for i := 0; !stopped(); i++ {
			var chain []CommitRequest
			for k := range 1 + i%8 {
				chain = append(chain, CommitRequest{Message: "c", Changes: []Change{
					put(fmt.Sprintf("memory/a%d/facts.md", (i*7+k*13)%agents), fmt.Sprint(body, i, k))}})
			}
			if _, err := r.CommitChain(ctx, head(t, r), chain); err != nil {
				t.Error("commit:", err)
				return
			}
		}
	})
	for w := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for !stopped() {
				repo := []*Repo{r, other}[rng.IntN(2)]
				h, err := repo.Head(ctx)
				if err == nil {
					_, err = repo.ReadFile(ctx, h, fmt.Sprintf("memory/a%d/facts.md", rng.IntN(agents)))
				}
				reads.Add(1)
				if err != nil && failed.Add(1) <= 3 {
					t.Error("read:", err)
				}
			}
		})
	}
	time.Sleep(run)
	close(stop)
	wg.Wait()
	t.Logf("%d reads, %d failed", reads.Load(), failed.Load())
}
