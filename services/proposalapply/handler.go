package proposalapply

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/authz"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/proposalstore"
)

// handler implements the gRPC methods: each validates the request, checks
// the caller, converts it (convert.go), calls the Service and converts the
// answer back. What a call does lives in the Service: submit.go (propose),
// review.go, session.go, snapshot.go, backup.go, rotation.go, sync.go.
type handler struct {
	memoryv1.UnimplementedProposalApplyServiceServer
	svc *Service
}

const maxPageSize = 500

var (
	proposeRoles = []auth.Role{auth.RoleAgent, auth.RoleService, auth.RoleAdmin}
	reviewRoles  = []auth.Role{auth.RoleReviewer, auth.RoleAdmin}
	readRoles    = []auth.Role{auth.RoleAgent, auth.RoleService, auth.RoleAdmin, auth.RoleReviewer}
)

// Propose validates, decides review versus auto-approval, and stores the
// proposal durably before answering.
func (h *handler) Propose(ctx context.Context, req *memoryv1.ProposeRequest) (*memoryv1.ProposeResponse, error) {
	return h.propose(ctx, req, false)
}

// ProcessSession validates and stores a proposal that waits for CommitSession.
func (h *handler) ProcessSession(ctx context.Context, req *memoryv1.ProcessSessionRequest) (*memoryv1.ProcessSessionResponse, error) {
	resp, err := h.propose(ctx, req.GetProposal(), true)
	if err != nil {
		return nil, err
	}
	return &memoryv1.ProcessSessionResponse{Proposal: resp}, nil
}

// propose is Propose; staged proposals (ProcessSession) wait for
// CommitSession whatever the policy says.
func (h *handler) propose(ctx context.Context, req *memoryv1.ProposeRequest, staged bool) (*memoryv1.ProposeResponse, error) {
	if !memlayout.ValidAgentID(req.GetAgentId()) {
		return nil, apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, "agentId", "agentId must be a slug [a-z0-9][a-z0-9-]{0,63}")
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
	updates, err := validateProposal(req, h.svc.counter, h.svc.cfg)
	if err != nil {
		return nil, err
	}
	p, err := h.svc.propose(ctx, proposeInputOf(req, updates, claims.Subject, staged))
	if err != nil {
		return nil, err
	}
	return proposeResponse(p), nil
}

// CommitSession releases a staged proposal to the agent's policy.
func (h *handler) CommitSession(ctx context.Context, req *memoryv1.CommitSessionRequest) (*memoryv1.CommitSessionResponse, error) {
	if !memlayout.ValidAgentID(req.GetAgentId()) {
		return nil, apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, "agentId", "agentId must be a slug")
	}
	rec, _, err := h.proposal(ctx, req.GetProposalId(), proposeRoles...)
	if err != nil {
		return nil, err
	}
	if rec.Proposal.GetAgentId() != req.GetAgentId() {
		return nil, apierr.ProposalNotFound(req.GetProposalId())
	}
	p, err := h.svc.commitSession(ctx, rec)
	if err != nil {
		return nil, err
	}
	return &memoryv1.CommitSessionResponse{Proposal: proposeResponse(p)}, nil
}

// OnboardAgent proposes a new agent's skeleton: snapshot.md (given or a
// template), facts.md and open_loops.md with their headings.
func (h *handler) OnboardAgent(ctx context.Context, req *memoryv1.OnboardAgentRequest) (*memoryv1.OnboardAgentResponse, error) {
	o := onboarding{agent: req.GetAgentId(), runID: req.GetRunId(), reasoning: req.GetReasoning(), idempotencyKey: "onboard"}
	snapshot := req.GetSnapshot()
	if strings.TrimSpace(snapshot) == "" {
		snapshot = onboardTemplate(o.agent)
	}
	if o.reasoning == "" {
		o.reasoning = "Onboard " + o.agent
	}
	if o.runID == "" {
		o.runID = "onboard"
	}
	// The same validation as any proposal, snapshot limit included.
	propose := &memoryv1.ProposeRequest{AgentId: o.agent, RunId: o.runID, Reasoning: o.reasoning, IdempotencyKey: o.idempotencyKey,
		Updates: []*memoryv1.FileUpdate{{File: memlayout.SnapshotFile, Operation: memoryv1.Operation_OPERATION_REPLACE, Content: snapshot}}}
	var err error
	if o.updates, err = validateProposal(propose, h.svc.counter, h.svc.cfg); err != nil {
		return nil, err
	}
	claims, err := authz.RequireAgent(ctx, o.agent, proposeRoles...)
	if err != nil {
		return nil, err
	}
	o.by = claims.Subject
	p, err := h.svc.onboard(ctx, o)
	if err != nil {
		return nil, err
	}
	return &memoryv1.OnboardAgentResponse{Proposal: proposeResponse(p)}, nil
}

