package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
)

// The authorization matrix (issue #8): every RPC of the four services ×
// every kind of caller, called directly over gRPC (the REST edge forwards
// the same token to the same checks). The seeded agents are "alpha" (the
// target of every row) and "beta"; "agent-other" is beta's agent token
// asking for alpha's resources.

// Callers of the matrix.
const (
	roleNone       = "none"
	roleAgentOwn   = "agent-own"
	roleAgentOther = "agent-other"
	roleReviewer   = "reviewer"
	roleAdmin      = "admin"
	roleService    = "service"
)

var matrixRoles = []string{roleNone, roleAgentOwn, roleAgentOther, roleReviewer, roleAdmin, roleService}

// Words only one agent's memory holds: a leak of the other's content shows up
// as one of them in an answer or an error.
const (
	alphaWord = "zirconium"
	betaWord  = "quokka"
)

// matrixEnv is a running suite seeded with two agents, and token minting.
type matrixEnv struct {
	d      *deployment
	signer *auth.Signer
	conn   *grpc.ClientConn
	n      int // makes every token's subject unique (per-token rate limits)

	ca memoryv1.ContextAssemblyServiceClient
	si memoryv1.SearchIndexServiceClient
	eg memoryv1.EntityGraphServiceClient
	pa memoryv1.ProposalApplyServiceClient

	// Proposals of alpha the review rows act on, and a staged one.
	pendingGet, pendingApprove, pendingReject, pendingRetry, staged string
	firstCommit                                                     string
}

// ctx returns a context carrying a fresh token for roles and agents.
func (e *matrixEnv) ctx(t testing.TB, sub string, roles []auth.Role, agents ...string) context.Context {
	t.Helper()
	e.n++
	tok, err := e.signer.Mint(fmt.Sprintf("%s-%d", sub, e.n), roles, agents, time.Hour)
	require.NoError(t, err)
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
}

// as returns the context of one of the matrix's callers.
func (e *matrixEnv) as(t testing.TB, role string) context.Context {
	switch role {
	case roleNone:
		return context.Background()
	case roleAgentOwn:
		return e.ctx(t, "matrix-alpha", []auth.Role{auth.RoleAgent}, "alpha")
	case roleAgentOther:
		return e.ctx(t, "matrix-beta", []auth.Role{auth.RoleAgent}, "beta")
	case roleReviewer:
		return e.ctx(t, "matrix-reviewer", []auth.Role{auth.RoleReviewer}) // no agents list: every agent
	case roleAdmin:
		return e.ctx(t, "matrix-admin", []auth.Role{auth.RoleAdmin})
	case roleService:
		return e.ctx(t, "matrix-service", []auth.Role{auth.RoleService}, auth.AllAgents)
	}
	t.Fatalf("unknown role %q", role)
	return nil
}

func (e *matrixEnv) svc(t testing.TB) context.Context { return e.as(t, roleService) }

func newMatrixEnv(t *testing.T) *matrixEnv {
	// Every call has its own token subject anyway.
	d := startInProcessWith(t, "--rate-limit=0")
	secret, err := auth.LoadSecret(filepath.Join(d.dataDir, "auth.secret"))
	require.NoError(t, err)
	signer, err := auth.NewSigner(secret)
	require.NoError(t, err)
	conn := dial(t, d.grpcAddr[memoryv1.ProposalApplyService_ServiceDesc.ServiceName])
	e := &matrixEnv{d: d, signer: signer, conn: conn,
		ca: memoryv1.NewContextAssemblyServiceClient(conn), si: memoryv1.NewSearchIndexServiceClient(conn),
		eg: memoryv1.NewEntityGraphServiceClient(conn), pa: memoryv1.NewProposalApplyServiceClient(conn)}
	e.seed(t)
	return e
}

func matrixFacts(section, content string) *memoryv1.FileUpdate {
	return &memoryv1.FileUpdate{File: "facts.md", Operation: memoryv1.Operation_OPERATION_APPEND, Section: section, Content: content}
}

func matrixDecision(title, context, rationale string) *memoryv1.FileUpdate {
	return &memoryv1.FileUpdate{File: "decisions.md", Operation: memoryv1.Operation_OPERATION_ADD_DECISION, Decision: &memoryv1.Decision{
		Title: title, Status: "accepted", Context: context, Decision: "go ahead", Rationale: rationale, Consequences: "watch it"}}
}

// propose proposes as the service; approve then has a reviewer approve it.
func (e *matrixEnv) propose(t *testing.T, agent, run string, updates ...*memoryv1.FileUpdate) string {
	t.Helper()
	resp, err := e.pa.Propose(e.svc(t), &memoryv1.ProposeRequest{AgentId: agent, RunId: run, Updates: updates, Reasoning: "matrix seed"})
	require.NoError(t, err)
	return resp.GetProposalId()
}

func (e *matrixEnv) approve(t *testing.T, id string) {
	t.Helper()
	_, err := e.pa.ApproveProposal(e.as(t, roleReviewer), &memoryv1.ApproveProposalRequest{ProposalId: id})
	require.NoError(t, err)
	ctx := e.svc(t)
	var p *memoryv1.Proposal
	require.Eventually(t, func() bool {
		got, err := e.pa.GetProposal(ctx, &memoryv1.GetProposalRequest{ProposalId: id})
		p = got.GetProposal()
		return err == nil && (p.GetStatus() == memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED || p.GetStatus() == memoryv1.ProposalStatus_PROPOSAL_STATUS_FAILED)
	}, 20*time.Second, 20*time.Millisecond, "proposal %s is applied", id)
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED, p.GetStatus(), p.GetMessage())
}

