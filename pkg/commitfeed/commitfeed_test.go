package commitfeed

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// wait bounds every wait for something that must happen: a timeout is the
// failure, never the assertion.
const wait = 10 * time.Second

func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatal("timed out")
		panic("unreachable")
	}
}

func pending(s *Signal) bool {
	select {
	case <-s.C():
		return true
	default:
		return false
	}
}

func TestSignalCoalesces(t *testing.T) {
	var s Signal
	require.False(t, s.Pending(), "the zero Signal has no wake")
	for range 100 {
		s.Notify()
		s.NotifyCommit("abc")
	}
	require.True(t, s.Pending())
	require.True(t, pending(&s), "one wake for all of them")
	require.False(t, s.Pending())
	require.False(t, pending(&s), "and only one")
}

// What a wake asks for: the newest commit reported, unless a Notify
// without a sha came since the last wake was taken.
func TestSignalWanted(t *testing.T) {
	var s Signal
	s.NotifyCommit("a")
	s.NotifyCommit("b")
	require.Equal(t, "b", s.take(), "the newest commit reported")
	s.NotifyCommit("c")
	s.Notify()
	require.Equal(t, "", s.take(), "a wake without a sha looks at main")
	s.Notify()
	s.NotifyCommit("d")
	require.Equal(t, "", s.take(), "even when a commit came after it")
	require.Equal(t, "d", s.take(), "served once: the newest commit again")
}

// call is one catch-up Run made; it returns when the test sends on done.
type call struct {
	wanted string
	done   chan error
}

// runLoop runs s.Run with l, whose CatchUp hands every call to the test
// and counts them in n. stopped is closed when Run has returned.
func runLoop(ctx context.Context, s *Signal, l Loop) (calls <-chan call, stopped <-chan struct{}, n *atomic.Int32) {
	ch, n := make(chan call), new(atomic.Int32)
	l.CatchUp = func(ctx context.Context, wanted string) error {
		n.Add(1)
		c := call{wanted: wanted, done: make(chan error)}
		select {
		case ch <- c:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case err := <-c.done:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx, l)
	}()
	return ch, done, n
}

func TestRunCatchesUpAtOnceAndOnPoll(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var s Signal
	calls, _, _ := runLoop(ctx, &s, Loop{Poll: time.Millisecond})
	first := recv(t, calls)
	require.Equal(t, "", first.wanted, "the first catch-up looks at main")
	first.done <- nil
	// Nothing notifies: only the poll can start this one.
	tick := recv(t, calls)
	require.Equal(t, "", tick.wanted, "a poll looks at main")
	tick.done <- nil
}

func TestRunNotifyDuringCatchUpRunsOneMore(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var s Signal
	calls, stopped, n := runLoop(ctx, &s, Loop{}) // no poll: wakes only
	first := recv(t, calls)
	for i := range 50 {
		s.NotifyCommit(string(rune('a' + i%26)))
	}
	s.NotifyCommit("newest")
	first.done <- nil

	second := recv(t, calls)
	require.Equal(t, "newest", second.wanted, "the newest commit reported")
	require.False(t, s.Pending(), "the 51 notifications were one wake")
	second.done <- nil

	cancel()
	recv(t, stopped)
	require.Equal(t, int32(2), n.Load(), "no wake was left: no third catch-up")
}

// A Notify without a sha among commit notifications: the catch-up looks
// at main, since the wake stands for more than the commits reported.
func TestRunWakeWithoutShaLooksAtMain(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var s Signal
	calls, _, _ := runLoop(ctx, &s, Loop{})
	first := recv(t, calls)
	s.NotifyCommit("a")
	s.Notify()
	s.NotifyCommit("b")
	first.done <- nil
	c := recv(t, calls)
	require.Equal(t, "", c.wanted)
	s.NotifyCommit("c")
	c.done <- nil
	require.Equal(t, "c", recv(t, calls).wanted, "commits alone: the newest")
}

func TestRunStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var s Signal
	var stoppedHook, failed atomic.Int32
	calls, stopped, _ := runLoop(ctx, &s, Loop{
		Poll:    time.Hour,
		Failed:  func(error, bool) { failed.Add(1) },
		Stopped: func() { stoppedHook.Add(1) },
	})
	recv(t, calls)
	cancel() // the catch-up under way ends with ctx's error: not a failure
	recv(t, stopped)
	require.Equal(t, int32(1), stoppedHook.Load(), "Stopped runs once, before Run returns")
	require.Zero(t, failed.Load(), "a catch-up cut short by the stop is no failure")
}

