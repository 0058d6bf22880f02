package proposalapply

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/applyplan"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/authz"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/dupfacts"
	"github.com/garden-bloom/memory/pkg/temporalgraph"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memread"
	"github.com/garden-bloom/memory/pkg/proposalstore"
	"github.com/garden-bloom/memory/pkg/restjson"
)

// Policy thresholds that send a proposal to a person (issue #3).
const (
	flagFactLines = 50
	flagFiles     = 5
	maxPageSize   = 500
)

// handler implements the gRPC methods; it stays thin and delegates to the Service.
type handler struct {
	memoryv1.UnimplementedProposalApplyServiceServer
	svc *Service
}

var (
	proposeRoles = []auth.Role{auth.RoleAgent, auth.RoleService, auth.RoleAdmin}
	reviewRoles  = []auth.Role{auth.RoleReviewer, auth.RoleAdmin}
	readRoles    = []auth.Role{auth.RoleAgent, auth.RoleService, auth.RoleAdmin, auth.RoleReviewer}
)

func (h *handler) internal(err error, what string) error {
	h.svc.logger.Error(what, "err", err)
	return storageUnavailable(err, what)
}

// storageUnavailable is the retryable answer for a storage failure, naming
// which storage failed: every 503 says when to retry (RetryInfo, which the
// edge turns into Retry-After).
func storageUnavailable(err error, what string) error {
	switch {
	case blob.DiskFull(err): // the folder object store's too: say what to fix
		return apierr.Retryable(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_REPOSITORY_UNAVAILABLE,
			what+": the disk is full; retry once space is freed", storageRetryAfter)
	case errors.Is(err, blob.ErrUnavailable):
		return apierr.Retryable(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_OBJECT_STORE_UNAVAILABLE,
			what+": the object store is unavailable; retry later", storageRetryAfter)
	}
	return apierr.Retryable(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_REPOSITORY_UNAVAILABLE,
		what+": storage unavailable; retry later", storageRetryAfter)
}

// storageRetryAfter is the RetryInfo of a storage failure: about how long
// a guarded store takes to notice it is back (one probe), with margin.
const storageRetryAfter = 2 * time.Second

// Propose validates, decides review versus auto-approval, and stores the
// proposal durably before answering.
func (h *handler) Propose(ctx context.Context, req *memoryv1.ProposeRequest) (*memoryv1.ProposeResponse, error) {
	return h.propose(ctx, req, false)
}

// propose is Propose; staged proposals (ProcessSession) wait for
// CommitSession whatever the policy says.
func (h *handler) propose(ctx context.Context, req *memoryv1.ProposeRequest, staged bool) (*memoryv1.ProposeResponse, error) {
	s := h.svc
	if !memlayout.ValidAgentID(req.GetAgentId()) {
		return nil, invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, "agentId", "agentId must be a slug [a-z0-9][a-z0-9-]{0,63}")
	}
	// Who asks comes before what is asked: a caller without the right to
	// write this agent learns nothing from validation.
	claims, err := authz.RequireAgent(ctx, req.GetAgentId(), proposeRoles...)
	if err != nil {
		return nil, err
	}
	if err := specPropose(req); err != nil {
		return nil, err
	}
	updates, err := validateProposal(req, s.counter, s.cfg)
	if err != nil {
		return nil, err
	}
	head, meta, policy, err := s.headState(ctx, req.GetAgentId())
	if err != nil {
		return nil, h.internal(err, "reading the agent's memory")
	}
	if req.AutoApprove != nil && !req.GetAutoApprove() {
		policy.AutoApprove = false // the agent's hint: wait for a person
	}
	p := s.newProposal(req.GetAgentId(), req.GetRunId(), claims.Subject)
	p.ExpectedVersion, p.Updates, p.Reasoning = req.ExpectedVersion, updates, req.GetReasoning()
	p.EntityRefs, p.IdempotencyKey, p.RunDuration = req.GetEntityRefs(), req.GetIdempotencyKey(), req.GetRunDuration()
	if req.GetPriority() != memoryv1.Priority_PRIORITY_UNSPECIFIED {
		p.Priority = req.GetPriority()
	}
	if p.ExpectedVersion == nil || p.GetExpectedVersion() == meta.Version {
		// A proposal made on a stale version is recorded as a version
		// conflict; any other is planned on head now, as the apply will
		// plan it, so what can be known now is refused now.
		plan, err := h.dryRun(ctx, p, head)
		if err != nil {
			return nil, err
		}
		p.Warnings = plan.Warnings
	}
	guard, err := h.guardFlags(ctx, p, head)
	if err != nil {
		return nil, h.internal(err, "reading the agent's memory")
	}
	p.Flags = append(reviewFlags(updates), guard...)
	if staged {
		p.Status, p.Reason = memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, memoryv1.StatusReason_STATUS_REASON_STAGED
	}
	rec, err := s.submit(ctx, p, head, meta, policy)
	if err != nil {
		return nil, h.internal(err, "storing the proposal")
	}
	return proposeResponse(rec.Proposal), nil
}

