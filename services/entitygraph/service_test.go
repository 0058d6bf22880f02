package entitygraph

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/grpctest"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/readstate"
)

type env struct {
	t      *testing.T
	repo   *memrepo.Repo
	svc    *Service
	client memoryv1.EntityGraphServiceClient
	server *grpctest.Server
	when   time.Time
}

func newEnv(t *testing.T) *env {
	repo, err := memrepo.Init(context.Background(), filepath.Join(t.TempDir(), "memory.git"), memrepo.InitOptions{})
	require.NoError(t, err)
	svc := New(Deps{RepoPath: repo.Path(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Poll: 10 * time.Millisecond})
	server := grpctest.Serve(t, svc.Register)
	svc.Start(context.Background())
	t.Cleanup(svc.Stop)
	return &env{t: t, repo: repo, svc: svc, client: memoryv1.NewEntityGraphServiceClient(server.Conn), server: server,
		when: time.Date(2026, 2, 17, 9, 0, 0, 0, time.UTC)}
}

func (e *env) as(roles []auth.Role, agents ...string) context.Context {
	return e.server.As(e.t, "t", roles, agents...)
}

func (e *env) commit(files map[string]string) (plumbing.Hash, time.Time) {
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
	e.when = e.when.Add(time.Hour)
	sig := memrepo.Signature{Name: "t", Email: "t@x", When: e.when}
	h, err := e.repo.Commit(ctx, memrepo.CommitRequest{Parent: head, Changes: changes, Message: "c", Author: sig, Committer: sig})
	require.NoError(e.t, err)
	ctx2, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(e.t, e.svc.WaitCurrent(ctx2))
	return h, e.when
}

func TestTemporalEdgesAndAgentVisibility(t *testing.T) {
	e := newEnv(t)
	svc := e.as([]auth.Role{auth.RoleService}, "*")
	e.commit(map[string]string{
		"memory/a/facts.md": "# Facts: a\n\n## D\n- [[Kafka]] feeds [[Search]]\n",
		"memory/b/facts.md": "# Facts: b\n\n## D\n- [[kafka]] is noisy\n",
	})
	sha2, t2 := e.commit(map[string]string{"memory/a/facts.md": "# Facts: a\n\n## D\n- [[Kafka]] is retired\n"})

	now, err := e.client.GetEntity(svc, &memoryv1.GetEntityRequest{EntityId: "Kafka"})
	require.NoError(t, err)
	require.Equal(t, "kafka", now.GetEntity().GetEntityId())
	require.ElementsMatch(t, []string{"memory/a/facts.md", "memory/b/facts.md"}, now.GetRefs())
	hasRelates := func(r *memoryv1.GetEntityResponse) bool {
		for _, ed := range r.GetEdges() {
			if ed.GetRelation() == memoryv1.Relation_RELATION_RELATES_TO && ed.GetValidTo() == nil {
				return true
			}
		}
		return false
	}
	require.False(t, hasRelates(now), "the relation ended in the second commit")
	atN, err := e.client.GetEntity(svc, &memoryv1.GetEntityRequest{EntityId: "kafka", At: sha2.String()})
	require.NoError(t, err)
	require.False(t, hasRelatesAt(atN, t2), "absent at the commit that removed it")
	before, err := e.client.GetEntity(svc, &memoryv1.GetEntityRequest{EntityId: "kafka", At: t2.Add(-time.Minute).Format(time.RFC3339)})
	require.NoError(t, err)
	require.True(t, hasRelatesAt(before, t2.Add(-time.Minute)), "present just before")

	mine, err := e.client.GetEntity(e.as([]auth.Role{auth.RoleAgent}, "a"), &memoryv1.GetEntityRequest{EntityId: "kafka"})
	require.NoError(t, err)
	require.Equal(t, []string{"memory/a/facts.md"}, mine.GetRefs(), "an agent token never sees another agent's files")
	for _, ed := range mine.GetEdges() {
		for _, ev := range ed.GetEvidence() {
			require.True(t, strings.HasPrefix(ev.GetFile(), "memory/a/"), ev.GetFile())
		}
	}
	_, err = e.client.GetEntity(e.as([]auth.Role{auth.RoleAgent}, "c"), &memoryv1.GetEntityRequest{EntityId: "kafka"})
	require.Equal(t, codes.NotFound, status.Code(err))

	list, err := e.client.ListEntities(svc, &memoryv1.ListEntitiesRequest{AgentId: "b"})
	require.NoError(t, err)
	var ids []string
	for _, en := range list.GetEntities() {
		ids = append(ids, en.GetEntityId())
	}
	require.Equal(t, []string{"b", "kafka"}, ids, "the agent itself and what its memory links")
	_, err = e.client.GetNeighbors(svc, &memoryv1.GetNeighborsRequest{EntityId: "kafka", Depth: 4})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
}

// hasRelatesAt reports a relates_to edge valid at t.
func hasRelatesAt(r *memoryv1.GetEntityResponse, t time.Time) bool {
	for _, ed := range r.GetEdges() {
		if ed.GetRelation() != memoryv1.Relation_RELATION_RELATES_TO {
			continue
		}
		from := ed.GetValidFrom().AsTime()
		if !from.After(t) && (ed.GetValidTo() == nil || ed.GetValidTo().AsTime().After(t)) {
			return true
		}
	}
	return false
}

func TestExplainDecisionFollowsTheChain(t *testing.T) {
	e := newEnv(t)
	svc := e.as([]auth.Role{auth.RoleService}, "*")
	e.commit(map[string]string{"memory/ops/decisions.md": "# Decisions: ops\n\n" +
		"## 2026-02-10 — Use S3\n**Status:** accepted\n**Rationale:** cheap [[Object Storage]]\n\n" +
		"## 2026-02-17 — Use MinIO\n**Status:** accepted\n**Context:** builds on [[decision-2026-02-10-use-s3]]\n**Rationale:** self-hosted [[Object Storage]]\n"})

	resp, err := e.client.ExplainDecision(svc, &memoryv1.ExplainDecisionRequest{DecisionId: "decision-2026-02-17-use-minio"})
	require.NoError(t, err)
	var chain []string
	for _, d := range resp.GetChain() {
		chain = append(chain, d.GetTitle())
	}
	require.Equal(t, []string{"Use MinIO", "Use S3"}, chain, "the decision, then what it builds on")
	require.Equal(t, "builds on [[decision-2026-02-10-use-s3]]", resp.GetChain()[0].GetContext())
	require.Contains(t, resp.GetMermaid(), "flowchart TD\n")
	require.Contains(t, resp.GetMermaid(), "n_decision_2026_02_17_use_minio --> n_decision_2026_02_10_use_s3")
	require.Contains(t, resp.GetMermaid(), "n_object_storage")

	byText, err := e.client.ExplainDecision(svc, &memoryv1.ExplainDecisionRequest{Query: "minio"})
	require.NoError(t, err)
	require.Equal(t, "Use MinIO", byText.GetChain()[0].GetTitle())
	_, err = e.client.ExplainDecision(svc, &memoryv1.ExplainDecisionRequest{Query: "nothing like it"})
	require.Equal(t, codes.NotFound, status.Code(err))
	_, err = e.client.ExplainDecision(e.as([]auth.Role{auth.RoleAgent}, "other"), &memoryv1.ExplainDecisionRequest{DecisionId: "decision-2026-02-17-use-minio"})
	require.Equal(t, codes.NotFound, status.Code(err), "another agent's decisions are invisible")
}

func TestSemanticGuard(t *testing.T) {
	e := newEnv(t)
	svc := e.as([]auth.Role{auth.RoleService}, "*")
	e.commit(map[string]string{
		"memory/a/facts.md": "# Facts: a\n\n## D\n- [[Redis]] caches sessions\n- Backups run nightly\n",
		"memory/b/facts.md": "# Facts: b\n\n## D\n- [[Redis]] must be restarted weekly\n",
	})
	resp, err := e.client.CheckProposal(svc, &memoryv1.CheckProposalRequest{AgentId: "a", EntityRefs: []string{"redis", "unicorn"},
		Updates: []*memoryv1.FileUpdate{
			{File: "facts.md", Operation: memoryv1.Operation_OPERATION_APPEND, Content: "- backups   RUN nightly\n- something new"},
			{File: "facts.md", Operation: memoryv1.Operation_OPERATION_REMOVE, Content: "- [[Redis]] caches sessions"},
		}})
	require.NoError(t, err)
	kinds := map[string]*memoryv1.CheckFinding{}
	for _, f := range resp.GetFindings() {
		kinds[f.GetKind()] = f
	}
	require.Len(t, resp.GetFindings(), 3)
	require.Contains(t, kinds[FindingUnknownRef].GetDetail(), "unicorn")
	require.Equal(t, int32(0), kinds[FindingDuplicateFact].GetUpdateIndex())
	require.Equal(t, []string{"memory/b/facts.md"}, kinds[FindingStillReferenced].GetRefs())
	_, err = e.client.CheckProposal(e.as([]auth.Role{auth.RoleAgent}, "a"), &memoryv1.CheckProposalRequest{AgentId: "a"})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "the guard is for the write plane")
}