// proposal loads a proposal the caller may see; others' proposals read as
// not found, so ids of other agents' proposals reveal nothing.
func (h *handler) proposal(ctx context.Context, id string, roles ...auth.Role) (*proposalstore.Record, *auth.Claims, error) {
	notFound := apierr.ProposalNotFound(id)
	if _, err := authz.RequireRole(ctx, roles...); err != nil {
		return nil, nil, err
	}
	rec, err := h.svc.store.Get(id)
	if errors.Is(err, proposalstore.ErrNotFound) {
		return nil, nil, notFound
	}
	if err != nil {
		return nil, nil, h.svc.internal(err, "reading the proposal")
	}
	claims, err := authz.RequireAgent(ctx, rec.Proposal.GetAgentId(), roles...)
	if err != nil {
		return nil, nil, notFound
	}
	return rec, claims, nil
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
		return apierr.InvalidArgument("pageSize", fmt.Sprintf("pageSize must be 0 to %d", maxPageSize))
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
			return nil, apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, "agent", "agent must be a slug")
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
		return nil, apierr.InvalidArgument("pageToken", "invalid pageToken")
	}
	resp := &memoryv1.ListProposalsResponse{NextPageToken: next}
	for _, r := range recs {
		resp.Proposals = append(resp.Proposals, withEstimate(r.Proposal))
	}
	return resp, nil
}

// ApproveProposal approves a pending proposal and queues it.
func (h *handler) ApproveProposal(ctx context.Context, req *memoryv1.ApproveProposalRequest) (*memoryv1.ApproveProposalResponse, error) {
	if err := apierr.CheckText("comment", req.GetComment(), maxReasoningBytes); err != nil {
		return nil, err
	}
	rec, claims, err := h.proposal(ctx, req.GetProposalId(), reviewRoles...)
	if err != nil {
		return nil, err
	}
	p, err := h.svc.approve(ctx, rec, claims, req.GetComment())
	if err != nil {
		return nil, err
	}
	return &memoryv1.ApproveProposalResponse{Proposal: withEstimate(p)}, nil
}

// RejectProposal rejects a pending proposal with the reviewer's reason.
func (h *handler) RejectProposal(ctx context.Context, req *memoryv1.RejectProposalRequest) (*memoryv1.RejectProposalResponse, error) {
	if strings.TrimSpace(req.GetReason()) == "" {
		return nil, apierr.InvalidArgument("reason", "a rejection needs a reason")
	}
	if err := apierr.CheckText("reason", req.GetReason(), maxReasoningBytes); err != nil {
		return nil, err
	}
	rec, claims, err := h.proposal(ctx, req.GetProposalId(), reviewRoles...)
	if err != nil {
		return nil, err
	}
	p, err := h.svc.reject(ctx, rec, claims, req.GetReason())
	if err != nil {
		return nil, err
	}
	return &memoryv1.RejectProposalResponse{Proposal: withEstimate(p)}, nil
}

// RetryProposal sends a failed proposal back to approved.
func (h *handler) RetryProposal(ctx context.Context, req *memoryv1.RetryProposalRequest) (*memoryv1.RetryProposalResponse, error) {
	if err := apierr.CheckText("comment", req.GetComment(), maxReasoningBytes); err != nil {
		return nil, err
	}
	rec, claims, err := h.proposal(ctx, req.GetProposalId(), reviewRoles...)
	if err != nil {
		return nil, err
	}
	p, err := h.svc.retry(ctx, rec, claims, req.GetComment())
	if err != nil {
		return nil, err
	}
	return &memoryv1.RetryProposalResponse{Proposal: withEstimate(p)}, nil
}

