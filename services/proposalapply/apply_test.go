package proposalapply

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/proposalstore"
)

func TestProposeAppliesAsExactlyOneCommit(t *testing.T) {
	e := newEnv(t, autoApprove)
	before := e.commitCount()

	resp := e.propose(&memoryv1.ProposeRequest{
		AgentId: "garden-bloom-curator", RunId: "run_def456", ExpectedVersion: ver(0),
		Updates: []*memoryv1.FileUpdate{
			appendFact("Технічні знання", "- MinIO bucket mcpstorage підтримує versioning"),
			{File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_OPEN, Content: "Confirm the proposal lifecycle", LoopPriority: memoryv1.LoopPriority_LOOP_PRIORITY_LOW},
			{File: "snapshot.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "# Snapshot: garden-bloom-curator\n\n## Role\nCurator of the garden.\n"},
		},
		Reasoning: "Виявлено нові технічні факти в процесі аналізу Proposal #42",
		Priority:  memoryv1.Priority_PRIORITY_NORMAL,
	})
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED, resp.GetStatus())
	require.True(t, strings.HasPrefix(resp.GetProposalId(), "proposal_"))
	require.Equal(t, "garden-bloom-curator", resp.GetAgentId())
	require.Equal(t, "http://127.0.0.1:8080/ui/proposals/"+resp.GetProposalId(), resp.GetReviewUrl(), "the review console's page (issue #28)")
	require.NotNil(t, resp.GetCreatedAt())

	p := e.waitApplied(resp.GetProposalId())
	require.Equal(t, int32(1), p.GetAppliedVersion())
	require.True(t, p.GetAutoApproved())
	require.Equal(t, before+1, e.commitCount(), "one applied proposal = one commit")

	// The commit message is the spec's §6.2 format, to the letter.
	msg := e.git("log", "-1", "--format=%B", "main")
	require.Equal(t, "memory-update: garden-bloom-curator / run_def456 / "+p.GetProposalId()+"\n\n"+
		"Files: facts.md, open_loops.md, snapshot.md\n"+
		"Reason: Виявлено нові технічні факти в процесі аналізу Proposal #42\n"+
		"Auto-approved: true\n\n", msg)
	require.Equal(t, p.GetCommitSha(), strings.TrimSpace(e.git("rev-parse", "main")))

	// Files, meta.json, changelog and timeline all landed in that commit.
	files := strings.Fields(e.git("show", "--name-only", "--format=", "main"))
	require.ElementsMatch(t, []string{
		"memory/garden-bloom-curator/changelog.md", "memory/garden-bloom-curator/facts.md",
		"memory/garden-bloom-curator/meta.json", "memory/garden-bloom-curator/open_loops.md",
		"memory/garden-bloom-curator/snapshot.md", "memory/garden-bloom-curator/timeline/2026-02-17.md",
	}, files)
	require.Contains(t, e.file("garden-bloom-curator", "facts.md"), "## Технічні знання\n- MinIO bucket mcpstorage підтримує versioning\n")
	require.Contains(t, e.file("garden-bloom-curator", "open_loops.md"), "loop_001")
	require.Contains(t, e.file("garden-bloom-curator", "changelog.md"), "run_def456")
	require.Contains(t, e.file("garden-bloom-curator", "timeline/2026-02-17.md"), p.GetProposalId())
	m := e.meta("garden-bloom-curator")
	require.Equal(t, int32(1), m.Version)
	require.Equal(t, "run_def456", m.LastRunID)
	require.Equal(t, "cl100k_base", m.TokenEncoding)
	require.Equal(t, 1, m.OpenLoopsCount)
	require.Positive(t, m.FactsTokenCount)
	require.Len(t, m.Layer1SHA256, 64)
	require.Equal(t, m.SnapshotTokenCount+m.FactsTokenCount+m.OpenLoopsTokenCount, m.Layer1TokenCount)
	e.git("fsck", "--strict", "--full")

	// The next proposal sees version 1 and closes the loop.
	resp = e.propose(&memoryv1.ProposeRequest{AgentId: "garden-bloom-curator", RunId: "run_x2", ExpectedVersion: ver(1),
		Updates: []*memoryv1.FileUpdate{{File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_CLOSE, LoopId: "loop_001", Resolution: "Confirmed"}}})
	e.waitApplied(resp.GetProposalId())
	require.Contains(t, e.file("garden-bloom-curator", "open_loops.md"), "- [x] loop_001")
	require.Equal(t, int32(2), e.meta("garden-bloom-curator").Version)
	require.Equal(t, 0, e.meta("garden-bloom-curator").OpenLoopsCount)
}

