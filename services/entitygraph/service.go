// Package entitygraph is the entity-graph target: the temporal entity graph
// derived from the memory monorepo alone (read plane). It replays history
// once at start, then applies each new commit from the write plane's stream.
package entitygraph

import (
	"bufio"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/commitfeed"
	"github.com/garden-bloom/memory/pkg/commitmsg"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/modules"
	"github.com/garden-bloom/memory/pkg/readstate"
	"github.com/garden-bloom/memory/pkg/telemetry"
	"github.com/garden-bloom/memory/pkg/temporalgraph"
)

// Name is the fully-qualified gRPC service name, also its health-check name.
var Name = memoryv1.EntityGraphService_ServiceDesc.ServiceName

// Deps are what the service is built on.
type Deps struct {
	// RepoPath is the canonical bare repository (or the mirror), read-only.
	RepoPath string
	// Repo, when set, is the repository handle to share with the other
	// services of the process (one set of object caches); else RepoPath
	// is opened on first use.
	Repo *memrepo.Lazy
	// Commits is proposal-apply's client, for the commit stream (nil: polling).
	Commits memoryv1.ProposalApplyServiceClient
	Logger  *slog.Logger
	// Poll is how often main is checked besides the stream; 0 = 1 s.
	Poll time.Duration
	// StateDir keeps the graph's snapshot, so a restart resumes instead of
	// replaying all history ("" = no snapshot), and the graph's history
	// on disk while it runs (temporalgraph.NewIn; "" = the temp dir).
	StateDir string
	// Shared publishes the snapshot to the object store and gives a replica
	// starting without one the latest published (nil: not shared).
	Shared *readstate.Shared
	// MeterProvider receives the graph's lag (nil: not measured).
	MeterProvider metric.MeterProvider
}

// saveEvery bounds how often the snapshot is rewritten; a big graph waits
// saveCostFactor times as long as its last save took, so saving stays a
// small share of the CPU however big the graph grows (a big one takes
// seconds to save).
const (
	saveEvery      = 5 * time.Second
	saveCostFactor = 20
)

// Service is the entity-graph service.
type Service struct {
	deps   Deps
	logger *slog.Logger
	repo   *memrepo.Lazy
	// wake asks for a catch-up (commit stream, WaitCurrent).
	wake commitfeed.Signal

	mu    sync.RWMutex // the graph is not safe for concurrent use
	graph *temporalgraph.Graph
	last  plumbing.Hash
	saved plumbing.Hash // the commit the snapshot on disk is at
	// sharedAt is when the graph was loaded from the object store (zero:
	// it was not); only the loop goroutine reads it after loading.
	sharedAt time.Time
	// caughtUp is the readiness: the first catch-up after start is done.
	caughtUp modules.CaughtUp
	// storeFailed is the graph whose store failure was logged (loop
	// goroutine only).
	storeFailed *temporalgraph.Graph

	cancel context.CancelFunc
	bg     sync.WaitGroup
	// hot are the graph's caches as the memory budget sizes them.
	hot []*hotSet

	// observing, observingSize and observingCaches are the lag, size and
	// cache gauges' callbacks, unregistered by Stop.
	observing, observingSize, observingCaches metric.Registration
}

// New returns the service; Start builds the graph.
func New(d Deps) *Service {
	if d.Poll <= 0 {
		d.Poll = time.Second
	}
	s := &Service{deps: d, logger: d.Logger.With("service", "entity-graph"), repo: memrepo.LazyFor(d.Repo, d.RepoPath),
		graph: temporalgraph.NewIn(d.StateDir)}
	for i, c := range s.graph.HotSet() {
		s.hot = append(s.hot, &hotSet{s: s, i: i, name: c.Name})
	}
	var err error
	if s.observing, err = s.instrument(d.MeterProvider); err != nil {
		s.logger.Warn("entity graph lag not measured", "err", err)
	}
	if s.observingSize, err = s.instrumentSize(d.MeterProvider); err != nil {
		s.logger.Warn("entity graph size not measured", "err", err)
	}
	if s.observingCaches, err = telemetry.ObserveCaches(d.MeterProvider, s.Caches); err != nil {
		s.logger.Warn("entity graph caches not measured", "err", err)
	}
	return s
}

// Register adds the service's gRPC handlers to g.
func (s *Service) Register(g grpc.ServiceRegistrar) {
	memoryv1.RegisterEntityGraphServiceServer(g, &handler{svc: s})
}

// Start replays history and follows new commits until Stop.
func (s *Service) Start(ctx context.Context) {
	ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.bg.Go(func() {
		s.load(ctx)
		s.follow(ctx)
	})
	if s.deps.Commits != nil {
		s.bg.Go(func() { s.wake.Follow(ctx, s.deps.Commits) })
	}
}

