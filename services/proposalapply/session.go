package proposalapply

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/proposalstore"
)

// The DiffMem adapter's write calls (spec memory-subsystem-architecture,
// "API Contract") on top of the proposal lifecycle: process-session stages
// a proposal (propose with staged), commit-session releases it to the
// policy, process-and-commit is Propose, onboard proposes an agent's
// skeleton.

// commitSession releases staged proposal rec to the agent's policy.
func (s *Service) commitSession(ctx context.Context, rec *proposalstore.Record) (*memoryv1.Proposal, error) {
	_, meta, policy, err := s.headState(ctx, rec.Proposal.GetAgentId())
	if err != nil {
		return nil, s.internal(err, "reading the agent's memory")
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
		return nil, s.internal(err, "updating the proposal")
	}
	p := updated.Proposal
	s.logger.Info("staged proposal committed", "proposal", p.GetProposalId(), "agent", p.GetAgentId(), "status", p.GetStatus().String())
	if p.GetStatus() == memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED {
		s.engine.enqueue(p.GetAgentId(), p.GetProposalId())
	}
	return p, nil
}

// onboarding is a validated OnboardAgent request: the proposal of its
// snapshot.md (validateProposal's updates) on behalf of by.
type onboarding struct {
	agent, runID, by          string
	reasoning, idempotencyKey string
	updates                   []*memoryv1.FileUpdate
}

// onboardTemplate is the snapshot.md of an agent onboarded without one.
func onboardTemplate(agent string) string {
	return "# Snapshot: " + agent + "\n\n## Role\n\n## Current focus\n"
}

// onboard proposes a new agent's skeleton: its snapshot.md, and facts.md
// and open_loops.md with their headings. An agent that has memory already
// is refused.
func (s *Service) onboard(ctx context.Context, o onboarding) (*memoryv1.Proposal, error) {
	head, meta, policy, err := s.headState(ctx, o.agent)
	if err != nil {
		return nil, s.internal(err, "reading the agent's memory")
	}
	existing, err := s.repo.ListFiles(ctx, head, strings.TrimSuffix(memlayout.AgentDir(o.agent), "/"))
	if err != nil {
		return nil, s.internal(err, "reading the agent's memory")
	}
	if len(existing) > 0 {
		return nil, apierr.New(codes.AlreadyExists, memoryv1.ErrorReason_ERROR_REASON_ALREADY_EXISTS,
			fmt.Sprintf("agent %q already has memory (version %d)", o.agent, meta.Version), nil)
	}
	p := s.newProposal(o.agent, o.runID, o.by)
	p.Reasoning, p.IdempotencyKey = o.reasoning, o.idempotencyKey
	// A new slice: o.updates is the caller's.
	p.Updates = slices.Concat(o.updates, []*memoryv1.FileUpdate{
		{File: memlayout.FactsFile, Operation: memoryv1.Operation_OPERATION_RESTORE, Content: "# Facts: " + o.agent + "\n"},
		{File: memlayout.OpenLoopsFile, Operation: memoryv1.Operation_OPERATION_RESTORE, Content: "# Open Loops: " + o.agent + "\n"}})
	p.Flags = reviewFlags(p.Updates)
	rec, err := s.submit(ctx, p, head, meta, policy)
	if err != nil {
		return nil, s.internal(err, "storing the proposal")
	}
	return rec.Proposal, nil
}
