package episode_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/episode"
)

// docsProbeEpisode is the failed deploy docs/episodes.md shows as a run file.
const docsProbeEpisode = `{
  "episode_id": "ep-probe-1",
  "timestamp": "2026-01-12T08:30:00Z",
  "task_text": "Deploy payments-api 1.14 to staging",
  "summary": "Rollout stalled: new pods never became ready.",
  "used_skills": ["k8s-deploy", "Debugging"],
  "touched_artifacts": ["./deploy/k8s/payments-api/deployment.yaml"],
  "outcome": {"status": "failure", "severity": "medium"},
  "errors": ["error: deployment \"payments-api\" exceeded its progress deadline", "Readiness probe failed: HTTP probe failed with statuscode: 404"],
  "fix": "Point the readiness probe at /healthz instead of /health",
  "tests": [{"name": "smoke", "result": "fail", "duration_ms": 1500}],
  "environment": {"os": "linux", "runtime": "kubectl 1.33", "tooling": ["helm 3.16"]},
  "context": "infra/k8s",
  "facts": ["payments-api serves readiness at /healthz"],
  "duration": "1100s"
}`

// What docs/episodes.md shows is what the code does: the example run file
// and the signature table.
func TestDocsMatchTheCode(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "episodes.md"))
	require.NoError(t, err)
	doc := string(raw)

	_, after, ok := strings.Cut(doc, "For example, a failed deploy:\n\n```markdown\n")
	require.True(t, ok, "the example run file is in the docs")
	shown, _, ok := strings.Cut(after, "```\n")
	require.True(t, ok)
	require.Equal(t, episode.Render(normalized(t, docsProbeEpisode)), shown)

	row := regexp.MustCompile("(?m)^\\| `(.+)` \\| `(.+)` \\|$")
	_, table, _ := strings.Cut(doc, "## Failure-mode signatures")
	rows := row.FindAllStringSubmatch(table, -1)
	require.GreaterOrEqual(t, len(rows), 5)
	for _, r := range rows {
		require.Equal(t, r[2], episode.FailureSignature(r[1]), r[1])
	}
}
