package proposalapply

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/applyplan"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memread"
	"github.com/garden-bloom/memory/pkg/proposalstore"
)

// proposeInput is a validated proposal: what Propose and ProcessSession
// ask for, with updates sanitized (validateProposal).
type proposeInput struct {
	agent, runID string
	// by is the caller's subject (proposedBy).
	by              string
	updates         []*memoryv1.FileUpdate
	expectedVersion *int32
	reasoning       string
	entityRefs      []string
	idempotencyKey  string
	runDuration     *durationpb.Duration
	priority        memoryv1.Priority // unspecified: normal
	// waitForReview is the agent's hint (autoApprove false) to wait for a
	// person whatever the policy says.
	waitForReview bool
	// staged proposals (ProcessSession) wait for CommitSession.
	staged bool
}

// propose decides review versus auto-approval for a new proposal and
// stores it durably before answering.
func (s *Service) propose(ctx context.Context, in proposeInput) (*memoryv1.Proposal, error) {
	head, meta, policy, err := s.headState(ctx, in.agent)
	if err != nil {
		return nil, s.internal(err, "reading the agent's memory")
	}
	if in.waitForReview {
		policy.AutoApprove = false // the agent's hint: wait for a person
	}
	p := s.newProposal(in.agent, in.runID, in.by)
	p.ExpectedVersion, p.Updates, p.Reasoning = in.expectedVersion, in.updates, in.reasoning
	p.EntityRefs, p.IdempotencyKey, p.RunDuration = in.entityRefs, in.idempotencyKey, in.runDuration
	if in.priority != memoryv1.Priority_PRIORITY_UNSPECIFIED {
		p.Priority = in.priority
	}
	if p.ExpectedVersion == nil || p.GetExpectedVersion() == meta.Version {
		// A proposal made on a stale version is recorded as a version
		// conflict; any other is planned on head now, as the apply will
		// plan it, so what can be known now is refused now.
		plan, err := s.dryRun(ctx, p, head)
		if err != nil {
			return nil, err
		}
		p.Warnings = plan.Warnings
	}
	guard, err := s.guardFlags(ctx, p, head)
	if err != nil {
		return nil, s.internal(err, "reading the agent's memory")
	}
	p.Flags = append(reviewFlags(in.updates), guard...)
	if in.staged {
		p.Status, p.Reason = memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, memoryv1.StatusReason_STATUS_REASON_STAGED
	}
	rec, err := s.submit(ctx, p, head, meta, policy)
	if err != nil {
		return nil, s.internal(err, "storing the proposal")
	}
	return rec.Proposal, nil
}

// dryRun checks p on head as the apply's plan does (applyplan's CheckOnly:
// the same decisions, without the commit's bookkeeping) and refuses the
// proposal with the plan's reason when it cannot apply there: a loop that is
// not open, a fact that is not in facts.md, a heading smuggled into a
// section, additions that alone exceed a Layer 1 limit (spec DiffMem
// §11.3), ALWAYS_LOAD blocks over --always-load-limit.
func (s *Service) dryRun(ctx context.Context, p *memoryv1.Proposal, head plumbing.Hash) (*applyplan.Plan, error) {
	read := s.reader(ctx, head, p.GetAgentId())
	plan, err := s.plan(ctx, p, read, s.now(), true)
	if inv := (*applyplan.Invalid)(nil); errors.As(err, &inv) {
		code := codes.InvalidArgument
		if inv.Reason == memoryv1.ErrorReason_ERROR_REASON_MEMORY_CORRUPTED {
			code = codes.DataLoss
		}
		return nil, apierr.New(code, inv.Reason, inv.Msg, inv.Metadata)
	}
	if err != nil {
		return nil, s.internal(err, "reading the agent's memory")
	}
	if err := s.checkAlwaysLoad(plan, read); err != nil {
		return nil, err
	}
	return plan, nil
}

