// Package searchindex is the search-index target: BM25 search over the
// memory monorepo and the agents' sources (read plane). It follows the write
// plane's commit stream and re-indexes only what each commit changed.
package searchindex

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/commitfeed"
	"github.com/garden-bloom/memory/pkg/fulltext"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/modules"
	"github.com/garden-bloom/memory/pkg/readstate"
)

// Name is the fully-qualified gRPC service name, also its health-check name.
var Name = memoryv1.SearchIndexService_ServiceDesc.ServiceName

// Deps are what the service is built on.
type Deps struct {
	// RepoPath is the canonical bare repository, opened read-only.
	RepoPath string
	// Repo, when set, is the repository handle to share with the other
	// services of the process (one set of object caches); else RepoPath
	// is opened on first use.
	Repo  *memrepo.Lazy
	Blobs blob.Store
	// Commits is proposal-apply's client, for the commit stream (may be nil:
	// then only polling).
	Commits memoryv1.ProposalApplyServiceClient
	Logger  *slog.Logger
	// Shared publishes a copy of the index to the object store and gives a
	// replica starting with an empty index the latest published (nil: not
	// shared).
	Shared *readstate.Shared
	// MeterProvider receives the index's lag (nil: not measured).
	MeterProvider metric.MeterProvider
}

// Service is the search-index service.
type Service struct {
	cfg    Config
	deps   Deps
	logger *slog.Logger

	repo *memrepo.Lazy

	index         *fulltext.Index
	publishing    atomic.Bool
	publishOnStop sync.Once
	// syncMu orders catch-ups, source passes and the rebuild switch.
	syncMu sync.Mutex
	// wake asks for a catch-up (commit stream, Reindex, WaitCurrent).
	wake       commitfeed.Signal
	reindexing atomic.Bool
	// caughtUp is the readiness: the first catch-up after start is done.
	caughtUp modules.CaughtUp

	ctx    context.Context // the service's life, for background work
	cancel context.CancelFunc
	bg     sync.WaitGroup
	// observing is the lag gauges' callback, unregistered by Stop.
	observing metric.Registration
}

// New opens the index (creating it on first start).
func New(cfg Config, d Deps) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ix, err := fulltext.Open(cfg.IndexDir)
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, deps: d, logger: d.Logger.With("service", "search-index"), index: ix,
		repo: memrepo.LazyFor(d.Repo, d.RepoPath)}
	if s.observing, err = s.instrument(d.MeterProvider); err != nil {
		s.logger.Warn("search index lag not measured", "err", err)
	}
	return s, nil
}

// Register adds the service's gRPC handlers to g.
func (s *Service) Register(g grpc.ServiceRegistrar) {
	memoryv1.RegisterSearchIndexServiceServer(g, &handler{svc: s})
}

// Start catches up in the background and follows the write plane.
func (s *Service) Start(ctx context.Context) {
	ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.ctx = ctx
	s.bg.Go(func() {
		s.loadShared(ctx)
		s.follow(ctx)
	})
	if s.deps.Commits != nil {
		s.bg.Go(func() { s.wake.Follow(ctx, s.deps.Commits) })
	}
}

// StopFollowing ends the background work (catch-up, sources, the commit
// stream), so the write plane's server can drain; searches still answer.
func (s *Service) StopFollowing() {
	if s.cancel != nil {
		s.cancel()
	}
	s.bg.Wait()
	// The next replica starts from here (bounded: shutdown waits), once.
	s.publishOnStop.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.deps.Shared.StopTimeout())
		defer cancel()
		s.publish(ctx, true)
	})
}

// loadShared fills an empty index from the copy another replica published.
func (s *Service) loadShared(ctx context.Context) {
	if s.index.State().LastCommit != "" {
		return
	}
	_, err := s.deps.Shared.Load(ctx, func(r io.Reader) (string, error) {
		st, err := s.index.RestoreSnapshot(ctx, r)
		return st.LastCommit, err
	})
	if err != nil {
		s.logger.Warn("shared search index not loaded; indexing from the repository", "err", err)
	}
}

// publish uploads a copy of the index when it moved since this replica's
// last upload and the interval passed (or force); one upload at a time.
func (s *Service) publish(ctx context.Context, force bool) {
	if !s.deps.Shared.Due(s.index.State().LastCommit, force) || !s.publishing.CompareAndSwap(false, true) {
		return
	}
	defer s.publishing.Store(false)
	var commit string
	err := s.deps.Shared.Publish(ctx, func(w io.Writer) (string, error) {
		st, err := s.index.WriteSnapshot(ctx, w)
		commit = st.LastCommit
		return commit, err
	})
	if err != nil {
		s.logger.Warn("search index copy not published", "commit", commit, "err", err)
	}
}

