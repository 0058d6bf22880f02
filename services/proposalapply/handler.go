package proposalapply

import (
	"context"

	"github.com/garden-bloom/memory/pkg/apierr"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// handler implements the gRPC methods; it stays thin and delegates to the Service.
type handler struct {
	memoryv1.UnimplementedProposalApplyServiceServer
	svc *Service
}

// Propose: propose-memory-update arrives with issue #3.
func (h *handler) Propose(context.Context, *memoryv1.ProposeRequest) (*memoryv1.ProposeResponse, error) {
	return nil, apierr.NotImplemented("propose-memory-update", 3)
}

// GetProposal: proposal lookup arrives with issue #3.
func (h *handler) GetProposal(context.Context, *memoryv1.GetProposalRequest) (*memoryv1.GetProposalResponse, error) {
	return nil, apierr.NotImplemented("proposal lookup", 3)
}

// ListProposals: proposal listing arrives with issue #3.
func (h *handler) ListProposals(context.Context, *memoryv1.ListProposalsRequest) (*memoryv1.ListProposalsResponse, error) {
	return nil, apierr.NotImplemented("proposal listing", 3)
}

// ApproveProposal: proposal approval arrives with issue #3.
func (h *handler) ApproveProposal(context.Context, *memoryv1.ApproveProposalRequest) (*memoryv1.ApproveProposalResponse, error) {
	return nil, apierr.NotImplemented("proposal approval", 3)
}

// RejectProposal: proposal rejection arrives with issue #3.
func (h *handler) RejectProposal(context.Context, *memoryv1.RejectProposalRequest) (*memoryv1.RejectProposalResponse, error) {
	return nil, apierr.NotImplemented("proposal rejection", 3)
}

// RetryProposal: proposal retry arrives with issue #3.
func (h *handler) RetryProposal(context.Context, *memoryv1.RetryProposalRequest) (*memoryv1.RetryProposalResponse, error) {
	return nil, apierr.NotImplemented("proposal retry", 3)
}

// GetAgentPolicy: agent write policy arrives with issue #3.
func (h *handler) GetAgentPolicy(context.Context, *memoryv1.GetAgentPolicyRequest) (*memoryv1.GetAgentPolicyResponse, error) {
	return nil, apierr.NotImplemented("agent write policy", 3)
}

// CreateSnapshot: memory-snapshot arrives with issue #7.
func (h *handler) CreateSnapshot(context.Context, *memoryv1.CreateSnapshotRequest) (*memoryv1.CreateSnapshotResponse, error) {
	return nil, apierr.NotImplemented("memory-snapshot", 7)
}

// ListSnapshots: snapshot listing arrives with issue #7.
func (h *handler) ListSnapshots(context.Context, *memoryv1.ListSnapshotsRequest) (*memoryv1.ListSnapshotsResponse, error) {
	return nil, apierr.NotImplemented("snapshot listing", 7)
}

// RestoreSnapshot: snapshot restore arrives with issue #7.
func (h *handler) RestoreSnapshot(context.Context, *memoryv1.RestoreSnapshotRequest) (*memoryv1.RestoreSnapshotResponse, error) {
	return nil, apierr.NotImplemented("snapshot restore", 7)
}

// CreateBackup: git backup arrives with issue #7.
func (h *handler) CreateBackup(context.Context, *memoryv1.CreateBackupRequest) (*memoryv1.CreateBackupResponse, error) {
	return nil, apierr.NotImplemented("git backup", 7)
}

// SyncRemote: remote sync (push) arrives with issue #3.
func (h *handler) SyncRemote(context.Context, *memoryv1.SyncRemoteRequest) (*memoryv1.SyncRemoteResponse, error) {
	return nil, apierr.NotImplemented("remote sync (push)", 3)
}

// ReportFactUsage: fact usage reports arrives with issue #5.
func (h *handler) ReportFactUsage(context.Context, *memoryv1.ReportFactUsageRequest) (*memoryv1.ReportFactUsageResponse, error) {
	return nil, apierr.NotImplemented("fact usage reports", 5)
}

// WatchCommits: the commit stream arrives with issue #3.
func (h *handler) WatchCommits(*memoryv1.WatchCommitsRequest, memoryv1.ProposalApplyService_WatchCommitsServer) error {
	return apierr.NotImplemented("the commit stream", 3)
}
