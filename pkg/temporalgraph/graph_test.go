package temporalgraph

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

func ptr(s string) *string { return &s }

var t0 = time.Date(2026, 2, 17, 9, 0, 0, 0, time.UTC)

func at(n int) time.Time { return t0.Add(time.Duration(n) * time.Hour) }

const (
	factsPath = "memory/curator/facts.md"
	decPath   = "memory/curator/decisions.md"
	decID     = "decision-2026-02-17-use-minio-versioning"
)

const decisionsV1 = `# Decisions: curator

## 2026-02-17 — Use MinIO versioning
**Status:** accepted
**Decision:** Turn on versioning for [[artifact:minio-bucket]] in [[MinIO]].
`

// history is the commit sequence most tests replay.
func history() []Commit {
	return []Commit{
		{Sha: "c1", Time: at(1), ProposalID: "p1", AgentID: "curator", Files: map[string]*string{
			factsPath: ptr("# Facts: curator\n\n## Infra\n- [[MinIO]] stores blobs for [[project:Garden Bloom]]\n- [[Postgres]] holds indexes\n"),
		}},
		{Sha: "c2", Time: at(2), ProposalID: "p2", AgentID: "curator", Files: map[string]*string{
			factsPath: ptr("# Facts: curator\n\n## Infra\n- [[Postgres]] holds indexes\n- [[Mínio]] stores blobs for [[project:Garden Bloom]]\n- [[MINIO]] is S3-compatible\n"),
		}},
		{Sha: "c3", Time: at(3), ProposalID: "p3", AgentID: "curator", Files: map[string]*string{
			factsPath: ptr("# Facts: curator\n\n## Infra\n- [[Postgres]] holds indexes\n- [[MINIO]] is S3-compatible\n"),
		}},
		{Sha: "c4", Time: at(4), ProposalID: "p4", AgentID: "curator", EntityRefs: []string{"Garden Bloom", "person:Olena"}, Files: map[string]*string{
			decPath:                    ptr(decisionsV1),
			"memory/curator/blob.json": ptr(`{"ignored": "[[X]]"}`),
		}},
		{Sha: "c5", Time: at(5), ProposalID: "p5", AgentID: "curator", Files: map[string]*string{
			factsPath: nil,
		}},
	}
}

func build(cs []Commit) *Graph {
	g := New()
	for _, c := range cs {
		g.ApplyCommit(c)
	}
	return g
}

// find returns the intervals of one relation.
func find(es []Edge, from, rel, to string) []Edge {
	var out []Edge
	for _, e := range es {
		if e.From == from && e.To == to && e.Relation == rel {
			out = append(out, e)
		}
	}
	return out
}