// Stop stops following and closes the index.
func (s *Service) Stop() {
	if s.observing != nil {
		_ = s.observing.Unregister()
	}
	s.StopFollowing()
	_ = s.index.Close()
}

// openRepo opens the repository once it exists.
func (s *Service) openRepo() (*memrepo.Repo, error) { return s.repo.Get() }

// follow catches up at once, for every commit on the stream and every
// HeadPoll, until ctx ends; the sources are listed again on a timer of
// their own (syncMu keeps the two from overlapping).
func (s *Service) follow(ctx context.Context) {
	next := s.syncSources(ctx) // the first listing before the first catch-up, as ever
	s.bg.Go(func() { s.followSources(ctx, next) })
	s.wake.Run(ctx, commitfeed.Loop{
		Poll:    s.cfg.HeadPoll,
		CatchUp: s.catchUpTo,
		Failed: func(err error, _ bool) {
			s.logger.Warn("index catch-up failed; will retry", "err", err)
		},
		After: func(ctx context.Context) time.Duration {
			if s.deps.Shared.Due(s.index.State().LastCommit, false) {
				s.bg.Go(func() { s.publish(ctx, false) })
			}
			// Commits arriving meanwhile wait for one batch: each batch
			// is a new index segment, persisted and later merged, and
			// one per commit at hundreds of commits a second would keep
			// the index busy with segments. A lone commit is not delayed.
			return catchUpGap(s.wake.Pending())
		},
	})
}

// catchUpTo is catchUp, skipped when the index is at wanted already: the
// newest commit the stream reported (a newer one wakes it again).
func (s *Service) catchUpTo(ctx context.Context, wanted string) error {
	if wanted != "" && s.index.State().LastCommit == wanted {
		return nil
	}
	return s.catchUp(ctx)
}

// followSources indexes what changed among the sources, first after next,
// then when each pass says, until ctx ends.
func (s *Service) followSources(ctx context.Context, next time.Duration) {
	t := time.NewTimer(next)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			t.Reset(s.syncSources(ctx))
		}
	}
}

// catchUpGap is the wait after a catch-up before the next one: short
// while commits come now and then, so they are searchable at once, and
// longer when more arrived while it ran (apply load), so that batches
// grow and the index writes and merges fewer segments. At 200 commits/s
// a 20 ms gap made a segment of ~4 commits, and persisting and merging so
// many segments took CPU from the reads.
func catchUpGap(busy bool) time.Duration {
	if busy {
		return catchUpBusyGap
	}
	return catchUpIdleGap
}

const (
	catchUpIdleGap = 10 * time.Millisecond
	catchUpBusyGap = 50 * time.Millisecond
)

