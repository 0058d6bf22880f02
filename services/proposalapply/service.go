// Package proposalapply is the proposal-apply target: proposals, review and
// the apply engine — the only writer of the memory monorepo (write plane).
// One applied proposal is exactly one git commit.
package proposalapply

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/applyplan"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/proposalstore"
	"github.com/garden-bloom/memory/pkg/tokens"
)

// Name is the fully-qualified gRPC service name, also its health-check name.
var Name = memoryv1.ProposalApplyService_ServiceDesc.ServiceName

// Deps are what the service is built on.
type Deps struct {
	Repo  *memrepo.Repo
	Blobs blob.Store
	// ProposalIndex is the local file of the proposal store's index (a
	// view of the log in Blobs, rebuilt when missing); "" = a temporary
	// file, rebuilt at every start.
	ProposalIndex string
	Logger        *slog.Logger
	MeterProvider metric.MeterProvider
	// Now is the clock; nil = time.Now.
	Now func() time.Time
	// LookupEnv reads credentials from the environment; nil = none.
	LookupEnv func(string) (string, bool)
	// Guard is entity-graph's client for the semantic guard
	// (CheckProposal); nil = no guard.
	Guard memoryv1.EntityGraphServiceClient
}

// Service is the proposal-apply service.
type Service struct {
	cfg     Config
	blobs   blob.Store
	repo    *memrepo.Repo
	store   *proposalstore.Store
	counter *tokens.Counter
	facts   *factTimes
	now     func() time.Time
	logger  *slog.Logger
	metrics *metrics

	engine *engine
	hub    *hub
	pusher *pusher
	// guard is entity-graph's client for the semantic guard (nil: none).
	guard memoryv1.EntityGraphServiceClient

	cancel context.CancelFunc
	bg     sync.WaitGroup
}

// New opens the proposal store and prepares the engine; Start runs it.
func New(ctx context.Context, cfg Config, d Deps) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	counter, err := tokens.New(cfg.TokenEncoding)
	if err != nil {
		return nil, err
	}
	now := d.Now
	if now == nil {
		now = time.Now
	}
	lookupEnv := d.LookupEnv
	if lookupEnv == nil {
		lookupEnv = func(string) (string, bool) { return "", false }
	}
	logger := d.Logger.With("service", "proposal-apply")
	store, err := proposalstore.Open(ctx, d.Blobs, proposalstore.Options{IndexPath: d.ProposalIndex, Logger: logger})
	if err != nil {
		return nil, err
	}
	p, err := newPusher(d.Repo, cfg, lookupEnv, logger)
	if err != nil {
		store.Close()
		return nil, err
	}
	s := &Service{
		cfg: cfg, blobs: d.Blobs, repo: d.Repo, store: store, counter: counter, now: now, logger: logger,
		facts: newFactTimes(d.Blobs, now, logger), metrics: newMetrics(d.MeterProvider),
		hub: newHub(d.Repo, logger, cfg.WatchPoll), pusher: p, guard: d.Guard,
	}
	s.engine = newEngine(s)
	if err := s.instrument(); err != nil {
		logger.Warn("proposal-apply gauges not registered", "err", err)
	}
	return s, nil
}

// Start recovers unfinished proposals and runs the engine, the commit
// stream and the pusher until Stop.
func (s *Service) Start(ctx context.Context) error {
	ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.engine.ctx = ctx
	if err := s.hub.start(ctx); err != nil {
		return err
	}
	s.bg.Go(func() { s.hub.run(ctx) })
	s.bg.Go(func() { s.pusher.run(ctx) })
	s.bg.Go(func() { s.facts.run(ctx, 2*time.Second, s.logger) })
	if s.cfg.BackupEvery > 0 {
		s.bg.Go(func() { s.backupLoop(ctx, s.cfg.BackupEvery) })
	}
	if s.cfg.RotateEvery > 0 {
		s.bg.Go(func() { s.rotationLoop(ctx, s.cfg.RotateEvery) })
	}
	if err := s.engine.recover(ctx); err != nil {
		return fmt.Errorf("proposal-apply: recovery: %w", err)
	}
	s.pusher.kick()
	return nil
}

