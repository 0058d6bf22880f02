package contextassembly

import (
	"context"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/memrepo"
)

// commitSameSecond commits files at exactly e.when, without advancing it.
func (e *env) commitSameSecond(msg string, files map[string]string) plumbing.Hash {
	ctx := context.Background()
	head, err := e.repo.Head(ctx)
	require.NoError(e.t, err)
	var changes []memrepo.Change
	for p, c := range files {
		changes = append(changes, memrepo.Change{Path: p, Content: []byte(c)})
	}
	sig := memrepo.Signature{Name: "t", Email: "t@x", When: e.when}
	h, err := e.repo.Commit(ctx, memrepo.CommitRequest{Parent: head, Changes: changes, Message: msg, Author: sig, Committer: sig})
	require.NoError(e.t, err)
	return h
}

// "As of a commit" is exact: two commits in the same second give two
// different reads, Layer 2 reads, assembled contexts and diffs.
func TestAtShaIsExactWithinOneSecond(t *testing.T) {
	e := newEnv(t)
	seed := seedAgent(e)
	e.when = e.when.Add(time.Hour)
	first := e.commitSameSecond("first", map[string]string{
		"memory/cur/snapshot.md":  "# Snapshot: cur\n\n## Role\nFirst role.\n",
		"memory/cur/decisions.md": "# Decisions: cur\n\n## 2026-02-17 — Use MinIO\n**Status:** accepted\n",
	})
	second := e.commitSameSecond("second", map[string]string{
		"memory/cur/snapshot.md":  "# Snapshot: cur\n\n## Role\nSecond role.\n",
		"memory/cur/decisions.md": "# Decisions: cur\n\n## 2026-02-17 — Use MinIO\n**Status:** accepted\n\n## 2026-02-18 — Use Garage\n**Status:** accepted\n",
	})
	same := e.when

	read := func(at string) *memoryv1.ReadMemoryResponse {
		r, err := e.client.ReadMemory(e.svc(), &memoryv1.ReadMemoryRequest{AgentId: "cur", At: at})
		require.NoError(t, err, at)
		return r
	}
	r1, r2 := read(first.String()), read(second.String())
	require.Equal(t, first.String(), r1.GetCommit())
	require.Contains(t, r1.GetContent()["snapshot.md"], "First role.")
	require.Equal(t, second.String(), r2.GetCommit())
	require.Contains(t, r2.GetContent()["snapshot.md"], "Second role.")
	require.Equal(t, r1.GetLoadedAt().AsTime(), r2.GetLoadedAt().AsTime(), "the same second")
	// A time means the newest commit at or before it.
	rt := read(same.Format(time.RFC3339))
	require.Equal(t, second.String(), rt.GetCommit())
	require.Equal(t, seed.String(), read(same.Add(-time.Second).Format(time.RFC3339)).GetCommit())

	l2 := func(at string) []string {
		r, err := e.client.GetLayer2(e.svc(), &memoryv1.GetLayer2Request{AgentId: "cur", At: at, DecisionsLimit: 5})
		require.NoError(t, err, at)
		require.Equal(t, at, r.GetCommit())
		var titles []string
		for _, d := range r.GetDecisions() {
			titles = append(titles, d.GetTitle())
		}
		return titles
	}
	require.Equal(t, []string{"Use MinIO"}, l2(first.String()))
	require.Equal(t, []string{"Use Garage", "Use MinIO"}, l2(second.String()))

	assemble := func(at string) string {
		r, err := e.client.AssembleContext(e.svc(), &memoryv1.AssembleContextRequest{AgentId: "cur", At: at, ExcludeSources: true})
		require.NoError(t, err, at)
		var all string
		for _, s := range r.GetSections() {
			require.Equal(t, at, s.GetCommit(), s.GetFile())
			all += s.GetContent()
		}
		return all
	}
	require.Contains(t, assemble(first.String()), "First role.")
	require.Contains(t, assemble(second.String()), "Second role.")

	diff := func(from, to string) *memoryv1.DiffMemoryResponse {
		r, err := e.client.DiffMemory(e.svc(), &memoryv1.DiffMemoryRequest{AgentId: "cur", From: from, To: to})
		require.NoError(t, err, from+".."+to)
		return r
	}
	d := diff(first.String(), second.String())
	require.Equal(t, first.String(), d.GetFrom())
	require.Equal(t, second.String(), d.GetTo())
	require.Equal(t, int32(1), d.GetStats().GetCommits())
	require.Contains(t, d.GetDiff()["snapshot.md"], "-First role.\n+Second role.\n")
	d = diff(seed.String(), first.String())
	require.Equal(t, int32(1), d.GetStats().GetCommits())
	require.Contains(t, d.GetDiff()["snapshot.md"], "+First role.\n")
	require.NotContains(t, d.GetDiff()["snapshot.md"], "Second")
	require.Empty(t, diff(second.String(), second.String()).GetDiff(), "nothing between a commit and itself")
	// Times resolve to the newest commit at or before them, as `at` does.
	d = diff(same.Add(-time.Second).Format(time.RFC3339), same.Format(time.RFC3339))
	require.Equal(t, seed.String(), d.GetFrom())
	require.Equal(t, second.String(), d.GetTo())
	require.Equal(t, int32(2), d.GetStats().GetCommits())
}