func TestEveryOperation(t *testing.T) {
	e := newEnv(t, autoApprove)
	resp := e.propose(&memoryv1.ProposeRequest{AgentId: "ops", RunId: "run_1", Updates: []*memoryv1.FileUpdate{
		appendFact("Domain", "- fact one\n- fact two"),
		{File: "decisions.md", Operation: memoryv1.Operation_OPERATION_ADD_DECISION, Decision: &memoryv1.Decision{
			Title: "Use MinIO", Context: "need storage", Decision: "MinIO", Rationale: "S3 API", Consequences: "ops"}},
		{File: "runs/run_1.md", Operation: memoryv1.Operation_OPERATION_WRITE_RUN, Content: "# Run: run_1\n\n## Result\nok\n"},
		{File: "logic/current.pseudo.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "# Logic\n\n1. read\n2. think\n"},
		{File: "logic/current.drakon.json", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: `{"nodes":[]}`},
	}})
	e.waitApplied(resp.GetProposalId())
	require.Contains(t, e.file("ops", "decisions.md"), "Use MinIO")
	require.Contains(t, e.file("ops", "runs/run_1.md"), "# Run: run_1")
	require.Contains(t, e.file("ops", "logic/current.pseudo.md"), "2. think")
	require.Equal(t, 1, e.meta("ops").DecisionsCount)

	resp = e.propose(&memoryv1.ProposeRequest{AgentId: "ops", RunId: "run_2", Updates: []*memoryv1.FileUpdate{
		{File: "facts.md", Operation: memoryv1.Operation_OPERATION_REMOVE, Content: "- fact one"}}})
	e.waitApplied(resp.GetProposalId())
	require.NotContains(t, e.file("ops", "facts.md"), "fact one")
	require.Contains(t, e.file("ops", "facts.md"), "fact two")

	// An operation that cannot apply is refused at propose with the
	// reason, and nothing is stored or written.
	before := e.commitCount()
	_, err := e.client.Propose(e.service(), &memoryv1.ProposeRequest{AgentId: "ops", RunId: "run_3", Updates: []*memoryv1.FileUpdate{
		{File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_CLOSE, LoopId: "loop_404", Resolution: "x"}}})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Contains(t, err.Error(), "loop_404")
	require.Equal(t, "updates[0].loopId", apierr.Info(err).GetMetadata()["field"])
	require.Equal(t, before, e.commitCount())
}

func TestProposeRejectsBadInputAndWritesNothing(t *testing.T) {
	e := newEnv(t, autoApprove)
	long := strings.Repeat("token ", 2100)
	tests := []struct {
		name   string
		req    *memoryv1.ProposeRequest
		code   codes.Code
		reason string
	}{
		{"agent not a slug", &memoryv1.ProposeRequest{AgentId: "Bad_Agent", RunId: "run_1", Updates: []*memoryv1.FileUpdate{appendFact("a", "b")}}, codes.InvalidArgument, "INVALID_AGENT_ID"},
		{"agent traversal", &memoryv1.ProposeRequest{AgentId: "../etc", RunId: "run_1", Updates: []*memoryv1.FileUpdate{appendFact("a", "b")}}, codes.InvalidArgument, "INVALID_AGENT_ID"},
		{"bad run id", &memoryv1.ProposeRequest{AgentId: "a", RunId: "run 1", Updates: []*memoryv1.FileUpdate{appendFact("a", "b")}}, codes.InvalidArgument, "INVALID_ARGUMENT"},
		{"no updates", &memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1"}, codes.InvalidArgument, "INVALID_ARGUMENT"},
		{"file off the list", &memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{{File: "notes.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "x"}}}, codes.InvalidArgument, "INVALID_PATH"},
		{"path traversal", &memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{{File: "../b/facts.md", Operation: memoryv1.Operation_OPERATION_APPEND, Content: "x"}}}, codes.InvalidArgument, "INVALID_PATH"},
		{"absolute path", &memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{{File: "/etc/passwd", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "x"}}}, codes.InvalidArgument, "INVALID_PATH"},
		{"engine-owned file", &memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{{File: "meta.json", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "{}"}}}, codes.InvalidArgument, "INVALID_OPERATION"},
		{"wrong operation", &memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{{File: "facts.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "x"}}}, codes.InvalidArgument, "INVALID_OPERATION"},
		{"unspecified operation", &memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{{File: "facts.md", Content: "x"}}}, codes.InvalidArgument, "INVALID_OPERATION"},
		{"script", &memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{appendFact("a", "<script>alert(1)</script>")}}, codes.InvalidArgument, "INVALID_CONTENT"},
		{"event handler", &memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{appendFact("a", `<img src=x onerror="steal()">`)}}, codes.InvalidArgument, "INVALID_CONTENT"},
		{"NUL byte", &memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{appendFact("a", "x\x00y")}}, codes.InvalidArgument, "INVALID_CONTENT"},
		{"snapshot without a heading", &memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{{File: "snapshot.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "just text"}}}, codes.InvalidArgument, "INVALID_CONTENT"},
		{"broken heading", &memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{{File: "snapshot.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "##Broken"}}}, codes.InvalidArgument, "INVALID_CONTENT"},
		{"snapshot over 2K tokens", &memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{{File: "snapshot.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "# S\n" + long}}}, codes.InvalidArgument, "TOKEN_LIMIT_EXCEEDED"},
		{"run over 8K tokens", &memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{{File: "runs/run_1.md", Operation: memoryv1.Operation_OPERATION_WRITE_RUN, Content: strings.Repeat(long, 4)}}}, codes.InvalidArgument, "TOKEN_LIMIT_EXCEEDED"},
		{"empty content", &memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{appendFact("a", "  ")}}, codes.InvalidArgument, "INVALID_CONTENT"},
		{"close without loop id", &memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{{File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_CLOSE}}}, codes.InvalidArgument, "INVALID_ARGUMENT"},
		{"decision without title", &memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{{File: "decisions.md", Operation: memoryv1.Operation_OPERATION_ADD_DECISION, Decision: &memoryv1.Decision{}}}}, codes.InvalidArgument, "INVALID_ARGUMENT"},
		{"invalid drakon json", &memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{{File: "logic/current.drakon.json", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "{"}}}, codes.InvalidArgument, "INVALID_CONTENT"},
		{"policy with unknown field", &memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{{File: "policy.json", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: `{"autoAprove":true}`}}}, codes.InvalidArgument, "INVALID_CONTENT"},
		{"negative expected version", &memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", ExpectedVersion: ver(-1), Updates: []*memoryv1.FileUpdate{appendFact("a", "b")}}, codes.InvalidArgument, "INVALID_ARGUMENT"},
		{"multi-line section", &memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{appendFact("a\n## b", "c")}}, codes.InvalidArgument, "INVALID_CONTENT"},
	}
	before := e.commitCount()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.client.Propose(e.service(), tt.req)
			require.Equal(t, tt.code, status.Code(err), "%v", err)
			require.Equal(t, tt.reason, apierr.Info(err).GetReason(), "%v", err)
		})
	}
	require.Equal(t, 0, e.svc.store.Len(), "no proposal stored")
	require.Equal(t, before, e.commitCount(), "nothing committed")

	// The token-limit error carries the counts.
	overLimit := tests[slices.IndexFunc(tests, func(tt struct {
		name   string
		req    *memoryv1.ProposeRequest
		code   codes.Code
		reason string
	}) bool {
		return tt.name == "snapshot over 2K tokens"
	})].req
	_, err := e.client.Propose(e.service(), overLimit)
	info := apierr.Info(err)
	require.Equal(t, "snapshot.md", info.GetMetadata()["file"])
	require.Equal(t, "2000", info.GetMetadata()["limit"])
	require.NotEmpty(t, info.GetMetadata()["tokens"])
}

func TestHTMLIsStrippedBeforeStoring(t *testing.T) {
	e := newEnv(t, autoApprove)
	resp := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{appendFact("Domain", "- <b>bold</b> fact")}})
	require.Equal(t, "- bold fact", resp.GetProposal().GetUpdates()[0].GetContent())
	e.waitApplied(resp.GetProposalId())
	require.Contains(t, e.file("a", "facts.md"), "- bold fact")
}

