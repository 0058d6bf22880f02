package proposalstore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// FindIdempotent finds exactly the proposal Create would return for the
// same agent, run and key — before and after a reopen — and nothing else.
func TestFindIdempotent(t *testing.T) {
	ctx := context.Background()
	bs := fsBlobs(t)
	s := newStore(t, bs)

	got, err := s.FindIdempotent("coder", "run_ep-1", "episode:ep-1")
	require.NoError(t, err)
	require.Nil(t, got, "nothing stored yet")

	r := rec("coder", "run_ep-1", "episode:ep-1", time.Now())
	_, created, err := s.Create(ctx, r)
	require.NoError(t, err)
	require.True(t, created)

	got, err = s.FindIdempotent("coder", "run_ep-1", "episode:ep-1")
	require.NoError(t, err)
	require.NotNil(t, got)
	require.Equal(t, r.Proposal.GetProposalId(), got.Proposal.GetProposalId())

	for _, other := range [][3]string{{"other", "run_ep-1", "episode:ep-1"}, {"coder", "run_ep-2", "episode:ep-1"},
		{"coder", "run_ep-1", "episode:ep-2"}, {"coder", "run_ep-1", ""}} {
		got, err := s.FindIdempotent(other[0], other[1], other[2])
		require.NoError(t, err)
		require.Nil(t, got, "%v", other)
	}

	again := newStore(t, bs)
	got, err = again.FindIdempotent("coder", "run_ep-1", "episode:ep-1")
	require.NoError(t, err)
	require.Equal(t, r.Proposal.GetProposalId(), got.Proposal.GetProposalId())
	dup, created, err := again.Create(ctx, rec("coder", "run_ep-1", "episode:ep-1", time.Now()))
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, got.Proposal.GetProposalId(), dup.Proposal.GetProposalId(), "the one Create returns")
}