// Stop stops following.
func (s *Service) Stop() {
	for _, r := range []metric.Registration{s.observing, s.observingSize, s.observingCaches} {
		if r != nil {
			_ = r.Unregister()
		}
	}
	if s.cancel != nil {
		s.cancel()
	}
	s.bg.Wait()
	s.mu.Lock()
	_ = s.graph.Close() // its history on disk
	s.mu.Unlock()
}

// setGraph makes g the graph, at commit last, and closes the graph it
// replaces (its history on disk). The caller holds s.mu: no query is
// using the old one.
func (s *Service) setGraph(g *temporalgraph.Graph, last plumbing.Hash) {
	if g != s.graph {
		_ = s.graph.Close()
		for i, c := range g.HotSet() {
			s.hot[i].size(c.Cache)
		}
	}
	s.graph, s.last = g, last
}

// follow catches up at once, for every commit on the stream and every
// Poll, until ctx ends, saving (and publishing) the snapshot when due and
// once more at the end.
func (s *Service) follow(ctx context.Context) {
	lastSave, saveCost := time.Now(), time.Duration(0)
	s.wake.Run(ctx, commitfeed.Loop{
		Poll:    s.deps.Poll,
		CatchUp: s.catchUpTo,
		Failed: func(err error, _ bool) {
			s.logger.Debug("entity graph catch-up failed; will retry", "err", err)
		},
		After: func(ctx context.Context) time.Duration {
			s.reportStore()
			if now := time.Now(); saveDue(now.Sub(lastSave), saveCost, saveEvery) {
				s.save()
				lastSave = time.Now()
				saveCost = lastSave.Sub(now)
				s.publish(ctx, false)
			}
			return 0
		},
		Stopped: func() {
			s.save()
			// The next replica starts from here (bounded: shutdown waits).
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.deps.Shared.StopTimeout())
			defer cancel()
			s.publish(pctx, true)
		},
	})
}

// reportStore logs, once per graph, that its history on disk failed: the
// graph goes on (records not written stay in memory, so its memory grows;
// reads of what is on disk answer without it), and the next rebuild or
// restart starts a new one.
func (s *Service) reportStore() {
	s.mu.RLock()
	g := s.graph
	err := g.Err()
	s.mu.RUnlock()
	if err != nil && s.storeFailed != g {
		s.storeFailed = g
		s.logger.Error("entity graph history store failed", "err", err)
	}
}

// catchUpTo is catchUp, skipped when the graph is at wanted already: the
// newest commit the stream reported (a newer one wakes it again).
func (s *Service) catchUpTo(ctx context.Context, wanted string) error {
	if wanted != "" {
		s.mu.RLock()
		at := s.last.String() == wanted
		s.mu.RUnlock()
		if at {
			return nil
		}
	}
	return s.catchUp(ctx)
}

// snapshotHeader starts the snapshot file: the commit the graph is at.
// The graph's own stream (temporalgraph.EncodeSnapshot) follows it.
type snapshotHeader struct {
	Commit string
}

func (s *Service) snapshotPath() string { return filepath.Join(s.deps.StateDir, "graph.snapshot") }

// load resumes from the snapshot on disk, else from the one published in
// the object store, if any; catchUp then applies the commits after it (or
// rebuilds if its commit is no longer on main).
func (s *Service) load(ctx context.Context) {
	if s.deps.StateDir == "" {
		return
	}
	file, err := os.Open(s.snapshotPath())
	if errors.Is(err, os.ErrNotExist) {
		s.loadShared(ctx)
		return
	}
	if err != nil {
		return
	}
	f, g, err := decodeSnapshot(file, s.deps.StateDir)
	_ = file.Close()
	if err != nil {
		s.logger.Warn("entity graph snapshot unreadable; rebuilding from history", "path", s.snapshotPath())
		return
	}
	s.mu.Lock()
	s.setGraph(g, plumbing.NewHash(f.Commit))
	s.saved = s.last
	s.mu.Unlock()
	s.logger.Info("entity graph resumed from its snapshot", "commit", f.Commit)
}

// loadShared starts from the snapshot another replica published.
func (s *Service) loadShared(ctx context.Context) {
	_, err := s.deps.Shared.Load(ctx, func(r io.Reader) (string, error) {
		f, g, err := decodeSnapshot(r, s.deps.StateDir)
		if err != nil {
			return "", err
		}
		s.mu.Lock()
		s.setGraph(g, plumbing.NewHash(f.Commit)) // saved stays zero: the next save writes it locally
		s.sharedAt = time.Now()
		s.mu.Unlock()
		return f.Commit, nil
	})
	if err != nil {
		s.logger.Warn("shared entity graph snapshot not loaded; replaying history", "err", err)
	}
}

