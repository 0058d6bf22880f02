package temporalgraph

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"
	"unsafe"

	"github.com/garden-bloom/memory/pkg/membudget"
)

// Commit is one git commit as the graph needs it.
type Commit struct {
	Sha  string
	Time time.Time
	// Files maps each path the commit changed to its new content; nil
	// means the file was deleted.
	Files map[string]*string
	// EntityRefs are the commit message's Entity-Refs (commitmsg.Update).
	EntityRefs []string
	// AgentID and ProposalID come from the commit message too.
	AgentID    string
	ProposalID string

	// derived holds Prepare's work: each file's contribution.
	derived map[string]*fileState
}

// Prepare does the part of applying c that does not touch a graph — parsing
// every changed file — so callers can prepare many commits in parallel and
// apply them in order. ApplyCommit prepares what was not prepared.
func Prepare(c *Commit) {
	c.derived = make(map[string]*fileState, len(c.Files))
	for raw, content := range c.Files {
		if content != nil {
			c.derived[raw] = derive(cleanPath(raw), *content)
		}
	}
}

// Evidence is one source of an edge: a file (or "commit:<sha>" for
// Entity-Refs), the commit that introduced the claim in that source, and
// its latest line there (0 for commit messages).
type Evidence struct {
	File, Commit string
	Line         int
}

// Edge is one validity interval of a relation. ValidTo is zero while the
// edge still holds. The same (From, To, Relation) can have several
// intervals if it is removed and added again.
//
// Git times have one-second precision, so a time alone cannot tell apart
// commits made in the same second: FromOrd and ToOrd are the positions of
// the opening and closing commits among the commits of their second
// (Point.Ord), and together with the times they place the interval exactly
// in commit order.
type Edge struct {
	From, To, Relation string
	ValidFrom, ValidTo time.Time
	FromOrd, ToOrd     uint32
	// Evidence lists every source that supported the edge during this
	// interval, sorted by file (then commit and line) — or the first of
	// them, when NodePage was asked for fewer.
	Evidence []Evidence
	// Total is how many sources Evidence was cut from (0: none was cut).
	Total int
}

// Node is an entity.
type Node struct {
	ID, Type, Label string
	// Aliases are the other distinct labels seen, sorted.
	Aliases []string
	// Refs are the sources mentioning the node now, sorted.
	Refs []string
	// LastUpdated is the time of the last commit that changed the node's
	// refs, type or aliases or opened/closed one of its edges.
	LastUpdated time.Time
}

// FactChange is a facts.md bullet linking an entity that a commit added or
// removed.
type FactChange struct {
	EntityID string
	// Change is "added" or "removed".
	Change        string
	File, Section string
	Text          string
	// Line is the bullet's line in the new file (added) or old file
	// (removed).
	Line       int
	Commit     string
	Time       time.Time
	ProposalID string
}

// NodeFilter selects nodes for Nodes. Zero fields match everything.
type NodeFilter struct {
	// Type keeps nodes of this type.
	Type string
	// Query keeps nodes whose id, label or an alias contains Slug(Query).
	Query string
	// At keeps nodes first seen at or before At.
	At time.Time
	// Point, when set, keeps nodes first seen at or before it in commit
	// order; it takes precedence over At.
	Point Point
}

// Point is a position in commit order: right after the commit made at Time
// with Ord commits of the same second applied before it (first-parent
// order). Git times have one-second precision, so Time alone cannot tell
// apart two commits of one second; Time and Ord together can. The zero
// Point is now (the newest state).
type Point struct {
	Time time.Time
	Ord  uint32
}

// AtTime is the point of the newest commit at or before t (zero t: now).
func AtTime(t time.Time) Point {
	if t.IsZero() {
		return Point{}
	}
	return Point{Time: t, Ord: math.MaxUint32}
}

// AtCommit is the point right after the commit made at t that had ord
// commits of the same second before it in commit order.
func AtCommit(t time.Time, ord uint32) Point { return Point{Time: t, Ord: ord} }

// IsNow reports whether p is the zero point: the newest state.
func (p Point) IsNow() bool { return p.Time.IsZero() }

// reached reports whether the commit at (t, ord) is at or before p.
func (p Point) reached(t time.Time, ord uint32) bool {
	return t.Before(p.Time) || (t.Equal(p.Time) && ord <= p.Ord)
}

type edgeKey struct{ from, to, rel string }

type decl struct{ id, label, typ string }

type fact struct {
	section, text string
	line          int
	ids           []string
}

// fileState is what one source currently contributes. The graph keeps one
// per file, so it is compact: sorted slices rather than maps, entity ids
// shared with the nodes (intern), and no declarations (needed only while
// the file's commit is applied).
type fileState struct {
	decls []decl
	nodes []string   // sorted, distinct
	edges []fileEdge // sorted by key, distinct
	facts []fact
}

// fileEdge is an edge a source supports, at its first line there.
type fileEdge struct {
	key  edgeKey
	line int
}

func (f *fileState) hasNode(id string) bool {
	_, ok := slices.BinarySearch(f.nodes, id)
	return ok
}

func (f *fileState) hasEdge(k edgeKey) bool {
	_, ok := slices.BinarySearchFunc(f.edges, k, func(e fileEdge, k edgeKey) int { return compareKeys(e.key, k) })
	return ok
}

func compareKeys(a, b edgeKey) int {
	return cmp.Or(strings.Compare(a.from, b.from), strings.Compare(a.to, b.to), strings.Compare(a.rel, b.rel))
}