// GetAgentPolicy returns the agent's review policy at main's head.
func (h *handler) GetAgentPolicy(ctx context.Context, req *memoryv1.GetAgentPolicyRequest) (*memoryv1.GetAgentPolicyResponse, error) {
	if !memlayout.ValidAgentID(req.GetAgentId()) {
		return nil, apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, "agentId", "agentId must be a slug")
	}
	if _, err := authz.RequireAgent(ctx, req.GetAgentId(), readRoles...); err != nil {
		return nil, err
	}
	head, _, policy, err := h.svc.headState(ctx, req.GetAgentId())
	if err != nil {
		return nil, h.svc.internal(err, "reading the agent's policy")
	}
	return &memoryv1.GetAgentPolicyResponse{
		Policy: &memoryv1.AgentPolicy{AgentId: req.GetAgentId(), AutoApprove: policy.AutoApprove, Reviewers: policy.Reviewers},
		Commit: head.String(),
	}, nil
}

// ReportFactUsage records which facts reads returned.
func (h *handler) ReportFactUsage(ctx context.Context, req *memoryv1.ReportFactUsageRequest) (*memoryv1.ReportFactUsageResponse, error) {
	if !memlayout.ValidAgentID(req.GetAgentId()) {
		return nil, apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, "agentId", "agentId must be a slug")
	}
	if _, err := authz.RequireAgent(ctx, req.GetAgentId(), auth.RoleService, auth.RoleAdmin); err != nil {
		return nil, err
	}
	for i, u := range req.GetUsages() {
		if b, err := hex.DecodeString(u.GetFactHash()); err != nil || len(b) != 32 {
			return nil, apierr.InvalidArgument(fmt.Sprintf("usages[%d].factHash", i), "factHash must be a hex sha256")
		}
	}
	present, err := h.svc.headFactHashes(ctx, req.GetAgentId())
	if err != nil {
		return nil, h.svc.internal(err, "reading the agent's facts")
	}
	// The newest use of each fact in facts.md; a use without a time is now.
	// A fact that is not there (it left before the report came, or never
	// was) is not accepted: its record would only grow the index.
	times := make(map[string]time.Time, len(req.GetUsages()))
	for _, u := range req.GetUsages() {
		if !present[u.GetFactHash()] {
			continue
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
		return nil, h.svc.internal(err, "recording fact usage")
	}
	return &memoryv1.ReportFactUsageResponse{Accepted: int32(n)}, nil
}

// SyncRemote pushes main to the configured remote now.
func (h *handler) SyncRemote(ctx context.Context, _ *memoryv1.SyncRemoteRequest) (*memoryv1.SyncRemoteResponse, error) {
	if _, err := authz.RequireRole(ctx, auth.RoleAdmin); err != nil {
		return nil, err
	}
	return h.svc.syncRemote(ctx)
}

// CreateSnapshot archives an agent's memory at a commit (admin).
func (h *handler) CreateSnapshot(ctx context.Context, req *memoryv1.CreateSnapshotRequest) (*memoryv1.CreateSnapshotResponse, error) {
	if !memlayout.ValidAgentID(req.GetAgentId()) {
		return nil, apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, "agentId", "agentId must be a slug")
	}
	// An empty label is the time the snapshot is taken, which is one.
	label := req.GetLabel()
	if label != "" && (!labelRe.MatchString(label) || strings.Contains(label, "..")) {
		return nil, apierr.InvalidArgument("label", "label must be 1-100 of A-Z a-z 0-9 . _ - and start with a letter or digit")
	}
	if _, err := authz.RequireRole(ctx, auth.RoleAdmin); err != nil {
		return nil, err
	}
	// name is where the snapshot is stored (the spec's path, else the label).
	name, err := specSnapshot(req, label)
	if err != nil {
		return nil, err
	}
	snap, err := h.svc.createSnapshot(ctx, snapshotRequest{agent: req.GetAgentId(), label: label, name: name,
		commit: req.GetCommit(), includeRuns: req.GetIncludeRuns()})
	if err != nil {
		return nil, err
	}
	return snapshotResponse(snap), nil
}

