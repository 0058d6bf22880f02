package proposalapply

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"google.golang.org/grpc/codes"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/commitfeed"
	"github.com/garden-bloom/memory/pkg/history"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/revision"
)

// subscriberBuffer is how many commits a slow subscriber may lag before it
// is cut off (it then resumes with from_sha, losing nothing).
const subscriberBuffer = 4096

// hub follows refs/heads/main and fans new commits out to WatchCommits
// subscribers. It reads git, not the engine, so commits made by a person
// with plain git are reported too (marked human_edit).
type hub struct {
	repo   *memrepo.Repo
	logger *slog.Logger
	poll   time.Duration

	// wake asks for a look at main (the engine committed).
	wake commitfeed.Signal

	// advanceMu serialises advance, so the follow loop and a new subscriber
	// never publish the same commits twice.
	advanceMu sync.Mutex

	mu     sync.Mutex
	last   plumbing.Hash
	subs   map[*subscriber]struct{}
	closed bool // shutting down: no new subscribers
}

type subscriber struct {
	agentID string
	ch      chan *memoryv1.CommitInfo
	dropped bool
}

func newHub(repo *memrepo.Repo, logger *slog.Logger, poll time.Duration) *hub {
	return &hub{repo: repo, logger: logger, poll: poll, subs: map[*subscriber]struct{}{}}
}

// notify asks the hub to look at main now (after the engine committed).
func (h *hub) notify() { h.wake.Notify() }

// start records main's head as the stream's starting point.
func (h *hub) start(ctx context.Context) error {
	head, err := h.repo.Head(ctx)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.last = head
	h.mu.Unlock()
	return nil
}

// run follows main until ctx ends: at once, on every notify and every poll
// interval (the latter catches commits pushed by people); then it ends
// every subscription.
func (h *hub) run(ctx context.Context) {
	h.wake.Run(ctx, commitfeed.Loop{
		Poll:    h.poll,
		CatchUp: func(ctx context.Context, _ string) error { return h.advance(ctx) },
		Failed: func(err error, _ bool) {
			h.logger.Warn("commit stream: reading main failed", "err", err)
		},
		Stopped: h.closeAll,
	})
}

// advance publishes every commit between the last seen head and main.
func (h *hub) advance(ctx context.Context) error {
	h.advanceMu.Lock()
	defer h.advanceMu.Unlock()
	return h.advanceLocked(ctx)
}

func (h *hub) advanceLocked(ctx context.Context) error {
	head, err := h.repo.Head(ctx)
	if err != nil {
		return err
	}
	h.mu.Lock()
	last := h.last
	h.mu.Unlock()
	if head == last {
		return nil
	}
	infos, err := history.After(ctx, h.repo, head, last, 0)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = head
	for _, info := range infos {
		if info.GetHumanEdit() {
			h.logger.Warn("human edit committed directly to the memory repo", "sha", info.GetSha(),
				"agent", info.GetAgentId(), "files", strings.Join(info.GetFiles(), ","))
		}
		for s := range h.subs {
			if s.agentID != "" && s.agentID != info.GetAgentId() {
				continue
			}
			select {
			case s.ch <- info:
			default:
				s.dropped = true
				close(s.ch)
				delete(h.subs, s)
			}
		}
	}
	return nil
}

func (h *hub) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for s := range h.subs {
		close(s.ch)
		delete(h.subs, s)
	}
}

// subscribe registers a subscriber and returns, atomically with that, the
// commits after fromSHA up to main's head, so nothing falls between the
// replay and the live feed. The hub first catches up with main: a client
// that saw a commit land before subscribing must not be sent it as new.
func (h *hub) subscribe(ctx context.Context, fromSHA, agentID string) (*subscriber, []*memoryv1.CommitInfo, error) {
	h.advanceMu.Lock()
	defer h.advanceMu.Unlock()
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if !closed {
		if err := h.advanceLocked(ctx); err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			// The follow loop logs and retries this too; the subscriber
			// starts where the stream is rather than not at all.
			h.logger.Warn("commit stream: catching up with main failed", "err", err)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, nil, apierr.New(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_REPOSITORY_UNAVAILABLE,
			"the server is shutting down; resume with from_sha elsewhere or later", nil)
	}
	var replay []*memoryv1.CommitInfo
	if fromSHA != "" {
		from, err := revision.Commit(ctx, h.repo, fromSHA)
		if errors.Is(err, revision.ErrNotFound) {
			return nil, nil, apierr.NotFound(memoryv1.ErrorReason_ERROR_REASON_REVISION_NOT_FOUND,
				fmt.Sprintf("from_sha %q is not a commit of main", fromSHA), map[string]string{"from_sha": fromSHA})
		}
		if err != nil {
			return nil, nil, err
		}
		all, err := history.After(ctx, h.repo, h.last, from.Hash, 0)
		if err != nil {
			return nil, nil, err
		}
		for _, c := range all {
			if agentID == "" || c.GetAgentId() == agentID {
				replay = append(replay, c)
			}
		}
	}
	s := &subscriber{agentID: agentID, ch: make(chan *memoryv1.CommitInfo, subscriberBuffer)}
	h.subs[s] = struct{}{}
	return s, replay, nil
}

func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
		close(s.ch)
	}
}