// edgeState is an edge that holds now: its open interval. A closed
// interval is history (on disk), and an edge with none open is not kept.
type edgeState struct {
	open bool
	// commitRefs is set when commit messages' Entity-Refs support the
	// edge: their evidence is on disk (store.go; refsBlock is the newest
	// block of it), and the edge never closes.
	commitRefs bool
	// fromOrd is the opening commit's Point.Ord.
	fromOrd   uint32
	refsBlock uint64
	from      time.Time
	live      map[string]evidence // sources supporting the edge now, by source
	// gone holds the sources that supported the edge earlier in the current
	// interval and left it (nil when none): the interval's evidence is live
	// and gone together. Keeping only the departed ones, not a second copy
	// of live, halves the evidence an open edge holds.
	gone map[string]evidence
}

// evidence is an Evidence kept in an edge's maps, keyed by its source.
type evidence struct {
	commit string
	line   int32
}

// expand returns ev, the evidence of source src, as an Evidence.
func (ev evidence) expand(src string) Evidence {
	return Evidence{File: src, Commit: ev.commit, Line: int(ev.line)}
}

type nodeState struct {
	id, typ, label string
	labelSet       bool
	// commitRefs is set when commit sources ("commit:<sha>") name the
	// node: they are refs too, on disk (store.go); the files are in the
	// refs set (live.go), refCount of them.
	commitRefs bool
	// firstOrd is the Point.Ord of the commit that first saw the node.
	firstOrd uint32
	// refCount and adjCount are the sizes of the node's sets of files and
	// open edges (live.go), known without reading them.
	refCount, adjCount int
	// factBlock, closedBlock and refsBlock are the seqs of the newest
	// blocks of the node's fact changes, closed intervals and commit
	// sources on disk (0: none), each the head of a chain (store.go).
	factBlock, closedBlock, refsBlock uint64
	// closedUpTo is the last position that closed one of the node's
	// intervals on disk (blockHeader.upTo of closedBlock).
	closedUpTo Point
	aliases    []string // sorted
	firstSeen  time.Time
	updated    time.Time
}

// Graph is a temporal entity graph built from commits. Its live state —
// nodes, open edges, what each file contributes now (live.go) — and its
// history — fact changes, closed edge intervals, commit messages'
// Entity-Refs (store.go) — are on disk, but for what changed since the
// last flush, so its heap grows with neither (issues #25, #30). It is not
// safe for concurrent use: build it single-threaded, then query (queries do
// not mutate). Close releases the disk.
type Graph struct {
	live live
	// nodeCount and edgeCount count the nodes and open edges, for Size.
	nodeCount, edgeCount int
	// wr reads the disk for the writer (ApplyCommit), from the first read
	// to the next flush.
	wr *reader
	// sortedAdj and sortedRefs keep the biggest adjacency lists and ref
	// sets in order (NodePage).
	sortedAdj  sortedLists[edgeKey]
	sortedRefs sortedLists[string]
	// pages keeps NodePage's pages of now until the next commit; version
	// counts the commits applied, which is what a page is valid for.
	pages   pageCache
	version uint64

	// Records not yet on disk, by what queries look them up by: fact
	// changes by entity, closed intervals by each endpoint, commit
	// evidence by edge, commit sources by node. pending counts them; at
	// flushAt they and the live state's changes are written in one
	// transaction (flush).
	history      map[string][]FactChange
	pendClosed   map[string][]Edge
	pendEdgeRefs map[edgeKey][]edgeRef
	pendNodeRefs map[string][]string
	pending      int
	flushAt      int
	disk         *store
	// orphans hold the chains of fact changes of ids that are no node
	// (factOwner).
	orphans map[string]*nodeState

	// closedCount and factCount count the history, for Size.
	closedCount, factCount int
	// zeroClosed is set once an interval closes at the zero time: seen
	// from a point, closed intervals can then no longer be skipped by when
	// they closed (closedOf). Git commits always have a time.
	zeroClosed bool

	// lastTime, lastSha and ord are the last commit applied: its time, sha
	// and position among the commits of its second (Point.Ord).
	lastTime time.Time
	lastSha  string
	ord      uint32
}

// Size is how much a graph holds, in memory and on disk; it grows with
// history (closed edge intervals and fact changes are kept), so it is
// exported as a metric.
type Size struct {
	// Edges counts the intervals: open and closed.
	Nodes, Edges, FactChanges int
	// FileBytes is the size of the graph's file (0 until the first
	// flush): the live state and the history on disk.
	FileBytes int64
}

// Size counts what g holds.
func (g *Graph) Size() Size {
	return Size{Nodes: g.nodeCount, Edges: g.edgeCount + g.closedCount, FactChanges: g.factCount, FileBytes: g.disk.fileBytes()}
}

// writer returns the writer's reader.
func (g *Graph) writer() *reader {
	if g.wr == nil {
		g.wr = g.reader()
	}
	return g.wr
}

// endWrite ends the writer's reader: before a flush writes (a read
// transaction left open would keep bbolt from growing its map), and
// after each commit, so that no transaction is held between commits.
func (g *Graph) endWrite() {
	if g.wr != nil {
		g.wr.done()
		g.wr = nil
	}
}

// newEdge records a new open edge, k, with its ends' adjacency.
func (g *Graph) newEdge(k edgeKey) *edgeState {
	es := &edgeState{live: map[string]evidence{}}
	g.live.edges.create(k.String(), es)
	g.edgeCount++
	w := g.writer()
	for _, id := range k.ends() {
		g.live.adj.add(id, k.String())
		g.live.nodes.edit(w, id).adjCount++
	}
	g.sortedAdj.drop(k.from, k.to)
	return es
}

// dropEdge forgets the edge k, which closed: its interval is on its way to
// disk.
func (g *Graph) dropEdge(k edgeKey) {
	g.live.edges.del(k.String())
	g.edgeCount--
	w := g.writer()
	for _, id := range k.ends() {
		g.live.adj.remove(id, k.String())
		g.live.nodes.edit(w, id).adjCount--
	}
	g.sortedAdj.drop(k.from, k.to)
}