// dryRun plans p's commit on head exactly as the apply does and refuses the
// proposal with the plan's reason when it cannot apply there: a loop that is
// not open, a fact that is not in facts.md, a heading smuggled into a
// section, additions that alone exceed a Layer 1 limit (spec DiffMem
// §11.3), ALWAYS_LOAD blocks over --always-load-limit.
func (h *handler) dryRun(ctx context.Context, p *memoryv1.Proposal, head plumbing.Hash) (*applyplan.Plan, error) {
	s := h.svc
	read := s.reader(ctx, head, p.GetAgentId())
	plan, err := s.plan(ctx, p, read, s.now())
	if inv := (*applyplan.Invalid)(nil); errors.As(err, &inv) {
		code := codes.InvalidArgument
		if inv.Reason == memoryv1.ErrorReason_ERROR_REASON_MEMORY_CORRUPTED {
			code = codes.DataLoss
		}
		return nil, apierr.New(code, inv.Reason, inv.Msg, inv.Metadata)
	}
	if err != nil {
		return nil, h.internal(err, "reading the agent's memory")
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

func proposeResponse(p *memoryv1.Proposal) *memoryv1.ProposeResponse {
	return fillSpecFields(&memoryv1.ProposeResponse{
		ProposalId: p.GetProposalId(), Status: p.GetStatus(), AgentId: p.GetAgentId(),
		CreatedAt: p.GetCreatedAt(), ReviewUrl: p.GetReviewUrl(), Proposal: p,
	})
}

// guardTimeout bounds the semantic guard: a slow read plane must not stall
// writes.
const guardTimeout = 2 * time.Second

// guardFlags runs the semantic guard on a proposal; its findings send the
// proposal to a person. The duplicate-fact check needs facts.md, not the
// graph, so it runs here on head. entity-graph is asked only what needs the
// graph (entity refs it does not know, removals of facts other agents refer
// to), and only when the proposal has such parts: asking it about every
// proposal cost a round trip and a read of facts.md on the read plane, 10 %
// of its CPU under apply load (issue #9). If entity-graph cannot answer, the
// proposal goes on without its findings (logged): the read plane never
// blocks writes.
func (h *handler) guardFlags(ctx context.Context, p *memoryv1.Proposal, head plumbing.Hash) ([]string, error) {
	read := h.svc.reader(ctx, head, p.GetAgentId())
	repeats, err := dupfacts.Find(p.GetUpdates(), func() (string, error) {
		facts, _, err := read(memlayout.FactsFile)
		return facts, err
	})
	if err != nil {
		return nil, err
	}
	var flags []string
	for _, r := range repeats {
		flags = append(flags, "semantic guard: "+dupfacts.Kind+": "+r.Detail())
	}
	return append(flags, h.graphFlags(ctx, p)...), nil
}

// graphFlags asks entity-graph's guard about the proposal's entity refs and
// the facts it removes. A ref to an entity the proposal itself introduces
// (a [[MinIO]] link in its content for "minio") is not unknown: the commit
// brings it.
func (h *handler) graphFlags(ctx context.Context, p *memoryv1.Proposal) []string {
	var removals []*memoryv1.FileUpdate
	introduced := map[string]bool{}
	for _, u := range p.GetUpdates() {
		if u.GetFile() == memlayout.FactsFile && u.GetOperation() == memoryv1.Operation_OPERATION_REMOVE {
			removals = append(removals, u)
			continue
		}
		if f, err := memlayout.Resolve(p.GetAgentId(), u.GetFile()); err == nil {
			for _, m := range temporalgraph.Extract(f.Path, u.GetContent()+"\n"+decisionText(u.GetDecision())) {
				introduced[m.EntityID] = true
			}
		}
	}
	var refs []string
	for _, r := range p.GetEntityRefs() {
		if !introduced[temporalgraph.Slug(r)] {
			refs = append(refs, r)
		}
	}
	if h.svc.guard == nil || (len(refs) == 0 && len(removals) == 0) {
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), guardTimeout)
	defer cancel()
	resp, err := h.svc.guard.CheckProposal(cctx, &memoryv1.CheckProposalRequest{AgentId: p.GetAgentId(), Updates: removals, EntityRefs: refs})
	if err != nil {
		h.svc.logger.Warn("semantic guard unavailable; proposal not checked", "agent", p.GetAgentId(), "err", err)
		return nil
	}
	var flags []string
	for _, f := range resp.GetFindings() {
		flags = append(flags, "semantic guard: "+f.GetKind()+": "+f.GetDetail())
	}
	return flags
}

// decisionText is a decision's prose, where it may link entities.
func decisionText(d *memoryv1.Decision) string {
	if d == nil {
		return ""
	}
	return strings.Join([]string{d.GetTitle(), d.GetContext(), d.GetDecision(), d.GetRationale(), d.GetConsequences()}, "\n")
}

// reviewFlags lists why a proposal needs a person whatever the policy says.
func reviewFlags(updates []*memoryv1.FileUpdate) []string {
	var flags []string
	files := map[string]bool{}
	factLines := 0
	for _, u := range updates {
		files[u.GetFile()] = true
		if u.GetFile() == memlayout.FactsFile && u.GetOperation() == memoryv1.Operation_OPERATION_APPEND {
			for _, l := range strings.Split(u.GetContent(), "\n") {
				if strings.TrimSpace(l) != "" {
					factLines++
				}
			}
		}
		if u.GetFile() == memlayout.PolicyFile {
			flags = append(flags, "changes the agent's review policy")
		}
	}
	if factLines > flagFactLines {
		flags = append(flags, fmt.Sprintf("adds %d lines to facts.md (more than %d)", factLines, flagFactLines))
	}
	if len(files) > flagFiles {
		flags = append(flags, fmt.Sprintf("touches %d files (more than %d)", len(files), flagFiles))
	}
	return flags
}

// proposal loads a proposal the caller may see; others' proposals read as
// not found, so ids of other agents' proposals reveal nothing.
func (h *handler) proposal(ctx context.Context, id string, roles ...auth.Role) (*proposalstore.Record, *auth.Claims, error) {
	notFound := proposalNotFound(id)
	if _, err := authz.RequireRole(ctx, roles...); err != nil {
		return nil, nil, err
	}
	rec, err := h.svc.store.Get(id)
	if errors.Is(err, proposalstore.ErrNotFound) {
		return nil, nil, notFound
	}
	if err != nil {
		return nil, nil, h.internal(err, "reading the proposal")
	}
	claims, err := authz.RequireAgent(ctx, rec.Proposal.GetAgentId(), roles...)
	if err != nil {
		return nil, nil, notFound
	}
	return rec, claims, nil
}

// proposalNotFound is the answer for an unknown proposal and for one the
// caller may not see: the two must not be told apart.
func proposalNotFound(id string) error {
	return apierr.New(codes.NotFound, memoryv1.ErrorReason_ERROR_REASON_PROPOSAL_NOT_FOUND,
		fmt.Sprintf("proposal %q not found", apierr.Clip(id)), nil)
}

// GetProposal returns one proposal.
func (h *handler) GetProposal(ctx context.Context, req *memoryv1.GetProposalRequest) (*memoryv1.GetProposalResponse, error) {
	rec, _, err := h.proposal(ctx, req.GetProposalId(), readRoles...)
	if err != nil {
		return nil, err
	}
	return &memoryv1.GetProposalResponse{Proposal: withEstimate(rec.Proposal)}, nil
}

// checkPageSize accepts 0 (the default) to maxPageSize.
func checkPageSize(n int32) error {
	if n < 0 || n > maxPageSize {
		return invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, "pageSize", fmt.Sprintf("pageSize must be 0 to %d", maxPageSize))
	}
	return nil
}