// CloseStreams ends every WatchCommits stream (subscribers resume with
// from_sha), so a graceful stop does not wait on followers until its deadline.
func (s *Service) CloseStreams() { s.hub.closeAll() }

// Stop finishes the applies under way (each is one commit; none is cut in
// half), then stops the stream and the pusher.
func (s *Service) Stop() {
	s.uninstrument()
	s.engine.stop()
	if s.cancel != nil {
		s.cancel()
	}
	s.bg.Wait()
	s.store.Close()
}

// Register adds the service's gRPC handlers to g.
func (s *Service) Register(g grpc.ServiceRegistrar) {
	memoryv1.RegisterProposalApplyServiceServer(g, &handler{svc: s})
}

// reader reads an agent's files at a commit; a missing file reads as "".
func (s *Service) reader(ctx context.Context, commit plumbing.Hash, agentID string) applyplan.Reader {
	return func(rel string) (string, bool, error) {
		f, err := memlayout.Resolve(agentID, rel)
		if err != nil {
			return "", false, err
		}
		text, _, err := s.repo.ReadTextBlob(ctx, commit, f.Path)
		if errors.Is(err, memrepo.ErrFileNotFound) {
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
		return text, true, nil
	}
}

// plan is the commit that applies p on the files read returns at time now,
// eviction ordered by the agent's fact index. Propose (a dry run, checkOnly:
// see applyplan.Input.CheckOnly) and the apply both plan through it, so
// they agree.
func (s *Service) plan(ctx context.Context, p *memoryv1.Proposal, read applyplan.Reader, now time.Time, checkOnly bool) (*applyplan.Plan, error) {
	facts, err := s.facts.RecordsOf(ctx, p.GetAgentId())
	if err != nil {
		return nil, err
	}
	return applyplan.Build(applyplan.Input{Proposal: p, Read: read, Now: now, Counter: s.counter, Facts: facts, CheckOnly: checkOnly})
}

// headFactHashes are the hashes of the facts in the agent's facts.md on
// main's head (none when it has no facts.md).
func (s *Service) headFactHashes(ctx context.Context, agentID string) (map[string]bool, error) {
	head, err := s.repo.Head(ctx)
	if err != nil {
		return nil, err
	}
	facts, _, err := s.reader(ctx, head, agentID)(memlayout.FactsFile)
	if err != nil {
		return nil, err
	}
	return factHashes(facts), nil
}

// headMeta returns main's head and the agent's meta.json and policy there.
func (s *Service) headState(ctx context.Context, agentID string) (plumbing.Hash, memlayout.Meta, memlayout.Policy, error) {
	head, err := s.repo.Head(ctx)
	if err != nil {
		return plumbing.ZeroHash, memlayout.Meta{}, memlayout.Policy{}, err
	}
	read := s.reader(ctx, head, agentID)
	raw, _, err := read(memlayout.MetaFile)
	if err != nil {
		return head, memlayout.Meta{}, memlayout.Policy{}, err
	}
	meta, err := memlayout.ParseMeta([]byte(raw))
	if err != nil {
		return head, memlayout.Meta{}, memlayout.Policy{}, err
	}
	policy := memlayout.Policy{AutoApprove: s.cfg.AutoApproveDefault}
	raw, ok, err := read(memlayout.PolicyFile)
	if err != nil {
		return head, meta, policy, err
	}
	if ok {
		if policy, err = memlayout.ParsePolicy([]byte(raw)); err != nil {
			// A broken policy must not open the gates: fall back to review.
			s.logger.Warn("unreadable policy.json; proposals wait for review", "agent", agentID, "err", err)
			policy = memlayout.Policy{}
		}
	}
	return head, meta, policy, nil
}

// WaitIdle blocks until no apply is queued or running, or ctx ends (tests,
// benchmarks).
func (s *Service) WaitIdle(ctx context.Context) error {
	for !s.engine.idle() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
	return nil
}
