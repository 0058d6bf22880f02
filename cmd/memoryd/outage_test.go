package main

import (
	"context"
	"fmt"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/blob/blobtest"
)

// TestObjectStoreOutage stops the MinIO server under a running memoryd:
// reads still answer from git (Layer 1, with a warning for what is missing),
// writes that need the object store fail with Unavailable and change
// nothing, and once MinIO is back everything resumes with nothing lost.
func TestObjectStoreOutage(t *testing.T) {
	minio := blobtest.NewMinIO(t)
	url := fmt.Sprintf("s3://outage/memory?endpoint=%s&secure=false", minio.Addr)
	access, _ := blobtest.MinIOEnv("AWS_ACCESS_KEY_ID")
	secret, _ := blobtest.MinIOEnv("AWS_SECRET_ACCESS_KEY")
	dataDir := t.TempDir()
	extraEnv = []string{"AWS_ACCESS_KEY_ID=" + access, "AWS_SECRET_ACCESS_KEY=" + secret}
	p := startBinary(t, dataDir, "--target=all", "--objects-url", url, "--auto-approve-default")
	extraEnv = nil
	objects, err := blob.NewS3(context.Background(), url, blobtest.MinIOEnv)
	require.NoError(t, err)

	d := &deployment{dataDir: dataDir}
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization",
		"Bearer "+token(t, d, auth.RoleAdmin, auth.RoleService, auth.RoleReviewer))
	conn := dial(t, p.grpcAddr)
	pa := memoryv1.NewProposalApplyServiceClient(conn)
	ca := memoryv1.NewContextAssemblyServiceClient(conn)

	propose := func(fact string) (*memoryv1.ProposeResponse, error) {
		return pa.Propose(ctx, &memoryv1.ProposeRequest{AgentId: "outage", RunId: "r1", Reasoning: "test", Updates: []*memoryv1.FileUpdate{
			{File: "facts.md", Operation: memoryv1.Operation_OPERATION_APPEND, Section: "Ops", Content: fact}}})
	}
	applied := func(id string) {
		t.Helper()
		require.Eventually(t, func() bool {
			resp, err := pa.GetProposal(ctx, &memoryv1.GetProposalRequest{ProposalId: id})
			return err == nil && resp.GetProposal().GetStatus() == memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED
		}, 30*time.Second, 50*time.Millisecond, "proposal %s applied", id)
	}
	resp, err := propose("- the bucket holds sources")
	require.NoError(t, err)
	applied(resp.GetProposalId())
	_, err = blob.PutBytes(context.Background(), objects, "agents/outage/sources/runbook.md",
		[]byte("# Runbook\n\nRestart the collector when the queue grows.\n"), blob.PutOptions{})
	require.NoError(t, err)
	assemble := func() *memoryv1.AssembleContextResponse {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		resp, err := ca.AssembleContext(cctx, &memoryv1.AssembleContextRequest{AgentId: "outage", QueryHint: "collector queue", Budget: 20000})
		require.NoError(t, err)
		return resp
	}
	hasSource := func(r *memoryv1.AssembleContextResponse) bool {
		for _, s := range r.GetSections() {
			if strings.Contains(s.GetContent(), "Restart the collector") {
				return true
			}
		}
		return false
	}
	require.Eventually(t, func() bool { return hasSource(assemble()) }, 30*time.Second, 100*time.Millisecond, "the source is in context")
	commits := revParse(t, dataDir+"/memory.git", "main")

	minio.Stop()

	// Reads: Layer 1 from git, with a warning for the object store.
	r := assemble()
	require.NotEmpty(t, r.GetWarnings(), "a warning says what is missing")
	var layer1 bool
	for _, s := range r.GetSections() {
		layer1 = layer1 || strings.Contains(s.GetContent(), "the bucket holds sources")
	}
	require.True(t, layer1, "Layer 1 still answers: %v", r.GetSections())
	_, err = ca.ReadMemory(ctx, &memoryv1.ReadMemoryRequest{AgentId: "outage", Mode: memoryv1.ReadMode_READ_MODE_BASIC})
	require.NoError(t, err, "reads need git only")

	// Writes that need the object store: Unavailable, nothing changed.
	_, err = pa.CreateSnapshot(ctx, &memoryv1.CreateSnapshotRequest{AgentId: "outage", Label: "during-outage"})
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	_, err = propose("- written during the outage")
	require.Equal(t, codes.Unavailable, status.Code(err), "a proposal is durable in the object store before it is acknowledged: %v", err)
	require.Equal(t, commits, revParse(t, dataDir+"/memory.git", "main"), "nothing was committed")

	require.NoError(t, minio.Start())

	// Everything resumes: the retried proposal applies, snapshots work, the
	// source is back in context without a warning.
	require.Eventually(t, func() bool {
		resp, err = propose("- written during the outage")
		return err == nil
	}, 30*time.Second, 200*time.Millisecond)
	applied(resp.GetProposalId())
	snap, err := pa.CreateSnapshot(ctx, &memoryv1.CreateSnapshotRequest{AgentId: "outage", Label: "after-outage"})
	require.NoError(t, err)
	require.Equal(t, "s3://outage/memory/memory-snapshots/outage/after-outage.tar.gz", snap.GetSnapshot().GetStoredAt())
	// The URL names the object written: its bucket and key open it with
	// any S3 client (here ours, at the bucket's root).
	loc, err := neturl.Parse(snap.GetSnapshot().GetStoredAt())
	require.NoError(t, err)
	bucket, err := blob.NewS3(ctx, fmt.Sprintf("s3://%s?endpoint=%s&secure=false", loc.Host, minio.Addr), blobtest.MinIOEnv)
	require.NoError(t, err)
	archive, _, err := blob.GetBytes(ctx, bucket, strings.TrimPrefix(loc.Path, "/"))
	require.NoError(t, err)
	require.Equal(t, snap.GetSnapshot().GetSizeBytes(), int64(len(archive)))
	require.Eventually(t, func() bool {
		r := assemble()
		return hasSource(r) && len(r.GetWarnings()) == 0
	}, 30*time.Second, 200*time.Millisecond, "the source is back")
	list, err := pa.ListProposals(ctx, &memoryv1.ListProposalsRequest{AgentId: "outage"})
	require.NoError(t, err)
	require.Len(t, list.GetProposals(), 2, "both acknowledged proposals survived, nothing else")
}
