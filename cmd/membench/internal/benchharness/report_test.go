package benchharness

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func budget(t *testing.T, bs []Budget, name string) Budget {
	t.Helper()
	for _, b := range bs {
		if b.Name == name {
			return b
		}
	}
	t.Fatalf("no budget %q in %v", name, bs)
	return Budget{}
}

// A scaling point whose read plane was killed has no figures: its budgets
// fail with the reason instead of passing on zeros.
func TestBudgetsFailWhenTheRunEndedEarly(t *testing.T) {
	r := &Report{Options: Options{Agents: 1000, Commits: 20000}, Scaling: []ScalePoint{
		{Agents: 1000, Commits: 20000, ReadBasicP95: 2, AssembleP95: 15, SearchP95: 5, ReadPeakRSSMB: 2000},
		{Agents: 10000, Commits: 20000, Note: "memoryd read: killed by the harness: RSS 14568 MB over --max-rss-mb 14463", ReadPeakRSSMB: 14568},
	}}
	bs := r.budgets()
	rss := budget(t, bs, "read plane RSS ≤ 1024 MB at 10,000 agents (peak)")
	require.Equal(t, "FAIL", rss.Status)
	require.Contains(t, rss.Value, "peak 14568 MB")
	require.Contains(t, rss.Value, "killed by the harness")
	require.Equal(t, "FAIL", budget(t, bs, "N=10,000 figures within 2× of N=1,000").Status)

	r.Scaling[1] = ScalePoint{Agents: 10000, Commits: 20000, ReadBasicP95: 3, AssembleP95: 20, SearchP95: 6, ReadPeakRSSMB: 1000}
	bs = r.budgets()
	require.Equal(t, "PASS", budget(t, bs, "read plane RSS ≤ 1024 MB at 10,000 agents (peak)").Status)
	require.Equal(t, "FAIL", budget(t, bs, "read plane RSS ≤ 512 MB at 1,000 agents (peak)").Status, "2,000 MB at N=1,000")
	require.Equal(t, "PASS", budget(t, bs, "N=10,000 figures within 2× of N=1,000").Status)
}

// The budget lines are issue #30's table: each at its threshold, for the
// deployment it names.
func TestBudgetsAreIssue30sLines(t *testing.T) {
	lat := func(p95 float64) Latency { return Latency{Count: 100, P95: p95} }
	run := func(basic, ratio, rest, entity, assemble, search, apply, lag float64) RunResult {
		return RunResult{Deployment: DeployAll, Scenarios: []ScenarioResult{
			{Name: ScReadBasic, Transport: "grpc", Latency: lat(basic), Floor: &FloorRatio{P95Ratio: ratio}},
			{Name: ScReadBasic, Transport: "rest", Latency: lat(rest)},
			{Name: ScGetEntity, Transport: "grpc", Latency: lat(entity)},
			{Name: ScAssemble, Transport: "grpc", Latency: lat(assemble)},
			{Name: ScSearch, Transport: "grpc", Latency: lat(search)},
			{Name: ScApply, Transport: "grpc", Requests: 1000, RPS: apply},
			{Name: ScSearchLag, Transport: "grpc", Latency: lat(lag)},
			{Name: ScReadLag, Transport: "grpc", Latency: lat(lag)},
		}}
	}
	lines := []string{"ReadMemory basic p95 ≤ 1.5 ms [all]", "ReadMemory basic p95 ≤ 2× floor p95 [all]",
		"ReadMemory basic p95 over REST ≤ 2.5 ms [all]", "GetEntity p95 ≤ 5 ms [all]", "AssembleContext p95 ≤ 8 ms [all]",
		"Search p95 ≤ 4 ms [all]", "apply ≥ 400 commits/s across agents [all]", "commit → searchable p95 ≤ 50 ms [all]"}
	at := &Report{Runs: []RunResult{run(1.5, 2, 2.5, 5, 8, 4, 400, 50)}}
	for _, l := range lines {
		require.Equal(t, "PASS", budget(t, at.budgets(), l).Status, l)
	}
	over := &Report{Runs: []RunResult{run(1.51, 2.01, 2.51, 5.01, 8.01, 4.01, 399, 50.1)}}
	for _, l := range lines {
		require.Equal(t, "FAIL", budget(t, over.budgets(), l).Status, l)
	}
	require.Equal(t, "PASS", budget(t, over.budgets(), "AssembleContext p95 ≤ 25 ms [all]").Status, "issue #29's line stays")
}