func TestIdempotentRetryReturnsTheSameProposal(t *testing.T) {
	e := newEnv(t, autoApprove)
	req := &memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", IdempotencyKey: "k1", Updates: []*memoryv1.FileUpdate{appendFact("D", "- one")}}
	first := e.propose(req)
	second := e.propose(req)
	require.Equal(t, first.GetProposalId(), second.GetProposalId())
	e.waitApplied(first.GetProposalId())
	third := e.propose(req)
	require.Equal(t, first.GetProposalId(), third.GetProposalId())
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED, third.GetStatus())
	require.Equal(t, 1, e.svc.store.Len())
	require.Equal(t, int32(1), e.meta("a").Version)
}

func TestAgentTokenReachesOnlyItsOwnAgent(t *testing.T) {
	e := newEnv(t, autoApprove)
	req := &memoryv1.ProposeRequest{AgentId: "mine", RunId: "run_1", Updates: []*memoryv1.FileUpdate{appendFact("D", "- x")}}
	resp, err := e.client.Propose(e.agent("mine"), req)
	require.NoError(t, err)
	req.AgentId = "theirs"
	_, err = e.client.Propose(e.agent("mine"), req)
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	// Another agent's proposal reads as not found.
	_, err = e.client.GetProposal(e.agent("theirs"), &memoryv1.GetProposalRequest{ProposalId: resp.GetProposalId()})
	require.Equal(t, codes.NotFound, status.Code(err))
	_, err = e.client.GetProposal(e.agent("mine"), &memoryv1.GetProposalRequest{ProposalId: resp.GetProposalId()})
	require.NoError(t, err)
	// A reviewer cannot propose.
	_, err = e.client.Propose(e.reviewer(), req)
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	list, err := e.client.ListProposals(e.agent("theirs"), &memoryv1.ListProposalsRequest{})
	require.NoError(t, err)
	require.Empty(t, list.GetProposals())
}