// ends are the nodes an edge touches: one for a loop.
func (k edgeKey) ends() []string {
	if k.from == k.to {
		return []string{k.from}
	}
	return []string{k.from, k.to}
}

// adjKeys lists the keys of id's open edges, sorted.
func (g *Graph) adjKeys(r *reader, id string) []edgeKey {
	members := g.live.adj.members(r, id)
	out := make([]edgeKey, 0, len(members))
	for _, m := range members {
		if k, ok := parseEdgeKey(m); ok {
			out = append(out, k)
		} else {
			r.corrupt(bucketAdj)
		}
	}
	return out
}

// edgesOf returns the intervals of every edge touching id, visible at at,
// and (when allow is non-empty) of an allowed relation. Seen from a past
// point, an interval that closed after it is still open (asOf).
func (g *Graph) edgesOf(id string, at Point, allow map[string]bool, r *reader) []Edge {
	var out []Edge
	for _, k := range g.adjKeys(r, id) {
		if len(allow) > 0 && !allow[k.rel] {
			continue
		}
		es := g.live.edges.get(r, k.String())
		// An open interval is visible once it opened (and its
		// evidence, the costly part, is built only then).
		if es != nil && visibleAt(Edge{ValidFrom: es.from, FromOrd: es.fromOrd}, at) {
			out = append(out, g.current(k, es, r))
		}
	}
	// Now, only open intervals are visible (but one closed at the zero
	// time, which looks open).
	if !at.IsNow() || g.zeroClosed {
		out = r.closedOf(id, at, allow, out)
	}
	return out
}

// asOf is e as the graph knew it at p: an interval that closed after p
// was still open then.
func asOf(e Edge, p Point) Edge {
	if !p.IsNow() && !e.ValidTo.IsZero() && !p.reached(e.ValidTo, e.ToOrd) {
		e.ValidTo, e.ToOrd = time.Time{}, 0
	}
	return e
}

// New returns an empty graph whose history goes to a file in the system's
// temp dir (NewIn).
func New() *Graph { return NewIn("") }

// NewIn returns an empty graph whose history goes to a file in dir (""
// the system's temp dir), created at the first flush and unlinked at once:
// Close frees it. A graph dropped without Close is closed when collected.
func NewIn(dir string) *Graph {
	g := &Graph{
		live:         newLive(),
		history:      map[string][]FactChange{},
		pendClosed:   map[string][]Edge{},
		pendEdgeRefs: map[edgeKey][]edgeRef{},
		pendNodeRefs: map[string][]string{},
		orphans:      map[string]*nodeState{},
		flushAt:      flushRecords,
		disk:         &store{dir: dir},
		sortedAdj:    newSortedLists[edgeKey](int64(unsafe.Sizeof(edgeKey{}))),
		sortedRefs:   newSortedLists[string](int64(unsafe.Sizeof(""))),
		pages:        newPageCache(),
	}
	runtime.AddCleanup(g, func(s *store) { _ = s.close() }, g.disk)
	return g
}

// HotSet are the graph's caches (the busiest nodes' sorted edge keys and
// refs), for the process's memory budget and metrics.
func (g *Graph) HotSet() []membudget.Named {
	return []membudget.Named{{Name: "entity_graph.sorted_edges", Cache: &g.sortedAdj},
		{Name: "entity_graph.sorted_refs", Cache: &g.sortedRefs}, {Name: "entity_graph.pages", Cache: g.pages.Cache},
		{Name: "entity_graph.nodes", Cache: g.live.nodes.clean}, {Name: "entity_graph.edges", Cache: g.live.edges.clean},
		{Name: "entity_graph.files", Cache: g.live.files.clean}}
}

// Close releases the history on disk. The graph must not be used after.
func (g *Graph) Close() error {
	g.endWrite()
	return g.disk.close()
}

// Err is the first failure of the history on disk, nil if none. A failed
// write loses nothing (the records stay in memory and are written with the
// next ones); a failed read answers with what memory holds.
func (g *Graph) Err() error {
	g.disk.mu.Lock()
	defer g.disk.mu.Unlock()
	return g.disk.err
}

