package temporalgraph

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"

	"github.com/garden-bloom/memory/pkg/lru"
)

// The graph's live state on disk (issue #30), beside its history in the
// same bbolt file (store.go): the nodes, the open edges with their
// evidence, what each file contributes now, and two sets per node — the
// files naming it (refs) and the open edges touching it (adjacency). At
// 10,000 agents that state was 800,000 nodes and 700,000 edges, most of a
// read replica's heap; on disk the heap holds what changed since the last
// flush and the hot set: decoded values (table.clean), sorted lists
// (sortedLists) and pages (pageCache), all in the memory budget.
//
// A table keeps its changes in memory (dirty) until the graph's next
// flush writes them with the history in one transaction: a commit touches
// the same hub entities again and again, and a transaction per commit
// would write their pages each time. Between flushes a query sees the
// dirty value over the one on disk. Only the writer (ApplyCommit, under
// its caller's write lock) changes the dirty maps and the values; queries
// run under the read lock, read them, and add what they decode to the
// clean caches (which lock).
var (
	bucketNodes = []byte("nodes")
	bucketEdges = []byte("edges")
	bucketFiles = []byte("files")
	bucketRefs  = []byte("refs")
	bucketAdj   = []byte("adj")
)

// table is one kind of live state by key: the dirty value, or the one on
// disk, decoded — kept in clean, the hot set, for the next get.
type table[V any] struct {
	bucket []byte
	dirty  map[string]*V // changed since the last flush; nil: deleted
	// fresh are the dirty keys created since the last flush: not on disk,
	// so deleting one again needs no write (an edge opened and closed
	// between two flushes).
	fresh map[string]struct{}
	// clean holds values as they are on disk, decoded: shared entities
	// are read by most commits and queries. A value taken from it to be
	// changed (edit) is dirty, which every get looks at first, and goes
	// back at the next flush. Values are costed at twice their encoding
	// (their strings share one copy of it) plus their headers.
	clean  *lru.Cache[string, *V]
	encode func(b []byte, v *V) []byte
	decode func(key string, d *dec) *V
	// weigh, when set, sizes the values put, and weight adds up those
	// put since the last flush (values edited in place are not counted:
	// only files, which are only ever put, are weighed).
	weigh  func(*V) int64
	weight int64
}

func newTable[V any](bucket []byte, cleanMax int64, encode func([]byte, *V) []byte, decode func(string, *dec) *V) table[V] {
	return table[V]{bucket: bucket, dirty: map[string]*V{}, fresh: map[string]struct{}{}, clean: lru.New[string, *V](cleanMax),
		encode: encode, decode: decode}
}

// cleanCost is what a decoded value of an encoding of n bytes holds.
func cleanCost(n int) int64 { return int64(2*n + 128) }

// get returns k's value (nil: none). It may not be changed: edit is for
// that.
func (t *table[V]) get(r *reader, k string) *V {
	if v, ok := t.dirty[k]; ok {
		return v
	}
	if v, ok := t.clean.Get(k); ok {
		return v
	}
	b := r.bucket(t.bucket)
	if b == nil {
		return nil
	}
	val := b.Get([]byte(k))
	if val == nil {
		return nil
	}
	v := t.decodeValue(r, k, val)
	if v != nil {
		t.clean.Put(k, v, cleanCost(len(val)))
	}
	return v
}

func (t *table[V]) decodeValue(r *reader, k string, val []byte) *V {
	d := dec{s: string(val)}
	v := t.decode(k, &d)
	if d.bad || d.s != "" {
		r.corrupt(t.bucket)
		return nil
	}
	return v
}

// edit is get for the writer: the value returned may be changed and is
// written at the next flush.
func (t *table[V]) edit(r *reader, k string) *V {
	if v, ok := t.dirty[k]; ok {
		return v
	}
	v := t.get(r, k)
	if v != nil {
		t.dirty[k] = v
	}
	return v
}

// put sets k's value; create is put for a k known to be new.
func (t *table[V]) put(k string, v *V) {
	t.dirty[k] = v
	if t.weigh != nil {
		t.weight += t.weigh(v)
	}
}

func (t *table[V]) create(k string, v *V) {
	if _, deleted := t.dirty[k]; !deleted {
		t.fresh[k] = struct{}{} // else it is on disk still
	}
	t.put(k, v)
}

func (t *table[V]) del(k string) {
	if _, ok := t.fresh[k]; ok {
		delete(t.fresh, k)
		delete(t.dirty, k)
		return
	}
	t.dirty[k] = nil
}

