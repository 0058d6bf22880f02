package entitygraph

import (
	"context"
	"encoding/gob"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/enumname"
	"github.com/garden-bloom/memory/pkg/temporalgraph"
)

// episodeFile is an episode run file in the format IngestEpisode writes
// (docs/episodes.md): a failure, with context, skills, failure mode and fix.
func episodeFile(id, skill string) string {
	return "# Episode " + id + "\n\n" +
		"- **Episode:** [[episode:" + id + "]]\n" +
		"- **When:** 2026-02-17T09:00:00Z\n" +
		"- **Task:** [[task:task-1a2b3c4d|Fix the refund rounding bug]]\n" +
		"- **Outcome:** [[outcome:failure]] (severity: high) — still off by a cent\n" +
		"- **Context:** [[context:backend/payments/refunds]]\n" +
		"- **Skills used:** [[skill:" + skill + "]]\n" +
		"- **Failure mode:** [[failure-mode:nil pointer dereference]]\n" +
		"- **Fix:** [[fix:check the refund before use]]\n" +
		"\n## Summary\n\nThe refund was nil.\n"
}

// Every type and relation the graph derives is a declared API enum value,
// and converts back to the same name: a name that drifted from the proto
// would silently become "concept" or "unspecified".
func TestGraphNamesAreAPIEnumValues(t *testing.T) {
	for _, typ := range temporalgraph.Types {
		e := entityType(typ)
		require.Equal(t, typ, enumname.Name(e), "type %q", typ)
		require.Equal(t, typ, entityTypeName(e))
	}
	require.Len(t, temporalgraph.Types, memoryv1.EntityType(0).Descriptor().Values().Len()-1, "every declared type is derived")
	for _, rel := range temporalgraph.Relations {
		r := relation(rel)
		require.NotEqual(t, memoryv1.Relation_RELATION_UNSPECIFIED, r, "relation %q", rel)
		names, err := relationNames([]memoryv1.Relation{r})
		require.NoError(t, err)
		require.Equal(t, []string{rel}, names)
	}
	require.Equal(t, memoryv1.EntityType_ENTITY_TYPE_FAILURE_MODE, entityType("failure_mode"))
	require.Equal(t, memoryv1.Relation_RELATION_USED_SKILL, relation("used_skill"))
}

