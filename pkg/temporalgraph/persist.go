package temporalgraph

import (
	"encoding/gob"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The snapshot types mirror the graph's state with exported fields for gob.
// A snapshot plus the commits after it rebuilds exactly the graph that
// applying every commit would (tested), so a restart need not replay history.
//
// A snapshot is a stream of gob values — a header with the counts, then
// chunks of at most snapChunkSize items — rather than one value, because
// gob buffers a whole value before writing it: a graph of 10,000 agents
// would need its full encoding (hundreds of MB) in memory on top of itself.
type (
	snapHeader struct {
		Version                        int
		Nodes, Edges, Files, Histories int
		// The last commit applied and its place in its second.
		LastTime time.Time
		LastSha  string
		Ord      uint32
	}
	snapChunk struct {
		Nodes   []snapNode
		Edges   []snapEdge
		Files   []snapFile
		History []snapHistory
	}
	snapNode struct {
		ID, Typ, Label     string
		LabelSet           bool
		Aliases, Refs      []string
		FirstSeen, Updated time.Time
		FirstOrd           uint32
	}
	snapEdge struct {
		From, To, Rel string
		Closed        []Edge
		Open          bool
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
	snapHistory struct {
		EntityID string
		Changes  []FactChange
	}
)

// snapshotVersion 2: streamed chunks, an edge's departed sources (Gone)
// instead of its whole interval's. 3: positions in commit order (Point.Ord)
// beside the times; a version 2 snapshot lacks them, so it is rebuilt.
const snapshotVersion = 3

// snapChunkSize bounds the items per chunk, and so what encoding and
// decoding hold beyond the graph itself.
const snapChunkSize = 1024

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func set(ks []string) map[string]bool {
	m := make(map[string]bool, len(ks))
	for _, k := range ks {
		m[k] = true
	}
	return m
}

// evidenceMap is an edge's evidence map as snapshots store it, by file
// (nil for nil).
func (g *Graph) evidenceMap(m map[uint32]evidence) map[string]Evidence {
	if m == nil {
		return nil
	}
	out := make(map[string]Evidence, len(m))
	for src, ev := range m {
		out[g.strs.str(src)] = g.strs.expand(src, ev)
	}
	return out
}

// evidenceIDs is the inverse of evidenceMap.
func (g *Graph) evidenceIDs(m map[string]Evidence) map[uint32]evidence {
	if m == nil {
		return nil
	}
	out := make(map[uint32]evidence, len(m))
	for f, ev := range m {
		out[g.strs.id(f)] = evidence{commit: g.strs.id(ev.Commit), line: int32(ev.Line)}
	}
	return out
}

// EncodeSnapshot writes the graph's whole state to enc.
func (g *Graph) EncodeSnapshot(enc *gob.Encoder) error {
	h := snapHeader{Version: snapshotVersion, Nodes: len(g.nodes), Edges: len(g.edges), Files: len(g.files), Histories: len(g.history),
		LastTime: g.lastTime, LastSha: g.lastSha, Ord: g.ord}
	if err := enc.Encode(h); err != nil {
		return err
	}
	var c snapChunk
	flush := func(force bool) error {
		if n := len(c.Nodes) + len(c.Edges) + len(c.Files) + len(c.History); n == 0 || (!force && n < snapChunkSize) {
			return nil
		}
		err := enc.Encode(c)
		c = snapChunk{}
		return err
	}
	for _, n := range g.nodes {
		c.Nodes = append(c.Nodes, snapNode{ID: n.id, Typ: n.typ, Label: n.label, LabelSet: n.labelSet,
			Aliases: keys(n.aliases), Refs: keys(n.refs), FirstSeen: n.firstSeen, Updated: n.updated, FirstOrd: n.firstOrd})
		if err := flush(false); err != nil {
			return err
		}
	}
	for k, e := range g.edges {
		c.Edges = append(c.Edges, snapEdge{From: k.from, To: k.to, Rel: k.rel, Closed: e.closed, Open: e.open,
			Since: e.from, SinceOrd: e.fromOrd, Live: g.evidenceMap(e.live), Gone: g.evidenceMap(e.gone)})
		if err := flush(false); err != nil {
			return err
		}
	}
	for path, f := range g.files {
		sf := snapFile{Path: path, Nodes: f.nodes}
		for _, e := range f.edges {
			sf.Edges = append(sf.Edges, snapFileEdge{From: e.key.from, To: e.key.to, Rel: e.key.rel, Line: e.line})
		}
		for _, ft := range f.facts {
			sf.Facts = append(sf.Facts, snapFact{Section: ft.section, Text: ft.text, Line: ft.line, IDs: ft.ids})
		}
		c.Files = append(c.Files, sf)
		if err := flush(false); err != nil {
			return err
		}
	}
	for id, changes := range g.history {
		c.History = append(c.History, snapHistory{EntityID: id, Changes: changes})
		if err := flush(false); err != nil {
			return err
		}
	}
	return flush(true)
}

// DecodeSnapshot reads a graph EncodeSnapshot wrote.
func DecodeSnapshot(dec *gob.Decoder) (*Graph, error) {
	var h snapHeader
	if err := dec.Decode(&h); err != nil {
		return nil, fmt.Errorf("temporalgraph: snapshot: %w", err)
	}
	if h.Version != snapshotVersion {
		return nil, fmt.Errorf("temporalgraph: snapshot version %d, want %d", h.Version, snapshotVersion)
	}
	g := New()
	g.lastTime, g.lastSha, g.ord = h.LastTime, h.LastSha, h.Ord
	var nodes, edges, files, histories int
	for nodes < h.Nodes || edges < h.Edges || files < h.Files || histories < h.Histories {
		var c snapChunk
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("temporalgraph: snapshot: %w", err)
		}
		if len(c.Nodes)+len(c.Edges)+len(c.Files)+len(c.History) == 0 {
			return nil, errors.New("temporalgraph: snapshot: empty chunk")
		}
		for _, n := range c.Nodes {
			g.nodes[n.ID] = &nodeState{id: n.ID, typ: n.Typ, label: n.Label, labelSet: n.LabelSet,
				aliases: set(n.Aliases), refs: set(n.Refs), firstSeen: n.FirstSeen, firstOrd: n.FirstOrd, updated: n.Updated}
		}
		for _, e := range c.Edges {
			live := g.evidenceIDs(e.Live)
			if live == nil {
				live = map[uint32]evidence{}
			}
			k := edgeKey{g.id(e.From), g.id(e.To), e.Rel}
			g.edges[k] = &edgeState{closed: e.Closed, open: e.Open, from: e.Since, fromOrd: e.SinceOrd, live: live, gone: g.evidenceIDs(e.Gone)}
			g.indexEdge(k)
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
			g.intern(fs)
			g.files[f.Path] = fs
		}
		for _, hc := range c.History {
			for i := range hc.Changes {
				hc.Changes[i].EntityID = g.id(hc.Changes[i].EntityID)
			}
			g.history[g.id(hc.EntityID)] = hc.Changes
		}
		nodes, edges, files, histories = nodes+len(c.Nodes), edges+len(c.Edges), files+len(c.Files), histories+len(c.History)
	}
	if nodes != h.Nodes || edges != h.Edges || files != h.Files || histories != h.Histories {
		return nil, errors.New("temporalgraph: snapshot: more items than its header counts")
	}
	return g, nil
}
