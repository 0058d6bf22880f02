package entitygraph

import (
	"context"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/memrepo"
)

// commitSameSecond commits files without advancing the clock: the commit
// carries exactly e.when, like every other commit made in the same second.
func (e *env) commitSameSecond(files map[string]string) plumbing.Hash {
	ctx := context.Background()
	head, _ := e.repo.Head(ctx)
	var changes []memrepo.Change
	for p, c := range files {
		if c == "" {
			changes = append(changes, memrepo.Change{Path: p, Delete: true})
		} else {
			changes = append(changes, memrepo.Change{Path: p, Content: []byte(c)})
		}
	}
	sig := memrepo.Signature{Name: "t", Email: "t@x", When: e.when}
	h, err := e.repo.Commit(ctx, memrepo.CommitRequest{Parent: head, Changes: changes, Message: "c", Author: sig, Committer: sig})
	require.NoError(e.t, err)
	ctx2, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(e.t, e.svc.WaitCurrent(ctx2))
	return h
}

// holdsTo reports a current (not ended) relates_to edge between kafka and to.
func holdsTo(edges []*memoryv1.Edge, to string) bool {
	for _, ed := range edges {
		if ed.GetRelation() != memoryv1.Relation_RELATION_RELATES_TO || ed.GetValidTo() != nil {
			continue
		}
		if (ed.GetFromEntityId() == "kafka" && ed.GetToEntityId() == to) || (ed.GetFromEntityId() == to && ed.GetToEntityId() == "kafka") {
			return true
		}
	}
	return false
}

// "As of a commit" is exact: at=<sha> is the state right after that commit in
// commit order, so an edge added and removed within one second is visible at
// the first commit and gone at the second.
func TestAtShaIsExactWithinOneSecond(t *testing.T) {
	e := newEnv(t)
	svc := e.as([]auth.Role{auth.RoleService}, "*")
	base, _ := e.commit(map[string]string{"memory/a/facts.md": "# Facts: a\n\n## D\n- [[Kafka]] is a broker\n"})
	e.when = e.when.Add(time.Hour)
	added := e.commitSameSecond(map[string]string{"memory/a/facts.md": "# Facts: a\n\n## D\n- [[Kafka]] is a broker\n- [[Kafka]] feeds [[Search]]\n"})
	removed := e.commitSameSecond(map[string]string{"memory/a/facts.md": "# Facts: a\n\n## D\n- [[Kafka]] is a broker\n- [[Zookeeper]] is gone\n"})
	same := e.when

	get := func(at string) *memoryv1.GetEntityResponse {
		r, err := e.client.GetEntity(svc, &memoryv1.GetEntityRequest{EntityId: "kafka", At: at})
		require.NoError(t, err, at)
		return r
	}
	require.False(t, holdsTo(get(base.String()).GetEdges(), "search"), "not yet at the base commit")
	require.True(t, holdsTo(get(added.String()).GetEdges(), "search"), "holds right after the commit that added it")
	require.False(t, holdsTo(get(removed.String()).GetEdges(), "search"), "gone right after the commit that removed it")
	require.False(t, holdsTo(get("").GetEdges(), "search"), "gone now")
	// A time means the newest commit at or before it: the second one.
	require.False(t, holdsTo(get(same.Format(time.RFC3339)).GetEdges(), "search"), "a time is the newest commit in that second")
	require.False(t, holdsTo(get(same.Add(-time.Second).Format(time.RFC3339)).GetEdges(), "search"), "before both")

	neighbors := func(at string) (ids []string, edges []*memoryv1.Edge) {
		r, err := e.client.GetNeighbors(svc, &memoryv1.GetNeighborsRequest{EntityId: "kafka", At: at,
			Relations: []memoryv1.Relation{memoryv1.Relation_RELATION_RELATES_TO}})
		require.NoError(t, err, at)
		for _, en := range r.GetEntities() {
			ids = append(ids, en.GetEntityId())
		}
		return ids, r.GetEdges()
	}
	ids, edges := neighbors(added.String())
	require.Contains(t, ids, "search")
	require.True(t, holdsTo(edges, "search"))
	ids, edges = neighbors(removed.String())
	require.NotContains(t, ids, "search")
	require.False(t, holdsTo(edges, "search"))

	// A node first seen in the second commit does not exist at the first.
	list := func(at string) (ids []string) {
		r, err := e.client.ListEntities(svc, &memoryv1.ListEntitiesRequest{Query: "zoo", At: at})
		require.NoError(t, err, at)
		for _, en := range r.GetEntities() {
			ids = append(ids, en.GetEntityId())
		}
		return ids
	}
	require.Empty(t, list(added.String()))
	require.Equal(t, []string{"zookeeper"}, list(removed.String()))
	// (A node's fields other than existence and edges are its latest state.)
	_, err := e.client.GetEntity(svc, &memoryv1.GetEntityRequest{EntityId: "search", At: added.String()})
	require.NoError(t, err, "search exists right after the first commit")
	_, err = e.client.GetEntity(svc, &memoryv1.GetEntityRequest{EntityId: "zookeeper", At: added.String()})
	require.Error(t, err, "zookeeper did not exist yet")

	// The snapshot keeps commit order: a restarted replica answers the same.
	dir := t.TempDir()
	e.svc.Stop()
	saved := New(Deps{RepoPath: e.repo.Path(), Logger: e.svc.deps.Logger, StateDir: dir})
	require.NoError(t, saved.catchUp(context.Background()))
	saved.save()
	again := New(Deps{RepoPath: e.repo.Path(), Logger: e.svc.deps.Logger, StateDir: dir})
	again.load(context.Background())
	require.Equal(t, removed, again.last)
	require.Equal(t, saved.graph.Dump(), again.graph.Dump())
}