// each calls f with every key and value whose key sorts after `after`, in
// key order, until f returns false.
func (t *table[V]) each(r *reader, after string, f func(k string, v *V) bool) {
	dirty := make([]string, 0, len(t.dirty))
	for k := range t.dirty {
		if k > after {
			dirty = append(dirty, k)
		}
	}
	slices.Sort(dirty)
	emitDirty := func(upTo string, last bool) bool {
		for len(dirty) > 0 && (last || dirty[0] < upTo) {
			k := dirty[0]
			dirty = dirty[1:]
			if v := t.dirty[k]; v != nil && !f(k, v) {
				return false
			}
		}
		return true
	}
	if b := r.bucket(t.bucket); b != nil {
		c := b.Cursor()
		kb, val := c.Seek([]byte(after))
		if kb != nil && string(kb) == after {
			kb, val = c.Next()
		}
		for ; kb != nil; kb, val = c.Next() {
			k := string(kb)
			if !emitDirty(k, false) {
				return
			}
			if _, changed := t.dirty[k]; changed {
				continue
			}
			if v := t.decodeValue(r, k, val); v != nil && !f(k, v) {
				return
			}
		}
	}
	emitDirty("", true)
}

// write puts the dirty values in their bucket (of a write transaction),
// in key order: bbolt inserts in order at a fraction of the cost. They go
// to clean too: if the transaction fails they are still dirty, which
// comes first.
func (t *table[V]) write(put func(bucket, k, v []byte) error) error {
	var buf []byte
	for _, k := range sortedKeys(t.dirty) {
		v := t.dirty[k]
		var val []byte // nil: delete
		if v != nil {
			buf = t.encode(buf[:0], v)
			val = bytes.Clone(buf) // bbolt keeps values until the commit
			if val == nil {
				val = []byte{}
			}
			t.clean.Put(k, v, cleanCost(len(val)))
		} else {
			t.clean.Delete(k)
		}
		if err := put(t.bucket, []byte(k), val); err != nil {
			return err
		}
	}
	return nil
}

// setTable is a set of members per owner (a node's refs, its edges), one
// key per member on disk (owner \0 member), so that a shared entity's
// thousands change one key at a time. Members come back sorted. Callers
// add only members that are not in the set and remove only those that
// are, so a member added since the last flush and removed again was never
// on disk.
type setTable struct {
	bucket []byte
	dirty  map[string]map[string]setChange // owner → member → change
	n      int                             // changes in dirty
}

// setChange is what became of a member since the last flush.
type setChange uint8

const (
	removed  setChange = iota // on disk, to be deleted
	readded                   // on disk, removed and added again
	addedNew                  // not on disk
)

func newSetTable(bucket []byte) setTable {
	return setTable{bucket: bucket, dirty: map[string]map[string]setChange{}}
}

func (s *setTable) changes(owner string) map[string]setChange {
	m := s.dirty[owner]
	if m == nil {
		m = map[string]setChange{}
		s.dirty[owner] = m
	}
	return m
}

func (s *setTable) add(owner, member string) {
	m := s.changes(owner)
	c, ok := m[member]
	switch {
	case !ok:
		s.n++
		m[member] = addedNew
	case c == removed:
		m[member] = readded
	}
}

func (s *setTable) remove(owner, member string) {
	m := s.changes(owner)
	c, ok := m[member]
	switch {
	case !ok:
		s.n++
		m[member] = removed
	case c == addedNew:
		s.n--
		delete(m, member) // it never reached the disk
	default:
		m[member] = removed
	}
}

// members returns owner's members, sorted.
func (s *setTable) members(r *reader, owner string) []string {
	dirty := s.dirty[owner]
	var out []string
	prefix := owner + "\x00"
	r.scan(s.bucket, []byte(prefix), nil, func(k, _ []byte) {
		if m := string(k[len(prefix):]); dirty == nil {
			out = append(out, m)
		} else if _, changed := dirty[m]; !changed {
			out = append(out, m)
		}
	})
	n := len(out)
	for m, c := range dirty {
		if c != removed {
			out = append(out, m)
		}
	}
	if len(out) > n {
		slices.Sort(out)
	}
	return out
}

