package temporalgraph

import (
	"encoding/gob"
	"fmt"
	"slices"
	"time"
)

// The snapshot types mirror the graph's state with exported fields for gob.
// A snapshot plus the commits after it rebuilds exactly the graph that
// applying every commit would (tested), so a restart need not replay history.
//
// A snapshot is a stream of gob values — a header, then chunks of at most
// snapChunkSize items, the last marked End — rather than one value, because
// gob buffers a whole value before writing it: a graph of 10,000 agents
// would need its full encoding (hundreds of MB) in memory on top of itself.
// The history on disk is streamed into it too, so a snapshot is the whole
// graph as of its commit: a restart or a new replica (pkg/readstate) gets
// the history with the live state, and decoding writes it to the new
// graph's own file.
type (
	snapHeader struct {
		Version int
		// The last commit applied and its place in its second.
		LastTime time.Time
		LastSha  string
		Ord      uint32
	}
	snapChunk struct {
		Nodes []snapNode
		Edges []snapEdge
		Files []snapFile
		// The history: fact changes (each entity's in order), closed
		// intervals, and the commit messages' Entity-Refs.
		Facts    []FactChange
		Closed   []Edge
		EdgeRefs []snapEdgeRef
		NodeRefs []snapNodeRef
		// End marks the last chunk: a stream cut short is an error, not
		// a smaller graph.
		End bool
	}
	snapNode struct {
		ID, Typ, Label     string
		LabelSet           bool
		CommitRefs         bool
		Aliases, Refs      []string
		FirstSeen, Updated time.Time
		FirstOrd           uint32
	}
	// snapEdge is an open edge: its interval so far.
	snapEdge struct {
		From, To, Rel string
		CommitRefs    bool
		Since         time.Time
		SinceOrd      uint32
		Live, Gone    map[string]Evidence
	}
	snapFileEdge struct {
		From, To, Rel string
		Line          int
	}
	snapFact struct {
		Section, Text string
		Line          int
		IDs           []string
	}
	snapFile struct {
		Path  string
		Nodes []string
		Edges []snapFileEdge
		Facts []snapFact
	}
	snapEdgeRef struct {
		From, To, Rel string
		Evidence      Evidence
		Time          time.Time // the commit's
	}
	snapNodeRef struct {
		ID, Source string
	}
)

// snapshotVersion 2: streamed chunks, an edge's departed sources (Gone)
// instead of its whole interval's. 3: positions in commit order (Point.Ord)
// beside the times; a version 2 snapshot lacks them, so it is rebuilt. 4:
// open edges only, the history in chunks of its own after the live state,
// an End chunk instead of counts in the header; an older snapshot is
// rejected (the caller rebuilds from git). 5: the typed nodes and edges of
// episodes (issue #27): the same history derives more (episode run files,
// typed links, context hierarchies), so a version 4 graph is stale.
const snapshotVersion = 5

// snapChunkSize bounds the items per chunk, and so what encoding and
// decoding hold beyond the graph itself.
const snapChunkSize = 1024

// evidenceMap is an edge's evidence map as snapshots store it, by file
// (nil for nil).
func evidenceMap(m map[string]evidence) map[string]Evidence {
	if m == nil {
		return nil
	}
	out := make(map[string]Evidence, len(m))
	for src, ev := range m {
		out[src] = ev.expand(src)
	}
	return out
}

// evidenceOf is the inverse of evidenceMap.
func evidenceOf(m map[string]Evidence) map[string]evidence {
	if m == nil {
		return nil
	}
	out := make(map[string]evidence, len(m))
	for f, ev := range m {
		out[f] = evidence{commit: ev.Commit, line: int32(ev.Line)}
	}
	return out
}

// EncodeSnapshot writes the graph's whole state to enc, its history on
// disk included, as of one read of it.
func (g *Graph) EncodeSnapshot(enc *gob.Encoder) error {
	if err := enc.Encode(snapHeader{Version: snapshotVersion, LastTime: g.lastTime, LastSha: g.lastSha, Ord: g.ord}); err != nil {
		return err
	}
	r := g.reader()
	defer r.done()
	var c snapChunk
	var err error
	items := 0
	// added counts an item appended to c, and writes c when it is full.
	added := func() {
		if items++; items >= snapChunkSize && err == nil {
			err = enc.Encode(c)
			c, items = snapChunk{}, 0
		}
	}
	g.live.nodes.each(r, "", func(_ string, n *nodeState) bool {
		c.Nodes = append(c.Nodes, snapNode{ID: n.id, Typ: n.typ, Label: n.label, LabelSet: n.labelSet, CommitRefs: n.commitRefs,
			Aliases: n.aliases, Refs: g.live.refs.members(r, n.id), FirstSeen: n.firstSeen, Updated: n.updated, FirstOrd: n.firstOrd})
		added()
		return err == nil
	})
	g.live.edges.each(r, "", func(key string, e *edgeState) bool {
		k, _ := parseEdgeKey(key)
		c.Edges = append(c.Edges, snapEdge{From: k.from, To: k.to, Rel: k.rel, CommitRefs: e.commitRefs,
			Since: e.from, SinceOrd: e.fromOrd, Live: evidenceMap(e.live), Gone: evidenceMap(e.gone)})
		added()
		return err == nil
	})
	g.live.files.each(r, "", func(path string, f *fileState) bool {
		sf := snapFile{Path: path, Nodes: f.nodes}
		for _, e := range f.edges {
			sf.Edges = append(sf.Edges, snapFileEdge{From: e.key.from, To: e.key.to, Rel: e.key.rel, Line: e.line})
		}
		for _, ft := range f.facts {
			sf.Facts = append(sf.Facts, snapFact{Section: ft.section, Text: ft.text, Line: ft.line, IDs: ft.ids})
		}
		c.Files = append(c.Files, sf)
		added()
		return err == nil
	})
	r.allFacts(func(fc FactChange) { c.Facts = append(c.Facts, fc); added() })
	r.allClosed(func(e Edge) { c.Closed = append(c.Closed, e); added() })
	r.allEdgeRefs(func(k edgeKey, ref edgeRef) {
		c.EdgeRefs = append(c.EdgeRefs, snapEdgeRef{From: k.from, To: k.to, Rel: k.rel, Evidence: ref.ev, Time: ref.at})
		added()
	})
	r.allNodeRefs(func(id, src string) { c.NodeRefs = append(c.NodeRefs, snapNodeRef{ID: id, Source: src}); added() })
	if err != nil {
		return err
	}
	if r.err != nil {
		return r.err // a snapshot without some of the history would pass for the whole graph
	}
	c.End = true
	return enc.Encode(c)
}

