package temporalgraph

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// NodePage is NodeAt's edges cut to a page: every page of every size,
// now and in the past, with and without a visibility filter, is the
// same slice of what NodeAt answers.
func TestNodePageIsASliceOfNodeAt(t *testing.T) {
	g := New()
	defer func() { require.NoError(t, g.Close()) }()
	for _, c := range syntheticHistory(600) {
		g.ApplyCommit(c)
	}
	onlyEven := func(e Edge) bool {
		for _, ev := range e.Evidence {
			if strings.HasSuffix(ev.File, "0/facts.md") || strings.HasSuffix(ev.File, "2/facts.md") {
				return true
			}
		}
		return false
	}
	past := AtTime(syntheticHistory(600)[250].Time)
	for _, id := range []string{"entity-7", "entity-123", "agent-05", "nobody"} {
		for _, at := range []Point{{}, past} {
			for _, visible := range []func(Edge) bool{nil, onlyEven} {
				n, all, ok := g.NodeAt(id, at)
				var want []Edge
				for _, e := range all {
					if visible == nil || visible(e) {
						want = append(want, e)
					}
				}
				for _, size := range []int{1, 7, 100, 1000} {
					for skip := 0; skip <= len(want)+1; skip += max(1, size/2) {
						pn, page, total, pok := g.NodePage(id, at, skip, size, 0, visible)
						name := fmt.Sprintf("%s at %v, filtered %v, skip %d size %d", id, at, visible != nil, skip, size)
						require.Equal(t, ok, pok, name)
						require.Equal(t, n, pn, name)
						require.Equal(t, len(want), total, name)
						if w := want[min(skip, len(want)):min(skip+size, len(want))]; len(w) == 0 {
							require.Empty(t, page, name)
						} else {
							require.Equal(t, w, page, name)
						}
					}
				}
			}
		}
	}
}

// A hub's sorted edges are kept between pages (sortedAdj) and never
// outlive a change: an edge added or gone shows on the next page at once,
// and concurrent readers share the kept order.
func TestNodePageFollowsChangesOfABigNode(t *testing.T) {
	g := New()
	defer func() { require.NoError(t, g.Close()) }()
	start := syntheticHistory(1)[0].Time
	facts := func(n, skip int) *string {
		var b strings.Builder
		b.WriteString("# Facts: hub\n\n## D\n")
		for i := range n {
			if i != skip {
				fmt.Fprintf(&b, "- [[Hub]] feeds [[Leaf %03d]]\n", i)
			}
		}
		s := b.String()
		return &s
	}
	apply := func(i int, content *string) {
		g.ApplyCommit(Commit{Sha: fmt.Sprintf("%040x", i), Time: start.Add(time.Duration(i) * time.Minute), AgentID: "hub",
			Files: map[string]*string{"memory/hub/facts.md": content}})
	}
	check := func(name string) {
		_, all, _ := g.NodeAt("hub", Point{})
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for skip := w; skip < len(all); skip += 37 {
					_, page, total, ok := g.NodePage("hub", Point{}, skip, 50, 0, nil)
					require.True(t, ok)
					require.Equal(t, len(all), total, name)
					require.Equal(t, all[skip:min(skip+50, len(all))], page, name)
				}
			})
		}
		wg.Wait()
	}
	apply(0, facts(300, -1))
	check("300 leaves")
	apply(1, facts(301, -1))
	check("a leaf added")
	apply(2, facts(301, 17))
	check("a leaf gone")

	// Its refs, kept sorted too, follow a file that starts or stops
	// mentioning it.
	mention := func(i int, agents ...int) {
		files := map[string]*string{}
		for _, a := range agents {
			content := "# Facts\n\n## D\n- [[Hub]] is near\n"
			if a < 0 {
				a, content = -a, "# Facts\n\n## D\n- nothing\n"
			}
			files[fmt.Sprintf("memory/agent-%03d/facts.md", a)] = &content
		}
		g.ApplyCommit(Commit{Sha: fmt.Sprintf("%040x", i), Time: start.Add(time.Duration(i) * time.Minute), Files: files})
	}
	many := make([]int, 300)
	for a := range many {
		many[a] = a + 1
	}
	mention(3, many...)
	refs := func() []string {
		n, _, _, ok := g.NodePage("hub", Point{}, 0, 1, 0, nil)
		require.True(t, ok)
		want, _, _ := g.NodeAt("hub", Point{})
		require.Equal(t, want.Refs, n.Refs)
		return n.Refs
	}
	require.Len(t, refs(), 301)
	mention(4, -5)
	require.Len(t, refs(), 300)
	require.NotContains(t, refs(), "memory/agent-005/facts.md")
	mention(5, 400)
	require.Contains(t, refs(), "memory/agent-400/facts.md")
	// A commit message's Entity-Refs are refs on disk, and only grow.
	g.ApplyCommit(Commit{Sha: fmt.Sprintf("%040x", 6), Time: start.Add(6 * time.Minute), AgentID: "bot", EntityRefs: []string{"hub"}})
	require.Contains(t, refs(), "commit:"+fmt.Sprintf("%040x", 6))
	g.ApplyCommit(Commit{Sha: fmt.Sprintf("%040x", 7), Time: start.Add(7 * time.Minute), AgentID: "bot", EntityRefs: []string{"hub"}})
	require.Contains(t, refs(), "commit:"+fmt.Sprintf("%040x", 7))
}