// write puts the dirty members in their bucket (of a write transaction),
// in key order.
func (s *setTable) write(put func(bucket, k, v []byte) error) error {
	for _, owner := range sortedKeys(s.dirty) {
		m := s.dirty[owner]
		for _, member := range sortedKeys(m) {
			var v []byte // nil: delete
			if m[member] != removed {
				v = []byte{}
			}
			if err := put(s.bucket, []byte(owner+"\x00"+member), v); err != nil {
				return err
			}
		}
	}
	return nil
}

// live is the graph's live state.
type live struct {
	nodes table[nodeState]
	edges table[edgeState]
	files table[fileState]
	refs  setTable // node id → the files naming it
	adj   setTable // node id → the keys of its open edges (edgeKey.String)
}

// Bounds of the hot sets until the process's memory budget sizes them.
const (
	cleanNodesSize = 4 << 20
	cleanEdgesSize = 8 << 20
	cleanFilesSize = 8 << 20
)

func newLive() live {
	l := live{
		nodes: newTable(bucketNodes, cleanNodesSize, encodeNode, decodeNode),
		edges: newTable(bucketEdges, cleanEdgesSize, encodeEdge, decodeEdgeState),
		files: newTable(bucketFiles, cleanFilesSize, encodeFile, decodeFile),
		refs:  newSetTable(bucketRefs), adj: newSetTable(bucketAdj),
	}
	l.files.weigh = fileWeight
	return l
}

// maxPendingFileBytes bounds the files' contributions waiting for a flush:
// an agent's decisions.md grows all its life, and a commit count alone let
// a hundred agents' whole contributions wait in memory.
const maxPendingFileBytes = 8 << 20

// fileWeight is about what f holds in memory.
func fileWeight(f *fileState) int64 {
	n := int64(64)
	for _, id := range f.nodes {
		n += int64(len(id)) + 16
	}
	for _, e := range f.edges {
		n += int64(len(e.key.from)+len(e.key.to)+len(e.key.rel)) + 56
	}
	for _, ft := range f.facts {
		n += int64(len(ft.section)+len(ft.text)) + 64
		for _, id := range ft.ids {
			n += int64(len(id)) + 16
		}
	}
	return n
}

// dirty counts the changes waiting for a flush, to bound them.
func (l *live) dirty() int {
	return len(l.nodes.dirty) + len(l.edges.dirty) + len(l.files.dirty) + l.refs.n + l.adj.n
}

// write puts every change in its bucket (of a write transaction).
func (l *live) write(put func(bucket, k, v []byte) error) error {
	for _, w := range []func(func(bucket, k, v []byte) error) error{l.nodes.write, l.edges.write, l.files.write, l.refs.write, l.adj.write} {
		if err := w(put); err != nil {
			return err
		}
	}
	return nil
}

// written forgets the changes once they are on disk.
func (l *live) written() {
	clear(l.nodes.dirty)
	clear(l.edges.dirty)
	clear(l.files.dirty)
	clear(l.nodes.fresh)
	clear(l.edges.fresh)
	clear(l.files.fresh)
	l.files.weight = 0
	clear(l.refs.dirty)
	clear(l.adj.dirty)
	l.refs.n, l.adj.n = 0, 0
}

// String is the key's form on disk: its parts joined by \0 (ids and
// relations hold none), which sorts as compareKeys does.
func (k edgeKey) String() string { return k.from + "\x00" + k.to + "\x00" + k.rel }

// parseEdgeKey is the inverse of edgeKey.String.
func parseEdgeKey(s string) (edgeKey, bool) {
	from, rest, ok1 := strings.Cut(s, "\x00")
	to, rel, ok2 := strings.Cut(rest, "\x00")
	return edgeKey{from, to, rel}, ok1 && ok2
}

// Encodings of the live state: strings as appendStr, times as appendTime,
// numbers as uvarints.

const (
	flagLabelSet = 1 << iota
	flagCommitRefs
	flagOpen
)

func flag(b bool, f byte) byte {
	if b {
		return f
	}
	return 0
}

func appendPoint(b []byte, p Point) []byte {
	return binary.AppendUvarint(appendTime(b, p.Time), uint64(p.Ord))
}

func (d *dec) point() Point { return AtCommit(d.time(), uint32(d.uint())) }

func encodeNode(b []byte, n *nodeState) []byte {
	b = append(b, flag(n.labelSet, flagLabelSet)|flag(n.commitRefs, flagCommitRefs))
	b = appendStr(appendStr(b, n.typ), n.label)
	for _, u := range []uint64{uint64(n.firstOrd), n.factBlock, n.closedBlock, n.refsBlock, uint64(n.refCount), uint64(n.adjCount)} {
		b = binary.AppendUvarint(b, u)
	}
	b = appendPoint(b, n.closedUpTo)
	b = appendTime(appendTime(b, n.firstSeen), n.updated)
	return appendStrs(b, n.aliases)
}

