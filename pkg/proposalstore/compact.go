package proposalstore

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"

	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/commitfeed"
)

// fanout is how many segments of one level are merged into one of the next.
// A segment's level is log16 of the batches it spans, so the log is a
// base-16 counter: at most 15 segments per level plus the ones being merged,
// and each line is rewritten once per level, about five times in the life of
// a busy store. A merge keeps only the last line of every proposal, which
// folds a proposal's creation and outcome into one line.
const fanout = 16

func level(g segment) int {
	n, l := g.hi-g.lo+1, 0
	for n >= fanout {
		n /= fanout
		l++
	}
	return l
}

// compactor merges log segments in the background.
type compactor struct {
	blobs  blob.Store
	idx    *index
	logger *slog.Logger
	kick   commitfeed.Signal // a segment was written: merge if due
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	segs []segment // in batch order, disjoint
}

func newCompactor(blobs blob.Store, idx *index, logger *slog.Logger, segs []segment) *compactor {
	ctx, cancel := context.WithCancel(context.Background())
	c := &compactor{blobs: blobs, idx: idx, logger: logger, cancel: cancel,
		done: make(chan struct{}), segs: segs}
	go c.run(ctx)
	c.poke()
	return c
}

// add records a segment the log just wrote (always the newest).
func (c *compactor) add(g segment) {
	c.mu.Lock()
	c.segs = append(c.segs, g)
	c.mu.Unlock()
	c.poke()
}

func (c *compactor) poke() { c.kick.Notify() }

// close stops merging; a merge under way is finished or abandoned whole.
func (c *compactor) close() {
	c.cancel()
	<-c.done
}

func (c *compactor) run(ctx context.Context) {
	defer close(c.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick.C():
		}
		for run := c.due(); run != nil && ctx.Err() == nil; run = c.due() {
			if err := c.merge(ctx, run); err != nil {
				// Retried at the next segment written (an object
				// store outage ends).
				c.logger.Error("merging proposal log segments failed", "from", run[0].key(), "to", run[len(run)-1].key(), "err", err)
				break
			}
		}
	}
}

// due returns the oldest run of fanout consecutive segments of one level,
// or nil.
func (c *compactor) due() []segment {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := 0; i < len(c.segs); {
		j := i
		for j < len(c.segs) && level(c.segs[j]) == level(c.segs[i]) {
			j++
		}
		if j-i >= fanout {
			return slices.Clone(c.segs[i : i+fanout])
		}
		i = max(j, i+1)
	}
	return nil
}

// merge writes run as one segment, then deletes its inputs. A crash before
// the deletes leaves inputs that the merged segment covers: Open ignores
// and removes them. Segments are streamed through, so a merge holds a few
// hundred lines however long the history.
func (c *compactor) merge(ctx context.Context, run []segment) error {
	out := segment{lo: run[0].lo, hi: run[len(run)-1].hi}
	pr, pw := io.Pipe()
	written := make(chan error, 1)
	go func() {
		err := c.writeMerged(ctx, run, pw)
		pw.CloseWithError(err) // nil: EOF
		written <- err
	}()
	_, err := c.blobs.Put(ctx, out.key(), pr, -1, blob.PutOptions{ContentType: "application/jsonl"})
	pr.CloseWithError(errMergeAbandoned) // unblocks the writer when Put stopped early
	if werr := <-written; werr != nil && !errors.Is(werr, errMergeAbandoned) {
		var gone missingSegment
		if errors.As(werr, &gone) {
			// Deleted behind our back: it leaves the list, and the
			// others wait for the next full run.
			c.replace([]segment{gone.g})
		}
		return werr
	}
	if err != nil {
		return err
	}
	c.replace(run, out)
	for _, g := range run {
		if err := c.blobs.Delete(ctx, g.key()); err != nil {
			c.logger.Warn("merged proposal log segment not deleted; removed at the next start", "key", g.key(), "err", err)
		}
	}
	return nil
}

var errMergeAbandoned = errors.New("merge abandoned")

// missingSegment is a merge input that is no longer in the store.
type missingSegment struct {
	g   segment
	err error
}

func (m missingSegment) Error() string { return m.err.Error() }
func (m missingSegment) Unwrap() error { return m.err }

// mergeChunk is how many lines a merge checks against the index at once.
const mergeChunk = 256

// writeMerged writes the lines of run that are still the newest version
// of their proposal (index.keep) to w, in order.
func (c *compactor) writeMerged(ctx context.Context, run []segment, w io.Writer) error {
	var chunk [][]byte
	flush := func() error {
		keep, err := c.idx.keep(chunk)
		if err != nil {
			return fmt.Errorf("proposalstore: index: %w", err)
		}
		for i, line := range chunk {
			if keep[i] {
				if _, err := w.Write(append(line, '\n')); err != nil {
					return err
				}
			}
		}
		chunk = chunk[:0]
		return nil
	}
	for _, g := range run {
		err := readSegment(ctx, c.blobs, g, func(line []byte) error {
			chunk = append(chunk, bytes.Clone(line))
			if len(chunk) < mergeChunk {
				return nil
			}
			return flush()
		})
		if errors.Is(err, blob.ErrNotFound) {
			return missingSegment{g: g, err: err}
		}
		if err != nil {
			return err
		}
	}
	return flush()
}

// replace puts with in the place of the consecutive segments old.
func (c *compactor) replace(old []segment, with ...segment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.IndexFunc(c.segs, func(g segment) bool { return g.lo == old[0].lo })
	c.segs = slices.Replace(c.segs, i, i+len(old), with...)
}

// lineKey returns the proposal id and rev of a log line.
func lineKey(line []byte) (id string, rev uint64, ok bool) {
	var doc struct {
		Rev      uint64 `json:"rev"`
		Proposal struct {
			ProposalID string `json:"proposalId"`
		} `json:"proposal"`
	}
	if json.Unmarshal(line, &doc) != nil || doc.Proposal.ProposalID == "" {
		return "", 0, false
	}
	return doc.Proposal.ProposalID, doc.Rev, true
}

// liveSegments orders the segments found in the store and returns those to
// read; covered ones (inputs of a merge that a crash kept from being
// deleted) are returned separately.
func liveSegments(found []segment) (live, covered []segment) {
	slices.SortFunc(found, func(a, b segment) int {
		if a.lo != b.lo {
			return cmp.Compare(a.lo, b.lo)
		}
		return cmp.Compare(b.hi, a.hi) // the widest first
	})
	var reach uint64
	for i, g := range found {
		if i > 0 && g.hi <= reach {
			covered = append(covered, g)
			continue
		}
		live = append(live, g)
		reach = max(reach, g.hi)
	}
	return live, covered
}

// readSegment streams one segment's non-empty lines to fn; a line is
// valid only during the call.
func readSegment(ctx context.Context, blobs blob.Store, g segment, fn func(line []byte) error) error {
	rc, info, err := blobs.Get(ctx, g.key())
	if err != nil {
		return fmt.Errorf("proposalstore: read %s: %w", g.key(), err)
	}
	defer func() { _ = rc.Close() }() // read only
	// Most segments are a group commit's few documents: a 64 KB buffer
	// each was a quarter of the write plane's allocations in the soak.
	r := bufio.NewReaderSize(rc, int(min(max(info.Size+1, 4<<10), 64<<10)))
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A document longer than the buffer: gather it whole.
			long := bytes.Clone(line)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = r.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if l := bytes.TrimSuffix(line, []byte{'\n'}); len(l) > 0 {
			if ferr := fn(l); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("proposalstore: read %s: %w", g.key(), err)
		}
	}
}