func TestReviewFlow(t *testing.T) {
	e := newEnv(t) // no auto-approve: every proposal waits for a person
	resp := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{appendFact("D", "- x")}})
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, resp.GetStatus())
	require.Equal(t, memoryv1.StatusReason_STATUS_REASON_AWAITING_REVIEW, resp.GetProposal().GetReason())
	id := resp.GetProposalId()

	_, err := e.client.ApproveProposal(e.agent("a"), &memoryv1.ApproveProposalRequest{ProposalId: id})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "an agent cannot approve its own proposal")
	_, err = e.client.ApproveProposal(e.reviewer(), &memoryv1.ApproveProposalRequest{ProposalId: "proposal_nope"})
	require.Equal(t, codes.NotFound, status.Code(err))

	approved, err := e.client.ApproveProposal(e.reviewer(), &memoryv1.ApproveProposalRequest{ProposalId: id, Comment: "looks right"})
	require.NoError(t, err)
	require.Equal(t, "alice", approved.GetProposal().GetReviewedBy())
	p := e.waitApplied(id)
	require.Equal(t, "alice", p.GetReviewedBy())
	require.Equal(t, "looks right", p.GetReviewComment())
	require.False(t, p.GetAutoApproved())
	require.Contains(t, e.git("log", "-1", "--format=%B"), "Auto-approved: false")

	_, err = e.client.ApproveProposal(e.reviewer(), &memoryv1.ApproveProposalRequest{ProposalId: id})
	require.Equal(t, codes.FailedPrecondition, status.Code(err))
	require.Equal(t, "INVALID_TRANSITION", apierr.Info(err).GetReason())

	// Reject needs a reason and records it.
	resp = e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_2", Updates: []*memoryv1.FileUpdate{appendFact("D", "- y")}})
	_, err = e.client.RejectProposal(e.reviewer(), &memoryv1.RejectProposalRequest{ProposalId: resp.GetProposalId()})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	rej, err := e.client.RejectProposal(e.reviewer(), &memoryv1.RejectProposalRequest{ProposalId: resp.GetProposalId(), Reason: "not a fact"})
	require.NoError(t, err)
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_REJECTED, rej.GetProposal().GetStatus())
	require.Equal(t, memoryv1.StatusReason_STATUS_REASON_REVIEWER_REJECTED, rej.GetProposal().GetReason())
	require.Equal(t, "not a fact", rej.GetProposal().GetMessage())

	// Retry takes failed back to approved. A removal valid when proposed
	// fails once another proposal has removed the same fact first and a
	// reviewer insists on applying it on top.
	removeX := []*memoryv1.FileUpdate{{File: "facts.md", Operation: memoryv1.Operation_OPERATION_REMOVE, Content: "- x"}}
	resp = e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_3", Updates: removeX})
	_, err = e.client.RetryProposal(e.reviewer(), &memoryv1.RetryProposalRequest{ProposalId: resp.GetProposalId()})
	require.Equal(t, codes.FailedPrecondition, status.Code(err), "only failed proposals are retried")
	first := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_4", Updates: removeX})
	_, err = e.client.ApproveProposal(e.reviewer(), &memoryv1.ApproveProposalRequest{ProposalId: first.GetProposalId()})
	require.NoError(t, err)
	e.waitApplied(first.GetProposalId())
	_, err = e.client.ApproveProposal(e.reviewer(), &memoryv1.ApproveProposalRequest{ProposalId: resp.GetProposalId()})
	require.NoError(t, err)
	e.wait(resp.GetProposalId(), memoryv1.ProposalStatus_PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW)
	_, err = e.client.ApproveProposal(e.reviewer(), &memoryv1.ApproveProposalRequest{ProposalId: resp.GetProposalId()})
	require.NoError(t, err)
	p = e.wait(resp.GetProposalId(), memoryv1.ProposalStatus_PROPOSAL_STATUS_FAILED)
	require.Contains(t, p.GetMessage(), "not found")
	attempts := p.GetAttempts()
	retried, err := e.client.RetryProposal(e.reviewer(), &memoryv1.RetryProposalRequest{ProposalId: resp.GetProposalId()})
	require.NoError(t, err)
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED, retried.GetProposal().GetStatus())
	p = e.wait(resp.GetProposalId(), memoryv1.ProposalStatus_PROPOSAL_STATUS_FAILED)
	require.Equal(t, attempts+1, p.GetAttempts())

	// Listing by agent and status, newest first.
	list, err := e.client.ListProposals(e.reviewer(), &memoryv1.ListProposalsRequest{AgentId: "a", Status: memoryv1.ProposalStatus_PROPOSAL_STATUS_REJECTED})
	require.NoError(t, err)
	require.Len(t, list.GetProposals(), 1)
	all, err := e.client.ListProposals(e.reviewer(), &memoryv1.ListProposalsRequest{AgentId: "a", PageSize: 2})
	require.NoError(t, err)
	require.Len(t, all.GetProposals(), 2)
	require.NotEmpty(t, all.GetNextPageToken())
	rest, err := e.client.ListProposals(e.reviewer(), &memoryv1.ListProposalsRequest{AgentId: "a", PageSize: 2, PageToken: all.GetNextPageToken()})
	require.NoError(t, err)
	require.Len(t, rest.GetProposals(), 2, "four proposals: two on the first page, two on the second")
	require.Greater(t, all.GetProposals()[0].GetProposalId(), all.GetProposals()[1].GetProposalId())
}