func TestTemporalEdges(t *testing.T) {
	g := build(history())
	for _, tc := range []struct {
		name          string
		id            string
		from, rel, to string
		at            time.Time
		visible       bool
	}{
		{"relates_to before it exists", "minio", "garden-bloom", RelRelatesTo, "minio", at(0), false},
		{"relates_to added in c1", "minio", "garden-bloom", RelRelatesTo, "minio", at(1), true},
		{"relates_to survives the rewording in c2", "minio", "garden-bloom", RelRelatesTo, "minio", at(2), true},
		{"relates_to removed in c3: absent at c3", "minio", "garden-bloom", RelRelatesTo, "minio", at(3), false},
		{"relates_to removed: absent now", "minio", "garden-bloom", RelRelatesTo, "minio", time.Time{}, false},
		{"file deleted in c5: present at c4", "postgres", "curator", RelMentions, "postgres", at(4), true},
		{"file deleted in c5: absent at c5", "postgres", "curator", RelMentions, "postgres", at(5), false},
		{"mention kept by another file after delete", "minio", "curator", RelMentions, "minio", time.Time{}, true},
		{"decision decided_by agent", decID, decID, RelDecidedBy, "curator", time.Time{}, true},
		{"decision refers_to a link", "minio", decID, RelRefersTo, "minio", at(4), true},
		{"Entity-Refs edge never closes", "garden-bloom", "curator", RelRefersTo, "garden-bloom", time.Time{}, true},
		{"Entity-Refs edge not before its commit", "garden-bloom", "curator", RelRefersTo, "garden-bloom", at(3), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, es, ok := g.Node(tc.id, tc.at)
			if !ok {
				require.False(t, tc.visible, "node missing")
				return
			}
			require.Equal(t, tc.visible, len(find(es, tc.from, tc.rel, tc.to)) == 1)
		})
	}

	// Exact intervals: unchanged edges keep ValidFrom across edits, the
	// moved evidence stays with its original commit.
	all := g.allEdges()
	rel := find(all, "garden-bloom", RelRelatesTo, "minio")
	require.Len(t, rel, 1)
	require.Equal(t, at(1), rel[0].ValidFrom)
	require.Equal(t, at(3), rel[0].ValidTo)
	require.Equal(t, []Evidence{{File: factsPath, Commit: "c1", Line: 5}}, rel[0].Evidence)

	m := find(all, "curator", RelMentions, "minio")
	require.Len(t, m, 1)
	require.Equal(t, at(1), m[0].ValidFrom)
	require.True(t, m[0].ValidTo.IsZero())
	require.Equal(t, []Evidence{{File: decPath, Commit: "c4", Line: 5}, {File: factsPath, Commit: "c1", Line: 5}}, m[0].Evidence)

	p := find(all, "curator", RelMentions, "postgres")
	require.Len(t, p, 1)
	require.Equal(t, at(5), p[0].ValidTo)

	ref := find(all, "curator", RelRefersTo, "garden-bloom")
	require.Equal(t, []Evidence{{File: "commit:c4", Commit: "c4"}}, ref[0].Evidence)

	// Non-Markdown content never reaches the graph.
	_, _, ok := g.Node("x", time.Time{})
	require.False(t, ok)
}

func TestEdgeReopensAsNewInterval(t *testing.T) {
	g := New()
	with := ptr("- [[A]] and [[B]]\n")
	without := ptr("- [[A]] alone\n- [[B]] alone\n")
	for i, c := range []*string{with, without, with} {
		g.ApplyCommit(Commit{Sha: string(rune('a' + i)), Time: at(i), Files: map[string]*string{factsPath: c}})
	}
	es := find(g.allEdges(), "a", RelRelatesTo, "b")
	require.Len(t, es, 2)
	require.Equal(t, [2]time.Time{at(0), at(1)}, [2]time.Time{es[0].ValidFrom, es[0].ValidTo})
	require.Equal(t, at(2), es[1].ValidFrom)
	require.True(t, es[1].ValidTo.IsZero())
}

func TestEdgeMovesBetweenFilesInOneCommit(t *testing.T) {
	g := New()
	g.ApplyCommit(Commit{Sha: "c1", Time: at(1), Files: map[string]*string{"memory/curator/a.md": ptr("[[MinIO]]\n")}})
	g.ApplyCommit(Commit{Sha: "c2", Time: at(2), Files: map[string]*string{
		"memory/curator/a.md": nil,
		"memory/curator/b.md": ptr("\n[[MinIO]]\n"),
	}})
	es := find(g.allEdges(), "curator", RelMentions, "minio")
	require.Len(t, es, 1, "no close/reopen within one commit")
	require.Equal(t, at(1), es[0].ValidFrom)
	require.True(t, es[0].ValidTo.IsZero())
	n, _, _ := g.Node("minio", time.Time{})
	require.Equal(t, []string{"memory/curator/b.md"}, n.Refs)
}

func TestAliasesResolveToOneNode(t *testing.T) {
	g := build(history())
	for _, q := range []string{"MinIO", "minio", "MINIO", "Mínio ", "mínio"} {
		n, _, ok := g.Node(q, time.Time{})
		require.True(t, ok, q)
		require.Equal(t, "minio", n.ID)
		require.Equal(t, "MinIO", n.Label, "first label wins")
		require.Equal(t, []string{"MINIO", "Mínio"}, n.Aliases)
		require.Equal(t, TypeConcept, n.Type)
		require.Equal(t, []string{decPath}, n.Refs, "facts.md was deleted")
		require.Equal(t, at(5), n.LastUpdated)
	}
	gb, _, _ := g.Node("garden bloom", time.Time{})
	require.Equal(t, TypeProject, gb.Type, "explicit type beats the concept default")
	require.Equal(t, []string{"commit:c4"}, gb.Refs)

	_, _, ok := g.Node("olena", at(3))
	require.False(t, ok, "not yet seen at c3")
	o, _, ok := g.Node("Olena", at(4))
	require.True(t, ok)
	require.Equal(t, TypePerson, o.Type)

	require.Equal(t, []string{decID, "minio", "minio-bucket"}, ids(g.Nodes(NodeFilter{Query: "MinIO"})), "the decision title names MinIO")
	require.Equal(t, []string{"curator"}, ids(g.Nodes(NodeFilter{Type: TypeAgent})))
	require.Equal(t, []string{"curator", "garden-bloom", "minio", "postgres"}, ids(g.Nodes(NodeFilter{At: at(1)})))
}

