package proposalstore

import (
	"context"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/blob"
)

func openAt(t testing.TB, bs blob.Store, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), bs, Options{IndexPath: path})
	require.NoError(t, err)
	return s
}

// fill creates n proposals of agent and applies every second one.
func fill(t testing.TB, s *Store, agent string, n int) []string {
	t.Helper()
	ctx := context.Background()
	var ids []string
	for i := range n {
		r := rec(agent, fmt.Sprintf("run_%d", i), "", time.Now())
		_, _, err := s.Create(ctx, r)
		require.NoError(t, err)
		id := r.Proposal.GetProposalId()
		if i%2 == 0 {
			_, err = s.Update(ctx, id, func(r *Record) error {
				r.Proposal.Status, r.Proposal.CommitSha = memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED, "sha-"+id
				return nil
			})
			require.NoError(t, err)
		}
		ids = append(ids, id)
	}
	return ids
}

// caughtUp opens a store at path and returns how many documents its
// catch-up took in from the log (what Open logs), not counting the
// background merges that may read the log at the same time.
func caughtUp(t *testing.T, bs blob.Store, path string) (*Store, int64) {
	t.Helper()
	var taken atomic.Int64
	logger := slog.New(&capture{on: func(r slog.Record) {
		if r.Message != "proposal index caught up with the log" {
			return
		}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "documents" {
				taken.Add(a.Value.Int64())
			}
			return true
		})
	}})
	s, err := Open(context.Background(), bs, Options{IndexPath: path, Logger: logger})
	require.NoError(t, err)
	return s, taken.Load()
}

// capture is a slog handler that hands every record to on.
type capture struct{ on func(slog.Record) }

func (c *capture) Enabled(context.Context, slog.Level) bool { return true }
func (c *capture) Handle(_ context.Context, r slog.Record) error {
	c.on(r)
	return nil
}
func (c *capture) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *capture) WithGroup(string) slog.Handler      { return c }

// A restart reads only the log written after the index's last batch: the
// index on disk is the state, the log its source.
func TestRestartReadsOnlyTheLogsTail(t *testing.T) {
	bs := fsBlobs(t)
	path := filepath.Join(t.TempDir(), "proposals.db")
	s, taken := caughtUp(t, bs, path)
	require.Zero(t, taken)
	ids := fill(t, s, "curator", 40) // 40 created, 20 applied: 60 documents
	s.Close()

	s, taken = caughtUp(t, bs, path)
	require.Zero(t, taken, "nothing of the log is read again")
	require.Equal(t, 40, s.Len())
	got, err := s.Get(ids[0])
	require.NoError(t, err)
	require.Equal(t, "sha-"+ids[0], got.Proposal.GetCommitSha())
	s.Close()

	// Another process (its own index) writes to the same log: a restart
	// over the first index takes in just those documents (3 created, 2
	// applied), even when merges folded them into older segments.
	other := openAt(t, bs, filepath.Join(t.TempDir(), "other.db"))
	more := fill(t, other, "scout", 3)
	other.Close()
	s, taken = caughtUp(t, bs, path)
	defer s.Close()
	require.Equal(t, 43, s.Len())
	require.Less(t, taken, int64(60), "only the log's tail is read, not its %d documents", 65)
	require.GreaterOrEqual(t, taken, int64(5))
	got, err = s.Get(more[2])
	require.NoError(t, err)
	require.Equal(t, "scout", got.Proposal.GetAgentId())
}

// An index that cannot be read is moved aside and rebuilt from the log;
// one that claims more than the log holds (a wiped or other bucket) is
// rebuilt too, never trusted.
func TestUnreadableOrForeignIndexIsRebuilt(t *testing.T) {
	bs := fsBlobs(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "proposals.db")
	s := openAt(t, bs, path)
	ids := fill(t, s, "curator", 10)
	s.Close()

	require.NoError(t, os.WriteFile(path, []byte("not a bbolt file at all, certainly not"), 0o600))
	s = openAt(t, bs, path)
	require.Equal(t, 10, s.Len())
	got, err := s.Get(ids[4])
	require.NoError(t, err)
	require.Equal(t, "sha-"+ids[4], got.Proposal.GetCommitSha())
	s.Close()
	aside, err := filepath.Glob(path + ".unreadable-*")
	require.NoError(t, err)
	require.Len(t, aside, 1, "the unreadable file is kept for a person")

	empty := openAt(t, fsBlobs(t), path)
	defer empty.Close()
	require.Zero(t, empty.Len(), "an index ahead of its log is not trusted")
	_, err = empty.Get(ids[4])
	require.ErrorIs(t, err, ErrNotFound)
}

