package proposalapply

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/blob"
)

// Runs older than the retention move to the archive and leave the repo in one commit.
func TestRunRotationArchivesOldRunsInOneCommit(t *testing.T) {
	e := newEnv(t, autoApprove)
	admin := e.as("root", adminRole())
	write := func(agent, id, content string) {
		e.waitApplied(e.propose(&memoryv1.ProposeRequest{AgentId: agent, RunId: id, Updates: []*memoryv1.FileUpdate{writeRun(id, content)}}).GetProposalId())
	}
	write("rot", "old", "# Run old\n\nFebruary's work.\n") // 2026-02-17
	write("other", "old", "# Run other\n")
	e.clock.Advance(60 * 24 * time.Hour)
	write("rot", "mid", "# Run mid\n")
	e.clock.Advance(40 * 24 * time.Hour) // old: 100 days, mid: 40 days

	_, err := e.client.RotateRuns(e.service(), &memoryv1.RotateRunsRequest{})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	_, err = e.client.RotateRuns(admin, &memoryv1.RotateRunsRequest{AgentId: "Not A Slug"})
	require.Equal(t, codes.InvalidArgument, status.Code(err))

	commits := e.commitCount()
	resp, err := e.client.RotateRuns(admin, &memoryv1.RotateRunsRequest{AgentId: "rot"})
	require.NoError(t, err)
	require.Equal(t, []string{"memory-archive/rot/runs/2026/02/run_old.md"}, resp.GetArchived())
	require.Len(t, resp.GetProposals(), 1)
	p := e.waitApplied(resp.GetProposals()[0].GetProposalId())
	require.Equal(t, rotationActor, p.GetProposedBy())
	require.Equal(t, commits+1, e.commitCount(), "one commit")

	data, _, err := blob.GetBytes(context.Background(), e.blobs, "memory-archive/rot/runs/2026/02/run_old.md")
	require.NoError(t, err)
	require.Equal(t, "# Run old\n\nFebruary's work.\n", string(data))
	files := e.git("ls-tree", "-r", "--name-only", "main", "memory/")
	require.NotContains(t, files, "memory/rot/runs/run_old.md")
	require.Contains(t, files, "memory/rot/runs/run_mid.md", "younger runs stay")
	require.Contains(t, files, "memory/other/runs/run_old.md", "only the agent asked for")
	require.Contains(t, e.git("log", "-1", "--format=%B", "main"), "Run rotation")

	// Every agent, and nothing twice.
	resp, err = e.client.RotateRuns(admin, &memoryv1.RotateRunsRequest{})
	require.NoError(t, err)
	require.Equal(t, []string{"memory-archive/other/runs/2026/02/run_old.md"}, resp.GetArchived())
	e.waitApplied(resp.GetProposals()[0].GetProposalId())
	resp, err = e.client.RotateRuns(admin, &memoryv1.RotateRunsRequest{})
	require.NoError(t, err)
	require.Empty(t, resp.GetProposals())
	require.False(t, strings.Contains(e.git("ls-tree", "-r", "--name-only", "main"), "run_old"))
}
