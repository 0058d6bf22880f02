package main

import (
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/auth"
)

// Issue #30, point 1: "Every cache (object cache, tree cache, token counts,
// source texts, read caches …) draws from one byte budget
// (--memory-budget, default sized for 1 GB processes), with metrics per
// cache (bytes, hits, misses, evictions)." Read through /metrics of the
// real binary: every cache of the all-in-one process is there, and their
// bounds add up to the budget asked for (the default without the flag).
func TestEveryCacheDrawsFromOneMemoryBudget(t *testing.T) {
	want := []string{"auth.verified_tokens", "git.trees", "git.commits", "git.objects",
		"context_assembly.read_folders", "context_assembly.always_load_blocks", "context_assembly.token_counts",
		"context_assembly.source_texts", "context_assembly.source_lists", "context_assembly.token_pieces", "proposal_apply.token_pieces",
		"entity_graph.sorted_edges", "entity_graph.sorted_refs", "entity_graph.pages",
		"entity_graph.nodes", "entity_graph.edges", "entity_graph.files"}
	for _, tc := range []struct {
		flags  []string
		budget float64
	}{
		{[]string{"--memory-budget=64MiB"}, 64 << 20},
		{nil, 256 << 20}, // the default
	} {
		t.Run(strings.Join(append([]string{"budget"}, tc.flags...), " "), func(t *testing.T) {
			dataDir := t.TempDir()
			p := startBinary(t, dataDir, append([]string{"--target=all"}, tc.flags...)...)
			d := &deployment{grpcAddr: allAt(p.grpcAddr), httpAddr: p.httpAddr, dataDir: dataDir}
			svc := token(t, d, auth.RoleService)
			code, resp := jsonCall(t, d, "POST", "/memory/budgeted/propose", `{"runId":"run_b1",
			  "updates":[{"file":"facts.md","operation":"append","section":"Ops","content":"- The heron counts every cache"}]}`, svc)
			require.Equal(t, http.StatusOK, code, resp)
			code, resp = jsonCall(t, d, "POST", "/proposals/"+resp["proposalId"].(string)+":approve", `{}`, token(t, d, auth.RoleAdmin))
			require.Equal(t, http.StatusOK, code, resp)
			require.Eventually(t, func() bool {
				code, _ := jsonCall(t, d, "GET", "/memory/budgeted/read?mode=basic", "", svc)
				return code == http.StatusOK
			}, 30*time.Second, 20*time.Millisecond)

			s := scrapeMetrics(t, p.httpAddr)
			got, ok := s.sum("memory_cache_budget_bytes", nil)
			require.True(t, ok, "the budget is exported")
			require.Equal(t, tc.budget, got)
			total := 0.0
			seen := map[string]bool{}
			for _, x := range s.find("memory_cache_max_size_bytes", nil) {
				seen[x.labels["cache"]] = true
				total += x.value
			}
			for _, name := range want {
				require.True(t, seen[name], "%s is one of the process's caches: %v", name, seen)
				for _, m := range []string{"memory_cache_size_bytes", "memory_cache_hits_total", "memory_cache_misses_total", "memory_cache_evictions_total"} {
					_, ok := s.sum(m, map[string]string{"cache": name})
					require.True(t, ok, "%s of %s", m, name)
				}
			}
			require.LessOrEqual(t, total, tc.budget, "the caches together stay within the budget")
			require.Greater(t, total, 0.95*tc.budget, "and use it")
		})
	}
}

// A budget that cannot hold the caches, or is no size, stops the start with
// a message that names the flag.
func TestAMemoryBudgetTooSmallIsRefused(t *testing.T) {
	for value, msg := range map[string]string{
		"4MiB": "--memory-budget of 4 MiB is too small for 17 caches: at least 17 MiB",
		"lots": `invalid value "lots" for flag -memory-budget: "lots" is not a size`,
	} {
		out, err := exec.Command(memorydBin, "--target=all", "--data-dir", t.TempDir(), "--grpc-addr", "127.0.0.1:0",
			"--http-addr", "127.0.0.1:0", "--memory-budget="+value).CombinedOutput()
		require.Error(t, err, string(out))
		require.Contains(t, string(out), msg)
	}
}