// decodeSnapshot reads a snapshot; the graph's history goes to dir. An
// older version's is an error: the caller rebuilds from history.
func decodeSnapshot(r io.Reader, dir string) (snapshotHeader, *temporalgraph.Graph, error) {
	var f snapshotHeader
	dec := gob.NewDecoder(bufio.NewReaderSize(r, 1<<16))
	if err := dec.Decode(&f); err != nil {
		return f, nil, err
	}
	g, err := temporalgraph.DecodeSnapshotIn(dec, dir)
	return f, g, err
}

// publish uploads the snapshot on disk when it moved since this replica's
// last upload and the interval passed (or force).
func (s *Service) publish(ctx context.Context, force bool) {
	s.mu.RLock()
	saved := s.saved
	s.mu.RUnlock()
	if saved.IsZero() || !s.deps.Shared.Due(saved.String(), force) {
		return
	}
	if err := s.deps.Shared.PublishFile(ctx, s.snapshotPath(), saved.String()); err != nil {
		s.logger.Warn("entity graph snapshot not published", "err", err)
	}
}

// save writes the snapshot atomically when the graph moved since the last one.
func (s *Service) save() {
	if s.deps.StateDir == "" {
		return
	}
	s.mu.RLock()
	if s.last == s.saved || s.last.IsZero() {
		s.mu.RUnlock()
		return
	}
	last := s.last
	// Encoding streams to a temp file under the read lock (queries go on,
	// commits wait); the fsync and rename come after it.
	tmp, err := encodeTemp(s.snapshotPath(), func(enc *gob.Encoder) error {
		if err := enc.Encode(snapshotHeader{Commit: last.String()}); err != nil {
			return err
		}
		return s.graph.EncodeSnapshot(enc)
	})
	s.mu.RUnlock()
	if err == nil {
		err = replaceWith(tmp, s.snapshotPath())
	}
	if err != nil {
		s.logger.Warn("entity graph snapshot not saved", "err", err)
		return
	}
	s.mu.Lock()
	s.saved = last
	s.mu.Unlock()
}

// encodeTemp writes encode's stream to a new temp file beside path.
func encodeTemp(path string, encode func(*gob.Encoder) error) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".graph-*")
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriterSize(tmp, 1<<16)
	err = encode(gob.NewEncoder(w))
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return nil, err
	}
	return tmp, nil
}

