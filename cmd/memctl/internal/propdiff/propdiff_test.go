package propdiff

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

func files(m map[string]string) func(string) (string, bool, error) {
	return func(rel string) (string, bool, error) {
		s, ok := m[rel]
		return s, ok, nil
	}
}

// "proposals show renders the diff the proposal would commit": the
// proposal's own files first, as unified diffs, then the bookkeeping
// files every commit changes.
func TestRenderShowsTheCommitsDiff(t *testing.T) {
	p := &memoryv1.Proposal{ProposalId: "proposal_1", AgentId: "cur", RunId: "run_7", Reasoning: "a new fact",
		Updates: []*memoryv1.FileUpdate{
			{File: "facts.md", Operation: memoryv1.Operation_OPERATION_APPEND, Section: "Technical", Content: "- MinIO bucket mcpstorage has versioning on"},
			{File: "runs/run_7.md", Operation: memoryv1.Operation_OPERATION_WRITE_RUN, Content: "# Run 7\n\nDone.\n"},
		}}
	cur := map[string]string{
		"facts.md":  "# Facts: cur\n\n## Technical\n- The CI runs on two cores\n",
		"meta.json": `{"agentId":"cur","version":3}`,
	}
	res, err := Render(p, files(cur), time.Date(2026, 2, 17, 14, 30, 0, 0, time.UTC))
	require.NoError(t, err)
	var names []string
	for _, f := range res.Files {
		names = append(names, f.File)
	}
	require.Equal(t, []string{"facts.md", "runs/run_7.md", "changelog.md", "meta.json", "timeline/2026-02-17.md"}, names)
	require.False(t, res.Files[0].Bookkeeping)
	require.Contains(t, res.Files[0].Diff, "--- a/facts.md\n+++ b/facts.md\n")
	require.Contains(t, res.Files[0].Diff, "\n+- MinIO bucket mcpstorage has versioning on\n")
	require.Contains(t, res.Files[0].Diff, "\n - The CI runs on two cores\n", "context lines around the change")
	require.Equal(t, 1, res.Files[0].Added)
	require.Contains(t, res.Files[1].Diff, "--- /dev/null\n+++ b/runs/run_7.md\n")
	require.True(t, res.Files[3].Bookkeeping)
	require.Contains(t, res.Files[3].Diff, `"version": 4`)
}

// A proposal the apply would refuse is refused here with the same words.
func TestRenderRefusesWhatTheApplyWould(t *testing.T) {
	p := &memoryv1.Proposal{ProposalId: "proposal_2", AgentId: "cur", RunId: "run_8",
		Updates: []*memoryv1.FileUpdate{{File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_CLOSE, LoopId: "loop_999", Resolution: "done"}}}
	_, err := Render(p, files(map[string]string{"open_loops.md": "# Open Loops: cur\n"}), time.Now())
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "loop_999"), err.Error())
}
