package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
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
	p := startBinaryEnv(t, []string{"AWS_ACCESS_KEY_ID=" + access, "AWS_SECRET_ACCESS_KEY=" + secret}, dataDir,
		"--target=all", "--objects-url", url, "--auto-approve-default")
	objects, err := blob.NewS3(context.Background(), url, blobtest.MinIOEnv)
	require.NoError(t, err)

	d := &deployment{dataDir: dataDir, httpAddr: p.httpAddr}
	waitObjectStoreUp(t, d)
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

	// Reads: Layer 1 from git, with a warning for the object store (once
	// the listing of sources kept for up to a second is due again).
	var r *memoryv1.AssembleContextResponse
	require.Eventually(t, func() bool { r = assemble(); return len(r.GetWarnings()) > 0 }, 10*time.Second, 100*time.Millisecond,
		"a warning says what is missing")
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

// TestStartsWithoutObjectStore: a process (re)started while the object
// store is down starts and serves everything git can serve, health names
// the degraded dependency, propose fails fast (≤ 1 s) with 503 +
// Retry-After (REST) and UNAVAILABLE + RetryInfo (gRPC), and everything
// resumes by itself once the store is back (issue #25 point 4).
func TestStartsWithoutObjectStore(t *testing.T) {
	minio := blobtest.NewMinIO(t)
	url := fmt.Sprintf("s3://degraded/memory?endpoint=%s&secure=false", minio.Addr)
	access, _ := blobtest.MinIOEnv("AWS_ACCESS_KEY_ID")
	secret, _ := blobtest.MinIOEnv("AWS_SECRET_ACCESS_KEY")
	s3Env := []string{"AWS_ACCESS_KEY_ID=" + access, "AWS_SECRET_ACCESS_KEY=" + secret}
	dataDir := t.TempDir()
	d := &deployment{dataDir: dataDir}
	var tok string
	var ctx context.Context
	propose := func(pa memoryv1.ProposalApplyServiceClient, run, fact string) (*memoryv1.ProposeResponse, error) {
		return pa.Propose(ctx, &memoryv1.ProposeRequest{AgentId: "degraded", RunId: run, Reasoning: "test", Updates: []*memoryv1.FileUpdate{
			{File: "facts.md", Operation: memoryv1.Operation_OPERATION_APPEND, Section: "Ops", Content: fact}}})
	}
	applied := func(pa memoryv1.ProposalApplyServiceClient, id string) {
		t.Helper()
		require.Eventually(t, func() bool {
			resp, err := pa.GetProposal(ctx, &memoryv1.GetProposalRequest{ProposalId: id})
			return err == nil && resp.GetProposal().GetStatus() == memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED
		}, 30*time.Second, 50*time.Millisecond, "proposal %s applied", id)
	}

	first := startBinaryEnv(t, s3Env, dataDir, "--target=all", "--objects-url", url, "--auto-approve-default")
	d.httpAddr = first.httpAddr
	waitObjectStoreUp(t, d)
	tok = token(t, d, auth.RoleAdmin, auth.RoleService, auth.RoleReviewer)
	ctx = metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
	pa := memoryv1.NewProposalApplyServiceClient(dial(t, first.grpcAddr))
	before, err := pa.Propose(ctx, &memoryv1.ProposeRequest{AgentId: "degraded", RunId: "r1", Reasoning: "seed", Updates: []*memoryv1.FileUpdate{
		{File: "snapshot.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "# Snapshot: degraded\n\nSeeded.\n"},
		{File: "facts.md", Operation: memoryv1.Operation_OPERATION_APPEND, Section: "Ops", Content: "- written before the outage"}}})
	require.NoError(t, err)
	applied(pa, before.GetProposalId())
	first.stop()
	minio.Stop()

	// It starts with the object store down.
	p := startBinaryEnv(t, s3Env, dataDir, "--target=all", "--objects-url", url, "--auto-approve-default")
	d.httpAddr = p.httpAddr
	conn := dial(t, p.grpcAddr)
	pa = memoryv1.NewProposalApplyServiceClient(conn)
	ca := memoryv1.NewContextAssemblyServiceClient(conn)
	require.Contains(t, p.logs(), "object store unavailable", "a warning says what is missing")

	// Everything git can serve is served.
	read, err := ca.ReadMemory(ctx, &memoryv1.ReadMemoryRequest{AgentId: "degraded", Mode: memoryv1.ReadMode_READ_MODE_WIDE})
	require.NoError(t, err)
	require.Contains(t, fmt.Sprint(read.GetContent()), "written before the outage", "%v", read)
	got, err := pa.GetProposal(ctx, &memoryv1.GetProposalRequest{ProposalId: before.GetProposalId()})
	require.NoError(t, err, "proposals are read from the local index")
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED, got.GetProposal().GetStatus())

	// Health: ready once caught up (reads were served before), with the
	// object store named as degraded — a dependency, not a readiness.
	var code int
	var health map[string]any
	require.Eventually(t, func() bool {
		code, health = jsonCall(t, d, "GET", "/health", "", "")
		return code == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "ready while the object store is down: %v", health)
	require.Equal(t, "SERVING", health["status"])
	deps, _ := health["dependencies"].(map[string]any)
	store, _ := deps["object-store"].(map[string]any)
	require.Equal(t, "UNAVAILABLE", store["status"], "health names the degraded dependency: %v", health)
	require.NotEmpty(t, store["error"])

	// Propose fails fast, with when to retry.
	for range 3 {
		start := time.Now()
		_, err = propose(pa, "r2", "- written during the outage")
		require.Less(t, time.Since(start), time.Second, "propose fails within 1 s")
		require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
		require.Equal(t, "OBJECT_STORE_UNAVAILABLE", apierr.Info(err).GetReason(), "%v", err)
		var retry *errdetails.RetryInfo
		for _, det := range status.Convert(err).Details() {
			if ri, ok := det.(*errdetails.RetryInfo); ok {
				retry = ri
			}
		}
		require.NotNil(t, retry, "a RetryInfo says when to retry")
		require.Positive(t, retry.GetRetryDelay().AsDuration())

		start = time.Now()
		r := edgeCall(t, d, "POST", "/memory/degraded/propose", strings.NewReader(
			`{"runId":"r3","updates":[{"file":"facts.md","operation":"append","section":"Ops","content":"- via REST"}]}`), tok)
		require.Less(t, time.Since(start), time.Second, "REST propose fails within 1 s")
		require.Equal(t, http.StatusServiceUnavailable, r.status, r.raw)
		require.NotEmpty(t, r.header.Get("Retry-After"), "every 503 says when to retry")
	}

	// A read replica following the repository starts too.
	replica := startBinary(t, t.TempDir(), "--target=read", "--objects-url", url, "--auth-secret-file", filepath.Join(dataDir, "auth.secret"),
		"--repo-mirror-url", filepath.Join(dataDir, "memory.git"), "--proposal-apply-addr", p.grpcAddr)
	replicaCA := memoryv1.NewContextAssemblyServiceClient(dial(t, replica.grpcAddr))
	var rread *memoryv1.ReadMemoryResponse
	// The mirror is fetched in the background after start: UNAVAILABLE
	// (with RetryInfo) until the first fetch lands.
	require.Eventually(t, func() bool {
		rread, err = replicaCA.ReadMemory(ctx, &memoryv1.ReadMemoryRequest{AgentId: "degraded", Mode: memoryv1.ReadMode_READ_MODE_WIDE})
		return err == nil
	}, 30*time.Second, 50*time.Millisecond, "the replica serves reads: %v", err)
	require.Contains(t, fmt.Sprint(rread.GetContent()), "written before the outage")

	// The store comes back: writes resume by themselves, health clears.
	require.NoError(t, minio.Start())
	var after *memoryv1.ProposeResponse
	require.Eventually(t, func() bool {
		after, err = propose(pa, "r2", "- written after the outage")
		return err == nil
	}, 30*time.Second, 200*time.Millisecond)
	applied(pa, after.GetProposalId())
	require.Eventually(t, func() bool {
		_, health := jsonCall(t, d, "GET", "/health", "", "")
		deps, _ := health["dependencies"].(map[string]any)
		store, _ := deps["object-store"].(map[string]any)
		return store["status"] == "SERVING"
	}, 10*time.Second, 100*time.Millisecond)
	list, err := pa.ListProposals(ctx, &memoryv1.ListProposalsRequest{AgentId: "degraded"})
	require.NoError(t, err)
	require.Len(t, list.GetProposals(), 2, "the two acknowledged proposals, nothing else")
}

// mountSmallDisk mounts a tmpfs of size bytes on a new folder, unmounted
// at the end of the test; it skips where mounting is not allowed.
func mountSmallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small filesystem here (%v: %s)", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fillDisk writes a file until the filesystem is full and returns its path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }() // it only has to take the space
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			require.ErrorIs(t, err, syscall.ENOSPC)
			break
		}
	}
	// Small writes may still find room in partly used blocks; take those too.
	for {
		if _, err := f.Write(chunk[:512]); err != nil {
			break
		}
	}
	return path
}