// The heap does not grow with the number of proposals ever made: finished
// proposals live in the log and the index on disk, not in memory.
func TestHeapDoesNotGrowWithHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 6,000 proposals")
	}
	s := openAt(t, fsBlobs(t), filepath.Join(t.TempDir(), "proposals.db"))
	defer s.Close()
	ctx := context.Background()
	body := strings.Repeat("a fact worth remembering, ", 40) // ~1 KB per proposal
	write := func(n int) {
		var wg sync.WaitGroup
		for w := range 16 { // writers share log segments, as under load
			wg.Go(func() {
				for i := w; i < n; i += 16 {
					r := rec(fmt.Sprintf("agent-%d", i%100), fmt.Sprintf("run_%d", i), "", time.Now())
					r.Proposal.Updates = []*memoryv1.FileUpdate{{File: "facts.md", Operation: memoryv1.Operation_OPERATION_APPEND, Content: "- " + body}}
					_, _, err := s.Create(ctx, r)
					require.NoError(t, err)
					_, err = s.Update(ctx, r.Proposal.GetProposalId(), func(r *Record) error {
						r.Proposal.Status = memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED
						return nil
					})
					require.NoError(t, err)
				}
			})
		}
		wg.Wait()
	}
	heap := func() uint64 {
		// A background merge holds a chunk of lines while it runs: measure
		// once none is due, so the two figures compare what stays.
		require.Eventually(t, func() bool { return s.compact.due() == nil }, 30*time.Second, 10*time.Millisecond)
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	write(3000)
	warm := heap()
	write(3000)
	after := heap()
	grew := int64(after) - int64(warm)
	t.Logf("heap after 3,000 proposals %.1f MB, after 6,000 %.1f MB", float64(warm)/1e6, float64(after)/1e6)
	// 3,000 more proposals of ~1.2 KB each would be 3.6 MB if kept.
	require.Less(t, grew, int64(1<<20), "the heap grew by %d bytes over 3,000 finished proposals", grew)
	require.Equal(t, 6000, s.Len())
}

// The awaiting-review counts follow every change and survive a restart,
// with the index kept or rebuilt.
func TestAwaitingReviewCounts(t *testing.T) {
	ctx := context.Background()
	bs := fsBlobs(t)
	path := filepath.Join(t.TempDir(), "proposals.db")
	s := openAt(t, bs, path)
	mk := func(agent string, reason memoryv1.StatusReason) string {
		r := rec(agent, "run", "", time.Now())
		r.Proposal.Reason = reason
		_, _, err := s.Create(ctx, r)
		require.NoError(t, err)
		return r.Proposal.GetProposalId()
	}
	a1 := mk("a", memoryv1.StatusReason_STATUS_REASON_AWAITING_REVIEW)
	mk("a", memoryv1.StatusReason_STATUS_REASON_AWAITING_REVIEW)
	mk("a", memoryv1.StatusReason_STATUS_REASON_FLAGGED)
	mk("b", memoryv1.StatusReason_STATUS_REASON_AWAITING_REVIEW)
	_, err := s.Update(ctx, a1, func(r *Record) error {
		r.Proposal.Status, r.Proposal.Reason = memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED, 0
		return nil
	})
	require.NoError(t, err)
	counts := func(s *Store) map[string]int {
		out := map[string]int{}
		for _, w := range s.AwaitingReview() {
			out[w.Agent+"/"+w.Reason.String()] = w.Count
		}
		return out
	}
	want := map[string]int{
		"a/STATUS_REASON_AWAITING_REVIEW": 1,
		"a/STATUS_REASON_FLAGGED":         1,
		"b/STATUS_REASON_AWAITING_REVIEW": 1,
	}
	require.Equal(t, want, counts(s))
	s.Close()
	s = openAt(t, bs, path)
	require.Equal(t, want, counts(s), "kept index")
	s.Close()
	s = openAt(t, bs, "")
	defer s.Close()
	require.Equal(t, want, counts(s), "rebuilt index")
}

// A transient state (Mark) is seen by Get and List until the next durable
// write, and is gone after a restart.
func TestMarkIsTransient(t *testing.T) {
	ctx := context.Background()
	bs := fsBlobs(t)
	path := filepath.Join(t.TempDir(), "proposals.db")
	s := openAt(t, bs, path)
	r := rec("a", "run", "", time.Now())
	r.Proposal.Status = memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED
	_, _, err := s.Create(ctx, r)
	require.NoError(t, err)
	id := r.Proposal.GetProposalId()
	_, err = s.Mark(id, func(r *Record) { r.Proposal.Status = memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLYING })
	require.NoError(t, err)
	got, err := s.Get(id)
	require.NoError(t, err)
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLYING, got.Proposal.GetStatus())
	applying, _, err := s.List(Query{Status: memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLYING})
	require.NoError(t, err)
	require.Len(t, applying, 1)
	s.Close()

	s = openAt(t, bs, path)
	defer s.Close()
	got, err = s.Get(id)
	require.NoError(t, err)
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED, got.Proposal.GetStatus())
	inFlight, err := s.WithStatus(memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLYING)
	require.NoError(t, err)
	require.Len(t, inFlight, 1, "recovery finds it")
}