func TestFlagsAndPriorityWaitForAPerson(t *testing.T) {
	e := newEnv(t, autoApprove)
	high := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Priority: memoryv1.Priority_PRIORITY_HIGH,
		Updates: []*memoryv1.FileUpdate{appendFact("D", "- x")}})
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, high.GetStatus())

	var lines []string
	for i := range 51 {
		lines = append(lines, "- fact "+string(rune('a'+i%26))+strings.Repeat("x", i))
	}
	big := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_2", Updates: []*memoryv1.FileUpdate{appendFact("D", strings.Join(lines, "\n"))}})
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, big.GetStatus())
	require.Equal(t, memoryv1.StatusReason_STATUS_REASON_FLAGGED, big.GetProposal().GetReason())
	require.Contains(t, big.GetProposal().GetFlags()[0], "51 lines")

	var many []*memoryv1.FileUpdate
	for _, f := range []string{"snapshot.md", "runs/run_a.md", "runs/run_b.md", "runs/run_c.md", "runs/run_d.md", "runs/run_e.md"} {
		op := memoryv1.Operation_OPERATION_WRITE_RUN
		if f == "snapshot.md" {
			op = memoryv1.Operation_OPERATION_REPLACE
		}
		many = append(many, &memoryv1.FileUpdate{File: f, Operation: op, Content: "# x\n"})
	}
	wide := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_3", Updates: many})
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, wide.GetStatus())
	require.Contains(t, wide.GetProposal().GetFlags()[0], "6 files")
}

