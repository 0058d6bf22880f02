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
	rss := budget(t, bs, "read plane RSS ≤ 512 MB at 10,000 agents")
	require.Equal(t, "FAIL", rss.Status)
	require.Contains(t, rss.Value, "peak 14568 MB")
	require.Contains(t, rss.Value, "killed by the harness")
	require.Equal(t, "FAIL", budget(t, bs, "N=10,000 figures within 2× of N=1,000").Status)

	r.Scaling[1] = ScalePoint{Agents: 10000, Commits: 20000, ReadBasicP95: 3, AssembleP95: 20, SearchP95: 6, ReadPeakRSSMB: 500}
	bs = r.budgets()
	require.Equal(t, "PASS", budget(t, bs, "read plane RSS ≤ 512 MB at 10,000 agents").Status)
	require.Equal(t, "PASS", budget(t, bs, "N=10,000 figures within 2× of N=1,000").Status)
}