// An index left open by a process that died is trusted in the same boot
// (the kernel kept its unsynced pages) and rebuilt after a machine restart.
func TestIndexLeftOpenAcrossARebootIsRebuilt(t *testing.T) {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Skip("no boot id here: the index is synced on every write instead")
	}
	bs := fsBlobs(t)
	path := filepath.Join(t.TempDir(), "proposals.db")
	s := openAt(t, bs, path)
	ids := fill(t, s, "curator", 6)
	s.Close()
	_, err = os.Stat(path + ".open")
	require.ErrorIs(t, err, os.ErrNotExist, "a clean close removes the marker")

	// Left open by a crashed process in this boot: trusted as it is.
	require.NoError(t, os.WriteFile(path+".open", boot, 0o600))
	s = openAt(t, bs, path)
	require.Equal(t, 6, s.Len())
	s.Close()
	aside, _ := filepath.Glob(path + ".unreadable-*")
	require.Empty(t, aside)

	// Left open when the machine went down: rebuilt from the log.
	require.NoError(t, os.WriteFile(path+".open", []byte("another-boot"), 0o600))
	s = openAt(t, bs, path)
	defer s.Close()
	aside, _ = filepath.Glob(path + ".unreadable-*")
	require.Len(t, aside, 1)
	require.Equal(t, 6, s.Len())
	got, err := s.Get(ids[2])
	require.NoError(t, err)
	require.Equal(t, "sha-"+ids[2], got.Proposal.GetCommitSha())
}

// unreachable fails every call with blob.ErrUnavailable while set, as a
// guarded store does during an outage.
type unreachable struct {
	blob.Store
	down atomic.Bool
}

func (u *unreachable) err() error { return fmt.Errorf("%w: connection refused", blob.ErrUnavailable) }

func (u *unreachable) List(ctx context.Context, prefix string) iter.Seq2[blob.Info, error] {
	if u.down.Load() {
		return func(yield func(blob.Info, error) bool) { yield(blob.Info{}, u.err()) }
	}
	return u.Store.List(ctx, prefix)
}

func (u *unreachable) Put(ctx context.Context, key string, r io.Reader, size int64, opts blob.PutOptions) (blob.Info, error) {
	if u.down.Load() {
		return blob.Info{}, u.err()
	}
	return u.Store.Put(ctx, key, r, size, opts)
}

// Opened while the object store is down, the store serves what its index
// holds and refuses writes; the first write after the store is back reads
// the log's tail (what other writers added) and is accepted.
func TestOpenDuringAnOutageServesTheIndex(t *testing.T) {
	ctx := context.Background()
	bs := &unreachable{Store: fsBlobs(t)}
	path := filepath.Join(t.TempDir(), "proposals.db")
	s := openAt(t, bs, path)
	ids := fill(t, s, "curator", 4)
	s.Close()
	other := openAt(t, bs, "")
	more := fill(t, other, "scout", 2)
	other.Close()

	bs.down.Store(true)
	s = openAt(t, bs, path)
	defer s.Close()
	got, err := s.Get(ids[0])
	require.NoError(t, err)
	require.Equal(t, "sha-"+ids[0], got.Proposal.GetCommitSha())
	_, _, err = s.Create(ctx, rec("curator", "run_x", "", time.Now()))
	require.ErrorIs(t, err, blob.ErrUnavailable)
	_, err = s.Update(ctx, ids[1], func(*Record) error { return nil })
	require.ErrorIs(t, err, blob.ErrUnavailable)

	bs.down.Store(false)
	_, created, err := s.Create(ctx, rec("curator", "run_x", "", time.Now()))
	require.NoError(t, err)
	require.True(t, created)
	got, err = s.Get(more[1])
	require.NoError(t, err, "the other writer's proposals were read on resuming")
	require.Equal(t, "scout", got.Proposal.GetAgentId())
	require.Equal(t, 7, s.Len())
}

// legacyID is an id as versions before the hex alphabet wrote it.
func legacyID(at time.Time) string {
	id := NewID(at)
	b, err := idEncoding.DecodeString(strings.ToUpper(strings.TrimPrefix(id, "proposal_")))
	if err != nil {
		panic(err)
	}
	return "proposal_" + strings.ToLower(legacyIDEncoding.EncodeToString(b))
}

// Lists are newest first by creation time, for ids of both alphabets
// interleaved (a store written before the change keeps its ids) and for
// ids made milliseconds apart, paged with either kind as the token.
func TestListOrdersByCreationAcrossIDForms(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, fsBlobs(t), "")
	defer s.Close()
	start := time.Date(2026, 11, 26, 23, 31, 0, 0, time.UTC)
	var want []string
	for ms := range 300 {
		r := rec("a", "run", "", start)
		if ms%3 == 0 {
			r.Proposal.ProposalId = legacyID(start.Add(time.Duration(ms) * time.Millisecond))
		} else {
			r.Proposal.ProposalId = NewID(start.Add(time.Duration(ms) * time.Millisecond))
		}
		_, _, err := s.Create(ctx, r)
		require.NoError(t, err)
		want = append([]string{r.Proposal.GetProposalId()}, want...)
	}
	for _, agents := range [][]string{nil, {"a"}, {"b", "a"}} {
		var got []string
		token := ""
		for {
			page, next, err := s.List(Query{Agents: agents, PageSize: 7, PageToken: token})
			require.NoError(t, err)
			for _, r := range page {
				got = append(got, r.Proposal.GetProposalId())
			}
			if next == "" {
				break
			}
			token = next
		}
		require.Equal(t, want, got, "agents %v", agents)
	}
}