// ai-skills-memory-protocol §4.2 over gRPC: GetNeighbors with relations
// [USED_SKILL] walks only the skill's episodes, each edge with its own
// evidence (its run file, the commit, the line); the typed nodes have the
// API's types.
func TestEpisodeEdgesOverGRPC(t *testing.T) {
	e := newEnv(t)
	svc := e.as([]auth.Role{auth.RoleService}, "*")
	a, b := "memory/coder/runs/run_ep-a.md", "memory/coder/runs/run_ep-b.md"
	shaA, _ := e.commit(map[string]string{a: episodeFile("ep-a", "go-testing")})
	shaB, _ := e.commit(map[string]string{b: episodeFile("ep-b", "Go Testing")})

	nb, err := e.client.GetNeighbors(svc, &memoryv1.GetNeighborsRequest{EntityId: "go-testing", Depth: 1,
		Relations: []memoryv1.Relation{memoryv1.Relation_RELATION_USED_SKILL}})
	require.NoError(t, err)
	var ids []string
	for _, n := range nb.GetEntities() {
		ids = append(ids, n.GetEntityId())
		require.Equal(t, memoryv1.EntityType_ENTITY_TYPE_EPISODE, n.GetType())
	}
	require.Equal(t, []string{"episode-ep-a", "episode-ep-b"}, ids)
	require.Len(t, nb.GetEdges(), 2)
	for i, want := range []struct{ from, file, sha string }{{"episode-ep-a", a, shaA.String()}, {"episode-ep-b", b, shaB.String()}} {
		ed := nb.GetEdges()[i]
		require.Equal(t, memoryv1.Relation_RELATION_USED_SKILL, ed.GetRelation())
		require.Equal(t, want.from, ed.GetFromEntityId())
		require.Equal(t, "go-testing", ed.GetToEntityId())
		require.Nil(t, ed.GetValidTo())
		require.Len(t, ed.GetEvidence(), 1)
		ev := ed.GetEvidence()[0]
		require.Equal(t, want.file, ev.GetFile())
		require.Equal(t, want.sha, ev.GetCommit())
		require.Equal(t, int32(8), ev.GetSpan().GetStartLine())
		require.Equal(t, int32(8), ev.GetSpan().GetEndLine())
	}

	// The failure chain, typed: outcome → failure mode → fix.
	fm, err := e.client.GetEntity(svc, &memoryv1.GetEntityRequest{EntityId: "failure-mode-nil-pointer-dereference"})
	require.NoError(t, err)
	require.Equal(t, memoryv1.EntityType_ENTITY_TYPE_FAILURE_MODE, fm.GetEntity().GetType())
	require.Equal(t, "nil pointer dereference", fm.GetEntity().GetLabel())
	rels := map[memoryv1.Relation]string{}
	for _, ed := range fm.GetEdges() {
		if ed.GetFromEntityId() != "coder" {
			rels[ed.GetRelation()] = ed.GetFromEntityId() + "→" + ed.GetToEntityId()
			require.Len(t, ed.GetEvidence(), 2, "one evidence per episode: %v", ed)
		}
	}
	require.Equal(t, map[memoryv1.Relation]string{
		memoryv1.Relation_RELATION_HAS_FAILURE_MODE: "outcome-failure→failure-mode-nil-pointer-dereference",
		memoryv1.Relation_RELATION_MITIGATED_BY:     "failure-mode-nil-pointer-dereference→fix-check-the-refund-before-use",
	}, rels)

	// The context chain, and contexts listed by type.
	list, err := e.client.ListEntities(svc, &memoryv1.ListEntitiesRequest{Type: memoryv1.EntityType_ENTITY_TYPE_CONTEXT})
	require.NoError(t, err)
	var contexts []string
	for _, en := range list.GetEntities() {
		contexts = append(contexts, en.GetEntityId()+"="+en.GetLabel())
	}
	require.Equal(t, []string{"context-backend=backend", "context-backend-payments=backend/payments",
		"context-backend-payments-refunds=backend/payments/refunds"}, contexts)
	chain, err := e.client.GetNeighbors(svc, &memoryv1.GetNeighborsRequest{EntityId: "context-backend-payments-refunds", Depth: 3,
		Relations: []memoryv1.Relation{memoryv1.Relation_RELATION_CHILD_OF}})
	require.NoError(t, err)
	require.Len(t, chain.GetEdges(), 2)
	for _, ed := range chain.GetEdges() {
		require.Equal(t, memoryv1.Relation_RELATION_CHILD_OF, ed.GetRelation())
	}

	// An agent token sees its own agents' episodes only.
	_, err = e.client.GetNeighbors(e.as([]auth.Role{auth.RoleAgent}, "other"), &memoryv1.GetNeighborsRequest{EntityId: "go-testing", Depth: 1})
	require.Equal(t, codes.NotFound, status.Code(err))
	mine, err := e.client.GetNeighbors(e.as([]auth.Role{auth.RoleAgent}, "coder"), &memoryv1.GetNeighborsRequest{EntityId: "go-testing", Depth: 1,
		Relations: []memoryv1.Relation{memoryv1.Relation_RELATION_USED_SKILL}})
	require.NoError(t, err)
	require.Len(t, mine.GetEdges(), 2)
}

// A relations filter or a type filter naming no relation or type is a bad
// request naming the field, not an empty answer.
func TestUnknownRelationOrTypeIsInvalid(t *testing.T) {
	e := newEnv(t)
	svc := e.as([]auth.Role{auth.RoleService}, "*")
	e.commit(map[string]string{"memory/coder/runs/run_ep-a.md": episodeFile("ep-a", "go-testing")})
	for _, tc := range []struct {
		name  string
		call  func() error
		field string
		lists string
	}{
		{"unspecified relation", func() error {
			_, err := e.client.GetNeighbors(svc, &memoryv1.GetNeighborsRequest{EntityId: "go-testing",
				Relations: []memoryv1.Relation{memoryv1.Relation_RELATION_USED_SKILL, memoryv1.Relation_RELATION_UNSPECIFIED}})
			return err
		}, "relations[1]", "used_skill"},
		{"undeclared relation", func() error {
			_, err := e.client.GetNeighbors(svc, &memoryv1.GetNeighborsRequest{EntityId: "go-testing", Relations: []memoryv1.Relation{99}})
			return err
		}, "relations[0]", "used_skill"},
		{"undeclared type", func() error {
			_, err := e.client.ListEntities(svc, &memoryv1.ListEntitiesRequest{Type: 99})
			return err
		}, "type", "failure_mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			st := status.Convert(err)
			require.Equal(t, codes.InvalidArgument, st.Code(), "%v", err)
			info := apierr.Info(err)
			require.NotNil(t, info)
			require.Equal(t, "INVALID_ARGUMENT", info.GetReason())
			require.Equal(t, tc.field, info.GetMetadata()["field"])
			require.Contains(t, st.Message(), tc.lists, "the message lists what may be sent")
		})
	}
}