// DecodeSnapshot reads a graph EncodeSnapshot wrote; its history goes to
// the system's temp dir (NewIn).
func DecodeSnapshot(dec *gob.Decoder) (*Graph, error) { return DecodeSnapshotIn(dec, "") }

// DecodeSnapshotIn reads a graph EncodeSnapshot wrote; its history goes
// to a file in dir (NewIn).
func DecodeSnapshotIn(dec *gob.Decoder, dir string) (_ *Graph, err error) {
	var h snapHeader
	if err := dec.Decode(&h); err != nil {
		return nil, fmt.Errorf("temporalgraph: snapshot: %w", err)
	}
	if h.Version != snapshotVersion {
		return nil, fmt.Errorf("temporalgraph: snapshot version %d, want %d", h.Version, snapshotVersion)
	}
	g := NewIn(dir)
	defer func() {
		if err != nil {
			_ = g.Close()
		}
	}()
	defer g.endWrite() // before Close: a read left open would keep it waiting
	g.lastTime, g.lastSha, g.ord = h.LastTime, h.LastSha, h.Ord
	for {
		var c snapChunk
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("temporalgraph: snapshot: %w", err)
		}
		w := g.writer()
		for _, n := range c.Nodes {
			if g.live.nodes.get(w, n.ID) == nil {
				g.nodeCount++
			}
			g.live.nodes.put(n.ID, &nodeState{id: n.ID, typ: n.Typ, label: n.Label, labelSet: n.LabelSet, commitRefs: n.CommitRefs,
				aliases: slices.Sorted(slices.Values(n.Aliases)), refCount: len(n.Refs), firstSeen: n.FirstSeen, firstOrd: n.FirstOrd, updated: n.Updated})
			for _, ref := range n.Refs {
				g.live.refs.add(n.ID, ref)
			}
		}
		for _, e := range c.Edges {
			k := edgeKey{e.From, e.To, e.Rel}
			if g.live.nodes.get(w, k.from) == nil || g.live.nodes.get(w, k.to) == nil || g.live.edges.get(w, k.String()) != nil {
				return nil, fmt.Errorf("temporalgraph: snapshot: an open edge of an unknown node, or twice")
			}
			es := g.newEdge(k)
			*es = edgeState{open: true, commitRefs: e.CommitRefs, from: e.Since, fromOrd: e.SinceOrd, live: evidenceOf(e.Live), gone: evidenceOf(e.Gone)}
			if es.live == nil {
				es.live = map[string]evidence{}
			}
		}
		for _, f := range c.Files {
			fs := &fileState{nodes: slices.Sorted(slices.Values(f.Nodes))}
			for _, e := range f.Edges {
				fs.edges = append(fs.edges, fileEdge{edgeKey{e.From, e.To, e.Rel}, e.Line})
			}
			slices.SortFunc(fs.edges, func(a, b fileEdge) int { return compareKeys(a.key, b.key) })
			for _, ft := range f.Facts {
				fs.facts = append(fs.facts, fact{section: ft.Section, text: ft.Text, line: ft.Line, ids: ft.IDs})
			}
			g.live.files.put(f.Path, fs)
		}
		// Intervals and commit sources name nodes, commit evidence open
		// edges that have some, all of which came before them in the
		// stream; a snapshot where they did not is refused, not half
		// loaded.
		bad := func(what string) error {
			return fmt.Errorf("temporalgraph: snapshot: %s of an unknown node or edge", what)
		}
		for _, fc := range c.Facts {
			g.addFact(fc)
		}
		for _, e := range c.Closed {
			if g.live.nodes.get(w, e.From) == nil || g.live.nodes.get(w, e.To) == nil {
				return nil, bad("a closed interval")
			}
			g.addClosed(e)
		}
		for _, r := range c.EdgeRefs {
			k := edgeKey{r.From, r.To, r.Rel}
			if es := g.live.edges.get(w, k.String()); es == nil || !es.commitRefs {
				return nil, bad("commit evidence")
			}
			g.pendEdgeRefs[k] = append(g.pendEdgeRefs[k], edgeRef{r.Evidence, r.Time})
			g.pending++
		}
		for _, r := range c.NodeRefs {
			if n := g.live.nodes.get(w, r.ID); n == nil || !n.commitRefs {
				return nil, bad("a commit source")
			}
			g.pendNodeRefs[r.ID] = append(g.pendNodeRefs[r.ID], r.Source)
			g.pending++
		}
		if g.flushDue() {
			if err := g.flush(); err != nil {
				return nil, err
			}
		}
		if c.End {
			return g, nil
		}
	}
}
