package proposalapply

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memrepo"
)

// Many agents proposing at once: their commits are grouped into chains, yet
// every proposal is applied exactly once as its own commit, history stays
// linear and each agent's versions count up one by one.
func TestGroupCommitManyAgents(t *testing.T) {
	e := newEnv(t, autoApprove)
	reader := sdkmetric.NewManualReader()
	e.meters = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	e.restart(autoApprove)
	before := e.commitCount()

	const agents, each = 40, 8
	var mu sync.Mutex
	agentOf := map[string]string{} // proposal id -> agent
	var wg sync.WaitGroup
	for a := range agents {
		wg.Go(func() {
			agent := fmt.Sprintf("group-%d", a)
			for i := range each {
				resp := e.propose(&memoryv1.ProposeRequest{AgentId: agent, RunId: fmt.Sprintf("run_%d", i),
					Updates: []*memoryv1.FileUpdate{appendFact("Group", fmt.Sprintf("- fact %d of %s", i, agent))}})
				mu.Lock()
				agentOf[resp.GetProposalId()] = agent
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	applied := map[string]*memoryv1.Proposal{}
	for id := range agentOf {
		applied[id] = e.waitApplied(id)
	}

	require.Equal(t, before+agents*each, e.commitCount(), "one commit per proposal")
	require.Empty(t, strings.TrimSpace(e.git("rev-list", "--merges", "main")), "history is linear")
	e.git("fsck", "--strict", "--full")

	// Oldest first: each proposal's commit exactly once, with the version
	// meta.json has there, and per agent the versions 1, 2, 3, ...
	ctx := context.Background()
	subject := regexp.MustCompile(`^memory-update: (\S+) / \S+ / (proposal_\S+)$`)
	seen := map[string]bool{}
	versions := map[string][]int32{}
	for _, line := range strings.Split(strings.TrimSpace(e.git("log", "--reverse", "--format=%H %s", "main")), "\n") {
		sha, subj, _ := strings.Cut(line, " ")
		m := subject.FindStringSubmatch(subj)
		if m == nil {
			continue
		}
		agent, id := m[1], m[2]
		require.False(t, seen[id], "proposal %s committed twice", id)
		seen[id] = true
		p := applied[id]
		require.NotNil(t, p, "commit %s for an unknown proposal", sha)
		require.Equal(t, agentOf[id], agent)
		require.Equal(t, sha, p.GetCommitSha())
		raw, err := e.repo.ReadFile(ctx, plumbing.NewHash(sha), "memory/"+agent+"/"+memlayout.MetaFile)
		require.NoError(t, err)
		meta, err := memlayout.ParseMeta(raw)
		require.NoError(t, err)
		require.Equal(t, p.GetAppliedVersion(), meta.Version)
		versions[agent] = append(versions[agent], meta.Version)
	}
	require.Len(t, seen, agents*each)
	want := []int32{1, 2, 3, 4, 5, 6, 7, 8}
	for a := range agents {
		agent := fmt.Sprintf("group-%d", a)
		require.Equal(t, want, versions[agent], "agent %s", agent)
		for i := range each {
			require.Contains(t, e.file(agent, "facts.md"), fmt.Sprintf("- fact %d of %s", i, agent))
		}
	}

	// The commits really were grouped.
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	h := batchHistogram(t, rm)
	require.Equal(t, int64(agents*each), h.Sum, "every commit went through a chain")
	largest, _ := h.Max.Value()
	require.Greater(t, largest, int64(1), "some chains held several commits")
	t.Logf("%d commits in %d chains, largest %d", h.Sum, h.Count, largest)
}

func batchHistogram(t *testing.T, rm metricdata.ResourceMetrics) metricdata.HistogramDataPoint[int64] {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == "memory.apply.batch_size" {
				pts := m.Data.(metricdata.Histogram[int64]).DataPoints
				require.Len(t, pts, 1)
				return pts[0]
			}
		}
	}
	t.Fatal("no memory.apply.batch_size metric")
	return metricdata.HistogramDataPoint[int64]{}
}

// testPlan builds a commit plan the way a worker would hand it over.
func testPlan(agent string, base plumbing.Hash, changes ...memrepo.Change) *commitPlan {
	return &commitPlan{agent: agent, base: base, done: make(chan commitResult, 1),
		req: memrepo.CommitRequest{Message: "memory-update: " + agent + " / run_1 / proposal_" + agent, Changes: changes}}
}

func put(path, content string) memrepo.Change {
	return memrepo.Change{Path: path, Content: []byte(content)}
}

// The committer sends back exactly the plans that no longer apply: one whose
// agent's files a person changed since it was planned, and a second plan of
// an agent already in the chain. A plan that cannot be built fails alone.
func TestCommitBatchAdmitsOnlyPlansThatStillApply(t *testing.T) {
	e := newEnv(t, autoApprove)
	ctx := context.Background()
	base, err := e.repo.Head(ctx)
	require.NoError(t, err)
	humanCommit(t, e, "memory/edited/facts.md", "# Facts\n- by a person\n", "a person's edit")
	head, err := e.repo.Head(ctx)
	require.NoError(t, err)

	edited := testPlan("edited", base, put("memory/edited/facts.md", "from the agent"))
	other := testPlan("other", base, put("memory/other/facts.md", "other"))       // base is stale, files are not
	twice := testPlan("other", head, put("memory/other/facts.md", "other again")) // same agent in the chain
	empty := testPlan("empty", head)                                              // changes nothing
	third := testPlan("third", head, put("memory/third/facts.md", "third"))
	e.svc.engine.commitBatch(ctx, []*commitPlan{edited, other, twice, empty, third})

	res := func(p *commitPlan) commitResult { return <-p.done }
	require.ErrorIs(t, res(edited).err, memrepo.ErrHeadMoved)
	require.ErrorIs(t, res(twice).err, memrepo.ErrHeadMoved)
	require.ErrorIs(t, res(empty).err, memrepo.ErrNoChanges)
	r1, r2 := res(other), res(third)
	require.NoError(t, r1.err)
	require.NoError(t, r2.err)

	// One chain of the two admitted plans, in order, on the person's commit.
	got, err := e.repo.Head(ctx)
	require.NoError(t, err)
	require.Equal(t, r2.sha, got)
	log := strings.Fields(e.git("log", "--format=%H", "-n", "3", "main"))
	require.Equal(t, []string{r2.sha.String(), r1.sha.String(), head.String()}, log)
	require.Equal(t, "# Facts\n- by a person\n", e.file("edited", "facts.md"))
	require.Equal(t, "other", e.file("other", "facts.md"))
}
