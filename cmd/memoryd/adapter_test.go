package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/auth"
)

// testDiffMemAdapter drives the DiffMem adapter's /v1/memory paths (spec
// memory-subsystem-architecture, "API Contract") end to end through the edge.
func testDiffMemAdapter(t *testing.T, d *deployment) {
	svc := token(t, d, auth.RoleService)
	rev := token(t, d, auth.RoleReviewer)
	admin := token(t, d, auth.RoleAdmin)
	const base = "/v1/memory/adapter-agent"
	approve := func(resp map[string]any) {
		t.Helper()
		id, _ := resp["proposalId"].(string)
		require.NotEmpty(t, id, resp)
		code, appr := jsonCall(t, d, "POST", "/proposals/"+id+":approve", `{}`, rev)
		require.Equal(t, http.StatusOK, code, appr)
		require.Eventually(t, func() bool {
			_, got := jsonCall(t, d, "GET", "/proposals/"+id, "", svc)
			return got["status"] == "applied"
		}, 20*time.Second, 10*time.Millisecond)
	}

	code, onboard := jsonCall(t, d, "POST", base+"/onboard", `{}`, svc)
	require.Equal(t, http.StatusOK, code, onboard)
	approve(onboard)
	code, again := jsonCall(t, d, "POST", base+"/onboard", `{}`, svc)
	require.Equal(t, http.StatusConflict, code, again)

	code, staged := jsonCall(t, d, "POST", base+"/process-session", `{"runId":"run_s1","reasoning":"session",
	  "updates":[{"file":"facts.md","operation":"append","section":"Infra","content":"- [[Kafka]] carries the adapter's events\n- <!-- ALWAYS_LOAD -->Every release needs a changelog entry.<!-- /ALWAYS_LOAD -->"},
	             {"file":"runs/run_s1.md","operation":"write_run","content":"# Run s1\n\n<!-- ALWAYS_LOAD -->\nThe run's own note.\n<!-- /ALWAYS_LOAD -->\n"}]}`, svc)
	require.Equal(t, http.StatusOK, code, staged)
	require.Equal(t, "staged", staged["proposal"].(map[string]any)["reason"])
	require.Contains(t, fmt.Sprint(staged["proposal"].(map[string]any)["warnings"]), "runs/run_s1.md is Layer 2", "a Layer 2 ALWAYS_LOAD block is accepted with a warning")
	code, committed := jsonCall(t, d, "POST", base+"/commit-session", `{"proposalId":"`+staged["proposalId"].(string)+`"}`, svc)
	require.Equal(t, http.StatusOK, code, committed)
	require.Equal(t, "pending", committed["status"], "the suite's policy needs a reviewer")
	approve(committed)

	code, pac := jsonCall(t, d, "POST", base+"/process-and-commit", `{"runId":"run_s2",
	  "updates":[{"file":"open_loops.md","operation":"open","content":"Check the adapter's retention"}]}`, svc)
	require.Equal(t, http.StatusOK, code, pac)
	approve(pac)

	code, ctx := jsonCall(t, d, "POST", base+"/context", `{"depth":"basic"}`, svc)
	require.Equal(t, http.StatusOK, code, ctx)
	require.Equal(t, "basic", ctx["mode"])
	content := ctx["content"].(map[string]any)
	require.Contains(t, content["always_load/facts.md"], "Every release needs a changelog entry", "Layer 1 ALWAYS_LOAD blocks are part of basic")
	require.NotContains(t, content, "always_load/runs/run_s1.md", "a Layer 2 block is never auto-loaded (DiffMem §11.4)")
	require.NotContains(t, content, "runs/run_s1.md", "the run stays in Layer 2")
	require.Contains(t, content["open_loops.md"], "adapter's retention")

	require.Eventually(t, func() bool {
		code, res := jsonCall(t, d, "POST", base+"/search", `{"q":"kafka events","topK":5}`, svc)
		results, _ := res["results"].([]any) // absent until the index has the commit
		return code == http.StatusOK && len(results) > 0
	}, 20*time.Second, 50*time.Millisecond, "search follows")

	code, st := jsonCall(t, d, "GET", base+"/status", "", svc)
	require.Equal(t, http.StatusOK, code, st)
	require.Equal(t, float64(3), st["meta"].(map[string]any)["version"])
	require.Equal(t, float64(1), st["alwaysLoadBlocks"])
	require.Equal(t, float64(1), st["runs"])
	require.Len(t, st["layer1"], 3)

	code, tl := jsonCall(t, d, "GET", base+"/recent-timeline?pageSize=10", "", svc)
	require.Equal(t, http.StatusOK, code, tl)
	require.Len(t, tl["commits"], 3)

	code, diff := jsonCall(t, d, "POST", base+"/diff", `{"format":"facts"}`, svc)
	require.Equal(t, http.StatusOK, code, diff)

	require.Eventually(t, func() bool {
		code, ent := jsonCall(t, d, "GET", base+"/entity/kafka", "", svc)
		return code == http.StatusOK && strings.Contains(strings.Join(toStrings(ent["refs"]), " "), "memory/adapter-agent/")
	}, 20*time.Second, 50*time.Millisecond, "the entity graph follows")
	code, _, raw := call(t, d, "GET", "/v1/memory/garden-bloom-curator/entity/kafka", "", svc)
	require.Equal(t, http.StatusNotFound, code, "kafka is not in the curator's memory: %s", raw)

	code, _, raw = call(t, d, "POST", "/v1/memory/sync", `{}`, admin)
	require.Equal(t, http.StatusBadRequest, code, "no remote is configured: %s", raw)
}

func toStrings(v any) []string {
	var out []string
	if l, ok := v.([]any); ok {
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}
