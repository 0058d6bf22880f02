package proposalstore

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/blob"
)

// docKey is where versions before the log kept a proposal's document; Open
// still reads those.
func docKey(agentID, proposalID string) string {
	return Prefix + agentID + "/" + proposalID + ".json"
}

// fsBlobs is a folder object store in a temporary directory.
func fsBlobs(t testing.TB) blob.Store {
	t.Helper()
	bs, err := blob.NewFS(t.TempDir())
	require.NoError(t, err)
	return bs
}

func newStore(t testing.TB, bs blob.Store) *Store {
	t.Helper()
	s, err := Open(context.Background(), bs, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

func rec(agent, run, key string, at time.Time) *Record {
	return &Record{Proposal: &memoryv1.Proposal{
		ProposalId: NewID(at), AgentId: agent, RunId: run, IdempotencyKey: key,
		Status: memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING,
	}, BaseCommit: "abc", BaseVersion: 3}
}

func TestCreateGetUpdateReopen(t *testing.T) {
	ctx := context.Background()
	bs := fsBlobs(t)
	s := newStore(t, bs)

	r := rec("curator", "run_1", "", time.Now())
	got, created, err := s.Create(ctx, r)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, r.Proposal.GetProposalId(), got.Proposal.GetProposalId())

	_, err = s.Update(ctx, r.Proposal.GetProposalId(), func(r *Record) error {
		r.Proposal.Status = memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED
		r.Proposal.CommitSha = "deadbeef"
		return nil
	})
	require.NoError(t, err)

	// A second store over the same objects sees the durable state.
	again := newStore(t, bs)
	back, err := again.Get(r.Proposal.GetProposalId())
	require.NoError(t, err)
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED, back.Proposal.GetStatus())
	require.Equal(t, "deadbeef", back.Proposal.GetCommitSha())
	require.Equal(t, "abc", back.BaseCommit)
	require.Equal(t, int32(3), back.BaseVersion)

	_, err = again.Get("proposal_nope")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = again.Update(ctx, "proposal_nope", func(*Record) error { return nil })
	require.ErrorIs(t, err, ErrNotFound)
}

func TestIdempotentCreateUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	bs := fsBlobs(t)
	s := newStore(t, bs)

	ids := make(chan string, 32)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			got, _, err := s.Create(ctx, rec("curator", "run_7", "key-1", time.Now()))
			require.NoError(t, err)
			ids <- got.Proposal.GetProposalId()
		})
	}
	wg.Wait()
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		seen[id] = true
	}
	require.Len(t, seen, 1, "one proposal for one idempotency key")
	require.Equal(t, 1, s.Len())

	// Another run with the same key is a different proposal.
	_, created, err := s.Create(ctx, rec("curator", "run_8", "key-1", time.Now()))
	require.NoError(t, err)
	require.True(t, created)
	// The key survives a restart.
	again := newStore(t, bs)
	_, created, err = again.Create(ctx, rec("curator", "run_7", "key-1", time.Now()))
	require.NoError(t, err)
	require.False(t, created)
}

func TestListNewestFirstPagedAndFiltered(t *testing.T) {
	ctx := context.Background()
	bs := fsBlobs(t)
	s := newStore(t, bs)
	base := time.Date(2026, 2, 17, 10, 0, 0, 0, time.UTC)
	var want []string
	for i := range 7 {
		r := rec("a", "run", "", base.Add(time.Duration(i)*time.Second))
		if i%2 == 0 {
			r.Proposal.Status = memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED
		}
		_, _, err := s.Create(ctx, r)
		require.NoError(t, err)
		want = append([]string{r.Proposal.GetProposalId()}, want...)
	}
	_, _, err := s.Create(ctx, rec("b", "run", "", base))
	require.NoError(t, err)

	var got []string
	token := ""
	for {
		page, next, err := s.List(Query{Agents: []string{"a"}, PageSize: 3, PageToken: token})
		require.NoError(t, err)
		for _, r := range page {
			got = append(got, r.Proposal.GetProposalId())
		}
		if next == "" {
			break
		}
		token = next
	}
	require.Equal(t, want, got)

	applied, _, err := s.List(Query{Agents: []string{"a"}, Status: memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED})
	require.NoError(t, err)
	require.Len(t, applied, 4)
	all, _, err := s.List(Query{})
	require.NoError(t, err)
	require.Len(t, all, 8)
	_, _, err = s.List(Query{PageToken: "garbage"})
	require.Error(t, err)

	pending, err := s.WithStatus(memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING)
	require.NoError(t, err)
	require.Len(t, pending, 4)

	// Several agents' lists are merged newest first, paged the same way.
	both, next, err := s.List(Query{Agents: []string{"b", "a"}, PageSize: 5})
	require.NoError(t, err)
	require.Len(t, both, 5)
	rest, last, err := s.List(Query{Agents: []string{"b", "a"}, PageSize: 5, PageToken: next})
	require.NoError(t, err)
	require.Empty(t, last)
	var merged []string
	for _, r := range append(both, rest...) {
		merged = append(merged, r.Proposal.GetProposalId())
	}
	require.Len(t, merged, 8)
	require.IsNonIncreasing(t, merged)
}

