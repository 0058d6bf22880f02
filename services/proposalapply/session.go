package proposalapply

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/authz"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/proposalstore"
)

// The DiffMem adapter's write calls (spec memory-subsystem-architecture,
// "API Contract") on top of the proposal lifecycle: process-session stages
// a proposal, commit-session releases it to the policy, process-and-commit
// is Propose, onboard proposes an agent's skeleton.

// ProcessSession validates and stores a proposal that waits for CommitSession.
func (h *handler) ProcessSession(ctx context.Context, req *memoryv1.ProcessSessionRequest) (*memoryv1.ProcessSessionResponse, error) {
	resp, err := h.propose(ctx, req.GetProposal(), true)
	if err != nil {
		return nil, err
	}
	return &memoryv1.ProcessSessionResponse{Proposal: resp}, nil
}

// CommitSession releases a staged proposal to the agent's policy.
func (h *handler) CommitSession(ctx context.Context, req *memoryv1.CommitSessionRequest) (*memoryv1.CommitSessionResponse, error) {
	s := h.svc
	if !memlayout.ValidAgentID(req.GetAgentId()) {
		return nil, invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, "agentId", "agentId must be a slug")
	}
	rec, _, err := h.proposal(ctx, req.GetProposalId(), proposeRoles...)
	if err != nil {
		return nil, err
	}
	if rec.Proposal.GetAgentId() != req.GetAgentId() {
		return nil, proposalNotFound(req.GetProposalId())
	}
	_, meta, policy, err := s.headState(ctx, req.GetAgentId())
	if err != nil {
		return nil, h.internal(err, "reading the agent's memory")
	}
	updated, err := s.store.Update(ctx, rec.Proposal.GetProposalId(), func(r *proposalstore.Record) error {
		p := r.Proposal
		if p.GetStatus() != memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING || p.GetReason() != memoryv1.StatusReason_STATUS_REASON_STAGED {
			return apierr.New(codes.FailedPrecondition, memoryv1.ErrorReason_ERROR_REASON_INVALID_TRANSITION,
				fmt.Sprintf("proposal is %s, not staged", statusName(p.GetStatus())), map[string]string{"status": statusName(p.GetStatus())})
		}
		decide(p, meta, policy)
		p.UpdatedAt = timestamppb.New(s.now())
		return nil
	})
	if err != nil {
		if apierr.Info(err) != nil {
			return nil, err
		}
		return nil, h.internal(err, "updating the proposal")
	}
	p := updated.Proposal
	s.logger.Info("staged proposal committed", "proposal", p.GetProposalId(), "agent", p.GetAgentId(), "status", p.GetStatus().String())
	if p.GetStatus() == memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED {
		s.engine.enqueue(p.GetAgentId(), p.GetProposalId())
	}
	return &memoryv1.CommitSessionResponse{Proposal: proposeResponse(p)}, nil
}

// OnboardAgent proposes a new agent's skeleton: snapshot.md (given or a
// template), facts.md and open_loops.md with their headings.
func (h *handler) OnboardAgent(ctx context.Context, req *memoryv1.OnboardAgentRequest) (*memoryv1.OnboardAgentResponse, error) {
	s := h.svc
	agent := req.GetAgentId()
	snapshot := req.GetSnapshot()
	if strings.TrimSpace(snapshot) == "" {
		snapshot = "# Snapshot: " + agent + "\n\n## Role\n\n## Current focus\n"
	}
	reasoning := req.GetReasoning()
	if reasoning == "" {
		reasoning = "Onboard " + agent
	}
	runID := req.GetRunId()
	if runID == "" {
		runID = "onboard"
	}
	// The same validation as any proposal, snapshot limit included.
	propose := &memoryv1.ProposeRequest{AgentId: agent, RunId: runID, Reasoning: reasoning, IdempotencyKey: "onboard",
		Updates: []*memoryv1.FileUpdate{{File: memlayout.SnapshotFile, Operation: memoryv1.Operation_OPERATION_REPLACE, Content: snapshot}}}
	updates, err := validateProposal(propose, s.counter, s.cfg)
	if err != nil {
		return nil, err
	}
	claims, err := authz.RequireAgent(ctx, agent, proposeRoles...)
	if err != nil {
		return nil, err
	}
	head, meta, policy, err := s.headState(ctx, agent)
	if err != nil {
		return nil, h.internal(err, "reading the agent's memory")
	}
	existing, err := s.repo.ListFiles(ctx, head, strings.TrimSuffix(memlayout.AgentDir(agent), "/"))
	if err != nil {
		return nil, h.internal(err, "reading the agent's memory")
	}
	if len(existing) > 0 {
		return nil, apierr.New(codes.AlreadyExists, memoryv1.ErrorReason_ERROR_REASON_ALREADY_EXISTS,
			fmt.Sprintf("agent %q already has memory (version %d)", agent, meta.Version), nil)
	}
	p := s.newProposal(agent, runID, claims.Subject)
	p.Reasoning, p.IdempotencyKey = reasoning, propose.GetIdempotencyKey()
	p.Updates = append(updates,
		&memoryv1.FileUpdate{File: memlayout.FactsFile, Operation: memoryv1.Operation_OPERATION_RESTORE, Content: "# Facts: " + agent + "\n"},
		&memoryv1.FileUpdate{File: memlayout.OpenLoopsFile, Operation: memoryv1.Operation_OPERATION_RESTORE, Content: "# Open Loops: " + agent + "\n"})
	p.Flags = reviewFlags(p.Updates)
	rec, err := s.submit(ctx, p, head, meta, policy)
	if err != nil {
		return nil, h.internal(err, "storing the proposal")
	}
	return &memoryv1.OnboardAgentResponse{Proposal: proposeResponse(rec.Proposal)}, nil
}