// ApplyCommit applies c on top of the graph. Commits must be applied in
// history order (parents first) with non-decreasing times; the graph does
// not reorder them.
//
// Every changed file's contribution is recomputed with Extract and the
// whole commit is diffed at once, so an edge that moves from one file to
// another in the same commit stays open with its ValidFrom. Entity-Refs
// become refers_to edges agent → ref with source "commit:<sha>"; a commit
// is immutable history, so these never close. Re-applying a commit with the
// same contents changes nothing.
func (g *Graph) ApplyCommit(c Commit) {
	g.version++ // every page kept is of the graph before
	t := c.Time.UTC()
	switch {
	case c.Sha != "" && c.Sha == g.lastSha && t.Equal(g.lastTime):
		// The same commit again: the same position.
	case !g.lastTime.IsZero() && t.Equal(g.lastTime):
		g.ord++
	default:
		g.ord = 0
	}
	g.lastTime, g.lastSha = t, c.Sha
	ord := g.ord
	type change struct {
		src      string
		old, new *fileState
		commit   bool // the commit message's Entity-Refs
	}
	var changes []change
	w := g.writer()
	paths := make([]string, 0, len(c.Files))
	for p := range c.Files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, raw := range paths {
		p := cleanPath(raw)
		var nf *fileState
		if content := c.Files[raw]; content != nil {
			if nf = c.derived[raw]; nf == nil {
				nf = derive(p, *content)
			}
		}
		changes = append(changes, change{p, g.live.files.get(w, p), nf, false})
	}
	if agent := Slug(c.AgentID); agent != "" && len(c.EntityRefs) > 0 {
		var ms []Mention
		for _, r := range c.EntityRefs {
			if l, ok := parseLink(r, ""); ok && l.id != agent {
				ms = append(ms,
					Mention{EntityID: l.id, Label: l.label, Type: l.typ, Relation: RelRefersTo},
					Mention{EntityID: agent, Label: c.AgentID, Type: TypeAgent, Relation: RelRefersTo, Target: l.id})
			}
		}
		// ms holds pairs: a ref, then the agent's edge to it.
		if src := commitSourcePrefix + c.Sha; len(ms) > 0 && !g.applied(src, ms[1], t) {
			changes = append(changes, change{src, nil, fromMentions(ms), true})
		}
	}

	wasOpen := map[edgeKey]bool{}
	for _, ch := range changes {
		if ch.commit {
			g.applyCommitSource(ch.src, ch.new, c.Sha, t, ord, wasOpen)
			continue
		}
		old, nf := ch.old, ch.new
		if old == nil {
			old = &fileState{}
		}
		if nf == nil {
			nf = &fileState{}
		}
		src := ch.src
		for _, d := range nf.decls {
			g.declare(d, t, ord)
		}
		for _, id := range old.nodes {
			if !nf.hasNode(id) {
				n := g.live.nodes.edit(w, id)
				g.live.refs.remove(id, src)
				n.refCount--
				g.sortedRefs.drop(id)
				n.updated = t
			}
		}
		for _, id := range nf.nodes {
			if !old.hasNode(id) {
				n := g.node(id, t, ord)
				g.live.refs.add(id, src)
				n.refCount++
				g.sortedRefs.drop(id)
				n.updated = t
			}
		}
		for _, e := range old.edges {
			if k := e.key; !nf.hasEdge(k) {
				es := g.live.edges.edit(w, k.String())
				if _, seen := wasOpen[k]; !seen {
					wasOpen[k] = es.open
				}
				es.leave(src)
			}
		}
		for _, e := range nf.edges {
			k, line := e.key, e.line
			key := k.String()
			es := g.live.edges.get(w, key)
			if es == nil {
				es = g.newEdge(k)
			}
			if _, seen := wasOpen[k]; !seen {
				wasOpen[k] = es.open
			}
			ev, had := es.live[src]
			if had && ev.line == int32(line) {
				// Unchanged (a source in live is not in gone): a file
				// rewritten for one line leaves its other edges as
				// they are, on disk.
				continue
			}
			es = g.live.edges.edit(w, key)
			if had {
				ev.line = int32(line)
			} else {
				ev = evidence{commit: c.Sha, line: int32(line)}
			}
			es.live[src] = ev
			delete(es.gone, src)
		}
		g.diffFacts(ch.src, old.facts, nf.facts, c, t)
		switch {
		case ch.new == nil:
			g.live.files.del(ch.src)
		case !strings.HasPrefix(ch.src, commitSourcePrefix):
			ch.new.decls = nil // needed only while the commit is applied
			g.live.files.put(ch.src, ch.new)
		}
	}

	keys := make([]edgeKey, 0, len(wasOpen))
	for k := range wasOpen {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return lessKey(keys[i], keys[j]) })
	for _, k := range keys {
		es := g.live.edges.get(w, k.String())
		now := len(es.live) > 0 || es.commitRefs
		switch {
		case wasOpen[k] && !now:
			e := g.current(k, es, nil) // no commit evidence: it would keep the edge open
			e.ValidTo, e.ToOrd = t, ord
			g.addClosed(e)
			g.dropEdge(k)
		case !wasOpen[k] && now:
			es = g.live.edges.edit(w, k.String())
			es.open = true
			es.from, es.fromOrd = t, ord
			// Only the sources live now belong to the new interval.
			es.gone = nil
		default:
			continue
		}
		g.node(k.from, t, ord).updated = t
		g.node(k.to, t, ord).updated = t
	}
	if g.flushDue() {
		_ = g.flush() // kept in memory on failure; Err tells
	}
	g.endWrite()
}

// applyCommitSource applies a commit message's Entity-Refs (src is
// "commit:<sha>", nf its contribution): the nodes get the ref and the edges
// the evidence, both on disk, for a commit is immutable: nothing can take
// them back.
func (g *Graph) applyCommitSource(src string, nf *fileState, sha string, t time.Time, ord uint32, wasOpen map[edgeKey]bool) {
	for _, d := range nf.decls {
		g.declare(d, t, ord)
	}
	for _, id := range nf.nodes {
		n := g.node(id, t, ord)
		n.commitRefs = true
		n.updated = t
		g.pendNodeRefs[n.id] = append(g.pendNodeRefs[n.id], src)
		g.sortedRefs.drop(n.id)
		g.pending++
	}
	for _, e := range nf.edges {
		k := e.key
		es := g.live.edges.edit(g.writer(), k.String())
		if es == nil {
			es = g.newEdge(k)
		}
		if _, seen := wasOpen[k]; !seen {
			wasOpen[k] = es.open
		}
		es.commitRefs = true
		g.pendEdgeRefs[k] = append(g.pendEdgeRefs[k], edgeRef{Evidence{File: src, Commit: sha, Line: int(int32(e.line))}, t})
		g.pending++
	}
}

// addClosed records a closed interval (history: on its way to disk).
func (g *Graph) addClosed(e Edge) {
	g.pendClosed[e.From] = append(g.pendClosed[e.From], e)
	if e.To != e.From {
		g.pendClosed[e.To] = append(g.pendClosed[e.To], e)
	}
	g.pending++
	g.closedCount++
	if e.ValidTo.IsZero() {
		g.zeroClosed = true
	}
}

