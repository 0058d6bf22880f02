package proposalapply

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/applyplan"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/commitmsg"
	"github.com/garden-bloom/memory/pkg/history"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/proposalstore"
)

// maxHeadRetries bounds how often one apply re-plans because its agent's
// files changed under the plan (a person's commit).
const maxHeadRetries = 100

// engine applies approved proposals: one queue per agent, strictly serial per
// agent and parallel across agents. The agents' workers plan in parallel; one
// committer goroutine puts their commits on main in batches (committer.go).
type engine struct {
	svc *Service
	// ctx outlives requests: applies run to completion after Propose returns.
	ctx context.Context

	// plans feeds the committer; closed by stop once no worker is left.
	plans         chan *commitPlan
	closePlans    sync.Once
	committerDone chan struct{}

	mu      sync.Mutex
	queues  map[string]*agentQueue
	wg      sync.WaitGroup
	stopped bool
	// quit is closed by stop: waits for storage give up at once.
	quit chan struct{}
}

type agentQueue struct {
	ids     []string
	running bool
}

func newEngine(s *Service) *engine {
	e := &engine{svc: s, ctx: context.Background(), queues: map[string]*agentQueue{},
		plans: make(chan *commitPlan, maxBatch), committerDone: make(chan struct{}), quit: make(chan struct{})}
	go e.runCommitter()
	return e
}

// enqueue schedules an approved proposal of an agent.
func (e *engine) enqueue(agentID, proposalID string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return // stays approved in the store; recovered at the next start
	}
	q := e.queues[agentID]
	if q == nil {
		q = &agentQueue{}
		e.queues[agentID] = q
	}
	q.ids = append(q.ids, proposalID)
	if !q.running {
		q.running = true
		e.wg.Add(1)
		go e.drain(e.ctx, agentID, q)
	}
}

func (e *engine) drain(ctx context.Context, agentID string, q *agentQueue) {
	defer e.wg.Done()
	for {
		e.mu.Lock()
		if len(q.ids) == 0 || e.stopped {
			q.running = false
			if len(q.ids) == 0 {
				delete(e.queues, agentID)
			}
			e.mu.Unlock()
			return
		}
		id := q.ids[0]
		q.ids = q.ids[1:]
		e.mu.Unlock()
		e.apply(ctx, id)
	}
}

// stop lets running applies finish (their commits included) and starts no
// new one.
func (e *engine) stop() {
	e.mu.Lock()
	if !e.stopped {
		close(e.quit)
	}
	e.stopped = true
	e.mu.Unlock()
	e.wg.Wait()
	e.stopCommitter()
}

// depth is the number of approved proposals queued or being applied.
func (e *engine) depth() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, q := range e.queues {
		n += len(q.ids)
		if q.running {
			n++ // the one drain took off the queue
		}
	}
	return n
}

// idle reports whether no apply is queued or running (for tests).
func (e *engine) idle() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.queues) == 0
}

// apply takes one proposal from approved to applied, rejected,
// needs_human_review or failed. A crash at any point is recovered by
// recover(): the commit is the commit point, found again by its message.
func (e *engine) apply(ctx context.Context, id string) {
	s := e.svc
	rec, err := s.store.Get(id)
	if err != nil {
		s.logger.Error("apply: proposal vanished", "proposal", id, "err", err)
		return
	}
	st := rec.Proposal.GetStatus()
	if st != memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED && st != memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLYING {
		return
	}
	start := s.now()
	// "applying" is shown but not written: after a crash the document still
	// says approved, and recovery asks git whether the commit happened. That
	// saves a durable write per apply.
	rec, err = s.store.Mark(id, func(r *proposalstore.Record) {
		r.Proposal.Status = memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLYING
		r.Proposal.Attempts++
		r.Proposal.UpdatedAt = timestamppb.New(s.now())
	})
	if err != nil {
		s.logger.Error("apply: proposal vanished", "proposal", id, "err", err)
		return
	}

	wait := storageRetryFirst
	for attempt := 0; ; attempt++ {
		outcome, err := e.tryApply(ctx, rec)
		if errors.Is(err, memrepo.ErrHeadMoved) && attempt < maxHeadRetries {
			continue
		}
		if transientStorage(err) {
			// The object store is down or the disk is full: nothing is
			// wrong with the proposal. It stays approved and is tried
			// again, holding its agent's queue so order is kept.
			s.logger.Warn("apply: storage unavailable; retrying", "proposal", id, "in", wait, "err", err)
			select {
			case <-ctx.Done():
				return // still approved in the store: recovered at the next start
			case <-e.quit:
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, storageRetryMax)
			attempt = -1
			continue
		}
		if errors.Is(err, errCommitInDoubt) {
			// Neither applied (not durable) nor failed (a retry would apply
			// it twice): the next start's recovery finds the commit by its
			// message, or re-queues the proposal.
			s.logger.Error("apply: commit on main but not known to be durable; left to recovery at the next start", "proposal", id, "err", err)
			return
		}
		if err != nil {
			outcome = failure(memoryv1.StatusReason_STATUS_REASON_APPLY_ERROR, err.Error())
		}
		e.finish(ctx, rec, outcome, start)
		return
	}
}