// ListProposals lists proposals newest first.
func (h *handler) ListProposals(ctx context.Context, req *memoryv1.ListProposalsRequest) (*memoryv1.ListProposalsResponse, error) {
	claims, err := authz.RequireRole(ctx, readRoles...)
	if err != nil {
		return nil, err
	}
	q := proposalstore.Query{Status: req.GetStatus(), PageSize: int(req.GetPageSize()), PageToken: req.GetPageToken()}
	if err := checkPageSize(req.GetPageSize()); err != nil {
		return nil, err
	}
	if agent := req.GetAgentId(); agent != "" {
		if !memlayout.ValidAgentID(agent) {
			return nil, invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, "agent", "agent must be a slug")
		}
		if _, err := authz.RequireAgent(ctx, agent, readRoles...); err != nil {
			return nil, err
		}
		q.Agents = []string{agent}
	} else if q.Agents = authz.VisibleAgents(claims, readRoles...); q.Agents != nil && len(q.Agents) == 0 {
		return &memoryv1.ListProposalsResponse{}, nil
	}
	recs, next, err := h.svc.store.List(q)
	if err != nil {
		return nil, invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, "pageToken", "invalid pageToken")
	}
	resp := &memoryv1.ListProposalsResponse{NextPageToken: next}
	for _, r := range recs {
		resp.Proposals = append(resp.Proposals, withEstimate(r.Proposal))
	}
	return resp, nil
}