// TestDiskFull: with the data dir's disk full, writes answer 503 with
// Retry-After, nothing is half-written (git and the proposals are as
// before), reads go on, and once space returns writes resume by themselves
// (issue #25 point 4).
func TestDiskFull(t *testing.T) {
	dataDir := mountSmallDisk(t, "64m")
	d := &deployment{dataDir: dataDir}
	p := startBinary(t, dataDir, "--target=all", "--auto-approve-default")
	d.httpAddr = p.httpAddr
	tok := token(t, d, auth.RoleAdmin, auth.RoleService, auth.RoleReviewer)
	propose := func(run, fact string) edgeResponse {
		return edgeCall(t, d, "POST", "/memory/full-disk/propose", strings.NewReader(fmt.Sprintf(
			`{"runId":%q,"updates":[{"file":"facts.md","operation":"append","section":"Ops","content":%q}]}`, run, fact)), tok)
	}
	applied := func(id string) {
		t.Helper()
		require.Eventually(t, func() bool {
			_, got := jsonCall(t, d, "GET", "/proposals/"+id, "", tok)
			return got["status"] == "applied"
		}, 30*time.Second, 50*time.Millisecond, "proposal %s applied", id)
	}
	seed := edgeCall(t, d, "POST", "/memory/full-disk/propose", strings.NewReader(
		`{"runId":"r0","updates":[{"file":"snapshot.md","operation":"replace","content":"# Snapshot: full-disk\n\nSeeded.\n"},`+
			`{"file":"facts.md","operation":"append","section":"Ops","content":"- written before the disk filled"}]}`), tok)
	require.Equal(t, http.StatusOK, seed.status, seed.raw)
	var first struct {
		ProposalID string `json:"proposalId"`
	}
	require.NoError(t, json.Unmarshal([]byte(seed.raw), &first))
	applied(first.ProposalID)
	head := revParse(t, filepath.Join(dataDir, "memory.git"), "main")
	_, list := jsonCall(t, d, "GET", "/proposals?agent=full-disk", "", tok)
	require.Len(t, list["proposals"], 1)

	filler := fillDisk(t, dataDir)
	for i := range 3 {
		start := time.Now()
		r := propose(fmt.Sprintf("r%d", i+1), "- written on a full disk")
		require.Less(t, time.Since(start), time.Second, "a full disk is answered at once")
		require.Equal(t, http.StatusServiceUnavailable, r.status, r.raw)
		require.NotEmpty(t, r.header.Get("Retry-After"), r.raw)
		require.Contains(t, r.err.Message, "disk is full", "the answer says what to fix")
	}
	// Nothing half-written: main and the proposals are as before, and the
	// repository is sound.
	require.Equal(t, head, revParse(t, filepath.Join(dataDir, "memory.git"), "main"))
	_, list = jsonCall(t, d, "GET", "/proposals?agent=full-disk", "", tok)
	require.Len(t, list["proposals"], 1, "no proposal was half-stored")
	out, err := exec.Command("git", "--git-dir", filepath.Join(dataDir, "memory.git"), "fsck", "--no-progress").CombinedOutput()
	require.NoError(t, err, "%s", out)
	// Reads go on.
	r := edgeCall(t, d, "GET", "/memory/full-disk/read?mode=wide", nil, tok)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	require.Contains(t, r.raw, "written before the disk filled")

	// Space returns: writes resume by themselves.
	require.NoError(t, os.Remove(filler))
	var after struct {
		ProposalID string `json:"proposalId"`
	}
	require.Eventually(t, func() bool {
		r := propose("r9", "- written after space returned")
		return r.status == http.StatusOK && json.Unmarshal([]byte(r.raw), &after) == nil
	}, 30*time.Second, 200*time.Millisecond)
	applied(after.ProposalID)
	r = edgeCall(t, d, "GET", "/memory/full-disk/read?mode=wide", nil, tok)
	require.Contains(t, r.raw, "written after space returned")
}

// waitObjectStoreUp waits until /health reports the object store
// available. A process whose first probe of a just-started MinIO times out
// (a loaded machine) starts with the store down and finds it again within
// a second; the outage tests begin from a store that is up.
func waitObjectStoreUp(t *testing.T, d *deployment) {
	t.Helper()
	var health map[string]any
	require.Eventually(t, func() bool {
		_, health = jsonCall(t, d, "GET", "/health", "", "")
		deps, _ := health["dependencies"].(map[string]any)
		store, _ := deps["object-store"].(map[string]any)
		return store["status"] == "SERVING"
	}, 30*time.Second, 50*time.Millisecond, "the object store is up: %v", health)
}
