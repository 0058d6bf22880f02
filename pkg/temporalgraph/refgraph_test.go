package temporalgraph

// refGraph is the graph as it was before its history moved to disk (issue
// #25): every fact change and closed interval on the heap. It is kept, with
// its code as it was, only as the reference the on-disk graph's answers are
// compared with (TestRebuildEqualsInMemoryReference).

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// id returns the graph's own string for entity id s (the node's), so that
// the many places naming an entity share one copy; s if there is no node.
func (g *refGraph) id(s string) string {
	if n := g.nodes[s]; n != nil {
		return n.id
	}
	return s
}

// intern makes f's entity ids the graph's own strings (every id f names is
// a node by now) and drops its declarations, before the graph keeps f.
func (g *refGraph) intern(f *fileState) {
	id := g.id
	f.decls = nil
	for i, n := range f.nodes {
		f.nodes[i] = id(n)
	}
	for i, e := range f.edges {
		f.edges[i].key = edgeKey{id(e.key.from), id(e.key.to), e.key.rel}
	}
	for _, ft := range f.facts {
		for i, x := range ft.ids {
			ft.ids[i] = id(x)
		}
	}
}

type refEdgeState struct {
	closed []Edge
	open   bool
	// fromOrd is the opening commit's Point.Ord (it fits beside open).
	fromOrd uint32
	from    time.Time
	live    map[uint32]refEvidence // sources supporting the edge now, by source id
	// gone holds the sources that supported the edge earlier in the current
	// interval and left it (nil when none): the interval's evidence is live
	// and gone together. Keeping only the departed ones, not a second copy
	// of live, halves the evidence an open edge holds.
	gone map[uint32]refEvidence
}

// refInterner numbers the source paths and commit shas evidence names.
type refInterner struct {
	ids  map[string]uint32
	strs []string
}

func newRefInterner() *refInterner { return &refInterner{ids: map[string]uint32{}} }

// id returns s's number, giving it the next one if it has none.
func (in *refInterner) id(s string) uint32 {
	if id, ok := in.ids[s]; ok {
		return id
	}
	id := uint32(len(in.strs))
	in.strs = append(in.strs, s)
	in.ids[s] = id
	return id
}

// lookup returns s's number if it has one.
func (in *refInterner) lookup(s string) (uint32, bool) {
	id, ok := in.ids[s]
	return id, ok
}

func (in *refInterner) str(id uint32) string { return in.strs[id] }

// expand returns ev, the evidence of source src, with its strings.
func (in *refInterner) expand(src uint32, ev refEvidence) Evidence {
	return Evidence{File: in.str(src), Commit: in.str(ev.commit), Line: int(ev.line)}
}

type refNodeState struct {
	id, typ, label string
	labelSet       bool
	// firstOrd is the Point.Ord of the commit that first saw the node (it
	// fits beside labelSet).
	firstOrd  uint32
	aliases   map[string]bool
	refs      map[string]bool
	firstSeen time.Time
	updated   time.Time
}

// refGraph is an in-memory temporal entity graph built from commits. It is not
// safe for concurrent use: build it single-threaded, then query (queries do
// not mutate).
type refGraph struct {
	nodes   map[string]*refNodeState
	edges   map[edgeKey]*refEdgeState
	files   map[string]*fileState
	history map[string][]FactChange
	// adj lists, per node, the keys of every edge touching it (keys are
	// never removed: closed intervals stay), so queries touch only the
	// edges around a node rather than the whole history.
	adj map[string][]edgeKey
	// strs numbers the sources and commits of the edges' evidence.
	strs *refInterner
	// lastTime, lastSha and ord are the last commit applied: its time, sha
	// and position among the commits of its second (Point.Ord).
	lastTime time.Time
	lastSha  string
	ord      uint32
}

// indexEdge records a new edge key in the adjacency index.
func (g *refGraph) indexEdge(k edgeKey) {
	g.adj[k.from] = append(g.adj[k.from], k)
	if k.to != k.from {
		g.adj[k.to] = append(g.adj[k.to], k)
	}
}

