package proposalapply

import (
	"bytes"
	"context"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memsnapshot"
)

func replaceSnapshot(content string) *memoryv1.FileUpdate {
	return &memoryv1.FileUpdate{File: memlayout.SnapshotFile, Operation: memoryv1.Operation_OPERATION_REPLACE, Content: content}
}

func writeRun(id, content string) *memoryv1.FileUpdate {
	return &memoryv1.FileUpdate{File: "runs/run_" + id + ".md", Operation: memoryv1.Operation_OPERATION_WRITE_RUN, Content: content}
}

// restorable returns the agent's files a restore puts back, at main.
func (e *env) restorable(agent string) map[string][]byte {
	e.t.Helper()
	head, err := e.repo.Head(context.Background())
	require.NoError(e.t, err)
	files, err := e.svc.agentFiles(context.Background(), head, agent, true)
	require.NoError(e.t, err)
	return onlyRestorable(e.t, agent, files)
}

func onlyRestorable(t testing.TB, agent string, files map[string][]byte) map[string][]byte {
	out := map[string][]byte{}
	for path, data := range files {
		f, err := memlayout.Resolve(agent, strings.TrimPrefix(path, memlayout.AgentDir(agent)))
		require.NoError(t, err)
		if memlayout.Restorable(f.Kind) {
			out[path] = data
		}
	}
	return out
}

