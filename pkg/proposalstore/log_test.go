package proposalstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/blob"
)

// segmentKeys lists the log's objects.
func segmentKeys(t *testing.T, bs blob.Store) []string {
	t.Helper()
	var keys []string
	for info, err := range bs.List(context.Background(), logPrefix) {
		require.NoError(t, err)
		keys = append(keys, info.Key)
	}
	return keys
}

func applied(t *testing.T, s *Store, id, sha string) {
	t.Helper()
	_, err := s.Update(context.Background(), id, func(r *Record) error {
		r.Proposal.Status, r.Proposal.CommitSha = memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED, sha
		return nil
	})
	require.NoError(t, err)
}

// Writers that arrive while a segment is written share the next one, and
// every acknowledged write is there after a restart.
func TestConcurrentWritesShareSegments(t *testing.T) {
	ctx := context.Background()
	bs := fsBlobs(t)
	s := newStore(t, bs)

	const n = 200
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := rec(fmt.Sprintf("agent-%d", i%7), "run", "", time.Now())
			_, _, err := s.Create(ctx, r)
			require.NoError(t, err)
			ids[i] = r.Proposal.GetProposalId()
			applied(t, s, ids[i], fmt.Sprintf("sha-%d", i))
		})
	}
	wg.Wait()
	s.Close()
	// 400 writes; with 200 writers at once most batches hold several.
	require.Less(t, len(segmentKeys(t, bs)), 2*n, "some writes were batched")

	again := newStore(t, bs)
	require.Equal(t, n, again.Len())
	for i, id := range ids {
		got, err := again.Get(id)
		require.NoError(t, err)
		require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED, got.Proposal.GetStatus())
		require.Equal(t, fmt.Sprintf("sha-%d", i), got.Proposal.GetCommitSha())
		require.Equal(t, "abc", got.BaseCommit)
	}
}

// Sequential writes make a segment each; merges keep their number small
// and keep the last state of every proposal.
func TestSegmentsAreMerged(t *testing.T) {
	ctx := context.Background()
	bs := fsBlobs(t)
	s := newStore(t, bs)
	const n = 300 // 600 batches: levels 0, 1 and 2
	var ids []string
	for i := range n {
		r := rec("curator", "run", "", time.Now())
		_, _, err := s.Create(ctx, r)
		require.NoError(t, err)
		applied(t, s, r.Proposal.GetProposalId(), fmt.Sprintf("sha-%d", i))
		ids = append(ids, r.Proposal.GetProposalId())
	}
	require.Eventually(t, func() bool { return len(segmentKeys(t, bs)) < 2*fanout }, 10*time.Second, 10*time.Millisecond)
	s.Close()

	keys := segmentKeys(t, bs)
	var lines int
	for _, k := range keys {
		data, _, err := blob.GetBytes(ctx, bs, k)
		require.NoError(t, err)
		lines += strings.Count(string(data), "\n")
	}
	require.Less(t, lines, 2*n, "a merge keeps one line per proposal")

	again := newStore(t, bs)
	require.Equal(t, n, again.Len())
	for i, id := range ids {
		got, err := again.Get(id)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("sha-%d", i), got.Proposal.GetCommitSha())
	}
	// New writes continue after the highest batch number.
	applied(t, again, ids[0], "sha-new")
	again.Close()
	third := newStore(t, bs)
	got, err := third.Get(ids[0])
	require.NoError(t, err)
	require.Equal(t, "sha-new", got.Proposal.GetCommitSha())
}

// A crash between writing a merged segment and deleting its inputs leaves
// both: the merged one wins and the inputs are removed at the next start.
func TestCoveredSegmentsIgnoredAndRemoved(t *testing.T) {
	ctx := context.Background()
	bs := fsBlobs(t)
	r := rec("curator", "run", "", time.Now())
	id := r.Proposal.GetProposalId()
	line := func(status memoryv1.ProposalStatus) []byte {
		c := r.Clone()
		c.Proposal.Status = status
		b, err := encode(c)
		require.NoError(t, err)
		return b
	}
	put := func(g segment, data []byte) {
		_, err := blob.PutBytes(ctx, bs, g.key(), append(data, '\n'), blob.PutOptions{})
		require.NoError(t, err)
	}
	put(segment{lo: 0, hi: 0}, line(memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED))
	put(segment{lo: 1, hi: 1}, line(memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED))
	put(segment{lo: 0, hi: 1}, line(memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED))
	// Were input 0 read after the merged segment, the proposal would go
	// back to approved.
	s := newStore(t, bs)
	got, err := s.Get(id)
	require.NoError(t, err)
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED, got.Proposal.GetStatus())
	require.Equal(t, []string{segment{lo: 0, hi: 1}.key()}, segmentKeys(t, bs))
}