// The duplicate-fact check runs here, on head, with or without an entity
// graph; the graph is asked only about entity refs and fact removals, and
// its findings flag the proposal too.
func TestSemanticGuard(t *testing.T) {
	e := newEnv(t, autoApprove)
	graph := &recordingGuard{findings: []*memoryv1.CheckFinding{{Kind: "unknown_entity_ref", Detail: `entity ref "unicorn" is not in the entity graph`}}}
	e.guard = graph
	e.restart(autoApprove)

	first := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{appendFact("D", "- Backups run nightly")}})
	e.waitApplied(first.GetProposalId())
	require.Empty(t, graph.asked(), "a plain append needs nothing from the graph")

	again := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_2", Updates: []*memoryv1.FileUpdate{appendFact("D", "- something new\n- backups   RUN nightly")}})
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, again.GetStatus())
	require.Equal(t, memoryv1.StatusReason_STATUS_REASON_FLAGGED, again.GetProposal().GetReason())
	require.Equal(t, []string{`semantic guard: duplicate_fact: "- backups   RUN nightly" repeats the existing fact "Backups run nightly"`}, again.GetProposal().GetFlags())
	require.Empty(t, graph.asked())

	removal := &memoryv1.FileUpdate{File: "facts.md", Operation: memoryv1.Operation_OPERATION_REMOVE, Content: "- Backups run nightly"}
	refs := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_3", EntityRefs: []string{"unicorn"},
		Updates: []*memoryv1.FileUpdate{appendFact("D", "- a third fact"), removal}})
	require.Equal(t, memoryv1.StatusReason_STATUS_REASON_FLAGGED, refs.GetProposal().GetReason())
	require.Equal(t, []string{`semantic guard: unknown_entity_ref: entity ref "unicorn" is not in the entity graph`}, refs.GetProposal().GetFlags())
	asked := graph.asked()
	require.Len(t, asked, 1)
	require.Equal(t, []string{"unicorn"}, asked[0].GetEntityRefs())
	require.Len(t, asked[0].GetUpdates(), 1, "only the removal goes to the graph")
	require.Equal(t, memoryv1.Operation_OPERATION_REMOVE, asked[0].GetUpdates()[0].GetOperation())

	// Without a graph the duplicate check still runs.
	e.guard = nil
	e.restart(autoApprove)
	alone := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_4", Updates: []*memoryv1.FileUpdate{appendFact("D", "- BACKUPS run nightly")}})
	require.Equal(t, memoryv1.StatusReason_STATUS_REASON_FLAGGED, alone.GetProposal().GetReason())
}

// recordingGuard stands in for entity-graph's CheckProposal: it records what
// the write plane asks and answers with fixed findings.
type recordingGuard struct {
	memoryv1.EntityGraphServiceClient
	mu       sync.Mutex
	requests []*memoryv1.CheckProposalRequest
	findings []*memoryv1.CheckFinding
}

func (g *recordingGuard) CheckProposal(_ context.Context, req *memoryv1.CheckProposalRequest, _ ...grpc.CallOption) (*memoryv1.CheckProposalResponse, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.requests = append(g.requests, req)
	return &memoryv1.CheckProposalResponse{Findings: g.findings}, nil
}

func (g *recordingGuard) asked() []*memoryv1.CheckProposalRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.requests)
}

