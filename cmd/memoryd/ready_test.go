package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
)

// healthReport is GET /health as a client reads it.
type healthReport struct {
	Status  string
	Modules map[string]struct{ Status, Reason string }
}

func getHealth(t *testing.T, httpAddr string) (int, healthReport) {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/health")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	var rep healthReport
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&rep))
	return resp.StatusCode, rep
}

// addCommits appends n commits to main of the bare repository at gitDir
// with git fast-import, as a person (or another writer) would: each adds a
// fact to one of 50 agents; the last one's fact names marker.
func addCommits(t *testing.T, gitDir string, n int, marker string) {
	t.Helper()
	var in strings.Builder
	facts := map[int]string{}
	for i := 1; i <= n; i++ {
		agent := i % 50
		word := fmt.Sprintf("fact%04d", i)
		if i == n {
			word = marker
		}
		facts[agent] += fmt.Sprintf("- Observation %d mentions %s\n", i, word)
		body := "# Facts\n\n## Notes\n\n" + facts[agent]
		fmt.Fprintf(&in, "commit refs/heads/main\ncommitter Person <person@example.org> %d +0000\ndata 9\nbackfill\n", 1_780_000_000+i)
		if i == 1 {
			fmt.Fprintf(&in, "from refs/heads/main^0\n")
		}
		fmt.Fprintf(&in, "M 100644 inline memory/agent-%02d/facts.md\ndata %d\n%s\n", agent, len(body), body)
	}
	cmd := exec.Command("git", "--git-dir", gitDir, "fast-import", "--quiet")
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
}

// Issue #26, "health means ready": after a restart, /health shows the
// search index (and the graph) as not ready while they catch up with the
// commits made while the process was down — with the reason — and the
// gRPC health of their services says NOT_SERVING; then everything is
// ready, and what the last commit says is searchable.
func TestHealthIsNotReadyWhileCatchingUpAfterRestart(t *testing.T) {
	dataDir := t.TempDir()
	a, stop := runInProcess(t, dataDir)
	require.Eventually(t, func() bool { code, _ := getHealth(t, a.HTTPAddr()); return code == http.StatusOK },
		30*time.Second, 20*time.Millisecond, "a fresh process becomes ready")
	// The repository has a commit of its own (the engine's first), so
	// fast-import continues main.
	stop()

	// While it is down, 3,000 commits land on main (a person's import).
	addCommits(t, filepath.Join(dataDir, "memory.git"), 3000, "quokka")

	a, _ = runInProcess(t, dataDir)
	// The listener is bound by New: this first request is answered as
	// soon as the process serves, long before 3,000 commits are indexed.
	code, rep := getHealth(t, a.HTTPAddr())
	require.Equal(t, http.StatusServiceUnavailable, code, "%+v", rep)
	require.Equal(t, "NOT_SERVING", rep.Status)
	idx := rep.Modules["search-index"]
	require.Equal(t, "NOT_SERVING", idx.Status, "%+v", rep.Modules)
	require.Contains(t, idx.Reason, "catching up")
	require.Equal(t, "SERVING", rep.Modules["gateway"].Status, "%+v", rep.Modules)

	// gRPC health follows the module's readiness.
	conn := dial(t, a.GRPCAddr())
	hc := healthpb.NewHealthClient(conn)
	var sawNotServing bool
	require.Eventually(t, func() bool {
		resp, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{Service: memoryv1.SearchIndexService_ServiceDesc.ServiceName})
		if err != nil {
			return false
		}
		if resp.GetStatus() == healthpb.HealthCheckResponse_NOT_SERVING {
			sawNotServing = true
		}
		return resp.GetStatus() == healthpb.HealthCheckResponse_SERVING
	}, 120*time.Second, 10*time.Millisecond, "search-index becomes SERVING over gRPC once caught up")

	require.Eventually(t, func() bool { code, rep = getHealth(t, a.HTTPAddr()); return code == http.StatusOK },
		120*time.Second, 20*time.Millisecond, "ready once caught up")
	for name, m := range rep.Modules {
		require.Equal(t, "SERVING", m.Status, "%s: %s", name, m.Reason)
	}
	for _, name := range []string{"proposal-apply", "entity-graph", "search-index", "context-assembly", "gateway", "read-repo"} {
		require.Contains(t, rep.Modules, name)
	}
	t.Logf("gRPC health was seen NOT_SERVING before SERVING: %v", sawNotServing)

	// Ready means caught up: the last commit's words are found.
	d := &deployment{httpAddr: a.HTTPAddr(), dataDir: dataDir}
	code2, res := jsonCall(t, d, "GET", "/memory/search?q=quokka&agent_id=agent-00", "", token(t, d, auth.RoleService))
	require.Equal(t, http.StatusOK, code2, "%v", res)
	require.NotEmpty(t, res["results"], "the last commit is indexed once ready")
	_, err := os.Stat(filepath.Join(dataDir, "search-index"))
	require.NoError(t, err)
}
