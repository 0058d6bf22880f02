package proposalstore

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/garden-bloom/memory/pkg/blob"
)

// The proposal log. Every durable change of a proposal is one line, the
// proposal's whole document as JSON, in a segment object:
//
//	proposals/_log/<lo>-<hi>.jsonl   (16 hex digits each)
//
// Writers that arrive while a segment is being written wait and go into the
// next one together (group commit), so a busy write plane makes one durable
// object write per batch instead of one per proposal and change: on a folder
// store every write is file creations, fsyncs and renames, and on MinIO a
// round trip. A segment
// holds the batches lo..hi (a new one has lo = hi); for every proposal the
// line of the highest batch wins. Segments are merged in the background
// (compact.go), so there are only ever a few dozen of them.
//
// "_" cannot start an agent id, so the log never collides with the
// documents proposals/<agentId>/<id>.json that earlier versions wrote; those
// are still read, before the log, and never written again.
const logPrefix = Prefix + "_log/"

// segment is one log object.
type segment struct{ lo, hi uint64 }

func (g segment) key() string { return fmt.Sprintf("%s%016x-%016x.jsonl", logPrefix, g.lo, g.hi) }

// parseSegmentKey is key()'s inverse.
func parseSegmentKey(key string) (segment, bool) {
	name, ok := strings.CutPrefix(key, logPrefix)
	if !ok {
		return segment{}, false
	}
	name, ok = strings.CutSuffix(name, ".jsonl")
	if !ok || len(name) != 33 || name[16] != '-' {
		return segment{}, false
	}
	lo, err1 := strconv.ParseUint(name[:16], 16, 64)
	hi, err2 := strconv.ParseUint(name[17:], 16, 64)
	if err1 != nil || err2 != nil || lo > hi {
		return segment{}, false
	}
	return segment{lo: lo, hi: hi}, true
}

// writeBatch is the documents that go into one segment, and their outcome.
type writeBatch struct {
	entries []entry
	done    bool
	err     error
}

// groupLog writes lines in batches: the first writer to find no write
// under way writes everything queued so far; the others wait for it.
type groupLog struct {
	blobs blob.Store

	mu      sync.Mutex
	cond    *sync.Cond
	writing bool
	filling *writeBatch // accepting lines; written by the next leader
	next    uint64      // the next batch number
	// written is told of every segment stored, with its documents, before
	// the writers that share it return.
	written func(segment, []entry)
}

func newGroupLog(blobs blob.Store, next uint64, written func(segment, []entry)) *groupLog {
	l := &groupLog{blobs: blobs, next: next, written: written}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// append durably writes e's line (one document, no newline) and returns
// once the segment holding it is stored. The write is not cancelled with
// ctx: other callers' lines share it.
func (l *groupLog) append(e entry) error {
	l.mu.Lock()
	b := l.filling
	if b == nil {
		b = &writeBatch{}
		l.filling = b
	}
	b.entries = append(b.entries, e)
	for l.writing && !b.done {
		l.cond.Wait()
	}
	if b.done {
		l.mu.Unlock()
		return b.err
	}
	// Nobody is writing and b is still open: write it.
	l.writing, l.filling = true, nil
	seg := segment{lo: l.next, hi: l.next}
	l.next++ // also after a failure: a failed write may still have landed
	l.mu.Unlock()

	var data bytes.Buffer
	for _, e := range b.entries {
		data.Write(e.line)
		data.WriteByte('\n')
	}
	_, err := blob.PutBytes(context.Background(), l.blobs, seg.key(), data.Bytes(), blob.PutOptions{ContentType: "application/jsonl"})
	if err != nil {
		err = fmt.Errorf("proposalstore: write %s: %w", seg.key(), err)
	} else {
		l.written(seg, b.entries)
	}

	l.mu.Lock()
	b.done, b.err, l.writing = true, err, false
	l.cond.Broadcast()
	l.mu.Unlock()
	return err
}