func TestRunStopsDuringGap(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var s Signal
	var stoppedHook atomic.Int32
	after := make(chan struct{})
	calls, stopped, _ := runLoop(ctx, &s, Loop{
		After:   func(context.Context) time.Duration { close(after); return time.Hour },
		Stopped: func() { stoppedHook.Add(1) },
	})
	recv(t, calls).done <- nil
	recv(t, after)
	cancel()
	recv(t, stopped) // not an hour later
	require.Equal(t, int32(1), stoppedHook.Load())
}

// After runs between catch-ups; notifications meanwhile wait for the next
// one, and are one catch-up for the newest commit.
func TestRunAfterBatches(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var s Signal
	afters := make(chan chan struct{})
	calls, _, n := runLoop(ctx, &s, Loop{After: func(ctx context.Context) time.Duration {
		release := make(chan struct{})
		afters <- release
		<-release
		return 0
	}})
	recv(t, calls).done <- nil
	release := recv(t, afters)
	s.NotifyCommit("x")
	s.NotifyCommit("y")
	require.Equal(t, int32(1), n.Load(), "no catch-up before After returns")
	close(release)
	c := recv(t, calls)
	require.Equal(t, "y", c.wanted)
	require.False(t, s.Pending())
}

func TestRunReportsFailureTransitions(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var s Signal
	type event struct {
		err   error
		again bool
	}
	events := make(chan event, 10)
	calls, _, _ := runLoop(ctx, &s, Loop{
		Failed:    func(err error, again bool) { events <- event{err, again} },
		Recovered: func() { events <- event{} },
	})
	boom := errors.New("boom")
	for _, err := range []error{boom, boom, nil, nil, boom} {
		c := recv(t, calls)
		s.Notify() // the next catch-up
		c.done <- err
	}
	require.Equal(t, event{boom, false}, recv(t, events), "first failure")
	require.Equal(t, event{boom, true}, recv(t, events), "still failing")
	require.Equal(t, event{}, recv(t, events), "recovered, once")
	require.Equal(t, event{boom, false}, recv(t, events), "failing again")
	require.Empty(t, events)
}

// No notification is lost: after the last one, a catch-up starts that sees
// what it announced, however the notifications and catch-ups interleave.
func TestRunLosesNoNotification(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var s Signal
	var version atomic.Int64
	const last = 2000
	seen := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx, Loop{CatchUp: func(context.Context, string) error {
			if version.Load() == last {
				select {
				case <-seen:
				default:
					close(seen)
				}
			}
			return nil
		}})
	}()
	for i := range int64(last) {
		version.Store(i + 1)
		s.Notify()
	}
	recv(t, seen)
	cancel()
	recv(t, done)
}

// fakeClient serves WatchCommits from streams, one per call; a nil stream
// is a failed call.
type fakeClient struct {
	memoryv1.ProposalApplyServiceClient // other methods are not called
	streams                             chan *fakeStream
}

func (c *fakeClient) WatchCommits(ctx context.Context, _ *memoryv1.WatchCommitsRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[memoryv1.WatchCommitsResponse], error) {
	select {
	case s := <-c.streams:
		if s == nil {
			return nil, errors.New("unavailable")
		}
		s.ctx = ctx
		return s, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fakeStream sends what the test puts in commits, and breaks when the
// test closes it.
type fakeStream struct {
	grpc.ClientStream
	ctx     context.Context
	commits chan string
}

func (s *fakeStream) Recv() (*memoryv1.WatchCommitsResponse, error) {
	select {
	case sha, ok := <-s.commits:
		if !ok {
			return nil, io.EOF
		}
		return &memoryv1.WatchCommitsResponse{Commit: &memoryv1.CommitInfo{Sha: sha}}, nil
	case <-s.ctx.Done():
		return nil, s.ctx.Err()
	}
}

func TestFollowReconnects(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	client := &fakeClient{streams: make(chan *fakeStream, 3)}
	one, two := &fakeStream{commits: make(chan string)}, &fakeStream{commits: make(chan string)}
	client.streams <- one
	client.streams <- nil // the first reconnection fails
	client.streams <- two
	var s Signal
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Follow(ctx, client)
	}()
	next := func() string { recv(t, s.C()); return s.take() }
	require.Equal(t, "", next(), "connected: commits may have landed before")
	one.commits <- "a"
	require.Equal(t, "a", next())
	close(one.commits) // the stream breaks
	require.Equal(t, "", next(), "reconnected (after a failed try)")
	two.commits <- "b"
	require.Equal(t, "b", next())
	cancel()
	recv(t, done)
}

func TestSignalFollow(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := &fakeClient{streams: make(chan *fakeStream, 1)}
	stream := &fakeStream{commits: make(chan string)}
	client.streams <- stream
	var s Signal
	go s.Follow(ctx, client)
	recv(t, s.C())
	require.Equal(t, "", s.take(), "on connecting: look at main")
	stream.commits <- "a"
	recv(t, s.C())
	require.Equal(t, "a", s.take(), "a commit: its sha")
}