// addFact records a fact change (history: on its way to disk).
func (g *Graph) addFact(fc FactChange) {
	g.history[fc.EntityID] = append(g.history[fc.EntityID], fc)
	g.pending++
	g.factCount++
}

// derive computes a source's contribution.
func derive(p, content string) *fileState {
	ms, facts := extract(p, content)
	fs := fromMentions(ms)
	for _, f := range facts {
		var ids []string
		for _, l := range linksIn(f.Text) {
			if !slices.Contains(ids, l.id) {
				ids = append(ids, l.id)
			}
		}
		if len(ids) > 0 {
			fs.facts = append(fs.facts, fact{section: strings.Clone(f.Section), text: strings.Clone(f.Text), line: f.Line, ids: ids})
		}
	}
	return fs
}

// fromMentions turns mentions into a source contribution.
func fromMentions(ms []Mention) *fileState {
	fs := &fileState{decls: make([]decl, 0, len(ms))}
	// Copies: the graph outlives the file text, and a substring would keep
	// all of it alive (most of the graph's memory, issue #9). One copy per
	// distinct string: a file names each entity many times over.
	copies := map[string]string{}
	clone := func(s string) string {
		c, ok := copies[s]
		if !ok {
			c = strings.Clone(s)
			copies[c] = c
		}
		return c
	}
	nodes := map[string]bool{}
	edges := map[edgeKey]int{} // each edge at its first line (ms is in line order)
	for _, m := range ms {
		m.EntityID, m.Label, m.Target = clone(m.EntityID), clone(m.Label), clone(m.Target)
		fs.decls = append(fs.decls, decl{m.EntityID, m.Label, m.Type})
		nodes[m.EntityID] = true
		if m.Target == "" {
			continue
		}
		nodes[m.Target] = true
		k := edgeKey{m.EntityID, m.Target, m.Relation}
		if _, ok := edges[k]; !ok {
			edges[k] = m.Line
		}
	}
	fs.nodes = slices.Sorted(maps.Keys(nodes))
	fs.edges = make([]fileEdge, 0, len(edges))
	for k, line := range edges {
		fs.edges = append(fs.edges, fileEdge{k, line})
	}
	slices.SortFunc(fs.edges, func(a, b fileEdge) int { return compareKeys(a.key, b.key) })
	return fs
}

// commitSourcePrefix marks a commit message's Entity-Refs as a source.
// Commits are immutable, so the graph keeps no fileState for them: nothing
// can ever change or remove what they contributed.
const commitSourcePrefix = "commit:"

// applied reports whether the commit source src of a commit made at t was
// applied already (a replayed commit), from the evidence of its agent → ref
// edge m: such edges never lose a commit source.
func (g *Graph) applied(src string, m Mention, t time.Time) bool {
	k := edgeKey{m.EntityID, m.Target, m.Relation}
	r := g.writer()
	es := g.live.edges.get(r, k.String())
	if es == nil || !es.commitRefs {
		return false
	}
	if slices.ContainsFunc(g.pendEdgeRefs[k], func(ref edgeRef) bool { return ref.ev.File == src }) {
		return true
	}
	// A commit's evidence is at the commit's time: the walk stops at the
	// first block whose commits, and so all older ones', came before t
	// (but "commit:" alone, without a sha, may be any commit's).
	found := false
	r.chain(es.refsBlock, func(block []byte) bool {
		h, _, recs, _ := splitBlock(block)
		if src != commitSourcePrefix && h.upTo.Time.Before(t) {
			return false
		}
		records(recs, func(rec []byte) {
			d := dec{s: string(rec)}
			found = found || d.str() == src
		})
		return !found
	})
	return found
}

// node returns the node id, creating a placeholder if needed (a target
// nobody declared; the first real declaration then sets its label).
func (g *Graph) node(id string, t time.Time, ord uint32) *nodeState {
	n := g.live.nodes.edit(g.writer(), id)
	if n == nil {
		n = &nodeState{id: id, typ: TypeConcept, label: id, firstSeen: t, firstOrd: ord, updated: t}
		g.live.nodes.create(id, n)
		g.nodeCount++
	}
	return n
}

// declare applies a declaration: the first label wins and later distinct
// labels become aliases; the default type "concept" is upgraded by the first
// explicit type, but an explicit type is never changed, so the result does
// not depend on which file mentions an entity last.
func (g *Graph) declare(d decl, t time.Time, ord uint32) {
	if n := g.live.nodes.get(g.writer(), d.id); n != nil && n.labelSet && (d.label == n.label || slices.Contains(n.aliases, d.label)) &&
		(n.typ != TypeConcept || d.typ == TypeConcept) {
		return // nothing new: the node stays as it is, on disk
	}
	n := g.node(d.id, t, ord)
	switch {
	case !n.labelSet:
		n.label, n.labelSet = d.label, true
		n.updated = t
	case d.label != n.label:
		if i, found := slices.BinarySearch(n.aliases, d.label); !found {
			n.aliases = slices.Insert(n.aliases, i, d.label)
			n.updated = t
		}
	}
	if n.typ == TypeConcept && d.typ != TypeConcept {
		n.typ = d.typ
		n.updated = t
	}
}