// review moves a proposal through a reviewer's transition. A transition
// that lets a policy change apply (approve, retry) needs an admin: a
// reviewer must not be able to widen its own rights (add itself to the
// reviewers, turn on auto-approval).
func (h *handler) review(ctx context.Context, id string, from []memoryv1.ProposalStatus, applies bool, apply func(*proposalstore.Record, *auth.Claims) error) (*proposalstore.Record, error) {
	s := h.svc
	rec, claims, err := h.proposal(ctx, id, reviewRoles...)
	if err != nil {
		return nil, err
	}
	if applies && !claims.HasRole(auth.RoleAdmin) && changesPolicy(rec.Proposal) {
		return nil, apierr.New(codes.PermissionDenied, memoryv1.ErrorReason_ERROR_REASON_PERMISSION_DENIED,
			"a change of the agent's review policy needs an admin", nil)
	}
	if !claims.HasRole(auth.RoleAdmin) {
		_, _, policy, err := s.headState(ctx, rec.Proposal.GetAgentId())
		if err != nil {
			return nil, h.internal(err, "reading the agent's policy")
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
		return apply(r, claims)
	})
	if err != nil {
		if apierr.Info(err) != nil {
			return nil, err
		}
		return nil, h.internal(err, "updating the proposal")
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

func statusName(s memoryv1.ProposalStatus) string { return restjson.EnumName(s) }

var reviewable = []memoryv1.ProposalStatus{memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, memoryv1.ProposalStatus_PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW}

// ApproveProposal approves a pending proposal and queues it.
func (h *handler) ApproveProposal(ctx context.Context, req *memoryv1.ApproveProposalRequest) (*memoryv1.ApproveProposalResponse, error) {
	if err := checkText("comment", req.GetComment(), maxReasoningBytes); err != nil {
		return nil, err
	}
	rec, err := h.review(ctx, req.GetProposalId(), reviewable, true, func(r *proposalstore.Record, _ *auth.Claims) error {
		if r.Proposal.GetStatus() == memoryv1.ProposalStatus_PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW {
			// The person has seen what changed: judge conflicts from now on.
			head, meta, _, err := h.svc.headState(ctx, r.Proposal.GetAgentId())
			if err != nil {
				return err
			}
			r.BaseCommit, r.BaseVersion = head.String(), meta.Version
		}
		r.Proposal.Status, r.Proposal.Reason, r.Proposal.Message = memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED, 0, ""
		r.Proposal.ReviewComment = req.GetComment()
		return nil
	})
	if err != nil {
		return nil, err
	}
	h.svc.engine.enqueue(rec.Proposal.GetAgentId(), rec.Proposal.GetProposalId())
	return &memoryv1.ApproveProposalResponse{Proposal: withEstimate(rec.Proposal)}, nil
}

// RejectProposal rejects a pending proposal with the reviewer's reason.
func (h *handler) RejectProposal(ctx context.Context, req *memoryv1.RejectProposalRequest) (*memoryv1.RejectProposalResponse, error) {
	if strings.TrimSpace(req.GetReason()) == "" {
		return nil, invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, "reason", "a rejection needs a reason")
	}
	if err := checkText("reason", req.GetReason(), maxReasoningBytes); err != nil {
		return nil, err
	}
	rec, err := h.review(ctx, req.GetProposalId(), reviewable, false, func(r *proposalstore.Record, _ *auth.Claims) error {
		r.Proposal.Status, r.Proposal.Reason = memoryv1.ProposalStatus_PROPOSAL_STATUS_REJECTED, memoryv1.StatusReason_STATUS_REASON_REVIEWER_REJECTED
		r.Proposal.Message, r.Proposal.ReviewComment = req.GetReason(), req.GetReason()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &memoryv1.RejectProposalResponse{Proposal: withEstimate(rec.Proposal)}, nil
}

// RetryProposal sends a failed proposal back to approved.
func (h *handler) RetryProposal(ctx context.Context, req *memoryv1.RetryProposalRequest) (*memoryv1.RetryProposalResponse, error) {
	if err := checkText("comment", req.GetComment(), maxReasoningBytes); err != nil {
		return nil, err
	}
	rec, err := h.review(ctx, req.GetProposalId(), []memoryv1.ProposalStatus{memoryv1.ProposalStatus_PROPOSAL_STATUS_FAILED}, true,
		func(r *proposalstore.Record, _ *auth.Claims) error {
			r.Proposal.Status, r.Proposal.Reason, r.Proposal.Message = memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED, 0, ""
			r.Proposal.ReviewComment = req.GetComment()
			return nil
		})
	if err != nil {
		return nil, err
	}
	h.svc.engine.enqueue(rec.Proposal.GetAgentId(), rec.Proposal.GetProposalId())
	return &memoryv1.RetryProposalResponse{Proposal: withEstimate(rec.Proposal)}, nil
}

// GetAgentPolicy returns the agent's review policy at main's head.
func (h *handler) GetAgentPolicy(ctx context.Context, req *memoryv1.GetAgentPolicyRequest) (*memoryv1.GetAgentPolicyResponse, error) {
	if !memlayout.ValidAgentID(req.GetAgentId()) {
		return nil, invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, "agentId", "agentId must be a slug")
	}
	if _, err := authz.RequireAgent(ctx, req.GetAgentId(), readRoles...); err != nil {
		return nil, err
	}
	head, _, policy, err := h.svc.headState(ctx, req.GetAgentId())
	if err != nil {
		return nil, h.internal(err, "reading the agent's policy")
	}
	return &memoryv1.GetAgentPolicyResponse{
		Policy: &memoryv1.AgentPolicy{AgentId: req.GetAgentId(), AutoApprove: policy.AutoApprove, Reviewers: policy.Reviewers},
		Commit: head.String(),
	}, nil
}

// ReportFactUsage records which facts reads returned.
func (h *handler) ReportFactUsage(ctx context.Context, req *memoryv1.ReportFactUsageRequest) (*memoryv1.ReportFactUsageResponse, error) {
	if !memlayout.ValidAgentID(req.GetAgentId()) {
		return nil, invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, "agentId", "agentId must be a slug")
	}
	if _, err := authz.RequireAgent(ctx, req.GetAgentId(), auth.RoleService, auth.RoleAdmin); err != nil {
		return nil, err
	}
	times := make(map[string]time.Time, len(req.GetUsages()))
	for i, u := range req.GetUsages() {
		if b, err := hex.DecodeString(u.GetFactHash()); err != nil || len(b) != 32 {
			return nil, invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, fmt.Sprintf("usages[%d].factHash", i), "factHash must be a hex sha256")
		}
		at := h.svc.now()
		if u.GetUsedAt() != nil {
			at = u.GetUsedAt().AsTime()
		}
		if at.After(times[u.GetFactHash()]) {
			times[u.GetFactHash()] = at
		}
	}
	n, err := h.svc.facts.Used(ctx, req.GetAgentId(), times)
	if err != nil {
		return nil, h.internal(err, "recording fact usage")
	}
	return &memoryv1.ReportFactUsageResponse{Accepted: int32(n)}, nil
}