func TestPolicyLivesInTheRepo(t *testing.T) {
	e := newEnv(t) // default: review everything
	pol, err := e.client.GetAgentPolicy(e.agent("a"), &memoryv1.GetAgentPolicyRequest{AgentId: "a"})
	require.NoError(t, err)
	require.False(t, pol.GetPolicy().GetAutoApprove())

	// A policy change is always flagged, even for an auto-approving agent.
	resp := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{
		{File: "policy.json", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: `{"autoApprove": true, "reviewers": ["alice"]}`}}})
	require.Equal(t, memoryv1.StatusReason_STATUS_REASON_FLAGGED, resp.GetProposal().GetReason())
	// A reviewer cannot let a policy change through (it could name itself); an admin can.
	_, err = e.client.ApproveProposal(e.reviewer(), &memoryv1.ApproveProposalRequest{ProposalId: resp.GetProposalId()})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	_, err = e.client.ApproveProposal(e.as("root", []auth.Role{auth.RoleAdmin}), &memoryv1.ApproveProposalRequest{ProposalId: resp.GetProposalId()})
	require.NoError(t, err)
	e.waitApplied(resp.GetProposalId())

	pol, err = e.client.GetAgentPolicy(e.agent("a"), &memoryv1.GetAgentPolicyRequest{AgentId: "a"})
	require.NoError(t, err)
	require.True(t, pol.GetPolicy().GetAutoApprove())
	require.Equal(t, []string{"alice"}, pol.GetPolicy().GetReviewers())

	auto := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_2", Updates: []*memoryv1.FileUpdate{appendFact("D", "- x")}})
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED, auto.GetStatus())
	e.waitApplied(auto.GetProposalId())

	// Only the policy's reviewers may review this agent (admins always may).
	high := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_3", Priority: memoryv1.Priority_PRIORITY_HIGH, Updates: []*memoryv1.FileUpdate{appendFact("D", "- y")}})
	_, err = e.client.ApproveProposal(e.as("bob", []auth.Role{auth.RoleReviewer}, "*"), &memoryv1.ApproveProposalRequest{ProposalId: high.GetProposalId()})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	_, err = e.client.ApproveProposal(e.as("root", []auth.Role{auth.RoleAdmin}), &memoryv1.ApproveProposalRequest{ProposalId: high.GetProposalId()})
	require.NoError(t, err)
	e.waitApplied(high.GetProposalId())
}

func TestVersionConflictOnPropose(t *testing.T) {
	e := newEnv(t, autoApprove)
	resp := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", ExpectedVersion: ver(41), Updates: []*memoryv1.FileUpdate{appendFact("D", "- x")}})
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_REJECTED, resp.GetStatus())
	p := resp.GetProposal()
	require.Equal(t, memoryv1.StatusReason_STATUS_REASON_VERSION_CONFLICT, p.GetReason())
	require.Equal(t, int32(41), p.GetExpectedVersion())
	require.Equal(t, int32(0), p.GetCurrentVersion())
	require.Equal(t, "retry_with_latest", p.GetResolution())
}

func TestRecoveryAppliesApprovedAndFindsCommitted(t *testing.T) {
	e := newEnv(t, autoApprove)
	ctx := context.Background()
	// Proposals approved by a process that died before applying them.
	resp := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{appendFact("D", "- x")}})
	e.waitApplied(resp.GetProposalId())
	e.stop()

	// Mark it applying again, as if the process died after committing but
	// before recording the outcome: recovery must find the commit, not
	// apply a second time.
	e.offline(func(store *proposalstore.Store) {
		_, err := store.Update(ctx, resp.GetProposalId(), func(r *proposalstore.Record) error {
			r.Proposal.Status = memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLYING
			r.Proposal.CommitSha = ""
			return nil
		})
		require.NoError(t, err)
	})
	commits := e.commitCount()
	e.start(autoApprove)
	p := e.waitApplied(resp.GetProposalId())
	require.Equal(t, strings.TrimSpace(e.git("rev-parse", "main")), p.GetCommitSha())
	require.Equal(t, commits, e.commitCount(), "recovered, not applied twice")
	require.Equal(t, int32(1), p.GetAppliedVersion())
}