// replaceWith makes tmp durable and atomically puts it at path.
func replaceWith(tmp *os.File, path string) error {
	// Fails (gone) after the rename; before it, a best-effort cleanup.
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// catchUpToHead applies, oldest first, the first-parent commits after the last
// one applied.
func (s *Service) catchUpToHead(ctx context.Context) error {
	repo, err := s.repo.Get()
	if err != nil {
		return err
	}
	head, err := repo.Head(ctx)
	if err != nil {
		return err
	}
	s.mu.RLock()
	last := s.last
	s.mu.RUnlock()
	if head == last {
		return nil
	}
	if !last.IsZero() && s.aheadOfRepo(ctx, repo, last) {
		// A snapshot another replica published can be newer than this
		// replica's mirror for a moment: wait for the mirror, do not rebuild.
		return fmt.Errorf("snapshot commit %s is not in the repository yet", last.String()[:12])
	}
	// Only hashes are kept: a long history must not sit in memory as
	// commit objects.
	var pending []plumbing.Hash
	found := last.IsZero()
	err = repo.Walk(ctx, head, func(c *object.Commit) error {
		if c.Hash == last {
			found = true
			return memrepo.ErrStopWalk
		}
		pending = append(pending, c.Hash)
		return nil
	})
	if err != nil {
		return err
	}
	if !found {
		// History was rewritten: rebuild from scratch.
		s.logger.Warn("last applied commit is gone from main; rebuilding the entity graph", "commit", last.String())
		s.mu.Lock()
		s.setGraph(temporalgraph.NewIn(s.deps.StateDir), plumbing.ZeroHash)
		s.mu.Unlock()
		return s.catchUp(ctx)
	}
	slices.Reverse(pending)
	return s.replay(ctx, repo, pending)
}

// aheadWait is how long a loaded snapshot's unknown commit is waited for
// before it counts as rewritten history.
const aheadWait = 2 * time.Minute

// aheadOfRepo reports whether last is a commit the repository does not
// have (yet), within aheadWait of loading the shared snapshot.
func (s *Service) aheadOfRepo(ctx context.Context, repo *memrepo.Repo, last plumbing.Hash) bool {
	if s.sharedAt.IsZero() || time.Since(s.sharedAt) > aheadWait {
		return false
	}
	_, err := repo.CommitInfo(ctx, last)
	return errors.Is(err, memrepo.ErrRevisionNotFound)
}

// replayWindow is how many commits a replay reads ahead of the one being
// applied, per worker: enough to keep every worker busy, few enough that
// what they hold stays small — each holds a commit's changed files, and
// with 64 read ahead a follower that fell behind a 1-hour soak held 80 MB
// of them (2026-11-27). A long replay saves its progress at least
// replaySaveMin apart, and saveCostFactor times as long as its last save
// took (saves of a big graph take seconds, which a first start would
// otherwise spend over and over).
const (
	replayWindow   = 4
	replaySaveMin  = 30 * time.Second
	replayLogEvery = 10 * time.Second
)

// saveDue says whether a save is due, sinceLast after the last one, which
// took lastCost: at most every floor, and never more than a
// 1/(saveCostFactor+1) share of the time.
func saveDue(sinceLast, lastCost, floor time.Duration) bool {
	return sinceLast >= max(floor, saveCostFactor*lastCost)
}

// replay applies commits (oldest first). Reading and parsing a commit's
// files is most of the work and needs no graph, so it runs on every core,
// ahead of the serial apply; a long replay logs progress and saves a
// snapshot now and then, so a restart resumes instead of starting over.
func (s *Service) replay(ctx context.Context, repo *memrepo.Repo, pending []plumbing.Hash) error {
	type result struct {
		c   temporalgraph.Commit
		err error
	}
	ctx, cancel := context.WithCancel(ctx)
	window := replayWindow * runtime.GOMAXPROCS(0)
	order := make(chan chan result, window)
	jobs := make(chan func(), window)
	var workers sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		workers.Go(func() {
			for job := range jobs {
				job()
			}
		})
	}
	go func() {
		defer close(order)
		defer close(jobs)
		for _, h := range pending {
			out := make(chan result, 1)
			select {
			case order <- out:
			case <-ctx.Done():
				return
			}
			jobs <- func() {
				co, err := repo.CommitInfo(ctx, h)
				if err != nil {
					out <- result{err: err}
					return
				}
				c, err := s.commit(ctx, repo, co)
				if err == nil {
					temporalgraph.Prepare(&c)
				}
				out <- result{c, err}
			}
		}
	}()
	defer func() {
		cancel() // stops the producer; workers finish what they hold
		for range order {
		}
		workers.Wait()
	}()
	start := time.Now()
	lastSave, lastLog, saveCost := start, start, time.Duration(0)
	for i, h := range pending {
		out, ok := <-order
		if !ok {
			return ctx.Err()
		}
		r := <-out
		if r.err != nil {
			return r.err
		}
		s.mu.Lock()
		s.graph.ApplyCommit(r.c)
		s.last = h
		s.mu.Unlock()
		if now := time.Now(); saveDue(now.Sub(lastSave), saveCost, replaySaveMin) {
			s.save()
			lastSave = time.Now()
			saveCost = lastSave.Sub(now)
		}
		if now := time.Now(); now.Sub(lastLog) >= replayLogEvery {
			lastLog = now
			s.logger.Info("entity graph replaying history", "done", i+1, "of", len(pending), "elapsed_s", int(now.Sub(start).Seconds()))
		}
	}
	s.logger.Debug("entity graph caught up", "commits", len(pending), "duration_ms", time.Since(start).Milliseconds())
	return nil
}

// commit reads what the graph needs of one commit.
func (s *Service) commit(ctx context.Context, repo *memrepo.Repo, c *object.Commit) (temporalgraph.Commit, error) {
	out := temporalgraph.Commit{Sha: c.Hash.String(), Time: c.Committer.When, Files: map[string]*string{}}
	if u := commitmsg.Parse(c.Message).Update; u != nil {
		// Clones: the graph keeps these (fact history), and substrings
		// would keep every commit's whole message alive with them.
		out.EntityRefs, out.AgentID, out.ProposalID = u.EntityRefs, strings.Clone(u.AgentID), strings.Clone(u.ProposalID)
	}
	changes, err := repo.ChangedFileBlobs(ctx, c.Hash)
	if err != nil {
		return out, err
	}
	for _, ch := range changes {
		if ch.Deleted() {
			out.Files[ch.Path] = nil
			continue
		}
		text, err := repo.ReadBlobText(ctx, ch.Blob)
		if err != nil {
			return out, fmt.Errorf("read %s at %s: %w", ch.Path, c.Hash, err)
		}
		out.Files[ch.Path] = &text
	}
	return out, nil
}

// WaitCurrent blocks until the graph has applied main's head (tests).
func (s *Service) WaitCurrent(ctx context.Context) error {
	for {
		if repo, err := s.repo.Get(); err == nil {
			if head, err := repo.Head(ctx); err == nil {
				s.mu.RLock()
				done := s.last == head
				s.mu.RUnlock()
				if done {
					return nil
				}
			}
		}
		s.wake.Notify()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