// outcome is how an apply ended.
type outcome struct {
	status         memoryv1.ProposalStatus
	reason         memoryv1.StatusReason
	message        string
	sha            string
	version        int32
	currentVersion int32
	resolution     string
	flags          []string
	// What the plan did besides the proposal's own updates.
	evictedFacts, frozenLoops, removedClosedLoops, warnings []string
	addedFacts                                              []string
	// factHashes are those of the facts in facts.md after the commit, when
	// it changed facts.md (nil when it did not): the fact index keeps
	// records of these only.
	factHashes map[string]bool
}

func failure(reason memoryv1.StatusReason, msg string) outcome {
	return outcome{status: memoryv1.ProposalStatus_PROPOSAL_STATUS_FAILED, reason: reason, message: msg}
}

// applyPlan is what planning an apply on main's head gives: the commit to
// make, or refused, the outcome that says why applying now commits nothing.
type applyPlan struct {
	head plumbing.Hash
	now  time.Time
	plan *applyplan.Plan
	// refused is set, and plan nil, when the apply would not commit: a
	// version conflict, a section conflict, a proposal that does not apply
	// (validation, token limit), an unreadable meta.json.
	refused *outcome
}

// planApply runs the apply's checks on main's head and plans its commit:
// the version check, the section-conflict check against the record's base
// commit, then s.plan. The engine (tryApply) commits what it returns and
// PreviewProposal shows it, so a preview is the commit the apply makes.
// It writes nothing.
func (s *Service) planApply(ctx context.Context, rec *proposalstore.Record) (applyPlan, error) {
	p := rec.Proposal
	agent := p.GetAgentId()
	head, err := s.repo.Head(ctx)
	if err != nil {
		return applyPlan{}, err
	}
	refuse := func(o outcome) (applyPlan, error) { return applyPlan{head: head, refused: &o}, nil }
	headRead := s.reader(ctx, head, agent)

	metaRaw, _, err := headRead(memlayout.MetaFile)
	if err != nil {
		return applyPlan{}, err
	}
	meta, err := memlayout.ParseMeta([]byte(metaRaw))
	if err != nil {
		return refuse(failure(memoryv1.StatusReason_STATUS_REASON_APPLY_ERROR, err.Error()))
	}
	// Optimistic locking (spec DiffMem §7.1, threat 3).
	if p.ExpectedVersion != nil && p.GetExpectedVersion() != meta.Version {
		return refuse(outcome{
			status: memoryv1.ProposalStatus_PROPOSAL_STATUS_REJECTED, reason: memoryv1.StatusReason_STATUS_REASON_VERSION_CONFLICT,
			message:        fmt.Sprintf("version_conflict: expected version %d, current version %d", p.GetExpectedVersion(), meta.Version),
			currentVersion: meta.Version, resolution: "retry_with_latest",
		})
	}
	// What changed under the proposal since it was made (threat 4, human edits).
	if base := plumbing.NewHash(rec.BaseCommit); rec.BaseCommit != "" && base != head {
		conflicts, err := applyplan.Conflicts(p.GetUpdates(), s.reader(ctx, base, agent), headRead)
		if err != nil {
			return applyPlan{}, err
		}
		if len(conflicts) > 0 {
			return refuse(outcome{
				status: memoryv1.ProposalStatus_PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW, reason: memoryv1.StatusReason_STATUS_REASON_SECTION_CONFLICT,
				message: "changed since the proposal was made; a person must review it", flags: conflicts,
			})
		}
	}
	now := s.now()
	plan, err := s.plan(ctx, p, headRead, now, false)
	if inv := (*applyplan.Invalid)(nil); errors.As(err, &inv) {
		o := failure(memoryv1.StatusReason_STATUS_REASON_VALIDATION_FAILED, err.Error())
		if inv.Reason == memoryv1.ErrorReason_ERROR_REASON_TOKEN_LIMIT_EXCEEDED {
			// The proposal's own additions do not fit (spec §11.3): it is
			// refused, not retried.
			o.status = memoryv1.ProposalStatus_PROPOSAL_STATUS_REJECTED
		}
		return refuse(o)
	}
	if err != nil {
		return applyPlan{}, err
	}
	return applyPlan{head: head, now: now, plan: plan}, nil
}

