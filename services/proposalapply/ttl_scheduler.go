package proposalapply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/factttl"
	"github.com/garden-bloom/memory/pkg/mdops"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memrepo"
)

// The fact TTL scheduler (memory-bridge §4.2 process_expired): every
// --ttl-interval it finds the agents whose facts.md has a TTL that ran out
// and makes, per agent, one proposal applying all its due actions — the
// line rewritten "_(stale since …)_" (mark_stale), moved to decisions.md §
// "Expired facts" (archive) or removed (delete) — approved by construction
// like run rotation's, and applied as one commit whose reason names the
// facts.
//
// Finding those agents must not mean reading every facts.md every minute
// (10,000 agents). The scheduler keeps, per agent, the earliest expiry its
// facts.md holds. It fills that index from head once, in the background at
// start; after that it diffs the head it indexed against the new head
// (memrepo.DiffFiles skips unchanged subtrees by hash, so the cost follows
// what changed) and re-reads only the facts.md files that changed — the
// engine's commits and a person's alike. A tick then reads only the agents
// whose earliest expiry has passed.
//
// Idempotence needs no state: the action is in the Markdown. Once applied,
// the marker is gone or reads "stale since", so the fact is not due again.
// Until then an agent with applies queued or running is left for the next
// tick (its commit refreshes the index), and a proposal made again for the
// same facts.md and due facts — after a crash, say — has the same
// idempotency key and is the same proposal.

const (
	ttlActor = "memoryd/fact-ttl"
	ttlRunID = "fact-ttl"
	// maxExpiriesPerCommit bounds one agent's expiry commit; the rest go
	// in the next tick's.
	maxExpiriesPerCommit = 200
)

// ttlScheduler is the scheduler's state; only its own goroutine uses it.
type ttlScheduler struct {
	svc *Service
	// next maps an agent to the earliest expiry in its facts.md at seen
	// that the scheduler can act on.
	next map[string]time.Time
	seen plumbing.Hash
	// reported are proposals already logged as not applying, so a stuck
	// one is logged once, not every tick.
	reported map[string]bool
}

func newTTLScheduler(s *Service) *ttlScheduler {
	return &ttlScheduler{svc: s, next: map[string]time.Time{}, reported: map[string]bool{}}
}

// StartTTL runs the fact TTL scheduler every interval until Stop (0: not
// at all). Call it after Start: it lives as long as the service's applies.
func (s *Service) StartTTL(interval time.Duration) {
	if interval <= 0 || s.cancel == nil {
		return
	}
	ctx := s.engine.ctx // the service's lifetime, cancelled by Stop
	t := newTTLScheduler(s)
	s.bg.Go(func() { t.run(ctx, interval) })
}

// run indexes head, then ticks every interval until ctx ends.
func (t *ttlScheduler) run(ctx context.Context, interval time.Duration) {
	if err := t.refresh(ctx); err != nil && ctx.Err() == nil {
		t.svc.logger.Warn("fact TTL: indexing facts.md failed; will retry", "err", err)
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := t.tick(ctx); err != nil && ctx.Err() == nil {
			t.svc.logger.Warn("fact TTL: expiry run failed; will retry at the next interval", "err", err)
		}
	}
}

// tick brings the index up to head and proposes the due actions of every
// agent whose earliest expiry has passed; it returns the proposals made
// (or found again).
func (t *ttlScheduler) tick(ctx context.Context) ([]*memoryv1.Proposal, error) {
	if err := t.refresh(ctx); err != nil {
		return nil, err
	}
	now := t.svc.now()
	var out []*memoryv1.Proposal
	var errs []error
	for _, agent := range slices.Sorted(maps.Keys(t.next)) {
		if t.next[agent].After(now) || t.svc.engine.busy(agent) {
			continue
		}
		p, err := t.expire(ctx, agent, now)
		if err != nil {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			errs = append(errs, fmt.Errorf("%s: %w", agent, err))
			continue
		}
		if p != nil {
			out = append(out, p)
		}
	}
	return out, errors.Join(errs...)
}

// refresh brings the index from the head it reflects to main's head.
func (t *ttlScheduler) refresh(ctx context.Context) error {
	repo := t.svc.repo
	head, err := repo.Head(ctx)
	if err != nil || head == t.seen {
		return err
	}
	if t.seen.IsZero() {
		if err := t.fill(ctx, head); err != nil {
			return err
		}
		t.seen = head
		return nil
	}
	changes, err := repo.DiffFiles(ctx, t.seen, head)
	if err != nil {
		return err
	}
	for _, c := range changes {
		agent, ok := factsFileAgent(c.Path)
		if !ok {
			continue
		}
		if c.Deleted() {
			delete(t.next, agent)
			continue
		}
		md, err := repo.ReadBlobText(ctx, c.Blob)
		if err != nil {
			return err
		}
		t.index(agent, md)
	}
	t.seen = head
	return nil
}

