package proposalapply

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/enumname"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/proposalstore"
)

// review moves proposal rec through a reviewer's transition from one of the
// statuses from. A transition that lets a policy change apply (approve,
// retry) needs an admin: a reviewer must not be able to widen its own
// rights (add itself to the reviewers, turn on auto-approval).
func (s *Service) review(ctx context.Context, rec *proposalstore.Record, claims *auth.Claims, from []memoryv1.ProposalStatus, applies bool, apply func(*proposalstore.Record) error) (*proposalstore.Record, error) {
	id := rec.Proposal.GetProposalId()
	if applies && !claims.HasRole(auth.RoleAdmin) && changesPolicy(rec.Proposal) {
		return nil, apierr.New(codes.PermissionDenied, memoryv1.ErrorReason_ERROR_REASON_PERMISSION_DENIED,
			"a change of the agent's review policy needs an admin", nil)
	}
	if !claims.HasRole(auth.RoleAdmin) {
		_, _, policy, err := s.headState(ctx, rec.Proposal.GetAgentId())
		if err != nil {
			return nil, s.internal(err, "reading the agent's policy")
		}
		if !policy.MayReview(claims.Subject) {
			return nil, apierr.New(codes.PermissionDenied, memoryv1.ErrorReason_ERROR_REASON_PERMISSION_DENIED,
				"the agent's policy names other reviewers", nil)
		}
	}
	updated, err := s.store.Update(ctx, id, func(r *proposalstore.Record) error {
		ok := false
		for _, st := range from {
			ok = ok || r.Proposal.GetStatus() == st
		}
		if !ok {
			return apierr.New(codes.FailedPrecondition, memoryv1.ErrorReason_ERROR_REASON_INVALID_TRANSITION,
				fmt.Sprintf("proposal is %s", statusName(r.Proposal.GetStatus())),
				map[string]string{"status": statusName(r.Proposal.GetStatus())})
		}
		now := timestamppb.New(s.now())
		r.Proposal.ReviewedBy, r.Proposal.ReviewedAt, r.Proposal.UpdatedAt = claims.Subject, now, now
		return apply(r)
	})
	if err != nil {
		if apierr.Info(err) != nil {
			return nil, err
		}
		return nil, s.internal(err, "updating the proposal")
	}
	s.logger.Info("proposal reviewed", "proposal", id, "status", updated.Proposal.GetStatus().String(), "by", claims.Subject)
	return updated, nil
}

// changesPolicy reports whether a proposal writes the agent's policy.json.
func changesPolicy(p *memoryv1.Proposal) bool {
	for _, u := range p.GetUpdates() {
		if u.GetFile() == memlayout.PolicyFile {
			return true
		}
	}
	return false
}

func statusName(s memoryv1.ProposalStatus) string { return enumname.Name(s) }

var reviewable = []memoryv1.ProposalStatus{memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, memoryv1.ProposalStatus_PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW}

// approve approves a pending proposal and queues it.
func (s *Service) approve(ctx context.Context, rec *proposalstore.Record, claims *auth.Claims, comment string) (*memoryv1.Proposal, error) {
	rec, err := s.review(ctx, rec, claims, reviewable, true, func(r *proposalstore.Record) error {
		if r.Proposal.GetStatus() == memoryv1.ProposalStatus_PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW {
			// The person has seen what changed: judge conflicts from now on.
			head, meta, _, err := s.headState(ctx, r.Proposal.GetAgentId())
			if err != nil {
				return err
			}
			r.BaseCommit, r.BaseVersion = head.String(), meta.Version
		}
		r.Proposal.Status, r.Proposal.Reason, r.Proposal.Message = memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED, 0, ""
		r.Proposal.ReviewComment = comment
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.engine.enqueue(rec.Proposal.GetAgentId(), rec.Proposal.GetProposalId())
	return rec.Proposal, nil
}

// reject rejects a pending proposal with the reviewer's reason.
func (s *Service) reject(ctx context.Context, rec *proposalstore.Record, claims *auth.Claims, reason string) (*memoryv1.Proposal, error) {
	rec, err := s.review(ctx, rec, claims, reviewable, false, func(r *proposalstore.Record) error {
		r.Proposal.Status, r.Proposal.Reason = memoryv1.ProposalStatus_PROPOSAL_STATUS_REJECTED, memoryv1.StatusReason_STATUS_REASON_REVIEWER_REJECTED
		r.Proposal.Message, r.Proposal.ReviewComment = reason, reason
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rec.Proposal, nil
}

// retry sends a failed proposal back to approved and queues it.
func (s *Service) retry(ctx context.Context, rec *proposalstore.Record, claims *auth.Claims, comment string) (*memoryv1.Proposal, error) {
	rec, err := s.review(ctx, rec, claims, []memoryv1.ProposalStatus{memoryv1.ProposalStatus_PROPOSAL_STATUS_FAILED}, true,
		func(r *proposalstore.Record) error {
			r.Proposal.Status, r.Proposal.Reason, r.Proposal.Message = memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED, 0, ""
			r.Proposal.ReviewComment = comment
			return nil
		})
	if err != nil {
		return nil, err
	}
	s.engine.enqueue(rec.Proposal.GetAgentId(), rec.Proposal.GetProposalId())
	return rec.Proposal, nil
}
