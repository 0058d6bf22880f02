package benchharness

import (
	"fmt"
	"strings"

	"github.com/garden-bloom/memory/pkg/memrepo"
)

// memoryTree is the memory/ tree: one "40000 agent-NNNNN\0<id>" entry per
// onboarded agent. Agent ids have a fixed width and are onboarded in order,
// so entry i sits at byte i*memEntrySize and a commit patches 20 bytes.
type memoryTree struct {
	data []byte
	p    *placed
}

const memEntrySize = len("40000 ") + len("agent-00000") + 1 + 20

// memTreeDepth bounds memory/'s delta chains: each link is one 20-byte
// change, and at 10,000 agents a whole version is 380 KB to compress.
const memTreeDepth = 50

// agentTree is the state of one agent's folder between its commits.
type agentTree struct {
	files          map[string]oid // top-level files
	runs, timeline subtree
	data           []byte
	p              *placed
}

// subtree is runs/ or timeline/.
type subtree struct {
	files map[string]oid
	id    oid
	data  []byte
	p     *placed
}

// put packs a tree (or commit) as a delta against its previous version.
func (g *generator) putVersion(typ int, data, old []byte, oldP *placed) (oid, *placed, error) {
	depth := -1
	if oldP != nil {
		depth = oldP.depth
	}
	e, isDelta := g.enc.delta(typ, data, old, depth)
	if isDelta {
		e.base = oldP
	}
	p, err := g.pw.put(e)
	return e.id, p, err
}

func (s *subtree) set(name string, id oid) {
	if s.files == nil {
		s.files = map[string]oid{}
	}
	s.files[name] = id
}

func (g *generator) putSubtree(s *subtree) error {
	entries := make([]treeEntry, 0, len(s.files))
	for name, id := range s.files {
		entries = append(entries, treeEntry{name: name, id: id})
	}
	data := encodeTree(entries)
	id, p, err := g.putVersion(objTree, data, s.data, s.p)
	s.id, s.data, s.p = id, data, p
	return err
}

// commit writes commit j: the agent's trees, memory/, the root tree and the
// commit object, each tree a delta against its previous version.
func (g *generator) commit(j int, s slot) error {
	a := &g.agents[s.agent]
	if a.files == nil {
		a.files = map[string]oid{}
	}
	var runs, timeline bool
	for _, f := range g.files[j] {
		switch {
		case strings.HasPrefix(f.rel, "runs/"):
			a.runs.set(strings.TrimPrefix(f.rel, "runs/"), f.id)
			runs = true
		case strings.HasPrefix(f.rel, "timeline/"):
			a.timeline.set(strings.TrimPrefix(f.rel, "timeline/"), f.id)
			timeline = true
		default:
			a.files[f.rel] = f.id
		}
	}
	if runs {
		if err := g.putSubtree(&a.runs); err != nil {
			return err
		}
	}
	if timeline {
		if err := g.putSubtree(&a.timeline); err != nil {
			return err
		}
	}
	entries := make([]treeEntry, 0, len(a.files)+2)
	for name, id := range a.files {
		entries = append(entries, treeEntry{name: name, id: id})
	}
	if a.runs.files != nil {
		entries = append(entries, treeEntry{name: "runs", dir: true, id: a.runs.id})
	}
	if a.timeline.files != nil {
		entries = append(entries, treeEntry{name: "timeline", dir: true, id: a.timeline.id})
	}
	data := encodeTree(entries)
	agentID, p, err := g.putVersion(objTree, data, a.data, a.p)
	if err != nil {
		return err
	}
	a.data, a.p = data, p

	// memory/: append the agent when it is onboarded, else patch its id in
	// place; the delta against the previous version is just that change.
	oldLen := len(g.memory.data)
	at, n := int(s.agent)*memEntrySize, 20
	if at == oldLen {
		g.memory.data = append(append(g.memory.data, "40000 "+AgentID(int(s.agent))+"\x00"...), agentID[:]...)
		n = memEntrySize
	} else {
		at += memEntrySize - 20
		copy(g.memory.data[at:], agentID[:])
	}
	depth := -1
	if g.memory.p != nil {
		depth = g.memory.p.depth
	}
	me, isDelta := g.enc.spliceDelta(objTree, g.memory.data, oldLen, at, n, depth, memTreeDepth)
	if isDelta {
		me.base = g.memory.p
	}
	mp, err := g.pw.put(me)
	if err != nil {
		return err
	}
	memID := me.id
	g.memory.p = mp

	root := make([]treeEntry, 0, len(g.root)+1)
	for _, e := range g.root {
		if e.name != "memory" {
			root = append(root, e)
		}
	}
	root = append(root, treeEntry{name: "memory", dir: true, id: memID})
	rootData := encodeTree(root)
	rootID, rp, err := g.putVersion(objTree, rootData, g.rootB, g.rootP)
	if err != nil {
		return err
	}
	g.rootB, g.rootP = rootData, rp

	who := fmt.Sprintf("%s <%s> %d +0000", memrepo.DefaultAuthorName, memrepo.DefaultAuthorEmail, s.at.Unix())
	c := g.enc.full(objCommit, encodeCommit(rootID, g.parent, who, g.msgs[j]))
	if _, err := g.pw.put(c); err != nil {
		return err
	}
	g.parent = c.id
	g.files[j], g.msgs[j] = nil, ""
	return nil
}
