// Package commitfeed is how a follower of main keeps up with it: Signal is
// a coalescing wake-up whose Run catches up on every wake and every poll,
// and whose Follow wakes it for every commit on proposal-apply's
// WatchCommits stream, reconnecting with backoff when the stream breaks
// (the polls cover the gap, so a broken stream only delays a follower).
//
// What the stream carries for internal followers: the sha of the newest
// commit reported, nothing else. WatchCommits sends each commit's whole
// CommitInfo, for external clients, and that API stays as it is; but an
// internal follower catches up by reading git from its own last commit to
// main, so wakes may coalesce freely and a per-commit payload would only be
// decoded and dropped. The sha is kept because it is cheap and lets a wake
// end early: a follower already at the newest commit the stream reported
// has nothing to do (a mirror that has it needs no fetch, an index at it no
// read of main). A wake that may stand for commits the stream did not name
// — a poll, a (re)connected stream (commits may have landed while it was
// down), a Notify without a sha — carries no sha, and the follower looks
// at main.
package commitfeed

import (
	"context"
	"sync"
	"time"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// Signal is a coalescing wake-up: however many Notify calls come before
// the waiter gets to them, it wakes once. That is enough for a follower,
// whose catch-up reads everything from where it is to main, and it is what
// makes a burst of commits cost one catch-up instead of one each. Notify
// never blocks: it is called on the commit path and by the stream.
//
// The zero Signal is ready to use. It must not be copied.
type Signal struct {
	once sync.Once
	ch   chan struct{} // holds the one pending wake

	mu     sync.Mutex
	wanted string // the newest commit the stream reported
	look   bool   // a Notify without a sha came since the last wake was taken
}

func (s *Signal) wake() chan struct{} {
	s.once.Do(func() { s.ch = make(chan struct{}, 1) })
	return s.ch
}

// Notify wakes the waiter to look at main (a local commit, a request, a
// reconnected stream: no sha says what is new).
func (s *Signal) Notify() { s.notify("") }

// NotifyCommit wakes the waiter for sha, the newest commit the stream has
// reported.
func (s *Signal) NotifyCommit(sha string) { s.notify(sha) }

func (s *Signal) notify(sha string) {
	s.mu.Lock()
	if sha == "" {
		s.look = true
	} else {
		s.wanted = sha
	}
	s.mu.Unlock()
	// Recorded before the wake is sent, so whoever takes this wake (or the
	// one pending) sees it: no notification is served by a stale catch-up.
	select {
	case s.wake() <- struct{}{}:
	default: // one wake is pending already: it stands for this one too
	}
}

// C is where a wake waits, for a loop that selects on it beside other
// events; it carries no sha. A Signal given to Run must not be read here.
func (s *Signal) C() <-chan struct{} { return s.wake() }

// Pending reports whether a wake is waiting: notifications came since the
// last one was taken (during a catch-up, for example).
func (s *Signal) Pending() bool { return len(s.wake()) > 0 }

// take returns what a wake just received asks for: the newest commit the
// stream reported, or "" when a Notify without a sha came since the last
// take (then only a look at main serves it).
func (s *Signal) take() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.look {
		s.look = false
		return ""
	}
	return s.wanted
}

// Loop is what Run does; only CatchUp is required.
type Loop struct {
	// Poll is how often CatchUp runs without a wake, for commits no
	// notification announced (no stream, a stream gap, a push by hand);
	// 0: never.
	Poll time.Duration
	// CatchUp brings the follower up to main. wanted is the newest commit
	// the stream reported when that is all the wake is about: a follower
	// already at it may return at once (newer commits wake it again). ""
	// means look at main.
	CatchUp func(ctx context.Context, wanted string) error
	// Failed gets CatchUp's errors, except those of a catch-up cut short
	// by ctx ending (shutdown, not a failure). again is true when the
	// previous catch-up failed too, for callers that log a change only.
	Failed func(err error, again bool)
	// Recovered runs after the first catch-up that works after a failure.
	Recovered func()
	// After runs after each catch-up and returns how long to wait before
	// the next; notifications meanwhile become one wake, so a follower
	// that writes something per catch-up can make its batches bigger.
	After func(ctx context.Context) time.Duration
	// Stopped runs once ctx has ended, before Run returns (a last save).
	Stopped func()
}

// Run catches up at once (a follower starting has missed whatever came
// before), then on every wake of s and every l.Poll, until ctx ends; then
// it runs l.Stopped. Catch-ups never overlap, and any number of
// notifications during one lead to one more.
func (s *Signal) Run(ctx context.Context, l Loop) {
	s.run(ctx, l)
	if l.Stopped != nil {
		l.Stopped()
	}
}

func (s *Signal) run(ctx context.Context, l Loop) {
	var poll <-chan time.Time
	if l.Poll > 0 {
		t := time.NewTicker(l.Poll)
		defer t.Stop()
		poll = t.C
	}
	failing, wanted := false, ""
	for {
		err := l.CatchUp(ctx, wanted)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil:
			if l.Failed != nil {
				l.Failed(err, failing)
			}
			failing = true
		case failing:
			failing = false
			if l.Recovered != nil {
				l.Recovered()
			}
		}
		if l.After != nil {
			if gap := l.After(ctx); gap > 0 && !sleep(ctx, gap) {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-s.wake():
			wanted = s.take()
		case <-poll:
			wanted = ""
		}
	}
}

// sleep waits d, or less if ctx ends first (then false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Follow wakes s from proposal-apply's commit stream until ctx ends:
// NotifyCommit for each commit, and Notify whenever the stream is
// (re)established, since commits may have landed while it was down.
func (s *Signal) Follow(ctx context.Context, client memoryv1.ProposalApplyServiceClient) {
	backoff := followBackoff
	for ctx.Err() == nil {
		stream, err := client.WatchCommits(ctx, &memoryv1.WatchCommitsRequest{})
		if err == nil {
			s.Notify()
			for {
				resp, err := stream.Recv()
				if err != nil {
					break
				}
				backoff = followBackoff
				s.NotifyCommit(resp.GetCommit().GetSha())
			}
		}
		if !sleep(ctx, backoff) {
			return
		}
		backoff = min(2*backoff, followBackoffMax)
	}
}

// followBackoff is the first wait before reconnecting; it doubles up to
// followBackoffMax while connecting fails.
const (
	followBackoff    = 100 * time.Millisecond
	followBackoffMax = 5 * time.Second
)
