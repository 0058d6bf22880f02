package proposalapply

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/mdops"
)

// Conversions between the API's messages and the service's own types. A
// proposal is stored as the API's message, so most answers are that
// message plus the fields computed for the caller.

// proposeInputOf is the proposal req asks for, with its validated updates,
// on behalf of by.
func proposeInputOf(req *memoryv1.ProposeRequest, updates []*memoryv1.FileUpdate, by string, staged bool) proposeInput {
	return proposeInput{agent: req.GetAgentId(), runID: req.GetRunId(), by: by, updates: updates,
		expectedVersion: req.ExpectedVersion, reasoning: req.GetReasoning(), entityRefs: req.GetEntityRefs(),
		idempotencyKey: req.GetIdempotencyKey(), runDuration: req.GetRunDuration(), priority: req.GetPriority(),
		waitForReview: req.AutoApprove != nil && !req.GetAutoApprove(), staged: staged}
}

func proposeResponse(p *memoryv1.Proposal) *memoryv1.ProposeResponse {
	return fillSpecFields(&memoryv1.ProposeResponse{
		ProposalId: p.GetProposalId(), Status: p.GetStatus(), AgentId: p.GetAgentId(),
		CreatedAt: p.GetCreatedAt(), ReviewUrl: p.GetReviewUrl(), Proposal: p,
	})
}

// fillSpecFields copies the spec's top-level fields of a propose answer
// (DiffMem §4.2, §7.1) from its proposal.
func fillSpecFields(r *memoryv1.ProposeResponse) *memoryv1.ProposeResponse {
	p := r.GetProposal()
	r.Reason, r.ExpectedVersion = p.GetReason(), p.GetExpectedVersion()
	r.CurrentVersion, r.Resolution = p.GetCurrentVersion(), p.GetResolution()
	r.EstimatedApplyAt = withEstimate(p).GetEstimatedApplyAt()
	return r
}

// withEstimate fills the proposal's computed estimatedApplyAt. Callers pass
// the copy the store handed them, so the stored document never holds it.
func withEstimate(p *memoryv1.Proposal) *memoryv1.Proposal {
	p.EstimatedApplyAt = estimatedApplyAt(p)
	return p
}

func estimatedApplyAt(p *memoryv1.Proposal) string {
	stamp := func(ts *timestamppb.Timestamp) string {
		if ts == nil {
			return ""
		}
		return ts.AsTime().UTC().Format(time.RFC3339)
	}
	switch p.GetStatus() {
	case memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLYING:
		// Applied right away, in queue order.
		if ts := p.GetReviewedAt(); ts != nil {
			return stamp(ts)
		}
		if ts := p.GetUpdatedAt(); ts != nil {
			return stamp(ts)
		}
		return stamp(p.GetCreatedAt())
	case memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED:
		return stamp(p.GetAppliedAt())
	case memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, memoryv1.ProposalStatus_PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW:
		if p.GetReason() == memoryv1.StatusReason_STATUS_REASON_STAGED {
			return estimateStaged
		}
		return estimateAwaitingReview
	}
	return "" // rejected or failed: it will not be applied
}

// Estimated apply texts of ProposeResponse.estimated_apply_at when no time
// can be given (DiffMem §4.2 shows "автоматично або після підтвердження людиною").
const (
	estimateAwaitingReview = "після підтвердження людиною"
	estimateStaged         = "після commit-session"
)

// decisionMessage is a decisions.md entry as the API's decision.
func decisionMessage(d mdops.Decision) *memoryv1.Decision {
	return &memoryv1.Decision{Id: d.ID, Title: d.Title, Status: d.Status, Context: d.Context, Decision: d.Decision,
		Rationale: d.Rationale, Consequences: d.Consequences, RunId: d.RunID, Date: timestamppb.New(d.Date)}
}

// snapshotResponse answers CreateSnapshot with the spec's top-level fields
// beside `snapshot`.
func snapshotResponse(s *memoryv1.Snapshot) *memoryv1.CreateSnapshotResponse {
	return &memoryv1.CreateSnapshotResponse{Snapshot: s, SnapshotId: s.GetSnapshotId(), AgentId: s.GetAgentId(),
		CreatedAt: s.GetCreatedAt(), GitCommit: s.GetGitCommit(), Size: s.GetSize(), StoredAt: s.GetStoredAt(), Restorable: s.GetRestorable()}
}