// diffFacts records added/removed facts (by text, as a multiset, so moving
// a fact between sections or lines is not a change).
func (g *Graph) diffFacts(src string, old, nf []fact, c Commit, t time.Time) {
	if len(old) == 0 && len(nf) == 0 {
		return
	}
	count := func(fs []fact) map[string]int {
		m := map[string]int{}
		for _, f := range fs {
			m[f.text]++
		}
		return m
	}
	rec := func(f fact, kind string) {
		for _, id := range f.ids {
			g.addFact(FactChange{
				EntityID: id, Change: kind, File: src, Section: f.section, Text: f.text, Line: f.line,
				Commit: c.Sha, Time: t, ProposalID: c.ProposalID,
			})
		}
	}
	inNew := count(nf)
	for _, f := range old {
		if inNew[f.text] > 0 {
			inNew[f.text]--
		} else {
			rec(f, "removed")
		}
	}
	inOld := count(old)
	for _, f := range nf {
		if inOld[f.text] > 0 {
			inOld[f.text]--
		} else {
			rec(f, "added")
		}
	}
}

// current is the open interval of es, the edge k, as an Edge; r reads its
// commit evidence (nil: only for an edge without).
func (g *Graph) current(k edgeKey, es *edgeState, r *reader) Edge {
	e := Edge{From: k.from, To: k.to, Relation: k.rel, ValidFrom: es.from, FromOrd: es.fromOrd, Evidence: sortedEvidence(es.live, es.gone)}
	if es.commitRefs {
		// One per source, the last given: a source given twice (a
		// replayed commit without a sha) is the same evidence.
		e.Evidence = append(e.Evidence, r.edgeRefs(k, es)...)
		slices.SortStableFunc(e.Evidence, func(a, b Evidence) int { return strings.Compare(a.File, b.File) })
		e.Evidence = lastPerFile(e.Evidence)
	}
	return e
}

// lastPerFile keeps, of evidence sorted by file, the last of each file.
func lastPerFile(evs []Evidence) []Evidence {
	out := evs[:0]
	for i, ev := range evs {
		if i+1 < len(evs) && evs[i+1].File == ev.File {
			continue
		}
		out = append(out, ev)
	}
	return out
}

// leave records that source src no longer supports the edge; its evidence
// stays with the current interval.
func (es *edgeState) leave(src string) {
	ev, ok := es.live[src]
	if !ok {
		return
	}
	if es.gone == nil {
		es.gone = map[string]evidence{}
	}
	es.gone[src] = ev
	delete(es.live, src)
}

// sortedEvidence lists the evidence of the given maps (no source is in two).
func sortedEvidence(ms ...map[string]evidence) []Evidence {
	n := 0
	for _, m := range ms {
		n += len(m)
	}
	out := make([]Evidence, 0, n)
	for _, m := range ms {
		for src, ev := range m {
			out = append(out, ev.expand(src))
		}
	}
	slices.SortFunc(out, compareEvidence)
	return out
}

// compareEvidence orders evidence by file, then commit and line.
func compareEvidence(a, b Evidence) int {
	return cmp.Or(strings.Compare(a.File, b.File), strings.Compare(a.Commit, b.Commit), cmp.Compare(a.Line, b.Line))
}

// firstEvidence is the first pieces of sortedEvidence, at most first of
// them, found without building and sorting the rest, and how many there
// are in all: an edge between two shared entities has hundreds.
func firstEvidence(first int, ms ...map[string]evidence) ([]Evidence, int) {
	out := make([]Evidence, 0, first)
	n := 0
	for _, m := range ms {
		for src, ev := range m {
			n++
			e := ev.expand(src)
			if len(out) == first && compareEvidence(e, out[first-1]) >= 0 {
				continue
			}
			i, _ := slices.BinarySearchFunc(out, e, compareEvidence)
			if len(out) == first {
				out = out[:first-1]
			}
			out = slices.Insert(out, i, e)
		}
	}
	return out, n
}

func lessKey(a, b edgeKey) bool {
	if a.from != b.from {
		return a.from < b.from
	}
	if a.to != b.to {
		return a.to < b.to
	}
	return a.rel < b.rel
}

// visible reports whether e holds at t (zero t: now, i.e. still open).
func visible(e Edge, t time.Time) bool { return visibleAt(e, AtTime(t)) }

// visibleAt reports whether e holds right after the commit at p (zero:
// now, i.e. still open): it opened at or before p and did not close by p.
func visibleAt(e Edge, p Point) bool {
	if p.IsNow() {
		return e.ValidTo.IsZero()
	}
	return p.reached(e.ValidFrom, e.FromOrd) && (e.ValidTo.IsZero() || !p.reached(e.ValidTo, e.ToOrd))
}

// allEdges returns every interval, sorted.
func (g *Graph) allEdges() []Edge {
	r := g.reader()
	defer r.done()
	var out []Edge
	g.live.edges.each(r, "", func(key string, es *edgeState) bool {
		if k, ok := parseEdgeKey(key); ok {
			out = append(out, g.current(k, es, r))
		}
		return true
	})
	r.allClosed(func(e Edge) { out = append(out, e) })
	sortEdges(out)
	return out
}

func sortEdges(es []Edge) {
	sort.Slice(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if ka, kb := (edgeKey{a.From, a.To, a.Relation}), (edgeKey{b.From, b.To, b.Relation}); ka != kb {
			return lessKey(ka, kb)
		}
		if !a.ValidFrom.Equal(b.ValidFrom) {
			return a.ValidFrom.Before(b.ValidFrom)
		}
		return a.FromOrd < b.FromOrd
	})
}

// export is n as a Node; r reads its refs.
func (g *Graph) export(n *nodeState, r *reader) Node { return n.exportWith(g.sortedRefsOf(n, r)) }

// exportWith is n as a Node with refs, n's refs sorted.
func (n *nodeState) exportWith(refs []string) Node {
	return Node{ID: n.id, Type: n.typ, Label: n.label, LastUpdated: n.updated, Refs: refs, Aliases: slices.Clone(n.aliases)}
}

