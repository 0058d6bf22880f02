package proposalapply

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/mdops"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

func factBatch(prefix string, n int) string {
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf("- %s fact %03d: the storage cluster keeps its replicas in three zones for durability, and every zone runs its own independent power and network feeds", prefix, i))
	}
	return strings.Join(lines, "\n")
}

// facts.md over 8,000 tokens: facts unused for 30 days go first (a fact the
// read plane reported as used stays), the evicted facts move to decisions.md
// in the same commit, and the commit says "evicted: stale-fact".
func TestFactsEvictionStaleFirst(t *testing.T) {
	e := newEnv(t, autoApprove)
	for b := range 5 {
		resp := e.propose(&memoryv1.ProposeRequest{AgentId: "ev", RunId: fmt.Sprintf("run_old%d", b),
			Updates: []*memoryv1.FileUpdate{appendFact("Domain", factBatch(fmt.Sprintf("old%d", b), 45))}})
		e.waitApplied(resp.GetProposalId())
	}
	before := e.meta("ev").FactsTokenCount
	require.Greater(t, before, 5000)
	require.LessOrEqual(t, before, memlayout.FactsLimit)

	e.clock.Advance(40 * 24 * time.Hour)
	kept := "old0 fact 000: the storage cluster keeps its replicas in three zones for durability, and every zone runs its own independent power and network feeds"
	_, err := e.client.ReportFactUsage(e.service(), &memoryv1.ReportFactUsageRequest{AgentId: "ev",
		Usages: []*memoryv1.FactUsage{{FactHash: mdops.FactHash(kept)}}})
	require.NoError(t, err)

	resp := e.propose(&memoryv1.ProposeRequest{AgentId: "ev", RunId: "run_new",
		Updates: []*memoryv1.FileUpdate{appendFact("Domain", factBatch("new", 45))}})
	p := e.waitApplied(resp.GetProposalId())

	m := e.meta("ev")
	require.LessOrEqual(t, m.FactsTokenCount, memlayout.FactsLimit)
	require.LessOrEqual(t, m.Layer1TokenCount, memlayout.Layer1Limit)
	require.Equal(t, int32(6), m.Version)
	facts := e.file("ev", "facts.md")
	require.Contains(t, facts, kept, "a recently used fact is not evicted")
	require.Contains(t, facts, "new fact 044", "the new facts are kept")
	require.NotContains(t, facts, "old0 fact 001", "the oldest unused facts go first")

	decisions := e.file("ev", "decisions.md")
	require.Contains(t, decisions, "## Evicted facts")
	require.Contains(t, decisions, "old0 fact 001")
	require.Contains(t, decisions, "stale-fact")

	msg := e.git("log", "-1", "--format=%B", p.GetCommitSha())
	require.Contains(t, msg, "\nevicted: stale-fact\n")
	files := strings.Fields(e.git("show", "--name-only", "--format=", p.GetCommitSha()))
	require.Contains(t, files, "memory/ev/decisions.md", "eviction rides in the same commit")
}

// open_loops.md over 2,000 tokens: closed loops older than 7 days go, then
// low-priority loops older than 14 days are frozen into decisions.md.
func TestOpenLoopsEviction(t *testing.T) {
	e := newEnv(t, autoApprove)
	var opens []*memoryv1.FileUpdate
	for i := range 30 {
		opens = append(opens, &memoryv1.FileUpdate{File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_OPEN,
			LoopPriority: memoryv1.LoopPriority_LOOP_PRIORITY_LOW,
			Content:      fmt.Sprintf("Low priority follow-up number %d about the replication lag dashboards of the eastern storage region", i)})
	}
	resp := e.propose(&memoryv1.ProposeRequest{AgentId: "lp", RunId: "run_1", Updates: opens})
	e.waitApplied(resp.GetProposalId())
	require.Equal(t, 30, e.meta("lp").OpenLoopsCount)

	e.clock.Advance(20 * 24 * time.Hour)
	var more []*memoryv1.FileUpdate
	for i := range 30 {
		more = append(more, &memoryv1.FileUpdate{File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_OPEN,
			Content: fmt.Sprintf("Normal follow-up number %d about the backup verification job that runs every night in the western region", i)})
	}
	resp = e.propose(&memoryv1.ProposeRequest{AgentId: "lp", RunId: "run_2", Updates: more})
	p := e.waitApplied(resp.GetProposalId())

	m := e.meta("lp")
	require.LessOrEqual(t, m.OpenLoopsTokenCount, memlayout.OpenLoopsLimit)
	loops := e.file("lp", "open_loops.md")
	require.Contains(t, loops, "Normal follow-up number 29", "new loops stay")
	require.NotContains(t, loops, "Low priority follow-up number 0 ", "old low-priority loops are frozen first")
	decisions := e.file("lp", "decisions.md")
	require.Contains(t, decisions, "## Frozen loops")
	require.Contains(t, decisions, "Low priority follow-up number 0 ")
	require.Contains(t, e.git("log", "-1", "--format=%B", p.GetCommitSha()), "evicted: stale-fact")
}

// A proposal whose own loops cannot fit under the limit is refused at
// propose with the counts: no eviction could make room for them, and
// nothing is stored or written.
func TestLimitEvictionCannotMeetRefused(t *testing.T) {
	e := newEnv(t, autoApprove)
	var opens []*memoryv1.FileUpdate
	for i := range 45 {
		opens = append(opens, &memoryv1.FileUpdate{File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_OPEN,
			LoopPriority: memoryv1.LoopPriority_LOOP_PRIORITY_CRITICAL,
			Content:      fmt.Sprintf("Critical item %d that must stay open until the migration of the storage layer completes in every region and every zone of the cluster", i)})
	}
	before := e.commitCount()
	_, err := e.client.Propose(e.service(), &memoryv1.ProposeRequest{AgentId: "full", RunId: "run_1", Updates: opens})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	info := apierr.Info(err)
	require.Equal(t, "TOKEN_LIMIT_EXCEEDED", info.GetReason())
	require.Equal(t, "open_loops.md", info.GetMetadata()["file"])
	require.Equal(t, "2000", info.GetMetadata()["limit"])
	require.Contains(t, err.Error(), "hard limit")
	require.Equal(t, before, e.commitCount())
}
