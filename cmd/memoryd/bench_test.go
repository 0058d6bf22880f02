package main

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
)

// BenchmarkCommitToSearchable measures, in the all-in-one process, how long
// after a proposal's commit lands its fact is found by search (search-index
// follows proposal-apply's commit stream over gRPC). Reports p50/p95.
func BenchmarkCommitToSearchable(b *testing.B) {
	d := startInProcessWith(b, "--auto-approve-default")
	dataDir := d.dataDir
	conn := dial(b, d.grpcAddr[memoryv1.ProposalApplyService_ServiceDesc.ServiceName])
	pa := memoryv1.NewProposalApplyServiceClient(conn)
	si := memoryv1.NewSearchIndexServiceClient(conn)
	call := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+mintFor(b, dataDir, auth.RoleService))

	lags := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		word := fmt.Sprintf("marker%dx", i)
		resp, err := pa.Propose(call, &memoryv1.ProposeRequest{AgentId: "bench", RunId: fmt.Sprintf("run_%d", i),
			Updates: []*memoryv1.FileUpdate{{File: "facts.md", Operation: memoryv1.Operation_OPERATION_APPEND, Section: "Bench", Content: "- fact " + word}}})
		require.NoError(b, err)
		var applied time.Time
		for applied.IsZero() {
			p, err := pa.GetProposal(call, &memoryv1.GetProposalRequest{ProposalId: resp.GetProposalId()})
			require.NoError(b, err)
			if p.GetProposal().GetStatus() == memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED {
				applied = p.GetProposal().GetAppliedAt().AsTime()
			}
		}
		for {
			res, err := si.Search(call, &memoryv1.SearchRequest{Query: word, AgentId: "bench"})
			require.NoError(b, err)
			if len(res.GetResults()) > 0 {
				lags = append(lags, time.Since(applied))
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	b.StopTimer()
	slices.Sort(lags)
	b.ReportMetric(float64(lags[len(lags)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lags[len(lags)*95/100].Microseconds())/1000, "p95-ms")
}