// SyncRemote pushes main to the configured remote now.
func (h *handler) SyncRemote(ctx context.Context, _ *memoryv1.SyncRemoteRequest) (*memoryv1.SyncRemoteResponse, error) {
	if _, err := authz.RequireRole(ctx, auth.RoleAdmin); err != nil {
		return nil, err
	}
	p := h.svc.pusher
	if !p.enabled() {
		return nil, apierr.New(codes.FailedPrecondition, memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, "no --git-remote-url is configured", nil)
	}
	if err := p.push(ctx); err != nil {
		h.svc.logger.Warn("sync: push failed", "err", err)
		return nil, apierr.New(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_REPOSITORY_UNAVAILABLE, "push to the remote failed; retry later", nil)
	}
	head, err := h.svc.repo.Head(ctx)
	if err != nil {
		return nil, h.internal(err, "reading main")
	}
	return &memoryv1.SyncRemoteResponse{Remote: redactURL(p.url), HeadCommit: head.String(), PushedAt: timestamppb.New(h.svc.now())}, nil
}

// WatchCommits streams commits after from_sha, then live ones.
func (h *handler) WatchCommits(req *memoryv1.WatchCommitsRequest, stream memoryv1.ProposalApplyService_WatchCommitsServer) error {
	ctx := stream.Context()
	if agent := req.GetAgentId(); agent != "" {
		if !memlayout.ValidAgentID(agent) {
			return invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, "agentId", "agentId must be a slug")
		}
		if _, err := authz.RequireAgent(ctx, agent, auth.RoleAgent, auth.RoleService, auth.RoleAdmin); err != nil {
			return err
		}
	} else if _, err := authz.RequireRole(ctx, auth.RoleService, auth.RoleAdmin); err != nil {
		return err
	}
	sub, replay, err := h.svc.hub.subscribe(ctx, req.GetFromSha(), req.GetAgentId())
	if err != nil {
		if apierr.Info(err) != nil {
			return err
		}
		if ctx.Err() != nil {
			return status.FromContextError(ctx.Err()).Err() // the caller left; nothing failed
		}
		return h.internal(err, "reading history")
	}
	defer h.svc.hub.unsubscribe(sub)
	last := req.GetFromSha()
	for _, c := range replay {
		if err := stream.Send(&memoryv1.WatchCommitsResponse{Commit: c}); err != nil {
			return err
		}
		last = c.GetSha()
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case c, ok := <-sub.ch:
			if !ok {
				if sub.dropped {
					return apierr.New(codes.ResourceExhausted, memoryv1.ErrorReason_ERROR_REASON_RATE_LIMITED,
						"the subscriber fell behind; resume with from_sha", map[string]string{"from_sha": last})
				}
				return apierr.New(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_REPOSITORY_UNAVAILABLE,
					"the server is shutting down; resume with from_sha", map[string]string{"from_sha": last})
			}
			if err := stream.Send(&memoryv1.WatchCommitsResponse{Commit: c}); err != nil {
				return err
			}
			last = c.GetSha()
		}
	}
}
