package proposalstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/garden-bloom/memory/pkg/blob"
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
	logger *slog.Logger
	kick   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	segs []segment // in batch order, disjoint
}

func newCompactor(blobs blob.Store, logger *slog.Logger, segs []segment) *compactor {
	ctx, cancel := context.WithCancel(context.Background())
	c := &compactor{blobs: blobs, logger: logger, kick: make(chan struct{}, 1), cancel: cancel,
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

func (c *compactor) poke() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

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
		case <-c.kick:
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
// and removes them.
func (c *compactor) merge(ctx context.Context, run []segment) error {
	var lines [][]byte
	for _, g := range run {
		more, err := readSegment(ctx, c.blobs, g)
		if errors.Is(err, blob.ErrNotFound) {
			// Deleted behind our back: it leaves the list, and the
			// others wait for the next full run.
			c.replace([]segment{g})
			return err
		}
		if err != nil {
			return err
		}
		lines = append(lines, more...)
	}
	out := segment{lo: run[0].lo, hi: run[len(run)-1].hi}
	data := mergeLines(lines)
	if _, err := blob.PutBytes(ctx, c.blobs, out.key(), data, blob.PutOptions{ContentType: "application/jsonl"}); err != nil {
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

// replace puts with in the place of the consecutive segments old.
func (c *compactor) replace(old []segment, with ...segment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.IndexFunc(c.segs, func(g segment) bool { return g.lo == old[0].lo })
	c.segs = slices.Replace(c.segs, i, i+len(old), with...)
}

// splitLines returns the non-empty lines of data.
func splitLines(data []byte) [][]byte {
	var out [][]byte
	for line := range bytes.SplitSeq(data, []byte{'\n'}) {
		if len(line) > 0 {
			out = append(out, line)
		}
	}
	return out
}

// mergeLines keeps the last line of every proposal, in the order of those
// last lines. Lines whose proposal id cannot be read are kept as they are
// (Open logs them), so a merge never loses anything.
func mergeLines(lines [][]byte) []byte {
	last := make(map[string]int, len(lines))
	ids := make([]string, len(lines))
	for i, line := range lines {
		if id, ok := lineID(line); ok {
			ids[i] = id
			last[id] = i
		}
	}
	var buf bytes.Buffer
	for i, line := range lines {
		if ids[i] == "" || last[ids[i]] == i {
			buf.Write(line)
			buf.WriteByte('\n')
		}
	}
	return buf.Bytes()
}

// lineID returns the proposal id of a log line.
func lineID(line []byte) (string, bool) {
	var doc struct {
		Proposal struct {
			ProposalID string `json:"proposalId"`
		} `json:"proposal"`
	}
	if json.Unmarshal(line, &doc) != nil || doc.Proposal.ProposalID == "" {
		return "", false
	}
	return doc.Proposal.ProposalID, true
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

// readSegment reads one segment's lines.
func readSegment(ctx context.Context, blobs blob.Store, g segment) ([][]byte, error) {
	data, _, err := blob.GetBytes(ctx, blobs, g.key())
	if err != nil {
		return nil, fmt.Errorf("proposalstore: read %s: %w", g.key(), err)
	}
	return splitLines(data), nil
}