// fill indexes every agent's facts.md at head: the agents are the folders
// of memory/, read from its tree rather than by listing every file.
func (t *ttlScheduler) fill(ctx context.Context, head plumbing.Hash) error {
	repo := t.svc.repo
	h, err := repo.TreeHash(ctx, head, "memory")
	if err != nil || h.IsZero() {
		return err
	}
	tree, err := repo.Git().TreeObject(h)
	if err != nil {
		return err
	}
	for _, e := range tree.Entries {
		if e.Mode != filemode.Dir || !memlayout.ValidAgentID(e.Name) {
			continue
		}
		md, _, err := repo.ReadTextBlob(ctx, head, memlayout.AgentDir(e.Name)+memlayout.FactsFile)
		if errors.Is(err, memrepo.ErrFileNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		t.index(e.Name, md)
	}
	return nil
}

// index records the earliest expiry the scheduler can act on in an agent's
// facts.md.
func (t *ttlScheduler) index(agent, md string) {
	var earliest time.Time
	if strings.Contains(md, "_(expires ") {
		for _, f := range mdops.ParseFacts(md) {
			if m, ok := factttl.Of(f.Text); ok && actionable(f, m) && (earliest.IsZero() || m.At.Before(earliest)) {
				earliest = m.At
			}
		}
	}
	if earliest.IsZero() {
		delete(t.next, agent)
	} else {
		t.next[agent] = earliest
	}
}

// actionable reports whether the scheduler can carry out a fact's marker.
// mark_stale rewrites the line in its section (remove, then append), which
// would lose a fact's sub-bullets or, above the first section, its place;
// such facts are reported (GetStaleFacts) and left to a person.
func actionable(f mdops.Fact, m factttl.Marker) bool {
	if m.Kind != factttl.Expires {
		return false
	}
	return m.Action != factttl.MarkStale || (len(f.More) == 0 && f.Section != "")
}

// factsFileAgent returns the agent whose facts.md path is.
func factsFileAgent(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "memory/")
	if !ok {
		return "", false
	}
	agent, file, ok := strings.Cut(rest, "/")
	return agent, ok && file == memlayout.FactsFile && memlayout.ValidAgentID(agent)
}

// expire proposes the due actions of one agent's facts at now, as one
// proposal; nil when nothing is due at head (the index was behind).
func (t *ttlScheduler) expire(ctx context.Context, agent string, now time.Time) (*memoryv1.Proposal, error) {
	s := t.svc
	head, meta, policy, err := s.headState(ctx, agent)
	if err != nil {
		return nil, err
	}
	md, _, err := s.reader(ctx, head, agent)(memlayout.FactsFile)
	if err != nil {
		return nil, err
	}
	var (
		removes, archived, names, due []string
		sections                      []string                // in the order facts.md has them
		stale                         = map[string][]string{} // section → rewritten lines
	)
	for _, f := range mdops.ParseFacts(md) {
		m, ok := factttl.Of(f.Text)
		if !ok || !m.Due(now) || !actionable(f, m) {
			continue
		}
		if len(due) == maxExpiriesPerCommit {
			break
		}
		body := factttl.Strip(f.Text)
		due = append(due, f.Text)
		removes = append(removes, "- "+f.Text)
		names = append(names, fmt.Sprintf("%s %q", m.Action, clip(body)))
		switch m.Action {
		case factttl.MarkStale:
			if _, ok := stale[f.Section]; !ok {
				sections = append(sections, f.Section)
			}
			stale[f.Section] = append(stale[f.Section], "- "+factttl.With(body, factttl.StaleSince(m.At)))
		case factttl.Archive:
			archived = append(archived, factttl.ArchivedLine(body, m.At, now, f.More))
		}
	}
	t.index(agent, md) // what head says, whatever the diff said
	if len(due) == 0 {
		return nil, nil
	}
	p := s.newProposal(agent, ttlRunID, ttlActor)
	// Removals first: each append then finds its section without the old
	// line, so the rewritten fact is not taken for a repeat of it.
	for _, line := range removes {
		p.Updates = append(p.Updates, &memoryv1.FileUpdate{File: memlayout.FactsFile, Operation: memoryv1.Operation_OPERATION_REMOVE, Content: line})
	}
	for _, sec := range sections {
		p.Updates = append(p.Updates, &memoryv1.FileUpdate{File: memlayout.FactsFile, Operation: memoryv1.Operation_OPERATION_APPEND,
			Section: sec, Content: strings.Join(stale[sec], "\n")})
	}
	if len(archived) > 0 {
		p.Updates = append(p.Updates, &memoryv1.FileUpdate{File: memlayout.DecisionsFile, Operation: memoryv1.Operation_OPERATION_APPEND,
			Section: factttl.SectionExpiredFacts, Content: strings.Join(archived, "\n")})
	}
	p.AutoApproved = true
	sum := sha256.Sum256([]byte(md + "\x00" + strings.Join(due, "\n")))
	p.IdempotencyKey = "fact-ttl@" + hex.EncodeToString(sum[:16])
	p.Reasoning = fmt.Sprintf("Fact TTL expiry (%d): %s", len(due), strings.Join(names, "; "))
	plan, err := s.dryRun(ctx, p, head)
	if err != nil {
		return nil, err
	}
	p.Warnings = plan.Warnings
	rec, err := s.submit(ctx, p, head, meta, policy)
	if err != nil {
		return nil, err
	}
	got := rec.Proposal
	switch {
	case got.GetProposalId() == p.GetProposalId():
		s.logger.Info("fact TTL: expired facts proposed", "agent", agent, "facts", len(due), "proposal", got.GetProposalId())
	case got.GetStatus() != memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED && got.GetStatus() != memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLYING &&
		got.GetStatus() != memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED && !t.reported[got.GetProposalId()]:
		// Made before (a crash, a person's edit since) and stopped short:
		// the facts stay due and reported until a person acts on it.
		t.reported[got.GetProposalId()] = true
		s.logger.Warn("fact TTL: expiry proposal did not apply; its facts stay due", "agent", agent,
			"proposal", got.GetProposalId(), "status", got.GetStatus().String(), "message", got.GetMessage())
	}
	return got, nil
}

// busy reports whether the agent has applies queued or running.
func (e *engine) busy(agent string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.queues[agent]
	return ok
}