// A snapshot taken, the memory then changed, and the snapshot restored gives
// back the snapshot's files exactly, in one commit.
func TestSnapshotRestoreGivesBackTheFilesInOneCommit(t *testing.T) {
	e := newEnv(t, autoApprove)
	admin := e.as("root", adminRole())
	for _, u := range [][]*memoryv1.FileUpdate{
		{replaceSnapshot("# Snapshot: snap\n\nBefore the migration.\n"), appendFact("Stack", "- Go 1.26")},
		{writeRun("a1", "# Run a1\n\nDid things.\n")},
	} {
		e.waitApplied(e.propose(&memoryv1.ProposeRequest{AgentId: "snap", RunId: "r", Updates: u}).GetProposalId())
	}
	before := e.restorable("snap")

	// Errors first: each is precise and writes nothing.
	_, err := e.client.CreateSnapshot(e.service(), &memoryv1.CreateSnapshotRequest{AgentId: "snap"})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "snapshots are for admins")
	_, err = e.client.CreateSnapshot(admin, &memoryv1.CreateSnapshotRequest{AgentId: "snap", Label: "../escape"})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	_, err = e.client.CreateSnapshot(admin, &memoryv1.CreateSnapshotRequest{AgentId: "nobody"})
	require.Equal(t, codes.NotFound, status.Code(err))
	_, err = e.client.CreateSnapshot(admin, &memoryv1.CreateSnapshotRequest{AgentId: "snap", Commit: "no-such-rev"})
	require.Equal(t, codes.NotFound, status.Code(err))
	for _, err := range e.blobs.List(context.Background(), snapshotPrefix) {
		require.NoError(t, err)
		t.Fatal("a refused snapshot wrote an object")
	}

	head := strings.TrimSpace(e.git("rev-parse", "main"))
	resp, err := e.client.CreateSnapshot(admin, &memoryv1.CreateSnapshotRequest{AgentId: "snap", Label: "pre-migration", IncludeRuns: true})
	require.NoError(t, err)
	snap := resp.GetSnapshot()
	require.Equal(t, "snapshot_pre-migration", snap.GetSnapshotId())
	require.Equal(t, head, snap.GetGitCommit())
	// storedAt is a URL that opens the object written (issue #23 point 7).
	require.Equal(t, "file://"+filepath.ToSlash(filepath.Join(e.dir, "objects", "data", "memory-snapshots", "snap", "pre-migration.tar.gz")), snap.GetStoredAt())
	require.Equal(t, readURL(t, snap.GetStoredAt()), mustGet(t, e, "memory-snapshots/snap/pre-migration.tar.gz"))
	require.True(t, snap.GetRestorable())
	require.Positive(t, snap.GetSizeBytes())
	require.True(t, strings.HasSuffix(snap.GetSize(), "B"), snap.GetSize())
	_, err = e.client.CreateSnapshot(admin, &memoryv1.CreateSnapshotRequest{AgentId: "snap", Label: "pre-migration"})
	require.Equal(t, codes.AlreadyExists, status.Code(err), "labels are not overwritten")

	// The archive is a plain tar.gz of memory/snap/ at that commit.
	data, _, err := blob.GetBytes(context.Background(), e.blobs, "memory-snapshots/snap/pre-migration.tar.gz")
	require.NoError(t, err)
	archived, err := memsnapshot.Read(bytes.NewReader(data))
	require.NoError(t, err)
	require.Contains(t, archived, "memory/snap/meta.json")
	require.Contains(t, archived, "memory/snap/runs/run_a1.md")
	require.True(t, maps.EqualFunc(before, onlyRestorable(t, "snap", archived), bytes.Equal))

	list, err := e.client.ListSnapshots(admin, &memoryv1.ListSnapshotsRequest{AgentId: "snap"})
	require.NoError(t, err)
	require.Len(t, list.GetSnapshots(), 1)
	require.Equal(t, snap.GetGitCommit(), list.GetSnapshots()[0].GetGitCommit())
	require.True(t, list.GetSnapshots()[0].GetRestorable())
	_, err = e.client.ListSnapshots(admin, &memoryv1.ListSnapshotsRequest{AgentId: "snap", PageSize: 501})
	require.Equal(t, codes.InvalidArgument, status.Code(err), "pageSize is checked like every other list's")

	// The memory changes: new facts, a new snapshot.md, a new run, a decision.
	e.waitApplied(e.propose(&memoryv1.ProposeRequest{AgentId: "snap", RunId: "r2", Updates: []*memoryv1.FileUpdate{
		replaceSnapshot("# Snapshot: snap\n\nAfter the migration.\n"), appendFact("Stack", "- Postgres 18"),
		writeRun("b2", "# Run b2\n"),
		{File: memlayout.DecisionsFile, Operation: memoryv1.Operation_OPERATION_ADD_DECISION, Decision: &memoryv1.Decision{Title: "Migrate", Decision: "Do it"}},
	}}).GetProposalId())
	require.NotEqual(t, before, e.restorable("snap"))
	version := e.meta("snap").Version
	commits := e.commitCount()

	_, err = e.client.RestoreSnapshot(e.reviewer(), &memoryv1.RestoreSnapshotRequest{AgentId: "snap", SnapshotId: "snapshot_pre-migration"})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "restores are for admins")
	_, err = e.client.RestoreSnapshot(admin, &memoryv1.RestoreSnapshotRequest{AgentId: "snap", SnapshotId: "snapshot_nope"})
	require.Equal(t, codes.NotFound, status.Code(err))

	restore, err := e.client.RestoreSnapshot(admin, &memoryv1.RestoreSnapshotRequest{AgentId: "snap", SnapshotId: "snapshot_pre-migration"})
	require.NoError(t, err)
	p := restore.GetProposal().GetProposal()
	ops := map[string]memoryv1.Operation{}
	for _, u := range p.GetUpdates() {
		ops[u.GetFile()] = u.GetOperation()
	}
	require.Equal(t, map[string]memoryv1.Operation{
		memlayout.SnapshotFile:  memoryv1.Operation_OPERATION_RESTORE,
		memlayout.FactsFile:     memoryv1.Operation_OPERATION_RESTORE,
		memlayout.DecisionsFile: memoryv1.Operation_OPERATION_DELETE, // the snapshot had none
		"runs/run_b2.md":        memoryv1.Operation_OPERATION_DELETE,
	}, ops)
	e.waitApplied(p.GetProposalId())

	require.Equal(t, commits+1, e.commitCount(), "one commit")
	require.True(t, maps.EqualFunc(before, e.restorable("snap"), bytes.Equal), "the snapshot's files, exactly")
	require.Equal(t, version+1, e.meta("snap").Version, "history goes on: the restore is the next version")
	require.Contains(t, e.git("log", "-1", "--format=%B", "main"), "Restore snapshot pre-migration", "the commit says what it restored")

	_, err = e.client.RestoreSnapshot(admin, &memoryv1.RestoreSnapshotRequest{AgentId: "snap", SnapshotId: "pre-migration"})
	require.Equal(t, codes.FailedPrecondition, status.Code(err), "nothing left to restore")
}

// Restore and delete operations are the service's own: agents cannot propose them.
func TestRestoreOperationsAreNotProposable(t *testing.T) {
	e := newEnv(t, autoApprove)
	for _, op := range []memoryv1.Operation{memoryv1.Operation_OPERATION_RESTORE, memoryv1.Operation_OPERATION_DELETE} {
		_, err := e.client.Propose(e.service(), &memoryv1.ProposeRequest{AgentId: "x", RunId: "r",
			Updates: []*memoryv1.FileUpdate{{File: memlayout.FactsFile, Operation: op, Content: "- y"}}})
		require.Equal(t, codes.InvalidArgument, status.Code(err), op.String())
	}
}

// readURL opens a file:// URL as a person would: the path it names.
func readURL(t *testing.T, raw string) []byte {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	require.Equal(t, "file", u.Scheme)
	data, err := os.ReadFile(filepath.FromSlash(u.Path))
	require.NoError(t, err)
	return data
}

func mustGet(t *testing.T, e *env, key string) []byte {
	t.Helper()
	data, _, err := blob.GetBytes(context.Background(), e.blobs, key)
	require.NoError(t, err)
	return data
}
