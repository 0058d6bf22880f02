package proposalapply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memrepo"
)

// Group commit. The per-agent workers plan in parallel (tryApply) and hand
// their commits to a single committer goroutine, which commits everything
// queued at that moment as one chain (memrepo.CommitChain): still one commit
// per proposal, but one pack, one ref update and one round of fsyncs per
// batch. Nothing waits on purpose: while one batch's fsyncs run, the next
// plans queue up, so batches grow with the load and a lone proposal is
// committed at once.
//
// A worker learns its commit's hash only once the whole chain is durable, so
// nothing is reported applied before it is on disk.

// maxBatch bounds one chain. Past a few dozen commits the fsyncs are already
// shared enough, and a bounded batch keeps the time to the first
// acknowledgment bounded too.
const maxBatch = 64

// maxChainRetries bounds how often the committer retries a batch whose base
// moved under it (a person's push) before letting the workers re-plan.
const maxChainRetries = 3

// errCommitInDoubt: the commit is on main but the final fsync failed, so it
// may not survive a crash.
var errCommitInDoubt = errors.New("commit made but not known to be durable")

// commitPlan is one proposal's commit, planned by its agent's worker on base.
type commitPlan struct {
	agent string
	base  plumbing.Hash
	req   memrepo.CommitRequest // Parent unset: the chain decides
	done  chan commitResult     // buffered, so answering never blocks
}

type commitResult struct {
	sha plumbing.Hash
	err error
}

func (p *commitPlan) answer(sha plumbing.Hash, err error) { p.done <- commitResult{sha, err} }

// commit hands a planned commit to the committer and waits until it is
// durable on main. memrepo.ErrHeadMoved means the agent's files changed
// under the plan: plan again.
func (e *engine) commit(agent string, base plumbing.Hash, req memrepo.CommitRequest) (plumbing.Hash, error) {
	p := &commitPlan{agent: agent, base: base, req: req, done: make(chan commitResult, 1)}
	e.plans <- p
	r := <-p.done
	return r.sha, r.err
}

// runCommitter commits batches until stopCommitter. After each batch it
// has the small packs the commits leave merged, beside the next batch
// rather than before it: a merge's copying and fsyncs were in the way of
// every commit queued behind it.
func (e *engine) runCommitter() {
	defer close(e.committerDone)
	kick := make(chan struct{}, 1)
	merged := make(chan struct{})
	go func() {
		defer close(merged)
		for range kick {
			if err := e.svc.repo.CompactPacks(e.ctx); err != nil {
				e.svc.metrics.gitFailed(e.ctx, gitOpCompact)
				e.svc.logger.Warn("merging packs failed; will retry", "err", err)
			}
		}
	}()
	defer func() {
		close(kick)
		<-merged
	}()
	for first := range e.plans {
		e.commitBatch(e.ctx, e.takeQueued(first))
		select {
		case kick <- struct{}{}:
		default: // a merge is due already
		}
	}
}

// stopCommitter ends runCommitter once no worker can send a plan any more.
func (e *engine) stopCommitter() {
	e.closePlans.Do(func() { close(e.plans) })
	<-e.committerDone
}

// takeQueued returns first plus whatever else is queued right now, up to
// maxBatch: natural batching, no waiting for more.
func (e *engine) takeQueued(first *commitPlan) []*commitPlan {
	batch := []*commitPlan{first}
	for len(batch) < maxBatch {
		select {
		case p, ok := <-e.plans:
			if !ok {
				return batch
			}
			batch = append(batch, p)
		default:
			return batch
		}
	}
	return batch
}

// commitBatch commits the plans that still apply as one chain on main's
// head and answers every plan.
func (e *engine) commitBatch(ctx context.Context, batch []*commitPlan) {
	for retries := 0; len(batch) > 0; {
		head, err := e.svc.repo.Head(ctx)
		if err != nil {
			e.svc.metrics.gitFailed(ctx, gitOpCommit)
			answerAll(batch, err)
			return
		}
		if batch = e.admit(ctx, head, batch); len(batch) == 0 {
			return
		}
		hashes, err := e.svc.repo.CommitChain(ctx, head, requests(batch))
		var ce *memrepo.ChainError
		switch {
		case errors.As(err, &ce):
			// That plan cannot be built: it fails alone, the rest go on.
			batch[ce.Index].answer(plumbing.ZeroHash, ce.Err)
			batch = slices.Delete(batch, ce.Index, ce.Index+1)
		case errors.Is(err, memrepo.ErrHeadMoved) && retries < maxChainRetries:
			retries++ // a person pushed meanwhile: check the plans against the new head
		case err != nil && hashes != nil:
			// main moved, but its last fsync failed: not acknowledged.
			e.svc.metrics.gitFailed(ctx, gitOpCommit)
			answerAll(batch, fmt.Errorf("%w: %w", errCommitInDoubt, err))
			return
		case err != nil:
			e.svc.metrics.gitFailed(ctx, gitOpCommit)
			answerAll(batch, err)
			return
		default:
			e.svc.metrics.committed(ctx, len(batch))
			for i, p := range batch {
				p.answer(hashes[i], nil)
			}
			return
		}
	}
}

// admit returns the plans that still apply on head and answers the others
// with ErrHeadMoved so that their workers plan again. A plan only touches its
// agent's files, so it applies on any head where those are as they were at
// its base: other agents' commits, including earlier ones of the same chain,
// do not matter. Only one plan per agent can be in flight (the agent's queue
// is serial); a second one would have been planned without the first, so it
// is sent back too, defensively.
func (e *engine) admit(ctx context.Context, head plumbing.Hash, batch []*commitPlan) []*commitPlan {
	var ok []*commitPlan
	agents := map[string]bool{}
	for _, p := range batch {
		var err error
		if agents[p.agent] {
			err = memrepo.ErrHeadMoved
		} else if p.base != head {
			same, serr := e.sameAgentTrees(ctx, p.agent, p.base, head)
			if err = serr; err == nil && !same {
				err = memrepo.ErrHeadMoved
			}
		}
		if err != nil {
			p.answer(plumbing.ZeroHash, err)
			continue
		}
		agents[p.agent] = true
		ok = append(ok, p)
	}
	return ok
}

func requests(batch []*commitPlan) []memrepo.CommitRequest {
	reqs := make([]memrepo.CommitRequest, len(batch))
	for i, p := range batch {
		reqs[i] = p.req
	}
	return reqs
}

func answerAll(batch []*commitPlan, err error) {
	for _, p := range batch {
		p.answer(plumbing.ZeroHash, err)
	}
}

// sameAgentTrees reports whether the agent's memory and logic folders are
// identical at commits a and b (comparing tree hashes, not files).
func (e *engine) sameAgentTrees(ctx context.Context, agent string, a, b plumbing.Hash) (bool, error) {
	for _, dir := range []string{memlayout.AgentDir(agent), memlayout.LogicDir(agent)} {
		ha, err := e.svc.repo.TreeHash(ctx, a, strings.TrimSuffix(dir, "/"))
		if err != nil {
			return false, err
		}
		hb, err := e.svc.repo.TreeHash(ctx, b, strings.TrimSuffix(dir, "/"))
		if err != nil {
			return false, err
		}
		if ha != hb {
			return false, nil
		}
	}
	return true, nil
}
