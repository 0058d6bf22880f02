package proposalapply

import (
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/mdops"
)

// Spec-only request fields and spec-shaped responses (issue #24).

// Estimated apply texts of ProposeResponse.estimated_apply_at when no time
// can be given (DiffMem §4.2 shows "автоматично або після підтвердження людиною").
const (
	estimateAwaitingReview = "після підтвердження людиною"
	estimateStaged         = "після commit-session"
)

func checkSpecTool(tool string, names ...string) error {
	if tool == "" {
		return nil
	}
	for _, n := range names {
		if tool == n {
			return nil
		}
	}
	return invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, "tool",
		fmt.Sprintf("tool %q does not name this call; this endpoint is %q (or leave tool out)", tool, names[0]))
}

// specPropose checks a proposal's tool and type and turns add_decision
// updates that carry a decisions.md block in `content` (DiffMem §3.2) into
// structured decisions.
func specPropose(req *memoryv1.ProposeRequest) error {
	if err := checkSpecTool(req.GetTool(), "propose-memory-update"); err != nil {
		return err
	}
	if t := req.GetType(); t != "" && t != "memory-update" {
		return invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, "type",
			fmt.Sprintf("type %q: a memory proposal's type is \"memory-update\" (or leave type out)", t))
	}
	for i, u := range req.GetUpdates() {
		if u.GetOperation() != memoryv1.Operation_OPERATION_ADD_DECISION || u.GetContent() == "" {
			continue
		}
		field := fmt.Sprintf("updates[%d]", i)
		if u.GetDecision() != nil {
			return invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, field+".content",
				field+": add_decision takes either decision or a decisions.md block in content, not both")
		}
		d, err := mdops.ParseDecisionBlock(u.GetContent())
		if err != nil {
			return invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_CONTENT, field+".content",
				field+": content is not a decisions.md decision block: "+strings.TrimPrefix(err.Error(), mdops.ErrBadContent.Error()+": "))
		}
		u.Decision = &memoryv1.Decision{Id: d.ID, Title: d.Title, Status: d.Status, Context: d.Context, Decision: d.Decision,
			Rationale: d.Rationale, Consequences: d.Consequences, RunId: d.RunID, Date: timestamppb.New(d.Date)}
		u.Content = ""
	}
	return nil
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

// Object-store names CreateSnapshot's targetStorage accepts (DiffMem §4.4).
var snapshotStorages = map[string]bool{"minio": true, "s3": true, "object-store": true, "objectstore": true}

// specSnapshot checks a snapshot request's tool, targetStorage and path and
// returns the name the snapshot is stored under: the path's file name when
// a path is given, else the label.
func specSnapshot(req *memoryv1.CreateSnapshotRequest, label string) (string, error) {
	if err := checkSpecTool(req.GetTool(), "memory-snapshot"); err != nil {
		return "", err
	}
	if ts := req.GetTargetStorage(); ts != "" && !snapshotStorages[strings.ToLower(ts)] {
		return "", invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, "targetStorage",
			fmt.Sprintf("targetStorage %q: snapshots are stored in the object store; use \"minio\" (also \"s3\", \"object-store\") or leave it out", ts))
	}
	path := req.GetPath()
	if path == "" {
		return label, nil
	}
	dir := snapshotPrefix + req.GetAgentId() + "/"
	name, ok := strings.CutSuffix(strings.TrimPrefix(path, dir), ".tar.gz")
	if !strings.HasPrefix(path, dir) || !ok || strings.Contains(name, "/") || !labelRe.MatchString(name) || strings.Contains(name, "..") {
		return "", invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_PATH, "path",
			fmt.Sprintf("path %q: snapshots of %s are stored at %s<name>.tar.gz, <name> 1-100 of A-Z a-z 0-9 . _ - starting with a letter or digit; use such a path or leave it out",
				path, req.GetAgentId(), dir))
	}
	return name, nil
}

// snapshotResponse answers CreateSnapshot with the spec's top-level fields
// beside `snapshot`.
func snapshotResponse(s *memoryv1.Snapshot) *memoryv1.CreateSnapshotResponse {
	return &memoryv1.CreateSnapshotResponse{Snapshot: s, SnapshotId: s.GetSnapshotId(), AgentId: s.GetAgentId(),
		CreatedAt: s.GetCreatedAt(), GitCommit: s.GetGitCommit(), Size: s.GetSize(), StoredAt: s.GetStoredAt(), Restorable: s.GetRestorable()}
}