// checkAlwaysLoad refuses a plan that grows the agent's ALWAYS_LOAD blocks
// past --always-load-limit. Blocks a person already put over the cap do not
// block proposals that leave them alone.
func (s *Service) checkAlwaysLoad(plan *applyplan.Plan, read applyplan.Reader) error {
	var before, after int
	for _, rel := range []string{memlayout.SnapshotFile, memlayout.FactsFile, memlayout.OpenLoopsFile} {
		cur, _, err := read(rel)
		if err != nil {
			return err
		}
		next, changed := plan.Changes[rel]
		if !changed {
			next = cur
		}
		before += s.alwaysLoadTokens(cur)
		after += s.alwaysLoadTokens(next)
	}
	if after > s.cfg.AlwaysLoadLimit && after > before {
		return apierr.New(codes.InvalidArgument, memoryv1.ErrorReason_ERROR_REASON_TOKEN_LIMIT_EXCEEDED,
			fmt.Sprintf("ALWAYS_LOAD blocks of snapshot.md, facts.md and open_loops.md would hold %d tokens, over --always-load-limit %d: they would crowd out facts and loops in every read", after, s.cfg.AlwaysLoadLimit),
			map[string]string{"file": "ALWAYS_LOAD", "tokens": strconv.Itoa(after), "limit": strconv.Itoa(s.cfg.AlwaysLoadLimit), "encoding": s.counter.Encoding()})
	}
	return nil
}

func (s *Service) alwaysLoadTokens(md string) int {
	n := 0
	for _, b := range memread.AlwaysLoadBlocks(md) {
		n += s.counter.Count(b)
	}
	return n
}

// submit decides a new proposal's status (version check, policy, flags),
// stores it durably and queues it when approved. Propose, RestoreSnapshot
// and run rotation all come through here, so every write takes one path.
func (s *Service) submit(ctx context.Context, p *memoryv1.Proposal, head plumbing.Hash, meta memlayout.Meta, policy memlayout.Policy) (*proposalstore.Record, error) {
	if p.Reason != memoryv1.StatusReason_STATUS_REASON_STAGED || (p.ExpectedVersion != nil && p.GetExpectedVersion() != meta.Version) {
		decide(p, meta, policy)
	}
	rec, created, err := s.store.Create(ctx, &proposalstore.Record{Proposal: p, BaseCommit: head.String(), BaseVersion: meta.Version})
	if err != nil {
		return nil, err
	}
	if created {
		s.metrics.proposedOne(ctx, p.Status)
		s.logger.Info("proposal received", "proposal", p.ProposalId, "agent", p.AgentId, "run", p.RunId,
			"status", p.Status.String(), "by", p.ProposedBy, "flags", len(p.Flags))
		if p.Status == memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED {
			s.engine.enqueue(p.AgentId, p.ProposalId)
		}
	}
	return rec, nil
}

// decide sets a proposal's status from the version check, the policy and its
// flags.
func decide(p *memoryv1.Proposal, meta memlayout.Meta, policy memlayout.Policy) {
	p.Reason, p.Message = memoryv1.StatusReason_STATUS_REASON_UNSPECIFIED, ""
	switch {
	case p.ExpectedVersion != nil && p.GetExpectedVersion() != meta.Version:
		p.Status, p.Reason = memoryv1.ProposalStatus_PROPOSAL_STATUS_REJECTED, memoryv1.StatusReason_STATUS_REASON_VERSION_CONFLICT
		p.CurrentVersion, p.Resolution = meta.Version, "retry_with_latest"
		p.Message = fmt.Sprintf("version_conflict: expected version %d, current version %d", p.GetExpectedVersion(), meta.Version)
	case p.AutoApproved:
		// The service's own housekeeping (run rotation), approved by construction.
		p.Status = memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED
	case policy.AutoApprove && p.Priority == memoryv1.Priority_PRIORITY_NORMAL && len(p.Flags) == 0:
		p.Status, p.AutoApproved = memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED, true
	case len(p.Flags) > 0:
		p.Status, p.Reason = memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, memoryv1.StatusReason_STATUS_REASON_FLAGGED
		p.Message = "flagged for a person: " + strings.Join(p.Flags, "; ")
	default:
		p.Status, p.Reason = memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, memoryv1.StatusReason_STATUS_REASON_AWAITING_REVIEW
		if p.Priority == memoryv1.Priority_PRIORITY_HIGH {
			p.Message = "high priority always waits for a person"
		} else {
			p.Message = "the agent's policy does not auto-approve"
		}
	}
}
