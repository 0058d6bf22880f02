package temporalgraph

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The graph's history on disk (issue #25). What only ever grows with
// history is append-only and is written to a bbolt file; the heap keeps the
// live state (nodes, open edges, the files' current contributions) and the
// records added since the last flush (at most flushRecords).
//
// The history is fact changes, closed edge intervals (with their evidence)
// and the Entity-Refs of commit messages: evidence "commit:<sha>" of agent
// → ref edges and sources among the refs of nodes. Commits are immutable,
// so an edge with such evidence never closes: it cannot wait for a closed
// interval like the rest of the evidence.
//
// It is written in blocks: at each flush, per entity with new fact changes,
// per node with newly closed intervals (an interval is in the blocks of
// both its endpoints) or new commit sources, and per edge with new commit
// evidence, one block of those records, under the next seq in the one
// bucket. A block names the previous block of its kind and owner, whose
// newest block the owner keeps (nodeState.factBlock, closedBlock,
// refsBlock, edgeState.refsBlock): a chain, newest first. Seqs only grow,
// so blocks are appended at the end of the tree and no page of it is
// written again: a flush costs about the bytes it adds, however many
// entities it touches, and frees almost no page — bbolt keeps an entry on
// the heap for each freed page it reuses, for as long as the page lives,
// which keyed records inserted all over the tree made grow with history.
// A query walks one chain, with a lookup per block.
//
// The file is derived state: a snapshot streams it (EncodeSnapshot), and a
// graph without one is rebuilt from git. So it is written without fsync
// (NoSync), unlinked as soon as it is open (Linux keeps it until it is
// closed: nothing is left behind by a crash, and Close frees the space),
// and each graph has a file of its own. bbolt rather than a log file of our
// own: lookups by seq, transactions, reads of a memory map with no system
// call, all tested already.

var bucketBlocks = []byte("blocks")

// flushRecords is how many records wait in memory before they are written
// in one transaction: a buffer of about a MB, and a flush every hundred
// commits or so.
const flushRecords = 4096

// liveFlushFactor is how many more changes of the live state than records
// of history wait for a flush: a commit changes the same nodes and edges
// as the last ones did, so the changes grow far slower than the commits,
// and each flush rewrites every page they touch.
const liveFlushFactor = 16

// flushDue reports whether what waits in memory is due to be written.
func (g *Graph) flushDue() bool {
	return g.pending >= g.flushAt || g.live.dirty() >= liveFlushFactor*g.flushAt || g.live.files.weight >= maxPendingFileBytes
}

// Kinds of block: records of fact changes, closed intervals, commit
// evidence of an edge, commit sources of a node.
const (
	blockFacts    = 'f'
	blockClosed   = 'c'
	blockEdgeRefs = 'e'
	blockNodeRefs = 'n'
)

// edgeRef is a commit's evidence of an edge, with the commit's time
// (applied stops its walk by it).
type edgeRef struct {
	ev Evidence
	at time.Time
}

var errClosed = errors.New("temporalgraph: the graph was closed")

// store is the bbolt file. It is opened at the first flush, so a small graph
// (most tests) never touches the disk.
type store struct {
	dir string // where the file is created ("": the system's temp dir)
	seq uint64 // the last block's key

	mu     sync.Mutex // guards the fields below against concurrent queries and Close
	db     *bolt.DB
	tmp    string // the file's directory if it could not be removed at open
	closed bool
	err    error // the first failure, for Err
}

func (s *store) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