// sortedRefsOf lists n's refs, sorted: its files and its commit sources.
func (g *Graph) sortedRefsOf(n *nodeState, r *reader) []string {
	refs := g.live.refs.members(r, n.id)
	if n.commitRefs {
		refs = append(refs, r.nodeRefs(n)...)
		sort.Strings(refs)
		// A source given twice (a replayed commit without a sha) is
		// one ref.
		refs = slices.Compact(refs)
	}
	return refs
}

// existsAt reports whether n was first seen at or before p (zero: now).
func (n *nodeState) existsAt(p Point) bool {
	return p.IsNow() || p.reached(n.firstSeen, n.firstOrd)
}

// Node returns the entity id (any label spelling or typed link target is
// accepted: it goes through EntityID) and its edges, in either direction,
// visible at at (zero: now). ok is false if the node does not exist at at.
// The node's fields are its latest state; only edges and existence are
// temporal.
func (g *Graph) Node(id string, at time.Time) (Node, []Edge, bool) {
	return g.NodeAt(id, AtTime(at))
}

// NodeAt is Node as of a point in commit order (zero: now).
func (g *Graph) NodeAt(id string, at Point) (Node, []Edge, bool) {
	r := g.reader()
	defer r.done()
	n := g.live.nodes.get(r, EntityID(id))
	if n == nil || !n.existsAt(at) {
		return Node{}, nil, false
	}
	es := g.edgesOf(n.id, at, nil, r)
	sortEdges(es)
	return g.export(n, r), es, true
}

// NodePage is NodeAt with the edges cut to a page: of the node's edges in
// NodeAt's order that visible accepts (nil: all), skip are passed over and
// at most limit returned; total counts them all. With visible nil and
// maxEvidence above 0, an edge lists only its first maxEvidence pieces of
// evidence (Edge.Total counts them all). Now, the open edges are
// ordered by their keys alone and an edge's evidence — what makes a
// shared entity's thousands of edges costly — is built only for the page
// (and for the edges visible must see); in the past, NodeAt's edges are
// cut.
//
// Pages of now seen by every caller (visible nil) are kept until the next
// commit (pageCache): the same shared entity asked for again costs a
// lookup. Callers must not change what they get.
func (g *Graph) NodePage(id string, at Point, skip, limit, maxEvidence int, visible func(Edge) bool) (n Node, page []Edge, total int, ok bool) {
	if !at.IsNow() || visible != nil {
		return g.nodePage(id, at, skip, limit, maxEvidence, visible)
	}
	key := pageKey{id: EntityID(id), skip: skip, limit: limit, maxEvidence: maxEvidence}
	if p, hit := g.pages.get(key, g.version); hit {
		return p.node, p.edges, p.total, p.ok
	}
	n, page, total, ok = g.nodePage(id, at, skip, limit, maxEvidence, nil)
	g.pages.put(key, &cachedPage{version: g.version, node: n, edges: page, total: total, ok: ok})
	return n, page, total, ok
}

// nodePage is NodePage, built.
func (g *Graph) nodePage(id string, at Point, skip, limit, maxEvidence int, visible func(Edge) bool) (n Node, page []Edge, total int, ok bool) {
	r := g.reader()
	defer r.done()
	ns := g.live.nodes.get(r, EntityID(id))
	if ns == nil || !ns.existsAt(at) {
		return Node{}, nil, 0, false
	}
	take := func(e Edge) {
		if visible != nil && !visible(e) {
			return
		}
		if total >= skip && len(page) < limit {
			page = append(page, e)
		}
		total++
	}
	if !at.IsNow() || g.zeroClosed {
		es := g.edgesOf(ns.id, at, nil, r)
		sortEdges(es)
		for _, e := range es {
			take(e)
		}
		return g.exportNode(ns, r), page, total, true
	}
	// Now, every indexed edge is open, and one interval of its key, so
	// the key orders it.
	sorted := g.sortedAdj.get(ns.id, ns.adjCount, func() []edgeKey { return g.adjKeys(r, ns.id) }, compareKeys)
	for _, k := range sorted {
		if visible == nil && (total < skip || len(page) == limit) {
			total++ // counted without building its evidence
			continue
		}
		es := g.live.edges.get(r, k.String())
		if es == nil {
			continue // only if the disk failed: Err tells
		}
		if visible != nil || maxEvidence <= 0 || es.commitRefs {
			take(g.current(k, es, r))
			continue
		}
		e := Edge{From: k.from, To: k.to, Relation: k.rel, ValidFrom: es.from, FromOrd: es.fromOrd}
		if e.Evidence, e.Total = firstEvidence(maxEvidence, es.live, es.gone); e.Total <= maxEvidence {
			e.Total = 0 // nothing was cut
		}
		take(e)
	}
	return g.exportNode(ns, r), page, total, true
}

// exportNode is n.export, with the refs of a node that has many kept
// sorted (sortedRefs). Its commit sources, on disk, only ever grow
// (applyCommitSource drops the kept list), so a node that has any is
// always looked up: their number is not known without reading them.
func (g *Graph) exportNode(n *nodeState, r *reader) Node {
	known := n.refCount
	if n.commitRefs {
		known = max(known, sortedMinItems)
	}
	refs := g.sortedRefs.get(n.id, known, func() []string { return g.sortedRefsOf(n, r) }, strings.Compare)
	return n.exportWith(slices.Clone(refs))
}

// Nodes returns the nodes matching f, sorted by id.
func (g *Graph) Nodes(f NodeFilter) []Node {
	out, _ := g.NodesPage(f, "", 0, nil)
	return out
}