// firstEvidence is sortedEvidence's first pieces, whatever the maps hold.
func TestFirstEvidenceIsTheSortedFirst(t *testing.T) {
	for round := range 200 {
		live, gone := map[string]evidence{}, map[string]evidence{}
		for i := range round % 60 {
			src := fmt.Sprintf("memory/agent-%02d/facts.md", (i*7+round)%50)
			ev := evidence{commit: fmt.Sprintf("c%d", i%3), line: int32(i % 5)}
			if i%4 == 0 {
				gone[src] = ev
			} else {
				live[src] = ev
			}
		}
		all := sortedEvidence(live, gone)
		for _, max := range []int{1, 3, 20, 100} {
			first, n := firstEvidence(max, live, gone)
			require.Equal(t, len(all), n)
			if len(all) == 0 {
				require.Empty(t, first)
				continue
			}
			require.Equal(t, all[:min(max, len(all))], first, "round %d, max %d", round, max)
		}
	}
}

// Pages of now are kept until the next commit (pageCache): asked for again
// between commits a page is the one built, and after every commit of a
// history each node's pages are what a graph that kept nothing builds.
func TestNodePageKeptOnlyUntilTheNextCommit(t *testing.T) {
	g := New()
	defer func() { require.NoError(t, g.Close()) }()
	history := syntheticHistory(300)
	ids := []string{"entity-7", "entity-123", "agent-05", "agent-01", "nobody"}
	for i, c := range history {
		g.ApplyCommit(c)
		if i%7 != 0 && i != len(history)-1 {
			continue
		}
		for _, id := range ids {
			for _, p := range []struct{ skip, limit, ev int }{{0, 100, 20}, {5, 3, 2}, {0, 1000, 0}} {
				n, page, total, ok := g.NodePage(id, Point{}, p.skip, p.limit, p.ev, nil)
				wn, wpage, wtotal, wok := g.nodePage(id, Point{}, p.skip, p.limit, p.ev, nil)
				name := fmt.Sprintf("%s after commit %d, %+v", id, i, p)
				require.Equal(t, wok, ok, name)
				require.Equal(t, wn, n, name)
				require.Equal(t, wtotal, total, name)
				require.Equal(t, wpage, page, name)
				_, again, _, _ := g.NodePage(id, Point{}, p.skip, p.limit, p.ev, nil)
				if len(page) > 0 {
					require.Same(t, &page[0], &again[0], "%s: the kept page, not built again", name)
				}
			}
		}
	}
	require.Positive(t, g.pages.Stats().Hits)
}