// edgesOf returns the intervals of every edge touching id, visible at at,
// and (when allow is non-empty) of an allowed relation. Seen from a past
// point, an interval that closed after it is still open (asOf).
func (g *refGraph) edgesOf(id string, at Point, allow map[string]bool) []Edge {
	var out []Edge
	for _, k := range g.adj[id] {
		if len(allow) > 0 && !allow[k.rel] {
			continue
		}
		es := g.edges[k]
		for _, e := range es.closed {
			if visibleAt(e, at) {
				out = append(out, asOf(e, at))
			}
		}
		if es.open {
			if e := es.current(k, g.strs); visibleAt(e, at) {
				out = append(out, e)
			}
		}
	}
	return out
}

// New returns an empty graph.
func newRef() *refGraph {
	return &refGraph{
		nodes:   map[string]*refNodeState{},
		edges:   map[edgeKey]*refEdgeState{},
		files:   map[string]*fileState{},
		history: map[string][]FactChange{},
		adj:     map[string][]edgeKey{},
		strs:    newRefInterner(),
	}
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
func (g *refGraph) ApplyCommit(c Commit) {
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
	}
	var changes []change
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
		changes = append(changes, change{p, g.files[p], nf})
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
		if src := commitSourcePrefix + c.Sha; len(ms) > 0 && !g.applied(src, ms[1]) {
			changes = append(changes, change{src, nil, fromMentions(ms)})
		}
	}

	wasOpen := map[edgeKey]bool{}
	for _, ch := range changes {
		old, nf := ch.old, ch.new
		if old == nil {
			old = &fileState{}
		}
		if nf == nil {
			nf = &fileState{}
		}
		// Only sources and commits that evidence names are numbered, so
		// the refInterner grows with the evidence, as the strings did.
		var src uint32
		if len(old.edges) > 0 || len(nf.edges) > 0 {
			src = g.strs.id(ch.src)
		}
		for _, d := range nf.decls {
			g.declare(d, t, ord)
		}
		for _, id := range old.nodes {
			if !nf.hasNode(id) {
				n := g.nodes[id]
				delete(n.refs, ch.src)
				n.updated = t
			}
		}
		for _, id := range nf.nodes {
			if !old.hasNode(id) {
				n := g.node(id, t, ord)
				n.refs[ch.src] = true
				n.updated = t
			}
		}
		for _, e := range old.edges {
			if k := e.key; !nf.hasEdge(k) {
				es := g.edges[k]
				if _, seen := wasOpen[k]; !seen {
					wasOpen[k] = es.open
				}
				es.leave(src)
			}
		}
		for _, e := range nf.edges {
			k, line := e.key, e.line
			es := g.edges[k]
			if es == nil {
				// Keys share the nodes' id strings.
				k = edgeKey{g.nodes[k.from].id, g.nodes[k.to].id, k.rel}
				es = &refEdgeState{live: map[uint32]refEvidence{}}
				g.edges[k] = es
				g.indexEdge(k)
			}
			if _, seen := wasOpen[k]; !seen {
				wasOpen[k] = es.open
			}
			ev, had := es.live[src]
			if had {
				ev.line = int32(line)
			} else {
				ev = refEvidence{commit: g.strs.id(c.Sha), line: int32(line)}
			}
			es.live[src] = ev
			delete(es.gone, src)
		}
		g.diffFacts(ch.src, old.facts, nf.facts, c, t)
		switch {
		case ch.new == nil:
			delete(g.files, ch.src)
		case !strings.HasPrefix(ch.src, commitSourcePrefix):
			g.intern(ch.new)
			g.files[ch.src] = ch.new
		}
	}

	keys := make([]edgeKey, 0, len(wasOpen))
	for k := range wasOpen {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return lessKey(keys[i], keys[j]) })
	for _, k := range keys {
		es := g.edges[k]
		now := len(es.live) > 0
		switch {
		case wasOpen[k] && !now:
			e := es.current(k, g.strs)
			e.ValidTo, e.ToOrd = t, ord
			es.closed = append(es.closed, e)
			es.open = false
			es.gone = nil
		case !wasOpen[k] && now:
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
}

// applied reports whether the commit source src was applied already (a
// replayed commit), from the evidence of its agent → ref edge m: such edges
// never lose a commit source.
func (g *refGraph) applied(src string, m Mention) bool {
	es := g.edges[edgeKey{m.EntityID, m.Target, m.Relation}]
	id, known := g.strs.lookup(src)
	if es == nil || !known {
		return false
	}
	_, ok := es.live[id]
	return ok
}

// node returns the node id, creating a placeholder if needed (a target
// nobody declared; the first real declaration then sets its label).
func (g *refGraph) node(id string, t time.Time, ord uint32) *refNodeState {
	n := g.nodes[id]
	if n == nil {
		n = &refNodeState{id: id, typ: TypeConcept, label: id, aliases: map[string]bool{}, refs: map[string]bool{}, firstSeen: t, firstOrd: ord, updated: t}
		g.nodes[id] = n
	}
	return n
}

// declare applies a declaration: the first label wins and later distinct
// labels become aliases; the default type "concept" is upgraded by the first
// explicit type, but an explicit type is never changed, so the result does
// not depend on which file mentions an entity last.
func (g *refGraph) declare(d decl, t time.Time, ord uint32) {
	n := g.node(d.id, t, ord)
	switch {
	case !n.labelSet:
		n.label, n.labelSet = d.label, true
		n.updated = t
	case d.label != n.label && !n.aliases[d.label]:
		n.aliases[d.label] = true
		n.updated = t
	}
	if n.typ == TypeConcept && d.typ != TypeConcept {
		n.typ = d.typ
		n.updated = t
	}
}

// diffFacts records added/removed facts (by text, as a multiset, so moving
// a fact between sections or lines is not a change).
func (g *refGraph) diffFacts(src string, old, nf []fact, c Commit, t time.Time) {
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
			g.history[id] = append(g.history[id], FactChange{
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

// current is the open interval of es as an Edge.
func (es *refEdgeState) current(k edgeKey, strs *refInterner) Edge {
	return Edge{From: k.from, To: k.to, Relation: k.rel, ValidFrom: es.from, FromOrd: es.fromOrd, Evidence: refSortedEvidence(strs, es.live, es.gone)}
}

// leave records that source src no longer supports the edge; its evidence
// stays with the current interval.
func (es *refEdgeState) leave(src uint32) {
	ev, ok := es.live[src]
	if !ok {
		return
	}
	if es.gone == nil {
		es.gone = map[uint32]refEvidence{}
	}
	es.gone[src] = ev
	delete(es.live, src)
}

// refSortedEvidence lists the evidence of the given maps (no source is in two).
func refSortedEvidence(strs *refInterner, ms ...map[uint32]refEvidence) []Evidence {
	n := 0
	for _, m := range ms {
		n += len(m)
	}
	out := make([]Evidence, 0, n)
	for _, m := range ms {
		for src, ev := range m {
			out = append(out, strs.expand(src, ev))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out
}

// allEdges returns every interval, sorted.
func (g *refGraph) allEdges() []Edge {
	var out []Edge
	for k, es := range g.edges {
		out = append(out, es.closed...)
		if es.open {
			out = append(out, es.current(k, g.strs))
		}
	}
	sortEdges(out)
	return out
}

func (n *refNodeState) export() Node {
	out := Node{ID: n.id, Type: n.typ, Label: n.label, LastUpdated: n.updated}
	for a := range n.aliases {
		out.Aliases = append(out.Aliases, a)
	}
	sort.Strings(out.Aliases)
	for r := range n.refs {
		out.Refs = append(out.Refs, r)
	}
	sort.Strings(out.Refs)
	return out
}

// existsAt reports whether n was first seen at or before p (zero: now).
func (n *refNodeState) existsAt(p Point) bool {
	return p.IsNow() || p.reached(n.firstSeen, n.firstOrd)
}

// Node returns the entity id (any label spelling is accepted: it goes
// through Slug) and its edges, in either direction, visible at at (zero:
// now). ok is false if the node does not exist at at. The node's fields
// are its latest state; only edges and existence are temporal.
func (g *refGraph) Node(id string, at time.Time) (Node, []Edge, bool) {
	return g.NodeAt(id, AtTime(at))
}

// NodeAt is Node as of a point in commit order (zero: now).
func (g *refGraph) NodeAt(id string, at Point) (Node, []Edge, bool) {
	n := g.nodes[Slug(id)]
	if n == nil || !n.existsAt(at) {
		return Node{}, nil, false
	}
	es := g.edgesOf(n.id, at, nil)
	sortEdges(es)
	return n.export(), es, true
}

// Nodes returns the nodes matching f, sorted by id.
func (g *refGraph) Nodes(f NodeFilter) []Node {
	q := Slug(f.Query)
	at := f.Point
	if at.IsNow() {
		at = AtTime(f.At)
	}
	var out []Node
	for _, n := range g.nodes {
		if f.Type != "" && n.typ != f.Type || !n.existsAt(at) {
			continue
		}
		if q != "" && !n.matches(q) {
			continue
		}
		out = append(out, n.export())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (n *refNodeState) matches(q string) bool {
	if strings.Contains(n.id, q) || strings.Contains(Slug(n.label), q) {
		return true
	}
	for a := range n.aliases {
		if strings.Contains(Slug(a), q) {
			return true
		}
	}
	return false
}

// Neighbors walks edges in both directions breadth-first from id up to
// depth hops (clamped to 1..MaxDepth), following only edges visible at at
// (zero: now) whose relation is in relations (empty: all). It returns the
// nodes reached (without id itself) sorted by id and the edges walked,
// sorted.
func (g *refGraph) Neighbors(id string, depth int, relations []string, at time.Time) ([]Node, []Edge) {
	return g.NeighborsAt(id, depth, relations, AtTime(at))
}

// NeighborsAt is Neighbors as of a point in commit order (zero: now).
func (g *refGraph) NeighborsAt(id string, depth int, relations []string, at Point) ([]Node, []Edge) {
	start := Slug(id)
	if n := g.nodes[start]; n == nil || !n.existsAt(at) {
		return nil, nil
	}
	depth = max(1, min(depth, MaxDepth))
	allow := map[string]bool{}
	for _, r := range relations {
		allow[r] = true
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
			for _, e := range g.edgesOf(cur, at, allow) {
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
			nodes = append(nodes, g.nodes[nid].export())
		}
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
	sortEdges(edges)
	return nodes, edges
}

// History returns the facts.md bullets linking id that commits added or
// removed, in the order they were applied.
func (g *refGraph) History(id string) []FactChange {
	return append([]FactChange(nil), g.history[Slug(id)]...)
}

// Dump renders the whole graph canonically (nodes, every edge interval,
// fact history; all sorted, times in UTC), so two graphs are equal exactly
// when their dumps are. Tests and rebuild checks compare dumps.
func (g *refGraph) Dump() string {
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
	for _, n := range g.Nodes(NodeFilter{}) {
		ns := g.nodes[n.ID]
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
	ids := make([]string, 0, len(g.history))
	for id := range g.history {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		for _, h := range g.history[id] {
			fmt.Fprintf(&b, "fact %s %s %s@%s %s %q %s:%d %q\n", id, h.Change, h.Commit, ts(h.Time), h.ProposalID, h.Section, h.File, h.Line, h.Text)
		}
	}
	return b.String()
}

// Equal reports whether g and other hold the same graph (same Dump).
func (g *refGraph) Equal(other *refGraph) bool { return g.Dump() == other.Dump() }

// refEvidence is an Evidence kept in an edge's maps, keyed by its source's
// id.
type refEvidence struct {
	commit uint32 // id of the commit's sha
	line   int32
}
