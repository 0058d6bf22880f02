package memrepo

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/memrepo/internal/odb"
)

// agentsRepo is a repository with a memory/ tree of n agent folders.
func agentsRepo(t *testing.T, n int) *Repo {
	t.Helper()
	r := newTestRepo(t)
	var changes []Change
	for i := range n {
		changes = append(changes, put(fmt.Sprintf("memory/agent-%04d/facts.md", i), fmt.Sprint("facts of ", i, "\n")))
	}
	commit(t, r, "agents", changes...)
	return r
}

// verifyPack returns, per object of a pack, its delta depth (0: whole) as
// `git verify-pack -v` reports it.
func verifyPack(t *testing.T, r *Repo, pack string) map[string]int {
	t.Helper()
	out := mustGit(t, r.Path(), "verify-pack", "-v", strings.TrimSuffix(pack, ".pack")+".idx")
	// <sha> <type> <size> <size-in-pack> <offset> [<depth> <base-sha>]
	line := regexp.MustCompile(`(?m)^([0-9a-f]{40}) \w+ +\d+ \d+ \d+(?: (\d+) [0-9a-f]{40})?$`)
	depths := map[string]int{}
	for _, m := range line.FindAllStringSubmatch(out, -1) {
		depths[m[1]], _ = strconv.Atoi(m[2])
	}
	require.NotEmpty(t, depths, out)
	return depths
}

// newPack returns the pack of after that is not in before.
func newPack(t *testing.T, before, after []string) string {
	t.Helper()
	for _, p := range after {
		if !slices.Contains(before, p) {
			return p
		}
	}
	t.Fatal("no new pack")
	return ""
}

// A chain stores each memory/ tree after the first as a delta against the
// one before it, up to odb.MaxTreeDeltaDepth deep: git reads the pack as it
// reads its own, and so does a fresh handle, version by version.
func TestCommitChainStoresTreeDeltas(t *testing.T) {
	ctx := context.Background()
	r := agentsRepo(t, 300)
	parent := head(t, r)
	before := packFiles(t, r)

	const n = odb.MaxTreeDeltaDepth + 5
	var reqs []CommitRequest
	for i := range n {
		reqs = append(reqs, chainReq(fmt.Sprint("c", i), put(fmt.Sprintf("memory/agent-%04d/facts.md", i*7), fmt.Sprint("new facts ", i, "\n"))))
	}
	hashes, err := r.CommitChain(ctx, parent, reqs)
	require.NoError(t, err)
	requireFsckClean(t, r.Path())

	pack := newPack(t, before, packFiles(t, r))
	depths := verifyPack(t, r, pack)
	memoryTree := func(c plumbing.Hash) string {
		return strings.TrimSpace(mustGit(t, r.Path(), "rev-parse", c.String()+":memory"))
	}
	deltas := 0
	for i, c := range hashes {
		d, ok := depths[memoryTree(c)]
		require.True(t, ok, "commit %d's memory/ tree is in the chain's pack", i)
		require.LessOrEqual(t, d, odb.MaxTreeDeltaDepth)
		if i == 0 {
			require.Zero(t, d, "the first tree has no base in the pack")
		}
		if d > 0 {
			deltas++
		}
	}
	require.Equal(t, n-2, deltas, "all but the first and the one after a full chain are deltas")

	// The pack is smaller than the whole trees alone would be.
	fi, err := os.Stat(pack)
	require.NoError(t, err)
	tree, err := r.tree(plumbing.NewHash(memoryTree(hashes[0])))
	require.NoError(t, err)
	require.Less(t, fi.Size(), int64(len(tree.all())*30*n/4), "a whole memory/ tree compresses to ~30 bytes an entry")

	for _, repo := range []*Repo{mustOpen(t, r.Path()), r} {
		for i, c := range hashes {
			got, err := repo.ReadFile(ctx, c, fmt.Sprintf("memory/agent-%04d/facts.md", i*7))
			require.NoError(t, err)
			require.Equal(t, fmt.Sprint("new facts ", i, "\n"), string(got))
			if i > 0 {
				got, err = repo.ReadFile(ctx, c, fmt.Sprintf("memory/agent-%04d/facts.md", (i-1)*7))
				require.NoError(t, err)
				require.Equal(t, fmt.Sprint("new facts ", i-1, "\n"), string(got))
			}
		}
	}
	require.Equal(t, "new facts 3\n", mustGit(t, r.Path(), "show", hashes[n-1].String()+":memory/agent-0021/facts.md"))
}

// Packs with memrepo's tree deltas are merged like any other: the deltas
// are copied with their bases, and everything reads back.
func TestCompactPacksMergesTreeDeltas(t *testing.T) {
	ctx := context.Background()
	r := agentsRepo(t, 50)
	var hashes []plumbing.Hash
	for c := range odb.CompactMinPacks + 4 {
		var reqs []CommitRequest
		for i := range 3 {
			k := c*3 + i
			reqs = append(reqs, chainReq(fmt.Sprint("c", k), put(fmt.Sprintf("memory/agent-%04d/facts.md", k%50), fmt.Sprint("version ", k, "\n"))))
		}
		hs, err := r.CommitChain(ctx, head(t, r), reqs)
		require.NoError(t, err)
		hashes = append(hashes, hs...)
	}
	packs := packFiles(t, r)
	require.GreaterOrEqual(t, len(packs), odb.CompactMinPacks)
	require.NoError(t, r.CompactPacks(ctx))
	after := packFiles(t, r)
	require.Less(t, len(after), odb.CompactMinPacks, "delta packs are merged")
	requireFsckClean(t, r.Path())

	merged := 0
	for _, p := range after {
		for _, d := range verifyPack(t, r, p) {
			if d > 0 {
				merged++
			}
		}
	}
	require.GreaterOrEqual(t, merged, 2*(odb.CompactMinPacks), "the deltas survive the merge")
	for _, repo := range []*Repo{mustOpen(t, r.Path()), r} {
		for k, c := range hashes {
			got, err := repo.ReadFile(ctx, c, fmt.Sprintf("memory/agent-%04d/facts.md", k%50))
			require.NoError(t, err)
			require.Equal(t, fmt.Sprint("version ", k, "\n"), string(got))
		}
	}
}

// A tree whose base the chain did not write (it was in the repository
// already, e.g. a revert to an earlier state) is stored whole: a pack on
// disk must hold every base of its deltas.
func TestTreeDeltaNeedsItsBaseInThePack(t *testing.T) {
	ctx := context.Background()
	r := agentsRepo(t, 3)
	commit(t, r, "x", put("memory/agent-0000/facts.md", "x\n"))
	commit(t, r, "y", put("memory/agent-0000/facts.md", "y\n"))
	before := packFiles(t, r)
	hashes, err := r.CommitChain(ctx, head(t, r), []CommitRequest{
		chainReq("back to x", put("memory/agent-0000/facts.md", "x\n")), // its trees are stored already
		chainReq("z", put("memory/agent-0001/facts.md", "z\n")),
	})
	require.NoError(t, err)
	requireFsckClean(t, r.Path())
	for _, d := range verifyPack(t, r, newPack(t, before, packFiles(t, r))) {
		require.Zero(t, d, "no delta against an object of another pack")
	}
	got, err := mustOpen(t, r.Path()).ReadFile(ctx, hashes[1], "memory/agent-0001/facts.md")
	require.NoError(t, err)
	require.Equal(t, "z\n", string(got))
}
