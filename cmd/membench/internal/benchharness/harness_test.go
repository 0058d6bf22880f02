package benchharness

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testLog sends the harness's progress to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestPerfSmoke runs the whole harness on a tiny data set: it builds
// memoryd, generates 5 agents and 50 commits, runs every scenario for
// 300 ms on both deployments and the floors, and writes the reports.
func TestPerfSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs memoryd")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var md strings.Builder
	rep, err := Run(ctx, Options{Agents: 5, Commits: 50, Duration: 300 * time.Millisecond, Warmup: 100 * time.Millisecond,
		ScaleDuration: 300 * time.Millisecond, ReadyTimeout: 30 * time.Second, Scales: "none", Work: t.TempDir(), Out: out,
		Log: testLog{t}, Stdout: &md})
	require.NoError(t, err)
	require.Len(t, rep.Runs, 2)
	for _, run := range rep.Runs {
		require.Empty(t, run.Note, run.Name)
		require.True(t, run.ColdStart.Ready, "%s: %s", run.Name, run.ColdStart.Note)
		require.Len(t, run.Scenarios, len(readScenarios)+3, run.Name)
		for _, s := range run.Scenarios {
			require.Zero(t, s.Errors, "%s %s %s: %s", run.Name, s.Name, s.Transport, s.FirstError)
			require.Positive(t, s.Requests, "%s %s %s", run.Name, s.Name, s.Transport)
			require.Positive(t, s.Latency.P95, "%s %s %s", run.Name, s.Name, s.Transport)
			if s.Name == ScReadBasic || s.Name == ScSearch {
				require.NotNil(t, s.Floor, s.Name)
				require.Positive(t, s.Floor.P95Ratio)
			}
		}
		require.NotNil(t, run.Restart, run.Name)
		require.True(t, run.Restart.Ready, "%s restart: %s", run.Name, run.Restart.Note)
		require.NotNil(t, run.NewReplica, run.Name)
		require.True(t, run.NewReplica.Ready, "%s new replica: %s", run.Name, run.NewReplica.Note)
		require.NotEmpty(t, run.ColdStart.Procs)
		require.Equal(t, 5, run.ColdStart.PrimedAgents)
	}
	require.Len(t, rep.Floors, len(floorMethods))
	for _, f := range rep.Floors {
		require.Zero(t, f.Errors, "%s: %s", f.Scenario, f.FirstError)
		require.Positive(t, f.RespBytes)
	}
	for _, name := range []string{"latest.json", "latest.md"} {
		_, err := os.Stat(filepath.Join(out, name))
		require.NoError(t, err)
	}
	require.Contains(t, md.String(), "| ReadMemory basic | grpc |")
	require.Contains(t, md.String(), "SKIP cold start to serving")
	var statuses []string
	for _, b := range rep.Budgets {
		statuses = append(statuses, b.Status)
	}
	require.Contains(t, statuses, "SKIP")
}

// A deployment waits to serve at most what is left of the time budget,
// less what the run needs afterwards, and never less than a floor.
func TestReadyTimeoutFollowsTimeBudget(t *testing.T) {
	at := func(budget, elapsed time.Duration) (time.Duration, bool) {
		h := &harness{opts: Options{ReadyTimeout: 5 * time.Minute, TimeBudget: budget}, start: time.Now().Add(-elapsed)}
		return h.readyTimeout()
	}
	d, capped := at(0, time.Hour)
	require.Equal(t, 5*time.Minute, d, "no budget")
	require.False(t, capped)
	d, capped = at(15*time.Minute, 2*time.Minute)
	require.Equal(t, 5*time.Minute, d, "plenty left")
	require.False(t, capped)
	d, capped = at(15*time.Minute, 10*time.Minute)
	require.Equal(t, 5*time.Minute-budgetReserve, d)
	require.True(t, capped)
	d, capped = at(15*time.Minute, 15*time.Minute)
	require.Equal(t, minReadyTimeout, d, "over budget")
	require.True(t, capped)
}
