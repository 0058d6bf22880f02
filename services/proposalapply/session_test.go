package proposalapply

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

// process-session stages whatever the policy; commit-session releases it.
func TestProcessAndCommitSession(t *testing.T) {
	e := newEnv(t, autoApprove)
	req := &memoryv1.ProposeRequest{AgentId: "sess", RunId: "r1", Reasoning: "session",
		Updates: []*memoryv1.FileUpdate{appendFact("Notes", "- staged fact")}}
	resp, err := e.client.ProcessSession(e.agent("sess"), &memoryv1.ProcessSessionRequest{Proposal: req})
	staged := resp.GetProposal()
	require.NoError(t, err)
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, staged.GetStatus())
	require.Equal(t, memoryv1.StatusReason_STATUS_REASON_STAGED, staged.GetProposal().GetReason())
	commits := e.commitCount()

	_, err = e.client.CommitSession(e.agent("other"), &memoryv1.CommitSessionRequest{AgentId: "sess", ProposalId: staged.GetProposalId()})
	require.Contains(t, []codes.Code{codes.PermissionDenied, codes.NotFound}, status.Code(err), "another agent's session")
	_, err = e.client.CommitSession(e.agent("sess"), &memoryv1.CommitSessionRequest{AgentId: "sess", ProposalId: "proposal_nope"})
	require.Equal(t, codes.NotFound, status.Code(err))
	require.Equal(t, commits, e.commitCount(), "staged: nothing applied")

	commit, err := e.client.CommitSession(e.agent("sess"), &memoryv1.CommitSessionRequest{AgentId: "sess", ProposalId: staged.GetProposalId()})
	require.NoError(t, err)
	done := commit.GetProposal()
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED, done.GetStatus(), "the policy auto-approves")
	e.waitApplied(staged.GetProposalId())
	require.Contains(t, e.file("sess", memlayout.FactsFile), "- staged fact")

	_, err = e.client.CommitSession(e.agent("sess"), &memoryv1.CommitSessionRequest{AgentId: "sess", ProposalId: staged.GetProposalId()})
	require.Equal(t, codes.FailedPrecondition, status.Code(err), "only staged proposals can be committed")
}

// Without auto-approve, a committed session waits for a reviewer.
func TestCommitSessionFollowsThePolicy(t *testing.T) {
	e := newEnv(t)
	resp, err := e.client.ProcessSession(e.service(), &memoryv1.ProcessSessionRequest{Proposal: &memoryv1.ProposeRequest{AgentId: "rev", RunId: "r1",
		Updates: []*memoryv1.FileUpdate{appendFact("Notes", "- needs review")}}})
	staged := resp.GetProposal()
	require.NoError(t, err)
	commit, err := e.client.CommitSession(e.service(), &memoryv1.CommitSessionRequest{AgentId: "rev", ProposalId: staged.GetProposalId()})
	require.NoError(t, err)
	done := commit.GetProposal()
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, done.GetStatus())
	require.Equal(t, memoryv1.StatusReason_STATUS_REASON_AWAITING_REVIEW, done.GetProposal().GetReason())
}

func TestOnboardCreatesTheSkeletonOnce(t *testing.T) {
	e := newEnv(t, autoApprove)
	_, err := e.client.OnboardAgent(e.service(), &memoryv1.OnboardAgentRequest{AgentId: "new-agent", Snapshot: "<script>alert(1)</script>"})
	require.Equal(t, codes.InvalidArgument, status.Code(err), "the snapshot is validated like any proposal")
	resp, err := e.client.OnboardAgent(e.service(), &memoryv1.OnboardAgentRequest{AgentId: "new-agent"})
	require.NoError(t, err)
	e.waitApplied(resp.GetProposal().GetProposalId())
	require.Equal(t, "# Snapshot: new-agent\n\n## Role\n\n## Current focus\n", e.file("new-agent", memlayout.SnapshotFile))
	require.Equal(t, "# Facts: new-agent\n", e.file("new-agent", memlayout.FactsFile))
	require.Equal(t, "# Open Loops: new-agent\n", e.file("new-agent", memlayout.OpenLoopsFile))
	require.Equal(t, int32(1), e.meta("new-agent").Version)

	_, err = e.client.OnboardAgent(e.service(), &memoryv1.OnboardAgentRequest{AgentId: "new-agent"})
	require.Equal(t, codes.AlreadyExists, status.Code(err))
	_, err = e.client.OnboardAgent(e.agent("someone-else"), &memoryv1.OnboardAgentRequest{AgentId: "third"})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
}