// ListSnapshots lists an agent's snapshots by label (admin).
func (h *handler) ListSnapshots(ctx context.Context, req *memoryv1.ListSnapshotsRequest) (*memoryv1.ListSnapshotsResponse, error) {
	if !memlayout.ValidAgentID(req.GetAgentId()) {
		return nil, apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, "agentId", "agentId must be a slug")
	}
	if _, err := authz.RequireRole(ctx, auth.RoleAdmin); err != nil {
		return nil, err
	}
	if err := checkPageSize(req.GetPageSize()); err != nil {
		return nil, err
	}
	size := int(req.GetPageSize())
	if size == 0 {
		size = 100
	}
	snaps, next, err := h.svc.listSnapshots(ctx, req.GetAgentId(), size, req.GetPageToken())
	if err != nil {
		return nil, err
	}
	return &memoryv1.ListSnapshotsResponse{Snapshots: snaps, NextPageToken: next}, nil
}

// RestoreSnapshot makes a proposal that puts the snapshot's files back
// (admin); it is reviewed like any other.
func (h *handler) RestoreSnapshot(ctx context.Context, req *memoryv1.RestoreSnapshotRequest) (*memoryv1.RestoreSnapshotResponse, error) {
	if !memlayout.ValidAgentID(req.GetAgentId()) {
		return nil, apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, "agentId", "agentId must be a slug")
	}
	claims, err := authz.RequireRole(ctx, auth.RoleAdmin)
	if err != nil {
		return nil, err
	}
	p, err := h.svc.restoreSnapshot(ctx, claims.Subject, req.GetAgentId(), req.GetSnapshotId(), req.GetReasoning())
	if err != nil {
		return nil, err
	}
	return &memoryv1.RestoreSnapshotResponse{Proposal: proposeResponse(p)}, nil
}

// CreateBackup writes a git bundle of the monorepo now (admin).
func (h *handler) CreateBackup(ctx context.Context, _ *memoryv1.CreateBackupRequest) (*memoryv1.CreateBackupResponse, error) {
	if _, err := authz.RequireRole(ctx, auth.RoleAdmin); err != nil {
		return nil, err
	}
	resp, err := h.svc.backup(ctx)
	if err != nil {
		h.svc.logger.Error("git backup failed", "err", err)
		return nil, apierr.Retryable(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_OBJECT_STORE_UNAVAILABLE, "the backup could not be written; retry later", 5*time.Second)
	}
	return resp, nil
}

// RotateRuns rotates runs now (admin).
func (h *handler) RotateRuns(ctx context.Context, req *memoryv1.RotateRunsRequest) (*memoryv1.RotateRunsResponse, error) {
	if a := req.GetAgentId(); a != "" && !memlayout.ValidAgentID(a) {
		return nil, apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, "agentId", "agentId must be a slug")
	}
	if _, err := authz.RequireRole(ctx, auth.RoleAdmin); err != nil {
		return nil, err
	}
	resp, err := h.svc.rotateRuns(ctx, req.GetAgentId())
	if errors.Is(err, errArchive) {
		return nil, h.svc.objectsUnavailable(err, "run rotation")
	}
	if err != nil {
		return nil, h.svc.internal(err, "run rotation")
	}
	return resp, nil
}

// WatchCommits streams commits after from_sha, then live ones.
func (h *handler) WatchCommits(req *memoryv1.WatchCommitsRequest, stream memoryv1.ProposalApplyService_WatchCommitsServer) error {
	ctx := stream.Context()
	if agent := req.GetAgentId(); agent != "" {
		if !memlayout.ValidAgentID(agent) {
			return apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, "agentId", "agentId must be a slug")
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
		return h.svc.internal(err, "reading history")
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