func TestUnreadableDocumentIsSkippedNotDeleted(t *testing.T) {
	ctx := context.Background()
	bs := fsBlobs(t)
	_, err := blob.PutBytes(ctx, bs, docKey("a", "proposal_broken"), []byte("{not json"), blob.PutOptions{})
	require.NoError(t, err)
	s := newStore(t, bs)
	require.Equal(t, 0, s.Len())
	_, err = bs.Stat(ctx, docKey("a", "proposal_broken"))
	require.NoError(t, err)
}

func TestNewIDSortsByTime(t *testing.T) {
	a := NewID(time.UnixMilli(1_000_000))
	b := NewID(time.UnixMilli(1_000_001))
	require.Less(t, a, b)
	require.Regexp(t, `^proposal_[0-9a-v]{26}$`, a)
	// Every millisecond over a few seconds, so that each character of the
	// time part goes through all its values.
	start := time.Date(2026, 11, 26, 23, 31, 0, 0, time.UTC)
	prev := NewID(start)
	for ms := 1; ms < 5000; ms++ {
		id := NewID(start.Add(time.Duration(ms) * time.Millisecond))
		require.Less(t, prev, id, "at +%d ms", ms)
		prev = id
	}
}

// A list by status is the full list filtered by that status, page by page
// — whether the status is finished (a walk of every proposal) or not (the
// unfinished set), and with transient states (Mark) counted as they are.
func TestListByStatusIsTheFilteredList(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, fsBlobs(t))
	base := time.Date(2026, 2, 17, 10, 0, 0, 0, time.UTC)
	statuses := []memoryv1.ProposalStatus{
		memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, memoryv1.ProposalStatus_PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW,
		memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED,
		memoryv1.ProposalStatus_PROPOSAL_STATUS_REJECTED, memoryv1.ProposalStatus_PROPOSAL_STATUS_FAILED,
	}
	var ids []string
	for i := range 60 {
		r := rec([]string{"a", "b", "c"}[i%3], "run", "", base.Add(time.Duration(i)*time.Second))
		r.Proposal.Status = statuses[(i*7)%len(statuses)]
		_, _, err := s.Create(ctx, r)
		require.NoError(t, err)
		ids = append(ids, r.Proposal.GetProposalId())
	}
	// Transient states: an approved one applying, a failed one retried.
	_, err := s.Mark(ids[2], func(r *Record) { r.Proposal.Status = memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLYING })
	require.NoError(t, err)
	_, err = s.Mark(ids[5], func(r *Record) { r.Proposal.Status = memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED })
	require.NoError(t, err)

	collect := func(q Query) []string {
		var out []string
		for {
			page, next, err := s.List(q)
			require.NoError(t, err)
			require.LessOrEqual(t, len(page), q.PageSize)
			for _, r := range page {
				out = append(out, r.Proposal.GetProposalId())
			}
			if next == "" {
				return out
			}
			require.Len(t, page, q.PageSize, "a full page before a next one")
			q.PageToken = next
		}
	}
	for _, agents := range [][]string{nil, {"b"}, {"c", "a"}, {}} {
		all, _, err := s.List(Query{Agents: agents, PageSize: 1000})
		require.NoError(t, err)
		for _, st := range append(statuses, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLYING) {
			var want []string
			for _, r := range all {
				if r.Proposal.GetStatus() == st {
					want = append(want, r.Proposal.GetProposalId())
				}
			}
			for _, size := range []int{1, 4, 100} {
				require.Equal(t, want, collect(Query{Agents: agents, Status: st, PageSize: size}), "agents %v status %v size %d", agents, st, size)
			}
		}
	}
}
