package proposalapply

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/blob"
)

// A bundle restore equals the original, commit for commit.
func TestGitBackupRestoresCommitForCommit(t *testing.T) {
	e := newEnv(t, autoApprove)
	for i := range 3 {
		resp := e.propose(&memoryv1.ProposeRequest{AgentId: "bk", RunId: fmt.Sprintf("run_%d", i),
			Updates: []*memoryv1.FileUpdate{appendFact("D", fmt.Sprintf("- backed up fact %d", i))}})
		e.waitApplied(resp.GetProposalId())
	}
	_, err := e.client.CreateBackup(e.service(), &memoryv1.CreateBackupRequest{})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "backups are for admins")
	resp, err := e.client.CreateBackup(e.as("root", adminRole()), &memoryv1.CreateBackupRequest{})
	require.NoError(t, err)
	require.Equal(t, readURL(t, resp.GetStoredAt()), mustGet(t, e, BackupKey), "storedAt opens the bundle written")
	require.Equal(t, strings.TrimSpace(e.git("rev-parse", "main")), resp.GetHeadCommit())
	require.Positive(t, resp.GetSizeBytes())

	var dated int
	for info, err := range e.blobs.List(context.Background(), "git-backup/") {
		require.NoError(t, err)
		if info.Key != BackupKey {
			dated++
		}
	}
	require.Equal(t, 1, dated, "a dated copy beside the latest")

	// The documented restore: git clone --mirror <bundle>.
	data, _, err := blob.GetBytes(context.Background(), e.blobs, BackupKey)
	require.NoError(t, err)
	dir := t.TempDir()
	bundle := filepath.Join(dir, "memory.bundle")
	require.NoError(t, os.WriteFile(bundle, data, 0o600))
	restored := filepath.Join(dir, "restored.git")
	out, err := exec.Command("git", "clone", "--quiet", "--mirror", bundle, restored).CombinedOutput()
	require.NoError(t, err, string(out))
	log := func(gitDir string) string {
		out, err := exec.Command("git", "--git-dir", gitDir, "log", "--format=%H %T %s", "main").CombinedOutput()
		require.NoError(t, err, string(out))
		return string(out)
	}
	require.Equal(t, log(e.repo.Path()), log(restored), "same commits, same trees")
	out, err = exec.Command("git", "--git-dir", restored, "fsck", "--strict").CombinedOutput()
	require.NoError(t, err, string(out))
}