func ids(ns []Node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.ID)
	}
	return out
}

func TestNeighbors(t *testing.T) {
	g := build(history())
	for _, tc := range []struct {
		name      string
		depth     int
		relations []string
		at        time.Time
		nodes     []string
		edges     int
	}{
		{"depth 1 all relations", 1, nil, time.Time{}, []string{"curator", decID}, 2},
		{"depth 2 all relations", 2, nil, time.Time{}, []string{"curator", decID, "garden-bloom", "minio-bucket", "olena"}, 8},
		{"depth 1 refers_to", 1, []string{RelRefersTo}, time.Time{}, []string{decID}, 1},
		{"depth 2 refers_to", 2, []string{RelRefersTo}, time.Time{}, []string{decID, "minio-bucket"}, 2},
		{"depth 1 relates_to in the past", 1, []string{RelRelatesTo}, at(2), []string{"garden-bloom"}, 1},
		{"depth 1 relates_to now", 1, []string{RelRelatesTo}, time.Time{}, nil, 0},
		{"depth clamped to 3", 9, []string{RelMentions}, at(2), []string{"curator", "garden-bloom", "postgres"}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns, es := g.Neighbors("MinIO", tc.depth, tc.relations, tc.at)
			require.Equal(t, tc.nodes, ids(ns))
			require.Len(t, es, tc.edges)
			for _, e := range es {
				require.True(t, visible(e, tc.at))
			}
		})
	}
	ns, es := g.Neighbors("nobody", 2, nil, time.Time{})
	require.Nil(t, ns)
	require.Nil(t, es)
}

func TestHistory(t *testing.T) {
	g := build(history())
	type row struct{ change, commit, proposal, text string }
	var got []row
	for _, h := range g.History("Minio") {
		require.Equal(t, "minio", h.EntityID)
		require.Equal(t, factsPath, h.File)
		require.Equal(t, "Infra", h.Section)
		got = append(got, row{h.Change, h.Commit, h.ProposalID, h.Text})
	}
	require.Equal(t, []row{
		{"added", "c1", "p1", "[[MinIO]] stores blobs for [[project:Garden Bloom]]"},
		{"removed", "c2", "p2", "[[MinIO]] stores blobs for [[project:Garden Bloom]]"},
		{"added", "c2", "p2", "[[Mínio]] stores blobs for [[project:Garden Bloom]]"},
		{"added", "c2", "p2", "[[MINIO]] is S3-compatible"},
		{"removed", "c3", "p3", "[[Mínio]] stores blobs for [[project:Garden Bloom]]"},
		{"removed", "c5", "p5", "[[MINIO]] is S3-compatible"},
	}, got)
	// c2 reordered the Postgres fact but did not change it.
	var pg []string
	for _, h := range g.History("postgres") {
		pg = append(pg, h.Change+"@"+h.Commit)
	}
	require.Equal(t, []string{"added@c1", "removed@c5"}, pg)
	require.Empty(t, g.History("olena"))
}

func TestRebuildIsDeterministic(t *testing.T) {
	a, b := build(history()), build(history())
	require.True(t, a.Equal(b))
	require.Equal(t, a.Dump(), b.Dump())
	require.NotEmpty(t, a.Dump())

	// No-op commits: same content again, an empty commit, deleting a file
	// that does not exist.
	for i, c := range []Commit{
		{Sha: "n1", Time: at(6), AgentID: "curator", Files: map[string]*string{decPath: ptr(decisionsV1)}},
		{Sha: "n2", Time: at(7)},
		{Sha: "n3", Time: at(8), Files: map[string]*string{"memory/curator/gone.md": nil}},
		history()[3], // replaying a commit is idempotent
	} {
		b.ApplyCommit(c)
		require.True(t, a.Equal(b), "no-op %d", i)
	}

	// A real change is visible in the dump.
	b.ApplyCommit(Commit{Sha: "x", Time: at(9), Files: map[string]*string{decPath: nil}})
	require.False(t, a.Equal(b))
}