// Documents written by earlier versions are read, and a later change of
// such a proposal, written to the log, wins.
func TestEarlierDocumentsReadLogWins(t *testing.T) {
	ctx := context.Background()
	bs := fsBlobs(t)
	r := rec("0-agent", "run", "k", time.Now()) // sorts before _log
	doc, err := encode(r)
	require.NoError(t, err)
	_, err = blob.PutBytes(ctx, bs, docKey("0-agent", r.Proposal.GetProposalId()), doc, blob.PutOptions{})
	require.NoError(t, err)

	s := newStore(t, bs)
	_, created, err := s.Create(ctx, rec("0-agent", "run", "k", time.Now()))
	require.NoError(t, err)
	require.False(t, created, "the idempotency key of an earlier document holds")
	applied(t, s, r.Proposal.GetProposalId(), "sha-1")
	s.Close()

	again := newStore(t, bs)
	got, err := again.Get(r.Proposal.GetProposalId())
	require.NoError(t, err)
	require.Equal(t, "sha-1", got.Proposal.GetCommitSha())
}

// A line that cannot be read is logged and skipped; the rest of its
// segment loads, and a merge keeps the line as it is.
func TestUnreadableLineSkippedAndKept(t *testing.T) {
	r := rec("curator", "run", "", time.Now())
	good, err := encode(r)
	require.NoError(t, err)
	lines := [][]byte{[]byte("{broken"), good}
	ctx := context.Background()
	bs := fsBlobs(t)
	_, err = blob.PutBytes(ctx, bs, segment{}.key(), append(append(append([]byte{}, lines[0]...), '\n'), append(good, '\n')...), blob.PutOptions{})
	require.NoError(t, err)
	s := newStore(t, bs)
	require.Equal(t, 1, s.Len())

	// A merge keeps the broken line and the proposal's newest version, and
	// drops an older version.
	older := r.Clone()
	older.Proposal.Message = "an older version"
	olderLine, err := encode(older)
	require.NoError(t, err)
	keep, err := s.idx.keep([][]byte{lines[0], olderLine, good})
	require.NoError(t, err)
	require.Equal(t, []bool{true, false, true}, keep)
}

func TestSegmentKeys(t *testing.T) {
	g := segment{lo: 16, hi: 255}
	back, ok := parseSegmentKey(g.key())
	require.True(t, ok)
	require.Equal(t, g, back)
	require.Equal(t, 1, level(g))
	require.Equal(t, 0, level(segment{lo: 3, hi: 3}))
	require.Equal(t, 2, level(segment{lo: 0, hi: 255}))
	for _, bad := range []string{logPrefix + "x.jsonl", logPrefix + "0000000000000002-0000000000000001.jsonl", docKey("a", "proposal_x")} {
		_, ok := parseSegmentKey(bad)
		require.False(t, ok, bad)
	}
}

// failingGets makes every Get of the store it wraps fail while set, as
// during an object store outage.
type failingGets struct {
	blob.Store
	fail   atomic.Bool
	failed atomic.Int64 // Gets refused
}

func (f *failingGets) Get(ctx context.Context, key string) (io.ReadCloser, blob.Info, error) {
	if f.fail.Load() {
		f.failed.Add(1)
		return nil, blob.Info{}, errors.New("object store unavailable")
	}
	return f.Store.Get(ctx, key)
}

// A merge that could not read its segments is tried again once the store
// answers: an outage must not stop merging for the life of the process.
func TestMergeRetriedAfterReadFailure(t *testing.T) {
	ctx := context.Background()
	bs := &failingGets{Store: fsBlobs(t)}
	s := newStore(t, bs)
	bs.fail.Store(true)
	var id string
	for range fanout {
		r := rec("curator", "run", "", time.Now())
		_, _, err := s.Create(ctx, r)
		require.NoError(t, err)
		id = r.Proposal.GetProposalId()
	}
	// The merge of the 16 segments runs during the outage and fails.
	require.Eventually(t, func() bool { return bs.failed.Load() > 0 }, 10*time.Second, time.Millisecond,
		"no merge tried during the outage")
	require.Len(t, segmentKeys(t, bs), fanout)
	bs.fail.Store(false)
	applied(t, s, id, "sha") // a 17th segment: the merge is tried again
	want := []string{segment{lo: 0, hi: fanout - 1}.key(), segment{lo: fanout, hi: fanout}.key()}
	require.Eventually(t, func() bool { return slices.Equal(segmentKeys(t, bs), want) }, 10*time.Second, 10*time.Millisecond,
		"the first 16 segments merged: %v", segmentKeys(t, bs))
}