// seed gives alpha and beta memory through reviewed proposals: facts with
// wiki links, decisions (one with the same title in both), a run. Shared
// Vault is known to both; Alpha Engine only to alpha; Tardigrade Lab only
// to beta; Quartz Gateway to both, but only beta's memory links it to
// Shared Vault.
func (e *matrixEnv) seed(t *testing.T) {
	e.approve(t, e.propose(t, "alpha", "run_a1",
		&memoryv1.FileUpdate{File: "snapshot.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "# Snapshot: alpha\n\n## Role\nAlpha tester.\n"},
		matrixFacts("Infra", "- [[Alpha Engine]] runs on "+alphaWord+" nodes next to the [[Shared Vault]]\n- [[Quartz Gateway]] fronts the "+alphaWord+" cluster"),
		matrixDecision("Alpha Engine Rollout", "the [[Alpha Engine]] needs "+alphaWord, "alpha rationale "+alphaWord),
		matrixDecision("Shared Vault Adoption", "storage for alpha", "alpha-side reasons "+alphaWord),
		&memoryv1.FileUpdate{File: "runs/run_a1.md", Operation: memoryv1.Operation_OPERATION_WRITE_RUN, Content: "# Run: run_a1\n\n" + alphaWord + " run notes\n"}))
	e.approve(t, e.propose(t, "beta", "run_b1",
		&memoryv1.FileUpdate{File: "snapshot.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "# Snapshot: beta\n\n## Role\nBeta tester.\n"},
		matrixFacts("Infra", "- [[Shared Vault]] stores the "+betaWord+" ledger for [[Tardigrade Lab]]\n- [[Shared Vault]] sits behind [[Quartz Gateway]] for "+betaWord+" traffic"),
		matrixDecision("Tardigrade Lab Funding", "the [[Tardigrade Lab]] studies "+betaWord, "beta rationale "+betaWord),
		matrixDecision("Shared Vault Adoption", "storage for beta", "beta-side reasons "+betaWord),
		&memoryv1.FileUpdate{File: "runs/run_b1.md", Operation: memoryv1.Operation_OPERATION_WRITE_RUN, Content: "# Run: run_b1\n\n" + betaWord + " run notes\n"}))

	// Pending proposals for the review rows, and a staged one.
	e.pendingGet = e.propose(t, "alpha", "run_a2", matrixFacts("Infra", "- pending fact for get"))
	e.pendingApprove = e.propose(t, "alpha", "run_a3", matrixFacts("Infra", "- pending fact to approve"))
	e.pendingReject = e.propose(t, "alpha", "run_a4", matrixFacts("Infra", "- pending fact to reject"))
	e.pendingRetry = e.propose(t, "alpha", "run_a5", matrixFacts("Infra", "- pending fact to retry"))
	staged, err := e.pa.ProcessSession(e.svc(t), &memoryv1.ProcessSessionRequest{Proposal: &memoryv1.ProposeRequest{AgentId: "alpha", RunId: "run_a6", Updates: []*memoryv1.FileUpdate{matrixFacts("Infra", "- staged fact")}}})
	require.NoError(t, err)
	e.staged = staged.GetProposal().GetProposalId()

	out, err := exec.Command("git", "--git-dir", filepath.Join(e.d.dataDir, "memory.git"), "rev-list", "--max-parents=0", "main").CombinedOutput()
	require.NoError(t, err, string(out))
	e.firstCommit = strings.TrimSpace(string(out))

	// The read plane follows: both agents searchable, the graph built.
	ctx := e.svc(t)
	require.Eventually(t, func() bool {
		for agent, word := range map[string]string{"alpha": alphaWord, "beta": betaWord} {
			res, err := e.si.Search(ctx, &memoryv1.SearchRequest{Query: word, AgentId: agent})
			if err != nil || len(res.GetResults()) == 0 {
				return false
			}
		}
		nb, err := e.eg.GetNeighbors(ctx, &memoryv1.GetNeighborsRequest{EntityId: "shared-vault", Depth: 1})
		return err == nil && slices.ContainsFunc(nb.GetEntities(), func(x *memoryv1.Entity) bool { return x.GetEntityId() == "quartz-gateway" })
	}, 30*time.Second, 50*time.Millisecond, "the read plane follows the seeded commits")
}

// matrixRow is what one RPC allows and how to call it for alpha.
type matrixRow struct {
	// allow lists the callers that may make the call.
	allow []string
	// also lists the codes besides OK that mean the call was let through
	// (e.g. FailedPrecondition once the proposal is approved).
	also []codes.Code
	call func(ctx context.Context) error
}

func firstMessage(s interface {
	Recv() (*memoryv1.WatchCommitsResponse, error)
}, err error) error {
	if err != nil {
		return err
	}
	_, err = s.Recv()
	return err
}

var (
	matrixReaders         = []string{roleAgentOwn, roleAdmin, roleService}
	matrixProposers       = []string{roleAgentOwn, roleAdmin, roleService}
	matrixProposalReaders = []string{roleAgentOwn, roleReviewer, roleAdmin, roleService}
	matrixReviewers       = []string{roleReviewer, roleAdmin}
	matrixAdminOnly       = []string{roleAdmin}
	matrixEveryone        = []string{roleAgentOwn, roleAgentOther, roleReviewer, roleAdmin, roleService}
)

func (e *matrixEnv) rows() map[string]matrixRow {
	ca, si, eg, pa := e.ca, e.si, e.eg, e.pa
	name := func(d grpc.ServiceDesc, m string) string { return "/" + d.ServiceName + "/" + m }
	cas, sis, egs, pas := memoryv1.ContextAssemblyService_ServiceDesc, memoryv1.SearchIndexService_ServiceDesc,
		memoryv1.EntityGraphService_ServiceDesc, memoryv1.ProposalApplyService_ServiceDesc
	n := 0
	next := func() int { n++; return n }
	return map[string]matrixRow{
		// context-assembly: the agent's own memory; admins and the service read any.
		name(cas, "ReadMemory"): {allow: matrixReaders, call: func(ctx context.Context) error {
			_, err := ca.ReadMemory(ctx, &memoryv1.ReadMemoryRequest{AgentId: "alpha", Mode: memoryv1.ReadMode_READ_MODE_WIDE})
			return err
		}},
		name(cas, "GetLayer2"): {allow: matrixReaders, call: func(ctx context.Context) error {
			_, err := ca.GetLayer2(ctx, &memoryv1.GetLayer2Request{AgentId: "alpha", Include: []string{"decisions", "changelog", "timeline", "runs"}, RunIds: []string{"run_a1"}})
			return err
		}},
		name(cas, "AssembleContext"): {allow: matrixReaders, call: func(ctx context.Context) error {
			_, err := ca.AssembleContext(ctx, &memoryv1.AssembleContextRequest{AgentId: "alpha", QueryHint: alphaWord})
			return err
		}},
		name(cas, "DiffMemory"): {allow: matrixReaders, call: func(ctx context.Context) error {
			_, err := ca.DiffMemory(ctx, &memoryv1.DiffMemoryRequest{AgentId: "alpha"})
			return err
		}},
		name(cas, "ListHistory"): {allow: matrixReaders, call: func(ctx context.Context) error {
			_, err := ca.ListHistory(ctx, &memoryv1.ListHistoryRequest{AgentId: "alpha"})
			return err
		}},
		name(cas, "GetAgentStatus"): {allow: matrixReaders, call: func(ctx context.Context) error {
			_, err := ca.GetAgentStatus(ctx, &memoryv1.GetAgentStatusRequest{AgentId: "alpha"})
			return err
		}},
		// Every token may list; each sees only its agents
		// (services/contextassembly TestListAgents).
		name(cas, "ListAgents"): {allow: matrixEveryone, call: func(ctx context.Context) error {
			_, err := ca.ListAgents(ctx, &memoryv1.ListAgentsRequest{})
			return err
		}},
		name(cas, "GetStaleFacts"): {allow: matrixReaders, call: func(ctx context.Context) error {
			_, err := ca.GetStaleFacts(ctx, &memoryv1.GetStaleFactsRequest{AgentId: "alpha", IncludeArchived: true})
			return err
		}},

		// search-index
		name(sis, "Search"): {allow: matrixReaders, call: func(ctx context.Context) error {
			_, err := si.Search(ctx, &memoryv1.SearchRequest{Query: alphaWord, AgentId: "alpha"})
			return err
		}},
		name(sis, "Reindex"): {allow: matrixAdminOnly, call: func(ctx context.Context) error {
			_, err := si.Reindex(ctx, &memoryv1.ReindexRequest{AgentId: "alpha"})
			return err
		}},
		// Index state only (commits, counts): no agent's content.
		name(sis, "GetIndexStatus"): {allow: matrixEveryone, call: func(ctx context.Context) error {
			_, err := si.GetIndexStatus(ctx, &memoryv1.GetIndexStatusRequest{})
			return err
		}},

		// entity-graph: entities only alpha's memory knows.
		name(egs, "GetEntity"): {allow: matrixReaders, call: func(ctx context.Context) error {
			_, err := eg.GetEntity(ctx, &memoryv1.GetEntityRequest{EntityId: "alpha-engine"})
			return err
		}},
		name(egs, "ListEntities"): {allow: matrixReaders, call: func(ctx context.Context) error {
			_, err := eg.ListEntities(ctx, &memoryv1.ListEntitiesRequest{AgentId: "alpha"})
			return err
		}},
		name(egs, "GetNeighbors"): {allow: matrixReaders, call: func(ctx context.Context) error {
			_, err := eg.GetNeighbors(ctx, &memoryv1.GetNeighborsRequest{EntityId: "alpha-engine", Depth: 1})
			return err
		}},
		name(egs, "GetEntityHistory"): {allow: matrixReaders, call: func(ctx context.Context) error {
			_, err := eg.GetEntityHistory(ctx, &memoryv1.GetEntityHistoryRequest{EntityId: "alpha-engine"})
			return err
		}},
		name(egs, "ExplainDecision"): {allow: matrixReaders, call: func(ctx context.Context) error {
			_, err := eg.ExplainDecision(ctx, &memoryv1.ExplainDecisionRequest{Query: "Alpha Engine Rollout"})
			return err
		}},
		// The write plane's semantic guard: it names other agents' files.
		name(egs, "CheckProposal"): {allow: []string{roleAdmin, roleService}, call: func(ctx context.Context) error {
			_, err := eg.CheckProposal(ctx, &memoryv1.CheckProposalRequest{AgentId: "alpha", EntityRefs: []string{"shared-vault"},
				Updates: []*memoryv1.FileUpdate{{File: "facts.md", Operation: memoryv1.Operation_OPERATION_REMOVE, Content: "- [[Shared Vault]] is gone"}}})
			return err
		}},

		// proposal-apply
		name(pas, "Propose"): {allow: matrixProposers, call: func(ctx context.Context) error {
			_, err := pa.Propose(ctx, &memoryv1.ProposeRequest{AgentId: "alpha", RunId: fmt.Sprintf("run_m%d", next()), Updates: []*memoryv1.FileUpdate{matrixFacts("Matrix", "- proposed by the matrix")}})
			return err
		}},
		name(pas, "ProcessSession"): {allow: matrixProposers, call: func(ctx context.Context) error {
			_, err := pa.ProcessSession(ctx, &memoryv1.ProcessSessionRequest{Proposal: &memoryv1.ProposeRequest{AgentId: "alpha", RunId: fmt.Sprintf("run_s%d", next()), Updates: []*memoryv1.FileUpdate{matrixFacts("Matrix", "- staged by the matrix")}}})
			return err
		}},
		name(pas, "CommitSession"): {allow: matrixProposers, also: []codes.Code{codes.FailedPrecondition}, call: func(ctx context.Context) error {
			_, err := pa.CommitSession(ctx, &memoryv1.CommitSessionRequest{AgentId: "alpha", ProposalId: e.staged})
			return err
		}},
		name(pas, "OnboardAgent"): {allow: matrixProposers, also: []codes.Code{codes.AlreadyExists}, call: func(ctx context.Context) error {
			_, err := pa.OnboardAgent(ctx, &memoryv1.OnboardAgentRequest{AgentId: "alpha"})
			return err
		}},
		// A proposal that waits for review: the fact stays findable for the next caller.
		name(pas, "SetFactTTL"): {allow: matrixProposers, call: func(ctx context.Context) error {
			_, err := pa.SetFactTTL(ctx, &memoryv1.SetFactTTLRequest{AgentId: "alpha", Fact: "[[Quartz Gateway]] fronts the " + alphaWord + " cluster",
				Ttl: durationpb.New(time.Hour)})
			return err
		}},
		// The same episode each time: later callers get the first one's proposal back.
		name(pas, "IngestEpisode"): {allow: matrixProposers, call: func(ctx context.Context) error {
			_, err := pa.IngestEpisode(ctx, &memoryv1.IngestEpisodeRequest{AgentId: "alpha", Episode: &memoryv1.Episode{
				EpisodeId: "ep-matrix", Summary: "ingested by the matrix", UsedSkills: []string{"authz"}}})
			return err
		}},
		name(pas, "GetProposal"): {allow: matrixProposalReaders, call: func(ctx context.Context) error {
			_, err := pa.GetProposal(ctx, &memoryv1.GetProposalRequest{ProposalId: e.pendingGet})
			return err
		}},
		name(pas, "PreviewProposal"): {allow: matrixProposalReaders, call: func(ctx context.Context) error {
			_, err := pa.PreviewProposal(ctx, &memoryv1.PreviewProposalRequest{ProposalId: e.pendingGet})
			return err
		}},
		name(pas, "ListProposals"): {allow: matrixProposalReaders, call: func(ctx context.Context) error {
			_, err := pa.ListProposals(ctx, &memoryv1.ListProposalsRequest{AgentId: "alpha"})
			return err
		}},
		name(pas, "ApproveProposal"): {allow: matrixReviewers, also: []codes.Code{codes.FailedPrecondition}, call: func(ctx context.Context) error {
			_, err := pa.ApproveProposal(ctx, &memoryv1.ApproveProposalRequest{ProposalId: e.pendingApprove})
			return err
		}},
		name(pas, "RejectProposal"): {allow: matrixReviewers, also: []codes.Code{codes.FailedPrecondition}, call: func(ctx context.Context) error {
			_, err := pa.RejectProposal(ctx, &memoryv1.RejectProposalRequest{ProposalId: e.pendingReject, Reason: "not needed"})
			return err
		}},
		// Only failed proposals can be retried: pending answers FailedPrecondition.
		name(pas, "RetryProposal"): {allow: matrixReviewers, also: []codes.Code{codes.FailedPrecondition}, call: func(ctx context.Context) error {
			_, err := pa.RetryProposal(ctx, &memoryv1.RetryProposalRequest{ProposalId: e.pendingRetry})
			return err
		}},
		name(pas, "GetAgentPolicy"): {allow: matrixProposalReaders, call: func(ctx context.Context) error {
			_, err := pa.GetAgentPolicy(ctx, &memoryv1.GetAgentPolicyRequest{AgentId: "alpha"})
			return err
		}},
		name(pas, "CreateSnapshot"): {allow: matrixAdminOnly, also: []codes.Code{codes.AlreadyExists}, call: func(ctx context.Context) error {
			_, err := pa.CreateSnapshot(ctx, &memoryv1.CreateSnapshotRequest{AgentId: "alpha", Label: "matrix"})
			return err
		}},
		name(pas, "ListSnapshots"): {allow: matrixAdminOnly, call: func(ctx context.Context) error {
			_, err := pa.ListSnapshots(ctx, &memoryv1.ListSnapshotsRequest{AgentId: "alpha"})
			return err
		}},
		// The snapshot may be missing yet, or equal alpha's memory already.
		name(pas, "RestoreSnapshot"): {allow: matrixAdminOnly, also: []codes.Code{codes.NotFound, codes.FailedPrecondition}, call: func(ctx context.Context) error {
			_, err := pa.RestoreSnapshot(ctx, &memoryv1.RestoreSnapshotRequest{AgentId: "alpha", SnapshotId: "snapshot_matrix"})
			return err
		}},
		// Unavailable comes only past the role check (writing the bundle
		// failed; seen rarely while other commits land).
		name(pas, "CreateBackup"): {allow: matrixAdminOnly, also: []codes.Code{codes.Unavailable}, call: func(ctx context.Context) error {
			_, err := pa.CreateBackup(ctx, &memoryv1.CreateBackupRequest{})
			return err
		}},
		name(pas, "RotateRuns"): {allow: matrixAdminOnly, call: func(ctx context.Context) error {
			_, err := pa.RotateRuns(ctx, &memoryv1.RotateRunsRequest{AgentId: "alpha"})
			return err
		}},
		// No --git-remote-url here: an admin gets FailedPrecondition.
		name(pas, "SyncRemote"): {allow: matrixAdminOnly, also: []codes.Code{codes.FailedPrecondition}, call: func(ctx context.Context) error {
			_, err := pa.SyncRemote(ctx, &memoryv1.SyncRemoteRequest{})
			return err
		}},
		// Read-plane bookkeeping, sent with the service's own token.
		name(pas, "ReportFactUsage"): {allow: []string{roleAdmin, roleService}, call: func(ctx context.Context) error {
			_, err := pa.ReportFactUsage(ctx, &memoryv1.ReportFactUsageRequest{AgentId: "alpha",
				Usages: []*memoryv1.FactUsage{{FactHash: strings.Repeat("ab", 32), UsedAt: timestamppb.Now()}}})
			return err
		}},
		name(pas, "WatchCommits"): {allow: matrixReaders, also: []codes.Code{codes.DeadlineExceeded}, call: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			return firstMessage(pa.WatchCommits(ctx, &memoryv1.WatchCommitsRequest{AgentId: "alpha", FromSha: e.firstCommit}))
		}},
	}
}

// allMethods lists every RPC of the four services from their descriptors.
func allMethods() []string {
	var out []string
	for _, d := range []grpc.ServiceDesc{memoryv1.ContextAssemblyService_ServiceDesc, memoryv1.SearchIndexService_ServiceDesc,
		memoryv1.EntityGraphService_ServiceDesc, memoryv1.ProposalApplyService_ServiceDesc} {
		for _, m := range d.Methods {
			out = append(out, "/"+d.ServiceName+"/"+m.MethodName)
		}
		for _, s := range d.Streams {
			out = append(out, "/"+d.ServiceName+"/"+s.StreamName)
		}
	}
	return out
}

func TestAuthzMatrix(t *testing.T) {
	e := newMatrixEnv(t)
	rows := e.rows()

	// Every RPC has a row (a new RPC must say who may call it) and every
	// row is a real RPC.
	methods := allMethods()
	var missing, stale []string
	for _, m := range methods {
		if _, ok := rows[m]; !ok {
			missing = append(missing, m)
		}
	}
	for m := range rows {
		if !slices.Contains(methods, m) {
			stale = append(stale, m)
		}
	}
	require.Empty(t, missing, "RPCs without a row in the authorization matrix: add one saying who may call them")
	require.Empty(t, stale, "matrix rows for RPCs that do not exist")

	summary := map[string]map[string]string{}
	for _, m := range methods {
		row := rows[m]
		summary[m] = map[string]string{}
		t.Run(strings.TrimPrefix(m, "/gardenbloom.memory.v1."), func(t *testing.T) {
			dirty := true // an earlier row's write may still be applying
			for _, role := range matrixRoles {
				allowed := slices.Contains(row.allow, role)
				var before string
				if !allowed {
					if before = writeState(t, e.d); dirty {
						before, dirty = settledState(t, e.d), false
					}
				} else {
					dirty = true
				}
				err := row.call(e.as(t, role))
				if !allowed {
					require.Equal(t, before, writeState(t, e.d), "%s as %s: a denied call wrote something", m, role)
				}
				code := status.Code(err)
				summary[m][role] = code.String()
				msg := fmt.Sprintf("%s as %s: %v", m, role, err)
				if allowed {
					require.True(t, code == codes.OK || slices.Contains(row.also, code), "%s: want allowed", msg)
					continue
				}
				switch role {
				case roleNone:
					require.Equal(t, codes.Unauthenticated, code, msg)
				case roleAgentOther:
					require.Contains(t, []codes.Code{codes.PermissionDenied, codes.NotFound}, code, msg)
					require.NotContains(t, status.Convert(err).Message(), alphaWord, "a denial never shows the other agent's content")
				default:
					require.Equal(t, codes.PermissionDenied, code, msg)
				}
			}
		})
	}
	if testing.Verbose() {
		var b strings.Builder
		fmt.Fprintf(&b, "%-52s", "RPC")
		for _, r := range matrixRoles {
			fmt.Fprintf(&b, " %-17s", r)
		}
		b.WriteString("\n")
		sort.Strings(methods)
		for _, m := range methods {
			fmt.Fprintf(&b, "%-52s", strings.TrimPrefix(m, "/gardenbloom.memory.v1."))
			for _, r := range matrixRoles {
				fmt.Fprintf(&b, " %-17s", summary[m][r])
			}
			b.WriteString("\n")
		}
		t.Log("authorization matrix:\n" + b.String())
	}

	t.Run("no leak", func(t *testing.T) { testAuthzNoLeak(t, e) })
}

// testAuthzNoLeak: an agent token never gets another agent's files or
// content, however it asks.
func testAuthzNoLeak(t *testing.T, e *matrixEnv) {
	alpha := func() context.Context { return e.as(t, roleAgentOwn) }
	beta := func() context.Context { return e.as(t, roleAgentOther) }
	// A token with the reviewer role besides the agent role: the reviewer
	// role must widen nothing on read calls matrixReviewers may not make.
	alphaReviewer := func() context.Context {
		return e.ctx(t, "matrix-alpha-reviewer", []auth.Role{auth.RoleAgent, auth.RoleReviewer}, "alpha")
	}
	noBeta := func(t *testing.T, what string, v any) {
		t.Helper()
		s := fmt.Sprint(v)
		require.NotContains(t, s, betaWord, what)
		require.NotContains(t, s, "memory/beta/", what)
		require.NotContains(t, s, "tardigrade", what)
	}

	t.Run("search", func(t *testing.T) {
		res, err := e.si.Search(e.svc(t), &memoryv1.SearchRequest{Query: betaWord})
		require.NoError(t, err)
		require.NotEmpty(t, res.GetResults(), "the service finds beta's word")
		for name, ctx := range map[string]func() context.Context{"agent": alpha, "agent+reviewer": alphaReviewer} {
			for _, layer := range []int32{0, 2} {
				res, err := e.si.Search(ctx(), &memoryv1.SearchRequest{Query: betaWord, Layer: layer})
				require.NoError(t, err, name)
				require.Empty(t, res.GetResults(), "%s: no hit from beta's memory (layer %d)", name, layer)
			}
			res, err := e.si.Search(ctx(), &memoryv1.SearchRequest{Query: betaWord + " " + alphaWord, PathPrefix: "memory/beta/"})
			require.NoError(t, err, name)
			require.Empty(t, res.GetResults(), name)
			_, err = e.si.Search(ctx(), &memoryv1.SearchRequest{Query: betaWord, AgentId: "beta"})
			require.Equal(t, codes.PermissionDenied, status.Code(err), name)
		}
		res, err = e.si.Search(alpha(), &memoryv1.SearchRequest{Query: alphaWord})
		require.NoError(t, err)
		require.NotEmpty(t, res.GetResults(), "alpha finds its own word")
		for _, r := range res.GetResults() {
			require.Equal(t, "alpha", r.GetAgentId())
		}
		_, err = e.si.Search(e.ctx(t, "no-agents", []auth.Role{auth.RoleAgent}), &memoryv1.SearchRequest{Query: alphaWord})
		require.Equal(t, codes.PermissionDenied, status.Code(err), "an agent token naming no agent reaches none")
		// A reviewer without an agents list reviews every agent, but on a
		// read call only the agent role counts, and it names no agent.
		agentReviewer := func() context.Context {
			return e.ctx(t, "agent-reviewer", []auth.Role{auth.RoleAgent, auth.RoleReviewer})
		}
		_, err = e.si.Search(agentReviewer(), &memoryv1.SearchRequest{Query: betaWord})
		require.Equal(t, codes.PermissionDenied, status.Code(err))
		list, err := e.eg.ListEntities(agentReviewer(), &memoryv1.ListEntitiesRequest{PageSize: 500})
		require.NoError(t, err)
		require.Empty(t, list.GetEntities())
	})

	t.Run("entities", func(t *testing.T) {
		_, err := e.eg.GetEntity(e.svc(t), &memoryv1.GetEntityRequest{EntityId: "tardigrade-lab"})
		require.NoError(t, err)
		for name, ctx := range map[string]func() context.Context{"agent": alpha, "agent+reviewer": alphaReviewer} {
			_, err = e.eg.GetEntity(ctx(), &memoryv1.GetEntityRequest{EntityId: "tardigrade-lab"})
			require.Equal(t, codes.NotFound, status.Code(err), name)
			_, err = e.eg.GetNeighbors(ctx(), &memoryv1.GetNeighborsRequest{EntityId: "tardigrade-lab", Depth: 2})
			require.Equal(t, codes.NotFound, status.Code(err), "%s: neighbours of a beta-only entity read as unknown", name)
			_, err = e.eg.GetEntityHistory(ctx(), &memoryv1.GetEntityHistoryRequest{EntityId: "tardigrade-lab"})
			require.Equal(t, codes.NotFound, status.Code(err), "%s: history of a beta-only entity reads as unknown", name)
			_, err = e.eg.ExplainDecision(ctx(), &memoryv1.ExplainDecisionRequest{Query: "Tardigrade Lab Funding"})
			require.Equal(t, codes.NotFound, status.Code(err), name)
			_, err = e.eg.ListEntities(ctx(), &memoryv1.ListEntitiesRequest{AgentId: "beta"})
			require.Equal(t, codes.PermissionDenied, status.Code(err), name)

			list, err := e.eg.ListEntities(ctx(), &memoryv1.ListEntitiesRequest{PageSize: 500})
			require.NoError(t, err, name)
			require.NotEmpty(t, list.GetEntities())
			noBeta(t, name+": ListEntities", list.GetEntities())

			shared, err := e.eg.GetEntity(ctx(), &memoryv1.GetEntityRequest{EntityId: "shared-vault"})
			require.NoError(t, err, name)
			require.Equal(t, []string{"memory/alpha/facts.md"}, shared.GetRefs(), name)
			noBeta(t, name+": GetEntity", shared)

			hist, err := e.eg.GetEntityHistory(ctx(), &memoryv1.GetEntityHistoryRequest{EntityId: "shared-vault"})
			require.NoError(t, err, name)
			require.NotEmpty(t, hist.GetChanges())
			noBeta(t, name+": GetEntityHistory", hist)

			// Quartz Gateway is alpha's entity too, but only beta's memory
			// links it to Shared Vault: alpha must not learn of that link.
			nb, err := e.eg.GetNeighbors(ctx(), &memoryv1.GetNeighborsRequest{EntityId: "shared-vault", Depth: 1})
			require.NoError(t, err, name)
			var ids []string
			for _, x := range nb.GetEntities() {
				ids = append(ids, x.GetEntityId())
			}
			require.Contains(t, ids, "alpha-engine", name)
			require.NotContains(t, ids, "quartz-gateway", "%s: a link only beta's memory makes", name)
			noBeta(t, name+": GetNeighbors", nb)

			why, err := e.eg.ExplainDecision(ctx(), &memoryv1.ExplainDecisionRequest{Query: "Alpha Engine Rollout"})
			require.NoError(t, err, name)
			noBeta(t, name+": ExplainDecision", why)
		}
		svcNb, err := e.eg.GetNeighbors(e.svc(t), &memoryv1.GetNeighborsRequest{EntityId: "shared-vault", Depth: 1})
		require.NoError(t, err)
		require.True(t, slices.ContainsFunc(svcNb.GetEntities(), func(x *memoryv1.Entity) bool { return x.GetEntityId() == "tardigrade-lab" }),
			"the service sees every agent's links")

		// Both agents decided "Shared Vault Adoption" (one node when on the
		// same day): each sees its own entry only.
		for _, c := range []struct {
			ctx        func() context.Context
			own, other string
		}{{alpha, "alpha-side", "beta-side"}, {beta, "beta-side", "alpha-side"}} {
			why, err := e.eg.ExplainDecision(c.ctx(), &memoryv1.ExplainDecisionRequest{Query: "Shared Vault Adoption"})
			require.NoError(t, err)
			require.NotEmpty(t, why.GetChain())
			require.Contains(t, why.GetChain()[0].GetRationale(), c.own)
			require.NotContains(t, fmt.Sprint(why), c.other)
		}
	})

	t.Run("memory", func(t *testing.T) {
		for _, call := range []func(context.Context) error{
			func(ctx context.Context) error {
				_, err := e.ca.DiffMemory(ctx, &memoryv1.DiffMemoryRequest{AgentId: "beta"})
				return err
			},
			func(ctx context.Context) error {
				_, err := e.ca.ListHistory(ctx, &memoryv1.ListHistoryRequest{AgentId: "beta"})
				return err
			},
			func(ctx context.Context) error {
				_, err := e.ca.ReadMemory(ctx, &memoryv1.ReadMemoryRequest{AgentId: "beta", Mode: memoryv1.ReadMode_READ_MODE_DEEP})
				return err
			},
			func(ctx context.Context) error {
				_, err := e.ca.AssembleContext(ctx, &memoryv1.AssembleContextRequest{AgentId: "beta", QueryHint: betaWord})
				return err
			},
		} {
			for _, ctx := range []func() context.Context{alpha, alphaReviewer} {
				err := call(ctx())
				require.Equal(t, codes.PermissionDenied, status.Code(err))
				noBeta(t, "error message", status.Convert(err).Message())
			}
		}
	})

	t.Run("proposals", func(t *testing.T) {
		list, err := e.pa.ListProposals(e.svc(t), &memoryv1.ListProposalsRequest{AgentId: "beta"})
		require.NoError(t, err)
		require.NotEmpty(t, list.GetProposals())
		betaProposal := list.GetProposals()[0].GetProposalId()
		_, err = e.pa.GetProposal(alpha(), &memoryv1.GetProposalRequest{ProposalId: betaProposal})
		require.Equal(t, codes.NotFound, status.Code(err), "another agent's proposal id reveals nothing")
		mine, err := e.pa.ListProposals(alpha(), &memoryv1.ListProposalsRequest{PageSize: 500})
		require.NoError(t, err)
		require.NotEmpty(t, mine.GetProposals())
		for _, p := range mine.GetProposals() {
			require.Equal(t, "alpha", p.GetAgentId())
		}
		noBeta(t, "alpha's proposals", mine)

		// A reviewer whose token lists agents reviews only those.
		betaRev := func() context.Context { return e.ctx(t, "beta-reviewer", []auth.Role{auth.RoleReviewer}, "beta") }
		_, err = e.pa.GetProposal(betaRev(), &memoryv1.GetProposalRequest{ProposalId: e.pendingGet})
		require.Equal(t, codes.NotFound, status.Code(err))
		_, err = e.pa.RejectProposal(betaRev(), &memoryv1.RejectProposalRequest{ProposalId: e.pendingGet, Reason: "no"})
		require.Equal(t, codes.NotFound, status.Code(err))
		_, err = e.pa.ListProposals(betaRev(), &memoryv1.ListProposalsRequest{AgentId: "alpha"})
		require.Equal(t, codes.PermissionDenied, status.Code(err))
		theirs, err := e.pa.ListProposals(betaRev(), &memoryv1.ListProposalsRequest{PageSize: 500})
		require.NoError(t, err)
		require.NotEmpty(t, theirs.GetProposals())
		for _, p := range theirs.GetProposals() {
			require.Equal(t, "beta", p.GetAgentId())
		}
		_, err = e.pa.GetProposal(betaRev(), &memoryv1.GetProposalRequest{ProposalId: betaProposal})
		require.NoError(t, err)

		// A policy change is an admin's: a reviewer cannot approve it.
		pol := e.propose(t, "gamma", "run_p1", &memoryv1.FileUpdate{File: "policy.json", Operation: memoryv1.Operation_OPERATION_REPLACE,
			Content: `{"autoApprove": true, "reviewers": ["matrix-reviewer"]}`})
		_, err = e.pa.ApproveProposal(e.as(t, roleReviewer), &memoryv1.ApproveProposalRequest{ProposalId: pol})
		require.Equal(t, codes.PermissionDenied, status.Code(err))
		_, err = e.pa.ApproveProposal(e.as(t, roleAdmin), &memoryv1.ApproveProposalRequest{ProposalId: pol})
		require.NoError(t, err)
	})

	t.Run("rest edge", func(t *testing.T) {
		tok, err := e.signer.Mint("matrix-rest-alpha", []auth.Role{auth.RoleAgent}, []string{"alpha"}, time.Hour)
		require.NoError(t, err)
		code, _, _ := call(t, e.d, "GET", "/memory/beta/read?mode=wide", "", tok)
		require.Equal(t, 403, code)
		code, _, _ = call(t, e.d, "GET", "/memory/beta/read?mode=wide", "", "")
		require.Equal(t, 401, code)
		code, _, body := call(t, e.d, "GET", "/memory/search?q="+betaWord, "", tok)
		require.Equal(t, 200, code, body)
		noBeta(t, "REST search", body)
		code, _, body = call(t, e.d, "GET", "/entities/tardigrade-lab", "", tok)
		require.Equal(t, 404, code, body)

		// The dry run of a proposal's commit through the real gateway: what
		// alpha's pending proposal adds; beta's token learns nothing of it.
		code, _, body = call(t, e.d, "GET", "/proposals/"+e.pendingGet+":preview", "", tok)
		require.Equal(t, 200, code, body)
		preview := decode(t, body)
		require.Equal(t, "pending", preview["status"], body)
		require.Contains(t, body, `"file":"facts.md"`)
		require.Contains(t, body, `\n+- pending fact for get\n`)
		require.NotEmpty(t, preview["baseCommit"])
		betaTok, err := e.signer.Mint("matrix-rest-beta", []auth.Role{auth.RoleAgent}, []string{"beta"}, time.Hour)
		require.NoError(t, err)
		code, restErr, body := call(t, e.d, "GET", "/proposals/"+e.pendingGet+":preview", "", betaTok)
		require.Equal(t, 404, code, body)
		require.NotEmpty(t, restErr.Details, body)
		require.Equal(t, "PROPOSAL_NOT_FOUND", restErr.Details[0].Reason, body)
		require.NotContains(t, body, "pending fact for get")
	})

	// Last, as it changes both agents: a commit made with plain git that
	// touches alpha and beta shows in alpha's history with alpha's files only.
	t.Run("history of a commit touching both", func(t *testing.T) {
		wt := filepath.Join(t.TempDir(), "wt")
		try := func(dir string, args ...string) (string, error) {
			cmd := exec.Command("git", args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Person", "GIT_AUTHOR_EMAIL=person@example.org",
				"GIT_COMMITTER_NAME=Person", "GIT_COMMITTER_EMAIL=person@example.org")
			out, err := cmd.CombinedOutput()
			return strings.TrimSpace(string(out)), err
		}
		git := func(dir string, args ...string) string {
			out, err := try(dir, args...)
			require.NoError(t, err, "git %v: %s", args, out)
			return out
		}
		git(".", "clone", "-q", "--branch", "main", filepath.Join(e.d.dataDir, "memory.git"), wt)
		for _, agent := range []string{"alpha", "beta"} {
			f, err := os.OpenFile(filepath.Join(wt, "memory", agent, "open_loops.md"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			require.NoError(t, err)
			_, err = f.WriteString("\n<!-- touched by hand -->\n")
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}
		git(wt, "add", "-A")
		git(wt, "commit", "-q", "-m", "tidy two agents by hand")
		// Proposals approved above may still be landing: rebase onto them.
		for i := 0; ; i++ {
			out, err := try(wt, "push", "-q", "origin", "main")
			if err == nil {
				break
			}
			require.Less(t, i, 10, "git push: %s", out)
			git(wt, "pull", "-q", "--rebase", "origin", "main")
		}
		sha := git(wt, "rev-parse", "HEAD")

		find := func(ctx context.Context) *memoryv1.CommitInfo {
			h, err := e.ca.ListHistory(ctx, &memoryv1.ListHistoryRequest{AgentId: "alpha"})
			require.NoError(t, err)
			for _, c := range h.GetCommits() {
				if c.GetSha() == sha {
					return c
				}
			}
			t.Fatalf("commit %s not in alpha's history", sha)
			return nil
		}
		require.Contains(t, find(e.svc(t)).GetFiles(), "memory/beta/open_loops.md", "the service sees the whole commit")
		got := find(alpha())
		require.Equal(t, []string{"memory/alpha/open_loops.md"}, got.GetFiles())
	})
}