// The graph outlives the file texts and commit messages it is built from:
// no string it keeps may point into them, or one short label would keep a
// whole file in memory.
func TestKeepsNoSubstringOfItsInput(t *testing.T) {
	g := New()
	var inputs []string
	episode := Commit{Sha: "c6", Time: at(6), Files: map[string]*string{"memory/curator/runs/run_ep-1.md": ptr(strings.Clone(failureRun))}}
	for _, c := range append(history(), episode) {
		for _, content := range c.Files {
			if content != nil {
				inputs = append(inputs, *content)
			}
		}
		inputs = append(inputs, c.EntityRefs...)
		g.ApplyCommit(c)
	}
	inside := func(s string) bool {
		if len(s) == 0 {
			return false
		}
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		for _, in := range inputs {
			start := uintptr(unsafe.Pointer(unsafe.StringData(in)))
			if p >= start && p < start+uintptr(len(in)) {
				return true
			}
		}
		return false
	}
	check := func(what string, ss ...string) {
		for _, s := range ss {
			require.False(t, inside(s), "%s %q points into an input", what, s)
		}
	}
	// What the graph holds in memory: the changes waiting for a flush.
	for id, n := range g.live.nodes.dirty {
		check("node", id, n.id, n.typ, n.label)
		check("alias", n.aliases...)
	}
	for owner, m := range g.live.refs.dirty {
		check("ref owner", owner)
		check("ref", slices.Collect(maps.Keys(m))...)
	}
	for k, es := range g.live.edges.dirty {
		check("edge", k)
		if es == nil {
			continue // deleted
		}
		for src, ev := range es.live {
			check("evidence source or commit", src, ev.commit)
		}
	}
	for path, f := range g.live.files.dirty {
		check("file", path)
		if f == nil {
			continue // deleted
		}
		for _, d := range f.decls {
			check("decl", d.id, d.label, d.typ)
		}
		for _, ft := range f.facts {
			check("fact", ft.section, ft.text)
			check("fact id", ft.ids...)
		}
	}
	for id, hs := range g.history {
		check("history", id)
		for _, h := range hs {
			check("change", h.EntityID, h.Change, h.File, h.Section, h.Text, h.Commit, h.ProposalID)
		}
	}
}

// NodesPage pages Nodes: page after page, by id, the same nodes, and keep
// filters before the limit counts.
func TestNodesPage(t *testing.T) {
	var cs []Commit
	for i := range 30 {
		cs = append(cs, Commit{Sha: fmt.Sprint("c", i), Time: at(i), AgentID: "curator", Files: map[string]*string{
			fmt.Sprintf("memory/curator/facts-%d.md", i): ptr(fmt.Sprintf("- [[Service %02d]] talks to [[Queue %02d]]\n", i, i)),
		}})
	}
	g := build(cs)
	for _, f := range []NodeFilter{{}, {Query: "service"}, {Query: "queue 1"}, {At: at(9)}} {
		for _, keep := range []func(Node) bool{nil, func(n Node) bool { return !strings.HasSuffix(n.ID, "7") }} {
			var want []string
			for _, n := range g.Nodes(f) {
				if keep == nil || keep(n) {
					want = append(want, n.ID)
				}
			}
			for _, limit := range []int{1, 4, 7, 100} {
				var got []string
				after := ""
				for {
					page, more := g.NodesPage(f, after, limit, keep)
					require.LessOrEqual(t, len(page), limit)
					got = append(got, ids(page)...)
					if !more {
						break
					}
					require.Len(t, page, limit, "a page before another is full")
					after = page[len(page)-1].ID
				}
				require.Equal(t, want, got, "filter %+v limit %d", f, limit)
			}
		}
	}
	page, more := g.NodesPage(NodeFilter{}, "zzz", 10, nil)
	require.Empty(t, page)
	require.False(t, more)
}