// tryApply plans the commit on the current head (planApply) and has the
// committer commit it. It returns memrepo.ErrHeadMoved when the agent's
// files changed between planning and committing.
func (e *engine) tryApply(ctx context.Context, rec *proposalstore.Record) (outcome, error) {
	s := e.svc
	agent := rec.Proposal.GetAgentId()
	planned, err := s.planApply(ctx, rec)
	if err != nil {
		return outcome{}, err
	}
	if planned.refused != nil {
		return *planned.refused, nil
	}
	plan := planned.plan

	changes := make([]memrepo.Change, 0, len(plan.Changes))
	for rel, content := range plan.Changes {
		f, err := memlayout.Resolve(agent, rel)
		if err != nil {
			return outcome{}, err
		}
		changes = append(changes, memrepo.TextChange(f.Path, content))
	}
	for _, rel := range plan.Deleted {
		f, err := memlayout.Resolve(agent, rel)
		if err != nil {
			return outcome{}, err
		}
		changes = append(changes, memrepo.Change{Path: f.Path, Delete: true})
	}
	sig := memrepo.Signature{Name: s.cfg.AuthorName, Email: s.cfg.AuthorEmail, When: planned.now}
	sha, err := e.commit(agent, planned.head, memrepo.CommitRequest{Changes: changes, Message: plan.Message, Author: sig, Committer: sig})
	if err != nil {
		return outcome{}, err
	}
	o := outcome{
		status: memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED, sha: sha.String(), version: plan.Meta.Version,
		evictedFacts: plan.EvictedFacts, frozenLoops: plan.FrozenLoops, removedClosedLoops: plan.RemovedClosedLoops,
		warnings: plan.Warnings, addedFacts: plan.AddedFacts,
	}
	if facts, ok := plan.Changes[memlayout.FactsFile]; ok {
		o.factHashes = factHashes(facts)
	}
	return o, nil
}

// finish records the outcome durably, then tells followers.
func (e *engine) finish(ctx context.Context, rec *proposalstore.Record, o outcome, start time.Time) {
	s := e.svc
	id := rec.Proposal.GetProposalId()
	now := s.now()
	record := func() error {
		_, err := s.store.Update(ctx, id, func(r *proposalstore.Record) error {
			setOutcome(r.Proposal, o, now)
			return nil
		})
		return err
	}
	if err := record(); err != nil {
		// The commit (if any) is durable. A storage outage is waited out
		// here; otherwise recovery at the next start records it.
		s.logger.Error("apply: recording the outcome failed", "proposal", id, "status", o.status.String(), "err", err)
		if transientStorage(err) {
			e.wg.Add(1)
			go func() {
				defer e.wg.Done()
				e.retryRecord(ctx, id, record)
			}()
		}
	}
	s.metrics.applied(ctx, o.status, now.Sub(start))
	log := s.logger.With("proposal", id, "agent", rec.Proposal.GetAgentId(), "status", o.status.String(), "duration_ms", now.Sub(start).Milliseconds())
	if o.status == memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED {
		log.Info("proposal applied", "commit", o.sha, "version", o.version)
		agent := rec.Proposal.GetAgentId()
		var retained error
		if o.factHashes != nil {
			retained = s.facts.Retain(ctx, agent, o.factHashes)
		}
		if err := errors.Join(retained, s.facts.Added(ctx, agent, o.addedFacts, now, o.version)); err != nil {
			s.logger.Warn("fact index not updated", "agent", agent, "err", err)
		}
		s.hub.notify()
		s.pusher.kick()
	} else {
		log.Warn("proposal not applied", "reason", o.reason.String(), "message", o.message)
	}
}

