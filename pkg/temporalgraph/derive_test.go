package temporalgraph

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// naiveDerive is derive computed another way: every mention checked
// against all earlier ones for repeats, nodes and edges sorted with their
// duplicates and compacted, each edge keeping its smallest line. derive
// must give the same file state.
func naiveDerive(p, content string) *fileState {
	ms := Extract(p, content)
	fs := &fileState{}
	for i, m := range ms {
		if slices.Contains(ms[:i], m) {
			panic(fmt.Sprintf("Extract returned %v twice", m))
		}
		fs.decls = append(fs.decls, decl{m.EntityID, m.Label, m.Type})
		fs.nodes = append(fs.nodes, m.EntityID)
		if m.Target != "" {
			fs.nodes = append(fs.nodes, m.Target)
			fs.edges = append(fs.edges, fileEdge{edgeKey{m.EntityID, m.Target, m.Relation}, m.Line})
		}
	}
	slices.Sort(fs.nodes)
	fs.nodes = slices.Compact(fs.nodes)
	slices.SortFunc(fs.edges, func(a, b fileEdge) int { return cmp.Or(compareKeys(a.key, b.key), a.line-b.line) })
	fs.edges = slices.CompactFunc(fs.edges, func(a, b fileEdge) bool { return a.key == b.key })
	return fs
}

// randomFacts writes a facts.md of n bullets whose links repeat within and
// across lines, some lines naming many entities, some inside a code fence.
func randomFacts(r *rand.Rand, n int) string {
	var b strings.Builder
	b.WriteString("# Facts: agent-7\n\n## Domain\n")
	for i := range n {
		switch r.IntN(20) {
		case 0:
			b.WriteString("\n## Section " + fmt.Sprint(i) + "\n")
		case 1:
			b.WriteString("```\n- [[Hidden]] in code\n```\n")
		}
		b.WriteString("- fact")
		links := r.IntN(4)
		if r.IntN(30) == 0 {
			links = 10 + r.IntN(40) // past dedupeScanMax once paired
		}
		for range links {
			prefix := []string{"", "person:", "project:", "artifact:"}[r.IntN(4)]
			fmt.Fprintf(&b, " [[%sEntity %d]]", prefix, r.IntN(12))
		}
		b.WriteString(" tail\n")
	}
	return b.String()
}

// randomEpisode writes an episode run file whose field lines come in any
// order, repeat, and link entities of the right type, another type or
// many, with context paths of any depth, and fields after the header.
func randomEpisode(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString("# Episode\n\n")
	labels := []string{"Episode", "Task", "Outcome", "Context", "Skills used", "Artifacts touched", "Failure mode", "Fix", "Tests", "Environment", "When"}
	prefixes := []string{"episode:", "task:", "outcome:", "context:", "skill:", "artifact:", "failure-mode:", "fix:", "test:", "environment:", "", "person:"}
	for i := range 4 + r.IntN(20) {
		if i > 3 && r.IntN(15) == 0 {
			b.WriteString("\n## Summary\n\n")
		}
		fmt.Fprintf(&b, "- **%s:**", labels[r.IntN(len(labels))])
		for range r.IntN(4) {
			prefix := prefixes[r.IntN(len(prefixes))]
			name := fmt.Sprintf("E%d", r.IntN(6))
			if prefix == "context:" {
				name = strings.Repeat(name+"/", r.IntN(3)) + name
			}
			fmt.Fprintf(&b, " [[%s%s]]", prefix, name)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestDeriveMatchesSets(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	for i := range 300 {
		content := randomFacts(r, 1+r.IntN(60))
		p := "memory/agent-7/facts.md"
		switch i % 5 {
		case 0:
			p = "memory/agent-7/snapshot.md"
		case 1:
			p, content = "memory/agent-7/runs/run_7.md", randomEpisode(r)
		}
		if ms := Extract(p, content); !slices.IsSortedFunc(ms, func(a, b Mention) int { return a.Line - b.Line }) {
			t.Fatalf("case %d: Extract's mentions are not in line order: %v", i, ms)
		}
		got, want := derive(p, content), naiveDerive(p, content)
		if !slices.Equal(got.nodes, want.nodes) || !slices.Equal(got.edges, want.edges) || !slices.Equal(got.decls, want.decls) {
			t.Fatalf("case %d (%s): derive differs from the set-based derivation\ncontent:\n%s\ngot nodes %v\nwant %v\ngot edges %v\nwant %v",
				i, p, content, got.nodes, want.nodes, got.edges, want.edges)
		}
		for _, f := range got.facts {
			for j, id := range f.ids {
				for _, other := range f.ids[j+1:] {
					if id == other {
						t.Fatalf("case %d: fact %q lists %s twice", i, f.text, id)
					}
				}
			}
		}
	}
}

// TestDedupeKeepsFirstOfEachRepeat checks both ways dedupe compares: one by
// one on a short line, through a set on a long one.
func TestDedupeKeepsFirstOfEachRepeat(t *testing.T) {
	for _, n := range []int{3, dedupeScanMax * 3} {
		var in, want []Mention
		for line := 1; line <= 3; line++ {
			for i := range n {
				m := Mention{EntityID: fmt.Sprintf("e%d", i%(n/2+1)), Line: line}
				in = append(in, m)
				if i <= n/2 {
					want = append(want, m)
				}
			}
		}
		if got := dedupe(in); !reflect.DeepEqual(got, want) {
			t.Fatalf("n=%d: dedupe kept %d of %d mentions, want %d", n, len(got), len(in), len(want))
		}
	}
}
