package memrepo

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/memrepo/internal/odb"
)

// seedAgents commits agents × the five Layer-1/2 files in one commit.
func seedAgents(t testing.TB, r *Repo, agents int) {
	t.Helper()
	var changes []Change
	for a := range agents {
		for _, f := range []string{"snapshot.md", "facts.md", "open_loops.md", "decisions.md", "changelog.md"} {
			changes = append(changes, put(fmt.Sprintf("memory/agent-%d/%s", a, f),
				fmt.Sprintf("# %s of agent-%d\n%s", f, a, strings.Repeat("lorem ipsum dolor sit amet\n", 40))))
		}
	}
	commit(t, r, "seed", changes...)
}

// BenchmarkCommit measures one proposal-sized commit (a single facts.md
// rewrite) on a repository of 100 agents × 5 files, including every fsync
// and the pack merging a continuous writer does between commits.
// Run with: go test -run '^$' -bench BenchmarkCommit ./pkg/memrepo/
func BenchmarkCommit(b *testing.B) { benchCommits(b, 1) }

// BenchmarkCommitChain is BenchmarkCommit with group commit: chains of 32
// such commits (different agents), one pack and one ref update each.
func BenchmarkCommitChain(b *testing.B) { benchCommits(b, 32) }

// benchCommits commits chains of chain facts.md rewrites (Commit is a
// chain of one) and reports commits/s.
func benchCommits(b *testing.B, chain int) {
	ctx := context.Background()
	r := newTestRepo(b)
	seedAgents(b, r, 100)
	parent := head(b, r)
	body := strings.Repeat("- a durable fact the agent relies on\n", 50)
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		reqs := make([]CommitRequest, chain)
		for k := range reqs {
			reqs[k] = CommitRequest{
				Changes: []Change{put(fmt.Sprintf("memory/agent-%d/facts.md", i%100), fmt.Sprintf("# Facts %d\n%s", i, body))},
				Message: fmt.Sprintf("memory-update: agent-%d / run_%d / proposal_%d", i%100, i, i),
			}
			i++
		}
		hs, err := r.CommitChain(ctx, parent, reqs)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.CompactPacks(ctx); err != nil {
			b.Fatal(err)
		}
		parent = hs[len(hs)-1]
	}
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "commits/s")
	b.StopTimer()
	require.Equal(b, fmt.Sprint(2+i)+"\n", mustGit(b, r.Path(), "rev-list", "--count", "main"))
	requireFsckClean(b, r.Path())
}

// BenchmarkReadFile measures reading one Layer-1 file at head, resolving
// main from disk each time as a service would.
func BenchmarkReadFile(b *testing.B) {
	ctx := context.Background()
	r := newTestRepo(b)
	seedAgents(b, r, 100)
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		h, err := r.Head(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.ReadFile(ctx, h, fmt.Sprintf("memory/agent-%d/facts.md", i%100)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkCommitBuild measures only the CPU part of BenchmarkCommit:
// reading the parent's trees path by path, applying the change and encoding
// blob, trees and commit, with no file written. The difference to
// BenchmarkCommit is the cost of the disk round trips (fsyncs).
func BenchmarkCommitBuild(b *testing.B) {
	r := newTestRepo(b)
	seedAgents(b, r, 1000) // membench perf's default N
	parent, err := r.commitObject(head(b, r))
	require.NoError(b, err)
	body := strings.Repeat("- a durable fact the agent relies on\n", 50)
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		tb, err := newTreeBuilder(r, odb.NewObjectSet(), parent.TreeHash)
		if err != nil {
			b.Fatal(err)
		}
		if err := tb.put(fmt.Sprintf("memory/agent-%d/facts.md", i%1000), []byte(fmt.Sprintf("# Facts %d\n%s", i, body))); err != nil {
			b.Fatal(err)
		}
		root, err := tb.build()
		if err != nil {
			b.Fatal(err)
		}
		req := CommitRequest{Parent: parent.Hash, Message: "memory-update: bench"}
		c, err := req.commitObject()
		if err != nil {
			b.Fatal(err)
		}
		c.TreeHash, c.ParentHashes = root, []plumbing.Hash{parent.Hash}
		if err := c.Encode(&plumbing.MemoryObject{}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkChangedFileBlobs lists what one commit changed at 1,000 agents,
// as every commit follower does for every commit.
func BenchmarkChangedFileBlobs(b *testing.B) {
	ctx := context.Background()
	r := newTestRepo(b)
	seedAgents(b, r, 1000)
	var commits []plumbing.Hash
	parent := head(b, r)
	for i := range 64 {
		next, err := r.Commit(ctx, CommitRequest{Parent: parent, Message: "memory-update: bench", Changes: []Change{
			{Path: fmt.Sprintf("memory/agent-%d/facts.md", (i*37)%1000), Content: []byte(fmt.Sprintf("# Facts %d\n", i))}}})
		require.NoError(b, err)
		commits, parent = append(commits, next), next
	}
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ChangedFileBlobs(ctx, commits[i%len(commits)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
