package entitygraph

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"time"
)

// The snapshot types mirror the graph's state with exported fields for gob.
// A snapshot plus the commits after it rebuilds exactly the graph that
// applying every commit would (tested), so a restart need not replay history.
type (
	snapshot struct {
		Version int
		Nodes   []snapNode
		Edges   []snapEdge
		Files   []snapFile
		History map[string][]FactChange
	}
	snapNode struct {
		ID, Typ, Label     string
		LabelSet           bool
		Aliases, Refs      []string
		FirstSeen, Updated time.Time
	}
	snapEdge struct {
		From, To, Rel string
		Closed        []Edge
		Open          bool
		Since         time.Time
		Live, IvEv    map[string]Evidence
	}
	snapDecl     struct{ ID, Label, Typ string }
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
		Decls []snapDecl
		Nodes []string
		Edges []snapFileEdge
		Facts []snapFact
	}
)

const snapshotVersion = 1

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

// MarshalBinary encodes the graph's whole state.
func (g *Graph) MarshalBinary() ([]byte, error) {
	s := snapshot{Version: snapshotVersion, History: g.history}
	for _, n := range g.nodes {
		s.Nodes = append(s.Nodes, snapNode{ID: n.id, Typ: n.typ, Label: n.label, LabelSet: n.labelSet,
			Aliases: keys(n.aliases), Refs: keys(n.refs), FirstSeen: n.firstSeen, Updated: n.updated})
	}
	for k, e := range g.edges {
		s.Edges = append(s.Edges, snapEdge{From: k.from, To: k.to, Rel: k.rel, Closed: e.closed, Open: e.open,
			Since: e.from, Live: e.live, IvEv: e.ivEv})
	}
	for path, f := range g.files {
		sf := snapFile{Path: path, Nodes: keys(f.nodes)}
		for _, d := range f.decls {
			sf.Decls = append(sf.Decls, snapDecl{ID: d.id, Label: d.label, Typ: d.typ})
		}
		for k, line := range f.edges {
			sf.Edges = append(sf.Edges, snapFileEdge{From: k.from, To: k.to, Rel: k.rel, Line: line})
		}
		for _, ft := range f.facts {
			sf.Facts = append(sf.Facts, snapFact{Section: ft.section, Text: ft.text, Line: ft.line, IDs: ft.ids})
		}
		s.Files = append(s.Files, sf)
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(s); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// UnmarshalBinary replaces the graph's state with an encoded one.
func (g *Graph) UnmarshalBinary(data []byte) error {
	var s snapshot
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&s); err != nil {
		return fmt.Errorf("entitygraph: snapshot: %w", err)
	}
	if s.Version != snapshotVersion {
		return fmt.Errorf("entitygraph: snapshot version %d, want %d", s.Version, snapshotVersion)
	}
	fresh := New()
	for _, n := range s.Nodes {
		fresh.nodes[n.ID] = &nodeState{id: n.ID, typ: n.Typ, label: n.Label, labelSet: n.LabelSet,
			aliases: set(n.Aliases), refs: set(n.Refs), firstSeen: n.FirstSeen, updated: n.Updated}
	}
	for _, e := range s.Edges {
		live, ivEv := e.Live, e.IvEv
		if live == nil {
			live = map[string]Evidence{}
		}
		if ivEv == nil {
			ivEv = map[string]Evidence{}
		}
		k := edgeKey{e.From, e.To, e.Rel}
		fresh.edges[k] = &edgeState{closed: e.Closed, open: e.Open, from: e.Since, live: live, ivEv: ivEv}
		fresh.indexEdge(k)
	}
	for _, f := range s.Files {
		fs := &fileState{nodes: set(f.Nodes), edges: map[edgeKey]int{}}
		for _, d := range f.Decls {
			fs.decls = append(fs.decls, decl{id: d.ID, label: d.Label, typ: d.Typ})
		}
		for _, e := range f.Edges {
			fs.edges[edgeKey{e.From, e.To, e.Rel}] = e.Line
		}
		for _, ft := range f.Facts {
			fs.facts = append(fs.facts, fact{section: ft.Section, text: ft.Text, line: ft.Line, ids: ft.IDs})
		}
		fresh.files[f.Path] = fs
	}
	if s.History != nil {
		fresh.history = s.History
	}
	*g = *fresh
	return nil
}