func TestRestartResumesFromSnapshot(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	e.svc.Stop()
	svc := New(Deps{RepoPath: e.repo.Path(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Poll: 10 * time.Millisecond, StateDir: dir})
	e.svc = svc
	svc.Start(context.Background())
	head, _ := e.commit(map[string]string{"memory/a/facts.md": "# Facts: a\n\n## D\n- [[Zeta]] is new\n"})
	svc.Stop() // saves the snapshot

	// A new process loads the snapshot: the graph is there before any replay.
	again := New(Deps{RepoPath: e.repo.Path(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), StateDir: dir})
	again.load(context.Background())
	require.Equal(t, head, again.last)
	_, _, ok := again.graph.Node("zeta", time.Time{})
	require.True(t, ok)
	full := New(Deps{RepoPath: e.repo.Path(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, full.catchUp(context.Background()))
	require.Equal(t, full.graph.Dump(), again.graph.Dump(), "the snapshot equals a rebuild from history")
}

// A replica with an empty state dir starts from the snapshot another one
// published to the object store, and publishes its own when it stops.
func TestNewReplicaStartsFromThePublishedSnapshot(t *testing.T) {
	e := newEnv(t)
	e.svc.Stop()
	store, err := blob.NewFS(t.TempDir())
	require.NoError(t, err)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	first := New(Deps{RepoPath: e.repo.Path(), Logger: logger, Poll: 10 * time.Millisecond, StateDir: t.TempDir(),
		Shared: readstate.New(store, "entity-graph.snapshot", time.Hour, 0, t.TempDir(), logger)})
	e.svc = first
	first.Start(context.Background())
	head, _ := e.commit(map[string]string{"memory/a/facts.md": "# Facts: a\n\n## D\n- [[Omega]] is shared\n"})
	require.NoError(t, first.WaitCurrent(context.Background()))
	first.Stop() // saves and publishes
	_, _, err = store.Get(context.Background(), readstate.Prefix+"entity-graph.snapshot")
	require.NoError(t, err, "published at shutdown")

	fresh := New(Deps{RepoPath: e.repo.Path(), Logger: logger, StateDir: t.TempDir(),
		Shared: readstate.New(store, "entity-graph.snapshot", time.Hour, 0, t.TempDir(), logger)})
	fresh.load(context.Background())
	require.Equal(t, head, fresh.last, "loaded at the published commit, before any replay")
	_, _, ok := fresh.graph.Node("omega", time.Time{})
	require.True(t, ok)

	// A replica whose repository does not have the snapshot's commit yet
	// (its mirror is behind) waits instead of rebuilding; after aheadWait
	// the commit counts as rewritten history and the graph is rebuilt.
	behind := newEnv(t)
	behind.svc.Stop()
	lagging := New(Deps{RepoPath: behind.repo.Path(), Logger: logger, StateDir: t.TempDir(),
		Shared: readstate.New(store, "entity-graph.snapshot", time.Hour, 0, t.TempDir(), logger)})
	lagging.load(context.Background())
	require.ErrorContains(t, lagging.catchUp(context.Background()), "not in the repository yet")
	_, _, ok = lagging.graph.Node("omega", time.Time{})
	require.True(t, ok, "the loaded graph is kept while waiting")
	lagging.sharedAt = time.Now().Add(-aheadWait - time.Second)
	require.NoError(t, lagging.catchUp(context.Background()))
	_, _, ok = lagging.graph.Node("omega", time.Time{})
	require.False(t, ok, "rebuilt from this repository's history")

	// Without a published snapshot a replica replays history as before.
	none := New(Deps{RepoPath: e.repo.Path(), Logger: logger, StateDir: t.TempDir(),
		Shared: readstate.New(blobEmpty(t), "entity-graph.snapshot", time.Hour, 0, t.TempDir(), logger)})
	none.load(context.Background())
	require.True(t, none.last.IsZero())
}

func blobEmpty(t *testing.T) blob.Store {
	s, err := blob.NewFS(t.TempDir())
	require.NoError(t, err)
	return s
}

// Saves are spaced by the floor, or by saveCostFactor times the last
// save's cost once that is longer.
func TestSaveDue(t *testing.T) {
	require.False(t, saveDue(29*time.Second, 0, 30*time.Second))
	require.True(t, saveDue(30*time.Second, time.Second, 30*time.Second))
	require.False(t, saveDue(time.Minute, 4*time.Second, 30*time.Second), "a 4 s save waits 80 s")
	require.True(t, saveDue(80*time.Second, 4*time.Second, 30*time.Second))
}
