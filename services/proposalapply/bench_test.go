package proposalapply

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// benchmarkApply proposes b.N auto-approved proposals spread over `agents`
// agents from 16 concurrent clients over gRPC, waits until every one is
// applied, and reports applied proposals per second and the propose→applied
// latency (server timestamps) p50/p95.
func benchmarkApply(b *testing.B, agents int) {
	e := newEnv(b, autoApprove)
	e.clock.real = true
	ctx := e.service()
	ids := make([]string, b.N)
	var next atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				resp, err := e.client.Propose(ctx, &memoryv1.ProposeRequest{
					AgentId: fmt.Sprintf("bench-%d", i%agents), RunId: fmt.Sprintf("run_%d", i),
					Updates: []*memoryv1.FileUpdate{appendFact("Bench", fmt.Sprintf("- benchmark fact number %d", i))},
				})
				require.NoError(b, err)
				ids[i] = resp.GetProposalId()
			}
		})
	}
	wg.Wait()
	require.NoError(b, e.svc.WaitIdle(context.Background()))
	elapsed := time.Since(start)
	b.StopTimer()

	lat := make([]float64, 0, b.N)
	for _, id := range ids {
		rec, err := e.svc.store.Get(id)
		require.NoError(b, err)
		p := rec.Proposal
		require.Equal(b, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED, p.GetStatus(), p.GetMessage())
		lat = append(lat, p.GetAppliedAt().AsTime().Sub(p.GetCreatedAt().AsTime()).Seconds()*1000)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "applied/s")
	b.ReportMetric(lat[len(lat)/2], "p50-ms")
	b.ReportMetric(lat[len(lat)*95/100], "p95-ms")
}

func BenchmarkApplyOneAgent(b *testing.B)  { benchmarkApply(b, 1) }
func BenchmarkApply100Agents(b *testing.B) { benchmarkApply(b, 100) }
