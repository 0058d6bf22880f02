package searchindex

import "context"

// pipelineDepth is how many batches a Pipeline writes at once. bluge builds
// a batch's segment on one core (after analysing its documents on several),
// so a first pass written one batch at a time left a core of a 2-core
// machine idle most of the time; two at once use both.
const pipelineDepth = 2

// Pipeline applies a sequence of batches, writing up to pipelineDepth of
// them at once. It is for long passes (the first index of a repository,
// the sources): a batch that only adds files new to the index overlaps the
// one before; any other batch (an update, a delete, a commit) waits until
// every earlier one is published and is then applied alone, as Apply does.
//
// bluge may introduce two overlapping batches in either order, which
// matters only for the state document, the last one written winning:
//   - a batch's state document records the pass progress (Pass) of the
//     last batch that was published before it was prepared, so whichever
//     lands last never claims files that are not in the index yet: a crash
//     resumes at most one batch early, and redoing it changes nothing;
//   - the document and chunk counts are recomputed from the file
//     documents when the index is opened;
//   - Close writes the exact state if the last one written lags.
//
// A search during an overlapping pass may see chunks of a new file before
// its bookkeeping; Search skips them until it is published.
//
// While a Pipeline on the live index is open, Apply, Rebuild's switch and
// RestoreSnapshot wait for Close. A Pipeline is used by one goroutine.
type Pipeline struct {
	ix     *Index
	g      *generation
	unlock func()

	inflight []*pipelined // in the order prepared
	// state follows every prepared batch, with the progress they asked
	// to record; pass is what the published ones achieved, all that the
	// next state document may claim.
	state   State
	pass    *Pass
	written *Pass // the Pass of the last state document prepared
	err     error
}

type pipelined struct {
	p    prepared
	pass *Pass // the progress the caller asked to record
	done chan error
}

// Pipeline starts a pipelined sequence of batches on the current
// generation.
func (ix *Index) Pipeline() *Pipeline {
	ix.writeMu.Lock()
	ix.mu.RLock()
	g := ix.cur
	ix.mu.RUnlock()
	return newPipeline(ix, g, ix.writeMu.Unlock)
}

// Pipeline starts a pipelined sequence of batches into the generation
// being built.
func (b *Builder) Pipeline() *Pipeline { return newPipeline(b.ix, b.g, func() {}) }

func newPipeline(ix *Index, g *generation, unlock func()) *Pipeline {
	return &Pipeline{ix: ix, g: g, unlock: unlock, state: g.state, pass: g.state.Pass, written: g.state.Pass}
}

// Apply queues b. It returns once b is being written (or, for a batch
// that cannot overlap, once it is applied), with the error of any earlier
// batch that failed.
func (pl *Pipeline) Apply(ctx context.Context, b Batch) error {
	if pl.err != nil {
		return pl.err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if !pl.onlyNewFiles(b) {
		if err := pl.drain(); err != nil {
			return err
		}
		p := pl.ix.prepare(pl.g, b, pl.g.state)
		pl.err = pl.g.write(p)
		if pl.err == nil {
			pl.err = pl.ix.publish(pl.g, p)
		}
		pl.state, pl.pass, pl.written = p.state, p.state.Pass, p.state.Pass
		return pl.err
	}
	if len(pl.inflight) == pipelineDepth {
		if err := pl.publishOldest(); err != nil {
			return err
		}
	}
	want := pl.state.Pass // the progress asked for so far
	if b.Pass != nil {
		want = b.Pass
	}
	base := pl.state
	base.Pass, b.Pass = pl.pass, nil // claim only what is published
	p := pl.ix.prepare(pl.g, b, base)
	pl.state, pl.written = p.state, p.state.Pass
	pl.state.Pass = want
	item := &pipelined{p: p, pass: want, done: make(chan error, 1)}
	go func() { item.done <- pl.g.write(p) }()
	pl.inflight = append(pl.inflight, item)
	return nil
}

// onlyNewFiles says whether b only adds files neither indexed nor being
// written, and ends no pass: such batches touch no document another
// in-flight batch touches.
func (pl *Pipeline) onlyNewFiles(b Batch) bool {
	if b.Commit != "" || len(b.Deletes) > 0 {
		return false
	}
	for _, f := range b.Upserts {
		if _, ok := pl.g.files[f.Path]; ok {
			return false
		}
		for _, in := range pl.inflight {
			if _, ok := in.p.files[f.Path]; ok {
				return false
			}
		}
	}
	return true
}

// publishOldest waits for the oldest batch in flight and publishes it.
func (pl *Pipeline) publishOldest() error {
	item := pl.inflight[0]
	pl.inflight = pl.inflight[1:]
	if err := <-item.done; err != nil {
		pl.fail(err)
		return err
	}
	if err := pl.ix.publish(pl.g, item.p); err != nil {
		pl.fail(err)
		return err
	}
	pl.pass = item.pass
	// In memory the state is what the published batches achieved.
	pl.ix.mu.Lock()
	pl.g.state.Pass = item.pass
	pl.ix.mu.Unlock()
	return nil
}

// fail records err and waits out the other writes in flight. Those that
// succeeded are in the index, so their bookkeeping is published too (the
// pass progress is not: a resumed pass redoes them, as updates).
func (pl *Pipeline) fail(err error) {
	pl.err = err
	for _, in := range pl.inflight {
		if <-in.done == nil {
			st := pl.g.state
			for _, fm := range in.p.files { // all new (onlyNewFiles)
				st.Documents++
				st.Chunks += fm.Chunks
			}
			in.p.state = st
			_ = pl.ix.publish(pl.g, in.p)
		}
	}
	pl.inflight = nil
}

// drain publishes every batch in flight, in order.
func (pl *Pipeline) drain() error {
	for len(pl.inflight) > 0 {
		if err := pl.publishOldest(); err != nil {
			return err
		}
	}
	return pl.err
}

// Close publishes what is in flight, writes the exact state if the last
// state document written lags behind it, and lets other writers in. It
// returns the first error of the sequence.
func (pl *Pipeline) Close() error {
	if pl.unlock == nil {
		return pl.err
	}
	defer func() { pl.unlock(); pl.unlock = nil }()
	if err := pl.drain(); err != nil {
		return err
	}
	if !samePass(pl.written, pl.g.state.Pass) {
		p := pl.ix.prepare(pl.g, Batch{Pass: pl.g.state.Pass}, pl.g.state)
		if pl.err = pl.g.write(p); pl.err == nil {
			pl.err = pl.ix.publish(pl.g, p)
		}
	}
	return pl.err
}

func samePass(a, b *Pass) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
