package proposalapply

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/blob"
)

// logOutage lets the first n writes of the proposal log through and fails
// the next ones with blob.ErrUnavailable while it is on, as a guarded
// object store does during an outage.
type logOutage struct {
	blob.Store
	allowed atomic.Int64
	on      atomic.Bool
	refused atomic.Int64
}

func (o *logOutage) Put(ctx context.Context, key string, r io.Reader, size int64, opts blob.PutOptions) (blob.Info, error) {
	if strings.HasPrefix(key, "proposals/_log/") && o.on.Load() && o.allowed.Add(-1) < 0 {
		o.refused.Add(1)
		return blob.Info{}, fmt.Errorf("%w: connection refused", blob.ErrUnavailable)
	}
	return o.Store.Put(ctx, key, r, size, opts)
}

// An object store outage between the commit and the recording of its
// outcome: the proposal is not failed, its outcome is recorded once the
// store is back, and it is applied exactly once (issue #25 point 4).
func TestApplyOutcomeRecordedAfterAnOutage(t *testing.T) {
	e := newEnv(t, autoApprove)
	e.stop()
	outage := &logOutage{Store: e.blobs}
	e.blobs = outage
	e.start(autoApprove)
	commits := e.commitCount()

	outage.allowed.Store(1) // the proposal itself is stored …
	outage.on.Store(true)   // … its outcome is not
	resp := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{appendFact("D", "- x")}})
	require.Eventually(t, func() bool { return outage.refused.Load() >= 2 }, 20*time.Second, 10*time.Millisecond,
		"recording the outcome is tried again")
	got, err := e.client.GetProposal(e.service(), &memoryv1.GetProposalRequest{ProposalId: resp.GetProposalId()})
	require.NoError(t, err)
	require.NotEqual(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_FAILED, got.GetProposal().GetStatus(), "an outage fails no proposal")
	require.Equal(t, commits+1, e.commitCount(), "the commit is made")

	outage.on.Store(false)
	p := e.waitApplied(resp.GetProposalId())
	require.Equal(t, strings.TrimSpace(e.git("rev-parse", "main")), p.GetCommitSha())
	require.Equal(t, commits+1, e.commitCount(), "applied once")
	e.restart(autoApprove)
	got, err = e.client.GetProposal(e.service(), &memoryv1.GetProposalRequest{ProposalId: resp.GetProposalId()})
	require.NoError(t, err)
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED, got.GetProposal().GetStatus(), "the outcome is durable")
}