func decodeNode(id string, d *dec) *nodeState {
	n := &nodeState{id: id}
	flags := d.fixed(1)
	if flags == "" {
		return n
	}
	n.labelSet, n.commitRefs = flags[0]&flagLabelSet != 0, flags[0]&flagCommitRefs != 0
	n.typ, n.label = d.str(), d.str()
	n.firstOrd = uint32(d.uint())
	n.factBlock, n.closedBlock, n.refsBlock = d.uint(), d.uint(), d.uint()
	n.refCount, n.adjCount = int(d.uint()), int(d.uint())
	n.closedUpTo = d.point()
	n.firstSeen, n.updated = d.time(), d.time()
	n.aliases = d.strs()
	return n
}

func appendEvidenceMap(b []byte, m map[string]evidence) []byte {
	b = binary.AppendUvarint(b, uint64(len(m)))
	for src, ev := range m {
		b = appendStr(appendStr(b, src), ev.commit)
		b = binary.AppendVarint(b, int64(ev.line))
	}
	return b
}

// count reads how many items follow: a count the rest cannot hold (each
// item takes a byte at least) marks d bad and reads as none.
func (d *dec) count() uint64 {
	k := d.uint()
	if k > uint64(len(d.s)) {
		d.bad, d.s = true, ""
		return 0
	}
	return k
}

func (d *dec) evidenceMap() map[string]evidence {
	k := d.count()
	if k == 0 {
		return nil
	}
	m := make(map[string]evidence, k)
	for range k {
		src, commit := d.str(), d.str()
		m[src] = evidence{commit: commit, line: int32(d.int())}
	}
	return m
}

func encodeEdge(b []byte, es *edgeState) []byte {
	b = append(b, flag(es.open, flagOpen)|flag(es.commitRefs, flagCommitRefs))
	b = binary.AppendUvarint(binary.AppendUvarint(b, uint64(es.fromOrd)), es.refsBlock)
	b = appendTime(b, es.from)
	return appendEvidenceMap(appendEvidenceMap(b, es.live), es.gone)
}

func decodeEdgeState(_ string, d *dec) *edgeState {
	es := &edgeState{}
	flags := d.fixed(1)
	if flags == "" {
		return es
	}
	es.open, es.commitRefs = flags[0]&flagOpen != 0, flags[0]&flagCommitRefs != 0
	es.fromOrd, es.refsBlock = uint32(d.uint()), d.uint()
	es.from = d.time()
	es.live, es.gone = d.evidenceMap(), d.evidenceMap()
	if es.live == nil {
		es.live = map[string]evidence{}
	}
	return es
}

func appendStrs(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendStr(b, s)
	}
	return b
}

func (d *dec) strs() []string {
	k := d.count()
	if k == 0 {
		return nil
	}
	out := make([]string, k)
	for i := range out {
		out[i] = d.str()
	}
	return out
}

func encodeFile(b []byte, f *fileState) []byte {
	b = appendStrs(b, f.nodes)
	b = binary.AppendUvarint(b, uint64(len(f.edges)))
	for _, e := range f.edges {
		b = appendStr(appendStr(appendStr(b, e.key.from), e.key.to), e.key.rel)
		b = binary.AppendVarint(b, int64(e.line))
	}
	b = binary.AppendUvarint(b, uint64(len(f.facts)))
	for _, ft := range f.facts {
		b = appendStr(appendStr(b, ft.section), ft.text)
		b = appendStrs(binary.AppendVarint(b, int64(ft.line)), ft.ids)
	}
	return b
}

func decodeFile(_ string, d *dec) *fileState {
	f := &fileState{nodes: d.strs()}
	if k := d.count(); k > 0 {
		f.edges = make([]fileEdge, k)
		for i := range f.edges {
			f.edges[i] = fileEdge{edgeKey{d.str(), d.str(), d.str()}, int(d.int())}
		}
	}
	if k := d.count(); k > 0 {
		f.facts = make([]fact, k)
		for i := range f.facts {
			f.facts[i] = fact{section: d.str(), text: d.str(), line: int(d.int()), ids: d.strs()}
		}
	}
	return f
}