// catchUpToHead indexes what changed between the index's last commit and main.
func (s *Service) catchUpToHead(ctx context.Context) error {
	repo, err := s.openRepo()
	if err != nil {
		return err
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	head, err := repo.Head(ctx)
	if err != nil {
		return err
	}
	st := s.index.State()
	last := st.LastCommit
	if last == head.String() {
		return nil
	}
	from := plumbing.ZeroHash
	if last != "" {
		from = plumbing.NewHash(last)
		if _, err := repo.CommitInfo(ctx, from); err != nil {
			// History was rewritten under us: index everything again.
			s.logger.Warn("last indexed commit is gone from the repository; indexing all files", "commit", last)
			from, st.Pass = plumbing.ZeroHash, nil
		}
	}
	start := time.Now()
	if p := st.Pass; p != nil {
		to := plumbing.NewHash(p.To)
		if _, err := repo.CommitInfo(ctx, to); err != nil {
			// The pass's target is gone, and with it what its done files
			// were indexed from: index everything again.
			s.logger.Warn("interrupted catch-up's commit is gone from the repository; indexing all files", "commit", p.To)
			from = plumbing.ZeroHash
		} else {
			s.logger.Info("resuming an interrupted catch-up", "from", last, "to", p.To, "done_through", p.Done)
			if _, err := indexCommits(ctx, repo, s.index, from, to, p.Done); err != nil {
				return err
			}
			if from = to; to == head {
				return nil
			}
		}
	}
	n, err := indexCommits(ctx, repo, s.index, from, head, "")
	if err != nil {
		return err
	}
	s.logger.Debug("indexed commits", "from", last, "to", head.String(), "files", n, "duration_ms", time.Since(start).Milliseconds())
	return nil
}

// sourcesCostFactor: after a listing that found nothing to index, the next
// one waits at least this many times as long as it took. Listing every
// source costs a stat and a sidecar read per object, CPU taken from reads;
// waiting in proportion keeps it under 1/(sourcesCostFactor+1) of a core. The
// wait is at most sourcesPollMaxFactor polls, so a new source is never
// unsearchable for long.
const (
	sourcesCostFactor    = 20
	sourcesPollMaxFactor = 10
)

// sourcesPollAfter is when to list the sources again after a pass that
// took took and indexed changed sources. A pass that indexed something
// spent its time indexing, not listing: the next one comes after poll.
func sourcesPollAfter(poll, took time.Duration, changed int) time.Duration {
	if changed > 0 {
		return poll
	}
	return min(max(poll, sourcesCostFactor*took), sourcesPollMaxFactor*poll)
}

// syncSources indexes what changed among the sources and returns when to
// look again.
func (s *Service) syncSources(ctx context.Context) time.Duration {
	if s.deps.Blobs == nil {
		return s.cfg.SourcesPoll
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	start := time.Now()
	n, err := indexSources(ctx, s.deps.Blobs, s.index, s.index.Files())
	switch {
	case err != nil:
		if ctx.Err() == nil {
			s.logger.Warn("indexing sources failed; will retry", "err", err)
		}
		return s.cfg.SourcesPoll
	case n > 0:
		s.logger.Info("indexed sources", "changed", n)
	}
	return sourcesPollAfter(s.cfg.SourcesPoll, time.Since(start), n)
}

// Reindex rebuilds the whole index from main and the sources in the
// background while searches keep using the current one. It returns false
// when a rebuild is already running.
func (s *Service) Reindex() (bool, error) {
	ctx := s.ctx
	repo, err := s.openRepo()
	if err != nil {
		return false, err
	}
	if !s.reindexing.CompareAndSwap(false, true) {
		return false, nil
	}
	s.bg.Go(func() {
		defer s.reindexing.Store(false)
		start := time.Now()
		err := s.index.Rebuild(ctx, func(b *fulltext.Builder) error {
			head, err := repo.Head(ctx)
			if err != nil {
				return err
			}
			if _, err := indexCommits(ctx, repo, b, plumbing.ZeroHash, head, ""); err != nil {
				return err
			}
			if s.deps.Blobs == nil {
				return nil
			}
			_, err = indexSources(ctx, s.deps.Blobs, b, map[string]string{})
			return err
		})
		if err != nil {
			s.logger.Error("reindex failed; the previous index stays in use", "err", err)
			return
		}
		st := s.index.State()
		s.logger.Info("reindex finished", "documents", st.Documents, "chunks", st.Chunks, "duration_ms", time.Since(start).Milliseconds())
		s.wake.Notify() // catch up with commits made during the rebuild
	})
	return true, nil
}

// ReindexAgent re-reads one agent's files at main's head (and its sources)
// into the live index, replacing whatever was indexed for it.
func (s *Service) ReindexAgent(ctx context.Context, agentID string) error {
	repo, err := s.openRepo()
	if err != nil {
		return err
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	head, err := repo.Head(ctx)
	if err != nil {
		return err
	}
	var batch fulltext.Batch
	present := map[string]bool{}
	for _, dir := range []string{"memory/" + agentID, "logic/" + agentID} {
		paths, err := repo.ListFiles(ctx, head, dir)
		if err != nil {
			return err
		}
		for _, path := range paths {
			agent, f, ok := repoFile(path)
			if !ok || agent != agentID {
				continue
			}
			data, err := repo.ReadFile(ctx, head, path)
			if err != nil {
				return err
			}
			present[path] = true
			batch.Upserts = append(batch.Upserts, chunkFile(path, agent, f.Layer, string(f.Kind), head.String(), string(data)))
		}
	}
	for path := range s.index.Files() {
		if agent, _, ok := repoFile(path); ok && agent == agentID && !present[path] {
			batch.Deletes = append(batch.Deletes, path)
		}
	}
	if err := s.index.Apply(ctx, batch); err != nil {
		return err
	}
	if s.deps.Blobs != nil {
		mine := map[string]string{}
		for path := range s.index.Files() {
			if a, ok := sourceFile(path); ok && a == agentID {
				mine[path] = "" // no version matches: every source is read again
			}
		}
		_, err = indexSources(ctx, s.deps.Blobs, s.index, mine)
	}
	return err
}

// WaitCurrent blocks until the index has caught up with main (tests).
func (s *Service) WaitCurrent(ctx context.Context) error {
	for {
		repo, err := s.openRepo()
		if err == nil {
			head, err := repo.Head(ctx)
			if err == nil && s.index.State().LastCommit == head.String() && !s.reindexing.Load() {
				return nil
			}
		}
		s.wake.Notify()
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