// recover re-queues proposals a previous process approved but did not
// finish. Each is first looked up in history: if its commit exists it is
// marked applied, so no proposal is applied twice.
func (e *engine) recover(ctx context.Context) error {
	s := e.svc
	inFlight, err := s.store.WithStatus(memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLYING, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED)
	if err != nil {
		return err
	}
	if len(inFlight) == 0 {
		return nil
	}
	applied, err := e.appliedProposals(ctx, inFlight)
	if err != nil {
		return err
	}
	for _, rec := range inFlight {
		id := rec.Proposal.GetProposalId()
		if c, ok := applied[id]; ok {
			info, err := history.Describe(ctx, s.repo, c)
			if err != nil {
				return err
			}
			e.finish(ctx, rec, outcome{status: memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED, sha: c.Hash.String(), version: info.GetVersion()}, s.now())
			s.logger.Info("recovered proposal committed before a restart", "proposal", id, "commit", c.Hash.String())
			continue
		}
		s.logger.Info("re-queueing proposal approved before a restart", "proposal", id, "status", rec.Proposal.GetStatus().String())
		e.enqueue(rec.Proposal.GetAgentId(), id)
	}
	return nil
}

// appliedProposals finds, in history back to the oldest in-flight proposal's
// creation, the commits of the given proposals.
func (e *engine) appliedProposals(ctx context.Context, recs []*proposalstore.Record) (map[string]*object.Commit, error) {
	want := map[string]bool{}
	oldest := time.Now()
	for _, r := range recs {
		want[r.Proposal.GetProposalId()] = true
		if t := r.Proposal.GetCreatedAt().AsTime(); t.Before(oldest) {
			oldest = t
		}
	}
	head, err := e.svc.repo.Head(ctx)
	if err != nil {
		return nil, err
	}
	found := map[string]*object.Commit{}
	// Commits are made after their proposal was created; a minute of slack
	// covers clock steps.
	stopBefore := oldest.Add(-time.Minute)
	err = e.svc.repo.Walk(ctx, head, func(c *object.Commit) error {
		if c.Committer.When.Before(stopBefore) {
			return memrepo.ErrStopWalk
		}
		if p := commitmsg.Parse(c.Message); p.Update != nil && want[p.Update.ProposalID] {
			found[p.Update.ProposalID] = c
		}
		return nil
	})
	return found, err
}

// setOutcome writes how an apply ended into the proposal.
func setOutcome(p *memoryv1.Proposal, o outcome, now time.Time) {
	p.Status, p.Reason, p.Message = o.status, o.reason, o.message
	p.CommitSha, p.AppliedVersion = o.sha, o.version
	p.CurrentVersion, p.Resolution = o.currentVersion, o.resolution
	if len(o.flags) > 0 {
		p.Flags = o.flags
	}
	p.EvictedFacts, p.FrozenLoops, p.RemovedClosedLoops = o.evictedFacts, o.frozenLoops, o.removedClosedLoops
	if len(o.warnings) > 0 {
		p.Warnings = o.warnings
	}
	p.UpdatedAt = timestamppb.New(now)
	if o.status == memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED {
		p.AppliedAt = timestamppb.New(now)
	}
}

// How long an apply or the recording of its outcome waits for storage to
// come back: doubling from first to max.
const (
	storageRetryFirst = 500 * time.Millisecond
	storageRetryMax   = 10 * time.Second
)

// transientStorage reports a storage failure that passes by itself: the
// object store down, a full disk, the proposal index refusing writes.
func transientStorage(err error) bool {
	return errors.Is(err, blob.ErrUnavailable) || blob.DiskFull(err) || errors.Is(err, proposalstore.ErrIndexUnavailable)
}

// retryRecord records an apply's outcome once storage is back, until the
// engine stops (then the next start's recovery does).
func (e *engine) retryRecord(ctx context.Context, id string, record func() error) {
	for wait := storageRetryFirst; ; wait = min(2*wait, storageRetryMax) {
		select {
		case <-ctx.Done():
			return
		case <-e.quit:
			return
		case <-time.After(wait):
		}
		err := record()
		if err == nil {
			e.svc.logger.Info("apply: outcome recorded after a storage outage", "proposal", id)
			return
		}
		if !transientStorage(err) {
			e.svc.logger.Error("apply: recording the outcome failed; recovery at the next start records it", "proposal", id, "err", err)
			return
		}
	}
}