// NodesPage returns, in id order, the nodes matching f whose id sorts after
// `after` and that keep (nil: any) accepts, at most limit of them (0: no
// limit); more reports whether another such node follows. Only the nodes
// offered to keep are exported — a page of a large graph costs the page,
// where exporting every node to cut a page from them cost the graph.
func (g *Graph) NodesPage(f NodeFilter, after string, limit int, keep func(Node) bool) (page []Node, more bool) {
	q := Slug(f.Query)
	at := f.Point
	if at.IsNow() {
		at = AtTime(f.At)
	}
	r := g.reader()
	defer r.done()
	g.live.nodes.each(r, after, func(_ string, n *nodeState) bool {
		if f.Type != "" && n.typ != f.Type || !n.existsAt(at) || q != "" && !n.matches(q) {
			return true
		}
		e := g.export(n, r)
		if keep != nil && !keep(e) {
			return true
		}
		if limit > 0 && len(page) == limit {
			more = true
			return false
		}
		page = append(page, e)
		return true
	})
	return page, more
}

func (n *nodeState) matches(q string) bool {
	if strings.Contains(n.id, q) || strings.Contains(Slug(n.label), q) {
		return true
	}
	for _, a := range n.aliases {
		if strings.Contains(Slug(a), q) {
			return true
		}
	}
	return false
}

// MaxDepth bounds Neighbors: beyond three hops nearly everything in a
// memory repo is connected through the agents, so deeper walks carry no
// signal and cost a lot.
const MaxDepth = 3

// Neighbors walks edges in both directions breadth-first from id up to
// depth hops (clamped to 1..MaxDepth), following only edges visible at at
// (zero: now) whose relation is in relations (empty: all). It returns the
// nodes reached (without id itself) sorted by id and the edges walked,
// sorted.
func (g *Graph) Neighbors(id string, depth int, relations []string, at time.Time) ([]Node, []Edge) {
	return g.NeighborsAt(id, depth, relations, AtTime(at))
}

// NeighborsAt is Neighbors as of a point in commit order (zero: now).
func (g *Graph) NeighborsAt(id string, depth int, relations []string, at Point) ([]Node, []Edge) {
	start := EntityID(id)
	r := g.reader()
	defer r.done()
	if n := g.live.nodes.get(r, start); n == nil || !n.existsAt(at) {
		return nil, nil
	}
	depth = max(1, min(depth, MaxDepth))
	allow := map[string]bool{}
	for _, rel := range relations {
		allow[rel] = true
	}
	seen := map[string]bool{start: true}
	type ekey struct {
		k    edgeKey
		from time.Time
		ord  uint32
	}
	walked := map[ekey]bool{}
	var edges []Edge
	frontier := []string{start}
	for d := 0; d < depth && len(frontier) > 0; d++ {
		var next []string
		for _, cur := range frontier {
			for _, e := range g.edgesOf(cur, at, allow, r) {
				if k := (ekey{edgeKey{e.From, e.To, e.Relation}, e.ValidFrom, e.FromOrd}); !walked[k] {
					walked[k] = true
					edges = append(edges, e)
				}
				other := e.To
				if other == cur {
					other = e.From
				}
				if !seen[other] {
					seen[other] = true
					next = append(next, other)
				}
			}
		}
		sort.Strings(next)
		frontier = next
	}
	var nodes []Node
	for nid := range seen {
		if nid != start {
			if n := g.live.nodes.get(r, nid); n != nil {
				nodes = append(nodes, g.export(n, r))
			}
		}
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
	sortEdges(edges)
	return nodes, edges
}

// History returns the facts.md bullets linking id that commits added or
// removed, in the order they were applied.
func (g *Graph) History(id string) []FactChange {
	r := g.reader()
	defer r.done()
	return r.history(EntityID(id))
}

// Dump renders the whole graph canonically (nodes, every edge interval,
// fact history; all sorted, times in UTC), so two graphs are equal exactly
// when their dumps are. Tests and rebuild checks compare dumps.
func (g *Graph) Dump() string {
	var b strings.Builder
	ts := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	// pos is a commit's position: its time, and its place in its second
	// when commits before it share that second.
	pos := func(t time.Time, ord uint32) string {
		if ord == 0 {
			return ts(t)
		}
		return fmt.Sprintf("%s#%d", ts(t), ord)
	}
	r := g.reader()
	defer r.done()
	for _, n := range g.Nodes(NodeFilter{}) {
		ns := g.live.nodes.get(r, n.ID)
		fmt.Fprintf(&b, "node %s type=%s label=%q aliases=%q refs=%q first=%s updated=%s\n",
			n.ID, n.Type, n.Label, n.Aliases, n.Refs, pos(ns.firstSeen, ns.firstOrd), ts(n.LastUpdated))
	}
	for _, e := range g.allEdges() {
		fmt.Fprintf(&b, "edge %s -%s-> %s [%s, %s)", e.From, e.Relation, e.To, pos(e.ValidFrom, e.FromOrd), pos(e.ValidTo, e.ToOrd))
		for _, ev := range e.Evidence {
			fmt.Fprintf(&b, " %s@%s:%d", ev.File, ev.Commit, ev.Line)
		}
		b.WriteByte('\n')
	}
	history := map[string][]FactChange{}
	r.allFacts(func(fc FactChange) { history[fc.EntityID] = append(history[fc.EntityID], fc) })
	for _, id := range sortedKeys(history) {
		for _, h := range history[id] {
			fmt.Fprintf(&b, "fact %s %s %s@%s %s %q %s:%d %q\n", id, h.Change, h.Commit, ts(h.Time), h.ProposalID, h.Section, h.File, h.Line, h.Text)
		}
	}
	return b.String()
}

// Equal reports whether g and other hold the same graph (same Dump).
func (g *Graph) Equal(other *Graph) bool { return g.Dump() == other.Dump() }