// open returns the database, creating it at the first call.
func (s *store) open() (*bolt.DB, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	if s.db != nil {
		return s.db, nil
	}
	if s.dir != "" {
		if err := os.MkdirAll(s.dir, 0o750); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp(s.dir, "graph-history-")
	if err != nil {
		return nil, err
	}
	db, err := bolt.Open(filepath.Join(dir, "history.db"), 0o600, &bolt.Options{
		NoSync: true, NoGrowSync: true, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err == nil {
		err = db.Update(func(tx *bolt.Tx) error {
			for _, name := range [][]byte{bucketBlocks, bucketNodes, bucketEdges, bucketFiles, bucketRefs, bucketAdj} {
				if _, err := tx.CreateBucket(name); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			_ = db.Close()
		}
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("temporalgraph: history store: %w", err)
	}
	if os.RemoveAll(dir) != nil {
		s.tmp = dir // where an open file cannot be removed: at Close
	}
	s.db = db
	return db, nil
}

// view returns the database for a query: nil when nothing was written yet.
func (s *store) view() (*bolt.DB, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	return s.db, nil
}

// fileBytes is the file's size, 0 when there is none (yet) or it cannot
// be told.
func (s *store) fileBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return 0
	}
	var n int64
	_ = s.db.View(func(tx *bolt.Tx) error { n = tx.Size(); return nil })
	return n
}

func (s *store) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var err error
	if s.db != nil {
		err = s.db.Close()
		s.db = nil
	}
	if s.tmp != "" {
		err = errors.Join(err, os.RemoveAll(s.tmp))
	}
	return err
}

// reader reads the history on disk for one query or snapshot: one read
// transaction, begun at the first read and ended by done. Queries run
// concurrently, each with its own.
type reader struct {
	g  *Graph
	tx *bolt.Tx
	// err is the first failure of this read (kept for Err as well).
	err error
}

func (g *Graph) reader() *reader { return &reader{g: g} }

func (r *reader) done() {
	if r.tx != nil {
		_ = r.tx.Rollback()
		r.tx = nil
	}
}

// bucket returns the named bucket, nil when nothing is on disk (or the store
// failed: the failure is kept for Err and the answer is what memory holds).
func (r *reader) bucket(name []byte) *bolt.Bucket {
	if r == nil || r.err != nil {
		return nil
	}
	if r.tx == nil {
		db, err := r.g.disk.view()
		if err == nil && db != nil {
			r.tx, err = db.Begin(false)
		}
		if err != nil {
			r.fail(err)
		}
		if r.tx == nil {
			return nil
		}
	}
	return r.tx.Bucket(name)
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.g.disk.fail(err)
}

// scan calls f with every record of bucket whose key starts with prefix,
// from the first key at or after from (nil: prefix), in key order. The
// slices are valid only during the call.
func (r *reader) scan(bucket, prefix, from []byte, f func(k, v []byte)) {
	b := r.bucket(bucket)
	if b == nil {
		return
	}
	if from == nil {
		from = prefix
	}
	c := b.Cursor()
	k, v := c.First()
	if len(from) > 0 {
		k, v = c.Seek(from)
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		f(k, v)
	}
}

// chain calls f with the blocks of a chain, newest first, from seq (0:
// none) until f returns false. The blocks are valid until done.
func (r *reader) chain(seq uint64, f func(block []byte) bool) {
	if seq == 0 {
		return
	}
	b := r.bucket(bucketBlocks)
	var key [8]byte
	for b != nil && seq != 0 {
		binary.BigEndian.PutUint64(key[:], seq)
		block := b.Get(key[:])
		h, ok := readBlockHeader(block)
		if !ok {
			r.corrupt(bucketBlocks)
			return
		}
		if !f(block) {
			return
		}
		seq = h.prev
	}
}

// corrupt records a record that does not decode (a bug: the file is only
// ever written by this package).
func (r *reader) corrupt(bucket []byte) {
	r.fail(fmt.Errorf("temporalgraph: history store: a record of %s does not decode", bucket))
}

// factOwner returns the node whose chain holds id's fact changes: the
// node, or for an id that is none (not expected: a fact's links are
// declared), a holder of its own.
func (g *Graph) factOwner(id string) *nodeState {
	if n := g.live.nodes.edit(g.writer(), id); n != nil {
		return n
	}
	n := g.orphans[id]
	if n == nil {
		n = &nodeState{id: id}
		g.orphans[id] = n
	}
	return n
}

// flush writes what waits in memory in one transaction. On failure nothing
// is lost: the records stay in memory, queries still see them, and the next
// commit tries again.
func (g *Graph) flush() error {
	if g.pending == 0 && g.live.dirty() == 0 {
		return nil
	}
	db, err := g.disk.open()
	if err != nil {
		g.disk.fail(err)
		return err
	}
	// The owners of the chains that grow are changed (their newest
	// block): read them now, for no read may begin inside the write.
	for id, fcs := range g.history {
		if len(fcs) > 0 { // lists emptied by the last flush stay, for reuse
			g.factOwner(id)
		}
	}
	for id, es := range g.pendClosed {
		if len(es) > 0 {
			g.live.nodes.edit(g.writer(), id)
		}
	}
	for id := range g.pendNodeRefs {
		g.live.nodes.edit(g.writer(), id)
	}
	for k := range g.pendEdgeRefs {
		g.live.edges.edit(g.writer(), k.String())
	}
	g.endWrite()
	// node is an owner read above, or (fact changes only) an orphan.
	node := func(id string) *nodeState {
		if n := g.live.nodes.dirty[id]; n != nil {
			return n
		}
		return g.orphans[id]
	}
	seq := g.disk.seq
	// The owners' chains move to the new blocks in the transaction, and
	// back if it fails.
	type head struct {
		of        *uint64 // the owner's newest block
		seq, was  uint64
		upTo      *Point // a closed chain's upTo (nil: another chain)
		to, upWas Point
	}
	var heads []head
	moved := false
	err = db.Update(func(tx *bolt.Tx) error {
		blocks := tx.Bucket(bucketBlocks)
		blocks.FillPercent = 1 // appended in order: pages split full
		var block, tmp []byte
		putBlock := func(of *uint64) error {
			seq++
			heads = append(heads, head{of: of, seq: seq})
			// bbolt keeps keys and values until the commit: copies.
			return blocks.Put(binary.BigEndian.AppendUint64(nil, seq), bytes.Clone(block))
		}
		for _, id := range sortedKeys(g.history) {
			if len(g.history[id]) == 0 {
				continue
			}
			n := node(id)
			block = appendBlockHeader(block[:0], blockHeader{kind: blockFacts, prev: n.factBlock}, id)
			for _, fc := range g.history[id] {
				tmp = appendFact(tmp[:0], fc)
				block = appendRecord(block, tmp)
			}
			if err := putBlock(&n.factBlock); err != nil {
				return err
			}
		}
		for _, id := range sortedKeys(g.pendClosed) {
			if len(g.pendClosed[id]) == 0 {
				continue
			}
			n := node(id)
			// upTo: the last position that closed an interval of the
			// chain, so a query as of a point stops at the first block
			// all closed by it.
			h := blockHeader{kind: blockClosed, prev: n.closedBlock, upTo: n.closedUpTo}
			for _, e := range g.pendClosed[id] {
				if !h.upTo.IsNow() && h.upTo.reached(e.ValidTo, e.ToOrd) {
					continue
				}
				h.upTo = AtCommit(e.ValidTo, e.ToOrd)
			}
			block = appendBlockHeader(block[:0], h, id)
			for _, e := range g.pendClosed[id] {
				tmp = appendEdge(tmp[:0], e)
				block = appendRecord(block, tmp)
			}
			if err := putBlock(&n.closedBlock); err != nil {
				return err
			}
			heads[len(heads)-1].upTo, heads[len(heads)-1].to = &n.closedUpTo, h.upTo
		}
		for k, refs := range g.pendEdgeRefs {
			es := g.live.edges.dirty[k.String()] // open: commit evidence keeps it so
			h := blockHeader{kind: blockEdgeRefs, prev: es.refsBlock}
			if prev, ok := readBlockHeader(blocks.Get(binary.BigEndian.AppendUint64(nil, es.refsBlock))); ok {
				h.upTo = prev.upTo // the newest commit time of the chain
			}
			for _, ref := range refs {
				if ref.at.After(h.upTo.Time) {
					h.upTo.Time = ref.at
				}
			}
			block = appendBlockHeader(block[:0], h, k.from+"\x00"+k.to+"\x00"+k.rel)
			for _, ref := range refs {
				tmp = appendTime(binary.AppendVarint(appendStr(appendStr(tmp[:0], ref.ev.File), ref.ev.Commit), int64(ref.ev.Line)), ref.at)
				block = appendRecord(block, tmp)
			}
			if err := putBlock(&es.refsBlock); err != nil {
				return err
			}
		}
		for id, srcs := range g.pendNodeRefs {
			n := node(id)
			block = appendBlockHeader(block[:0], blockHeader{kind: blockNodeRefs, prev: n.refsBlock}, id)
			for _, src := range srcs {
				block = appendRecord(block, []byte(src))
			}
			if err := putBlock(&n.refsBlock); err != nil {
				return err
			}
		}
		// The owners, written with the rest of the live state, name
		// their new blocks.
		moved = true
		for i, h := range heads {
			heads[i].was, *h.of = *h.of, h.seq
			if h.upTo != nil {
				heads[i].upWas, *h.upTo = *h.upTo, h.to
			}
		}
		return g.live.write(func(bucket, k, v []byte) error {
			if v == nil {
				return tx.Bucket(bucket).Delete(k)
			}
			return tx.Bucket(bucket).Put(k, v)
		})
	})
	if err != nil {
		if moved {
			for _, h := range slices.Backward(heads) {
				*h.of = h.was
				if h.upTo != nil {
					*h.upTo = h.upWas
				}
			}
		}
		err = fmt.Errorf("temporalgraph: history store: %w", err)
		g.disk.fail(err)
		return err
	}
	g.disk.seq = seq
	g.live.written()
	g.pending = 0
	reuseLists(g.history, 2*g.flushAt)
	reuseLists(g.pendClosed, 2*g.flushAt)
	clear(g.pendEdgeRefs)
	clear(g.pendNodeRefs)
	return nil
}

// reuseLists empties the lists of m, which were just written, keeping
// those of the entities seen in this flush for the next one (entities
// come back, and building their lists anew was a tenth of a replay's
// time) up to room elements in all, so the buffer stays bounded.
func reuseLists[V any](m map[string][]V, room int) {
	for k, l := range m {
		if len(l) == 0 || cap(l) > room {
			delete(m, k)
			continue
		}
		room -= cap(l)
		clear(l) // no stale strings kept alive
		m[k] = l[:0]
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// blockHeader starts a block: its kind, the seq of the previous block of
// its chain (0: none), and for intervals the last position that closed one
// of the chain's so far, for commit evidence the newest commit's time. Its
// owner's id follows (an edge's: from \0 to \0 rel).
type blockHeader struct {
	kind byte
	prev uint64
	upTo Point
}

func appendBlockHeader(b []byte, h blockHeader, id string) []byte {
	b = binary.BigEndian.AppendUint64(append(b, h.kind), h.prev)
	if h.kind == blockClosed || h.kind == blockEdgeRefs {
		b = binary.BigEndian.AppendUint32(appendTime(b, h.upTo.Time), h.upTo.Ord)
	}
	return appendStr(b, id)
}

// readBlockHeader reads a block's header.
func readBlockHeader(b []byte) (blockHeader, bool) {
	h, _, _, ok := splitBlock(b)
	return h, ok
}

// splitBlock reads a block: its header, its id and its records (views
// into b).
func splitBlock(b []byte) (h blockHeader, id, records []byte, ok bool) {
	if len(b) < 9 || !slices.Contains([]byte{blockFacts, blockClosed, blockEdgeRefs, blockNodeRefs}, b[0]) {
		return h, nil, nil, false
	}
	h.kind, h.prev, b = b[0], binary.BigEndian.Uint64(b[1:]), b[9:]
	if h.kind == blockClosed || h.kind == blockEdgeRefs {
		if len(b) < 16 {
			return h, nil, nil, false
		}
		h.upTo, b = AtCommit(readTime(b), binary.BigEndian.Uint32(b[12:])), b[16:]
	}
	n, w := binary.Uvarint(b)
	if w <= 0 || uint64(len(b)-w) < n {
		return h, nil, nil, false
	}
	return h, b[w : w+int(n)], b[w+int(n):], true
}

// Values: strings as uvarint length and bytes, times as 12 sortable bytes.

func appendStr(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// appendTime writes t as its Unix seconds (sign bit flipped, big-endian, so
// that byte order is time order) and nanoseconds. The graph's times are UTC.
func appendTime(b []byte, t time.Time) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(t.Unix())^(1<<63))
	return binary.BigEndian.AppendUint32(b, uint32(t.Nanosecond()))
}

func readTime(b []byte) time.Time {
	return time.Unix(int64(binary.BigEndian.Uint64(b)^(1<<63)), int64(binary.BigEndian.Uint32(b[8:]))).UTC()
}

// appendFact encodes a fact change but its entity id (the key's).
func appendFact(b []byte, fc FactChange) []byte {
	b = appendTime(b, fc.Time)
	b = binary.AppendVarint(b, int64(fc.Line))
	for _, s := range []string{fc.Change, fc.File, fc.Section, fc.Text, fc.Commit, fc.ProposalID} {
		b = appendStr(b, s)
	}
	return b
}

// appendEdge encodes a closed interval: first the fixed part a query
// filters on (edgeHead), then the strings and the evidence.
func appendEdge(b []byte, e Edge) []byte {
	b = appendTime(b, e.ValidFrom)
	b = binary.BigEndian.AppendUint32(b, e.FromOrd)
	b = appendTime(b, e.ValidTo)
	b = binary.BigEndian.AppendUint32(b, e.ToOrd)
	b = appendStr(b, e.Relation)
	b = appendStr(b, e.From)
	b = appendStr(b, e.To)
	b = binary.AppendUvarint(b, uint64(len(e.Evidence)))
	for _, ev := range e.Evidence {
		b = appendStr(appendStr(b, ev.File), ev.Commit)
		b = binary.AppendVarint(b, int64(ev.Line))
	}
	return b
}

const edgeHeadSize = 2 * (12 + 4)

// edgeHead reads what decides whether an encoded interval is visible, without
// allocating: its positions and its relation (a view into v).
func edgeHead(v []byte) (e Edge, rel []byte, ok bool) {
	if len(v) < edgeHeadSize {
		return e, nil, false
	}
	e.ValidFrom, e.FromOrd = readTime(v), binary.BigEndian.Uint32(v[12:])
	e.ValidTo, e.ToOrd = readTime(v[16:]), binary.BigEndian.Uint32(v[28:])
	n, w := binary.Uvarint(v[edgeHeadSize:])
	if w <= 0 || uint64(len(v)-edgeHeadSize-w) < n {
		return e, nil, false
	}
	return e, v[edgeHeadSize+w : edgeHeadSize+w+int(n)], true
}

// dec reads values from a string: decoded strings are substrings of it, so
// a query copies the records it reads into one string (an arena) and
// decodes them without an allocation per field.
type dec struct {
	s   string
	bad bool
}

func (d *dec) uint() uint64 {
	var x uint64
	for i, shift := 0, uint(0); i < len(d.s) && i < binary.MaxVarintLen64; i, shift = i+1, shift+7 {
		c := d.s[i]
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			d.s = d.s[i+1:]
			return x
		}
	}
	d.bad, d.s = true, ""
	return 0
}

func (d *dec) int() int64 {
	u := d.uint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *dec) str() string {
	n := d.uint()
	if n > uint64(len(d.s)) {
		d.bad, d.s = true, ""
		return ""
	}
	s := d.s[:n]
	d.s = d.s[n:]
	return s
}

// fixed returns the next n bytes, "" when there are not that many.
func (d *dec) fixed(n int) string {
	if len(d.s) < n {
		d.bad, d.s = true, ""
		return ""
	}
	b := d.s[:n]
	d.s = d.s[n:]
	return b
}

func (d *dec) u32() uint32 {
	b := d.fixed(4)
	if b == "" {
		return 0
	}
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func (d *dec) u64() uint64 { return uint64(d.u32())<<32 | uint64(d.u32()) }

// time reads what appendTime wrote.
func (d *dec) time() time.Time {
	sec, nsec := d.u64(), d.u32()
	return time.Unix(int64(sec^(1<<63)), int64(nsec)).UTC()
}

// change returns the two kinds of change as the constants they are.
func change(s string) string {
	switch s {
	case "added":
		return "added"
	case "removed":
		return "removed"
	}
	return s
}

func decodeFact(id, s string) (FactChange, bool) {
	d := dec{s: s}
	fc := FactChange{EntityID: id, Time: d.time(), Line: int(d.int())}
	fc.Change, fc.File, fc.Section, fc.Text, fc.Commit, fc.ProposalID = change(d.str()), d.str(), d.str(), d.str(), d.str(), d.str()
	return fc, !d.bad
}

func decodeEdge(s string) (Edge, bool) {
	d := dec{s: s}
	e := Edge{ValidFrom: d.time(), FromOrd: d.u32(), ValidTo: d.time(), ToOrd: d.u32()}
	e.Relation, e.From, e.To = d.str(), d.str(), d.str()
	n := d.uint()
	if n > uint64(len(d.s)) {
		return e, false
	}
	e.Evidence = make([]Evidence, 0, n)
	for range n {
		ev := Evidence{File: d.str(), Commit: d.str()}
		ev.Line = int(d.int())
		e.Evidence = append(e.Evidence, ev)
	}
	return e, !d.bad
}

// arena collects records' bytes during a read, to decode them together
// from one string once the read is done: decoded strings are substrings of
// it, one allocation in all.
type arena struct {
	buf  strings.Builder // its String does not copy
	ends []int
}

func (a *arena) add(v []byte) {
	a.buf.Write(v)
	a.ends = append(a.ends, a.buf.Len())
}

// each calls f with each record collected, as a substring of one string.
func (a *arena) each(f func(s string)) {
	s, start := a.buf.String(), 0
	for _, end := range a.ends {
		f(s[start:end])
		start = end
	}
}

// history reads id's fact changes: on disk, then those waiting in memory.
func (r *reader) history(id string) []FactChange {
	var chain [][]byte
	if n := r.g.live.nodes.get(r, id); n != nil {
		r.chain(n.factBlock, func(block []byte) bool { chain = append(chain, block); return true })
	} else if n := r.g.orphans[id]; n != nil {
		r.chain(n.factBlock, func(block []byte) bool { chain = append(chain, block); return true })
	}
	var a arena
	size := 0
	for _, block := range chain {
		size += len(block)
	}
	a.buf.Grow(size)
	for _, block := range slices.Backward(chain) { // oldest first
		if _, _, recs, ok := splitBlock(block); !ok || !records(recs, a.add) {
			r.corrupt(bucketBlocks)
		}
	}
	pending := r.g.history[id]
	if len(a.ends)+len(pending) == 0 {
		return nil
	}
	out := make([]FactChange, 0, len(a.ends)+len(pending))
	a.each(func(s string) {
		if fc, ok := decodeFact(id, s); ok {
			out = append(out, fc)
		} else {
			r.corrupt(bucketBlocks)
		}
	})
	return append(out, pending...)
}

// closedOf appends to out id's closed intervals visible at p and (allow
// non-empty) of an allowed relation, as seen from p (asOf).
func (r *reader) closedOf(id string, p Point, allow map[string]bool, out []Edge) []Edge {
	keep := func(e Edge, rel string) bool {
		return (len(allow) == 0 || allow[rel]) && visibleAt(e, p)
	}
	// Visible at p means not closed by p: the walk stops at the first
	// block whose intervals, and so all older ones', were (but an
	// interval closed at the zero time looks open, so none is skipped
	// once one is).
	skip := !p.IsNow() && !r.g.zeroClosed
	var a arena
	if n := r.g.live.nodes.get(r, id); n != nil {
		r.chain(n.closedBlock, func(block []byte) bool {
			h, _, recs, _ := splitBlock(block)
			if skip && p.reached(h.upTo.Time, h.upTo.Ord) {
				return false
			}
			ok := records(recs, func(rec []byte) {
				if e, rel, ok := edgeHead(rec); !ok {
					r.corrupt(bucketBlocks)
				} else if keep(e, string(rel)) {
					a.add(rec)
				}
			})
			if !ok {
				r.corrupt(bucketBlocks)
			}
			return true
		})
	}
	a.each(func(s string) {
		if e, ok := decodeEdge(s); ok {
			out = append(out, asOf(e, p))
		} else {
			r.corrupt(bucketBlocks)
		}
	})
	for _, e := range r.g.pendClosed[id] {
		if keep(e, e.Relation) {
			out = append(out, asOf(e, p))
		}
	}
	return out
}

// edgeRefs returns the commit evidence of the open edge k.
func (r *reader) edgeRefs(k edgeKey, es *edgeState) []Evidence {
	var out []Evidence
	r.chain(es.refsBlock, func(block []byte) bool {
		_, _, recs, _ := splitBlock(block)
		if !records(recs, func(rec []byte) {
			if ref, ok := decodeEdgeRef(rec); ok {
				out = append(out, ref.ev)
			} else {
				r.corrupt(bucketBlocks)
			}
		}) {
			r.corrupt(bucketBlocks)
		}
		return true
	})
	for _, ref := range r.g.pendEdgeRefs[k] {
		out = append(out, ref.ev)
	}
	return out
}

func decodeEdgeRef(rec []byte) (edgeRef, bool) {
	d := dec{s: string(rec)}
	ref := edgeRef{ev: Evidence{File: d.str(), Commit: d.str(), Line: int(d.int())}}
	ref.at = d.time()
	return ref, !d.bad
}

// nodeRefs returns the commit sources among n's refs.
func (r *reader) nodeRefs(n *nodeState) []string {
	var out []string
	r.chain(n.refsBlock, func(block []byte) bool {
		_, _, recs, _ := splitBlock(block)
		if !records(recs, func(rec []byte) { out = append(out, string(rec)) }) {
			r.corrupt(bucketBlocks)
		}
		return true
	})
	return append(out, r.g.pendNodeRefs[n.id]...)
}

// The whole history, for snapshots and Dump: on disk, then in memory, so a
// key's records come in the order they were added.

// allFacts calls f with every fact change.
func (r *reader) allFacts(f func(FactChange)) {
	r.allBlocks(blockFacts, func(id string, rec []byte) {
		if fc, ok := decodeFact(id, string(rec)); ok {
			f(fc)
		} else {
			r.corrupt(bucketBlocks)
		}
	})
	for _, id := range sortedKeys(r.g.history) {
		for _, fc := range r.g.history[id] {
			f(fc)
		}
	}
}

// allClosed calls f with every closed interval, once.
func (r *reader) allClosed(f func(Edge)) {
	r.allBlocks(blockClosed, func(id string, rec []byte) {
		if e, ok := decodeEdge(string(rec)); !ok {
			r.corrupt(bucketBlocks)
		} else if e.From == id { // not the copy in e.To's block
			f(e)
		}
	})
	for _, id := range sortedKeys(r.g.pendClosed) {
		for _, e := range r.g.pendClosed[id] {
			if e.From == id {
				f(e)
			}
		}
	}
}

// allBlocks calls f with every record of every block of a kind, with the
// block's id, in the order they were written.
func (r *reader) allBlocks(kind byte, f func(id string, rec []byte)) {
	r.scan(bucketBlocks, nil, nil, func(_, block []byte) {
		h, id, recs, ok := splitBlock(block)
		if ok && h.kind != kind {
			return
		}
		sid := string(id)
		if !ok || !records(recs, func(rec []byte) { f(sid, rec) }) {
			r.corrupt(bucketBlocks)
		}
	})
}

// allEdgeRefs calls f with every commit evidence and its edge.
func (r *reader) allEdgeRefs(f func(edgeKey, edgeRef)) {
	r.allBlocks(blockEdgeRefs, func(id string, rec []byte) {
		parts := strings.SplitN(id, "\x00", 3)
		ref, ok := decodeEdgeRef(rec)
		if len(parts) != 3 || !ok {
			r.corrupt(bucketBlocks)
			return
		}
		f(edgeKey{parts[0], parts[1], parts[2]}, ref)
	})
	for k, refs := range r.g.pendEdgeRefs {
		for _, ref := range refs {
			f(k, ref)
		}
	}
}

// allNodeRefs calls f with every commit source of every node.
func (r *reader) allNodeRefs(f func(id, src string)) {
	r.allBlocks(blockNodeRefs, func(id string, rec []byte) { f(id, string(rec)) })
	for id, srcs := range r.g.pendNodeRefs {
		for _, src := range srcs {
			f(id, src)
		}
	}
}

// appendRecord appends rec to a block of records, its length first.
func appendRecord(block, rec []byte) []byte {
	return append(binary.AppendUvarint(block, uint64(len(rec))), rec...)
}

// records calls f with each record of a block; false if the block does not
// decode.
func records(block []byte, f func(rec []byte)) bool {
	for len(block) > 0 {
		n, w := binary.Uvarint(block)
		if w <= 0 || uint64(len(block)-w) < n {
			return false
		}
		f(block[w : w+int(n)])
		block = block[w+int(n):]
	}
	return true
}
