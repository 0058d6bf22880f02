package proposalapply

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// benchmarkApply runs `clients` closed-loop clients over gRPC, client i
// proposing for agent i % agents and waiting until its proposal is applied
// before the next one. It reports applied proposals per second and the
// propose→applied latency (server timestamps) p50/p95. b.N proposals in all.
func benchmarkApply(b *testing.B, agents, clients int) {
	e := newEnv(b, autoApprove)
	e.clock.real = true
	ctx := e.service()
	var next atomic.Int64
	var mu sync.Mutex
	lat := make([]float64, 0, b.N)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				resp, err := e.client.Propose(ctx, &memoryv1.ProposeRequest{
					AgentId: fmt.Sprintf("bench-%d", c%agents), RunId: fmt.Sprintf("run_%d", i),
					Updates: []*memoryv1.FileUpdate{appendFact("Bench", fmt.Sprintf("- benchmark fact number %d", i))},
				})
				require.NoError(b, err)
				for {
					rec, err := e.svc.store.Get(resp.GetProposalId())
					require.NoError(b, err)
					p := rec.Proposal
					if p.GetStatus() == memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED {
						mu.Lock()
						lat = append(lat, p.GetAppliedAt().AsTime().Sub(p.GetCreatedAt().AsTime()).Seconds()*1000)
						mu.Unlock()
						break
					}
					require.Contains(b, []memoryv1.ProposalStatus{memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED,
						memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLYING}, p.GetStatus(), p.GetMessage())
					time.Sleep(2 * time.Millisecond) // latency comes from server timestamps, not from this poll
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "applied/s")
	b.ReportMetric(lat[len(lat)/2], "p50-ms")
	b.ReportMetric(lat[len(lat)*95/100], "p95-ms")
}

// One agent: its queue is strictly serial, so throughput is one apply at a
// time; 4 clients keep the queue busy.
func BenchmarkApplyOneAgent(b *testing.B) { benchmarkApply(b, 1, 4) }

// 100 agents, one client each: plans run in parallel, commits one at a time.
func BenchmarkApply100Agents(b *testing.B) { benchmarkApply(b, 100, 100) }

// One client: propose→applied latency with no queue in front of it.
func BenchmarkApplyLatency(b *testing.B) { benchmarkApply(b, 1, 1) }