// Run rotation deletes a run file: its typed edges close at that commit and
// are still there as of the commit before (at=<sha>).
func TestRotatedRunFileClosesItsEdges(t *testing.T) {
	e := newEnv(t)
	svc := e.as([]auth.Role{auth.RoleService}, "*")
	p := "memory/coder/runs/run_ep-a.md"
	before, _ := e.commit(map[string]string{p: episodeFile("ep-a", "go-testing")})
	_, deleted := e.commit(map[string]string{p: ""})

	usedSkill := func(r *memoryv1.GetEntityResponse) []*memoryv1.Edge {
		return slices.DeleteFunc(r.GetEdges(), func(ed *memoryv1.Edge) bool { return ed.GetRelation() != memoryv1.Relation_RELATION_USED_SKILL })
	}
	then, err := e.client.GetEntity(svc, &memoryv1.GetEntityRequest{EntityId: "episode-ep-a", At: before.String()})
	require.NoError(t, err)
	require.Len(t, usedSkill(then), 1)
	require.Nil(t, usedSkill(then)[0].GetValidTo(), "still open as of that commit")

	now, err := e.client.GetEntity(svc, &memoryv1.GetEntityRequest{EntityId: "episode-ep-a"})
	require.NoError(t, err, "a node is never forgotten")
	require.Empty(t, usedSkill(now), "no open USED_SKILL edge after the deletion")
	_, err = e.client.GetEntity(e.as([]auth.Role{auth.RoleAgent}, "coder"), &memoryv1.GetEntityRequest{EntityId: "episode-ep-a"})
	require.Equal(t, codes.NotFound, status.Code(err), "for an agent token, no file names it any more")
	nb, err := e.client.GetNeighbors(svc, &memoryv1.GetNeighborsRequest{EntityId: "go-testing", At: deleted.Add(-time.Minute).Format(time.RFC3339),
		Relations: []memoryv1.Relation{memoryv1.Relation_RELATION_USED_SKILL}})
	require.NoError(t, err)
	require.Len(t, nb.GetEdges(), 1, "a minute before the deletion")
	require.Nil(t, nb.GetEdges()[0].GetValidTo(), "as the graph knew it then")
	nb, err = e.client.GetNeighbors(svc, &memoryv1.GetNeighborsRequest{EntityId: "go-testing", At: deleted.Format(time.RFC3339),
		Relations: []memoryv1.Relation{memoryv1.Relation_RELATION_USED_SKILL}})
	require.NoError(t, err)
	require.Empty(t, nb.GetEdges(), "closed at the deleting commit")
}

// A snapshot saved before episodes were derived (version 4) is not loaded:
// the restart rebuilds from history and the run files' typed edges are
// there.
func TestOldSnapshotIsRebuiltWithTypedEdges(t *testing.T) {
	e := newEnv(t)
	e.commit(map[string]string{"memory/coder/runs/run_ep-a.md": episodeFile("ep-a", "go-testing")})
	e.svc.Stop()
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "graph.snapshot"))
	require.NoError(t, err)
	head, err := e.repo.Head(context.Background())
	require.NoError(t, err)
	enc := gob.NewEncoder(f)
	require.NoError(t, enc.Encode(snapshotHeader{Commit: head.String()}))
	require.NoError(t, enc.Encode(struct{ Version int }{4}))
	require.NoError(t, f.Close())

	again := New(Deps{RepoPath: e.repo.Path(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), StateDir: dir})
	again.load(context.Background())
	require.True(t, again.last.IsZero(), "the old snapshot is not loaded")
	require.NoError(t, again.catchUp(context.Background()))
	_, es, ok := again.graph.Node("episode-ep-a", time.Time{})
	require.True(t, ok)
	require.True(t, slices.ContainsFunc(es, func(ed temporalgraph.Edge) bool { return ed.Relation == temporalgraph.RelUsedSkill }))
}

// The semantic guard resolves entity refs as the graph does: a typed ref
// ("skill:go-testing", as an ingested episode may carry) names the skill
// node go-testing, not an unknown "skill-go-testing".
func TestGuardResolvesTypedRefs(t *testing.T) {
	e := newEnv(t)
	svc := e.as([]auth.Role{auth.RoleService}, "*")
	e.commit(map[string]string{"memory/coder/runs/run_ep-a.md": episodeFile("ep-a", "go-testing")})
	resp, err := e.client.CheckProposal(svc, &memoryv1.CheckProposalRequest{AgentId: "coder",
		EntityRefs: []string{"skill:go-testing", "context:backend/payments", "outcome:failure", "skill:unheard-of"}})
	require.NoError(t, err)
	require.Len(t, resp.GetFindings(), 1, "%v", resp.GetFindings())
	require.Equal(t, FindingUnknownRef, resp.GetFindings()[0].GetKind())
	require.Contains(t, resp.GetFindings()[0].GetDetail(), "skill:unheard-of")

	got, err := e.client.GetEntity(svc, &memoryv1.GetEntityRequest{EntityId: "skill:go-testing"})
	require.NoError(t, err)
	require.Equal(t, "go-testing", got.GetEntity().GetEntityId())
}
