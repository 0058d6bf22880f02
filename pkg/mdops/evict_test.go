package mdops

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// bytesOver4 is the fake token counter of the tests: one token per 4 bytes.
func bytesOver4(s string) int { return len(s) / 4 }

func TestEvictFacts(t *testing.T) {
	// Each fact line "- fNN xxxxxxxxxxxxxxx" is 21 bytes + newline = 22.
	const md = "# Facts: a1\n\n## A\n- f01 xxxxxxxxxxxxxxx\n- f02 xxxxxxxxxxxxxxx\n  - sub of f02 xxxxxxx\n- f03 xxxxxxxxxxxxxxx\n\n## B\n- f04 xxxxxxxxxxxxxxx\n- f05 xxxxxxxxxxxxxxx\n"
	ranks := map[string]FactRank{
		"f01 xxxxxxxxxxxxxxx": {Added: 3},              // fresh
		"f02 xxxxxxxxxxxxxxx": {Added: 4, Stale: true}, // stale
		"f03 xxxxxxxxxxxxxxx": {Added: 2, Stale: true}, // stale, older
		"f04 xxxxxxxxxxxxxxx": {Added: 3},              // fresh, same commit as f01
		"f05 xxxxxxxxxxxxxxx": {Added: 1, Keep: true},  // the proposal's own
	}
	rank := func(f Fact) FactRank { return ranks[f.Text] }
	total := bytesOver4(md)

	for _, tc := range []struct {
		name    string
		limit   int
		evicted []string
		want    string
		fits    bool
	}{
		{"under limit: unchanged", total, nil, md, true},
		{
			"stale first, oldest commit first, only as many as needed", total - 1,
			[]string{"f03 xxxxxxxxxxxxxxx"},
			"# Facts: a1\n\n## A\n- f01 xxxxxxxxxxxxxxx\n- f02 xxxxxxxxxxxxxxx\n  - sub of f02 xxxxxxx\n\n## B\n- f04 xxxxxxxxxxxxxxx\n- f05 xxxxxxxxxxxxxxx\n", true,
		},
		{
			"all stale, sub-bullets leave with their fact", total - 12,
			[]string{"f03 xxxxxxxxxxxxxxx", "f02 xxxxxxxxxxxxxxx"},
			"# Facts: a1\n\n## A\n- f01 xxxxxxxxxxxxxxx\n\n## B\n- f04 xxxxxxxxxxxxxxx\n- f05 xxxxxxxxxxxxxxx\n", true,
		},
		{
			"then oldest fresh, ties by file order", total - 18,
			[]string{"f03 xxxxxxxxxxxxxxx", "f02 xxxxxxxxxxxxxxx", "f01 xxxxxxxxxxxxxxx"},
			"# Facts: a1\n\n## A\n\n## B\n- f04 xxxxxxxxxxxxxxx\n- f05 xxxxxxxxxxxxxxx\n", true,
		},
		{
			"the proposal's own facts stay; what cannot fit is refused, not evicted", 0,
			nil, md, false,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, evicted, fits := EvictFacts(md, tc.limit, bytesOver4, rank)
			require.Equal(t, tc.fits, fits)
			require.Equal(t, tc.want, kept)
			var texts []string
			for _, f := range evicted {
				texts = append(texts, f.Text)
			}
			require.Equal(t, tc.evicted, texts)
			if fits {
				require.LessOrEqual(t, bytesOver4(kept), tc.limit)
			}
			if len(evicted) > 0 {
				requireFile(t, kept)
			}
			// Deterministic and stable: evicting again at the same limit
			// removes nothing more.
			again, more, _ := EvictFacts(kept, tc.limit, bytesOver4, rank)
			if fits {
				require.Equal(t, kept, again)
				require.Empty(t, more)
			}
		})
	}

	_, evicted, _ := EvictFacts(md, total-12, bytesOver4, rank)
	require.Equal(t, Fact{Section: "A", Text: "f02 xxxxxxxxxxxxxxx", Line: 5, More: []string{"  - sub of f02 xxxxxxx"}}, evicted[1], "line numbers refer to the input")
}

func TestEvictFactsCountCalls(t *testing.T) {
	md := "# Facts: a1\n\n## A\n"
	for i := 0; i < 1000; i++ {
		md += "- fact number " + time.Duration(i).String() + "\n"
	}
	calls := 0
	count := func(s string) int { calls++; return bytesOver4(s) }
	kept, evicted, fits := EvictFacts(md, bytesOver4(md)/2, count, func(f Fact) FactRank { return FactRank{} })
	require.True(t, fits)
	require.LessOrEqual(t, bytesOver4(kept), bytesOver4(md)/2)
	require.NotEmpty(t, evicted)
	require.Less(t, calls, 25, "galloping and bisecting, not one count per fact")
	// Ranks tie everywhere: file order decides.
	require.Equal(t, "fact number 0s", evicted[0].Text)
}

func TestEvictLoops(t *testing.T) {
	now := date(2026, 3, 1)
	md := "# Open Loops: a1\n\n## Critical\n" +
		"- [ ] loop_001: critical and old — opened 2026-01-01 | priority: critical\n" +
		"\n## Open\n" +
		"- [ ] loop_002: low but young — opened 2026-02-20 | priority: low\n" +
		"- [ ] loop_003: low and old — opened 2026-02-01 | priority: low\n" +
		"- [ ] loop_004: low and older — opened 2026-01-10 | priority: low\n" +
		"- [ ] loop_005: normal and old — opened 2026-01-01 | priority: normal\n" +
		"- [ ] hand-written, no date\n" +
		"\n## Closed\n" +
		"- [x] loop_006: closed recently — closed 2026-02-25 | run_a | opened 2026-02-01 | priority: low\n" +
		"- [x] loop_007: closed long ago — closed 2026-02-01 | run_b | opened 2026-01-01 | priority: low\n" +
		"- [x] закрита вручну — закрита 2026-02-02 | run_c\n" +
		"- [x] closed without date\n"
	total := bytesOver4(md)
	ids := func(ls []Loop) []string {
		var out []string
		for _, l := range ls {
			out = append(out, l.ID+l.Text)
		}
		return out
	}

	kept, closed, frozen := EvictLoops(md, total, bytesOver4, now)
	require.Equal(t, md, kept)
	require.Nil(t, closed)
	require.Nil(t, frozen)

	// Slightly over: closed loops older than 7 days go, nothing is frozen.
	kept, closed, frozen = EvictLoops(md, total-1, bytesOver4, now)
	require.Equal(t, []string{"loop_007closed long ago", "закрита вручну"}, ids(closed))
	require.Nil(t, frozen)
	require.NotContains(t, kept, "loop_007")
	require.Contains(t, kept, "loop_006")
	require.Contains(t, kept, "closed without date")
	requireFile(t, kept)

	// Far over: old low-priority loops are frozen, oldest first, and no
	// other loop is touched even if the limit is still not met.
	kept, closed, frozen = EvictLoops(md, 0, bytesOver4, now)
	require.Len(t, closed, 2)
	require.Equal(t, []string{"loop_004low and older", "loop_003low and old"}, ids(frozen))
	require.Equal(t, 8, frozen[1].Line, "line numbers refer to the input")
	require.Equal(t, "# Open Loops: a1\n\n## Critical\n"+
		"- [ ] loop_001: critical and old — opened 2026-01-01 | priority: critical\n"+
		"\n## Open\n"+
		"- [ ] loop_002: low but young — opened 2026-02-20 | priority: low\n"+
		"- [ ] loop_005: normal and old — opened 2026-01-01 | priority: normal\n"+
		"- [ ] hand-written, no date\n"+
		"\n## Closed\n"+
		"- [x] loop_006: closed recently — closed 2026-02-25 | run_a | opened 2026-02-01 | priority: low\n"+
		"- [x] closed without date\n", kept)

	// Just enough over that freezing one loop suffices.
	afterClosed, _, _ := EvictLoops(md, total-1, bytesOver4, now)
	kept, _, frozen = EvictLoops(md, bytesOver4(afterClosed)-1, bytesOver4, now)
	require.Equal(t, []string{"loop_004low and older"}, ids(frozen))
	require.Contains(t, kept, "loop_003")
}

func TestEvictionRecordLines(t *testing.T) {
	at := time.Date(2026, 3, 1, 23, 0, 0, 0, time.UTC)
	require.Equal(t, "- MinIO has versioning — added 2026-01-20, evicted 2026-03-01 (stale-fact)",
		EvictedFactLine(Fact{Section: "Технічні знання", Text: "MinIO has versioning", Line: 9}, date(2026, 1, 20), at, WhyStaleFact))
	require.Equal(t, "- A fact  with  its  spacing — evicted 2026-03-01 (over-limit)\n  - and a sub-bullet",
		EvictedFactLine(Fact{Text: "A fact  with  its  spacing", More: []string{"  - and a sub-bullet"}}, time.Time{}, at, WhyOverLimit), "verbatim, with what belongs to it")
	require.Equal(t, "- loop_003: Confirm MinIO versioning — opened 2026-02-01 | priority: low | frozen 2026-03-01",
		FrozenLoopLine(Loop{ID: "loop_003", Text: "Confirm MinIO versioning", Priority: "low", Opened: date(2026, 2, 1)}, at))
	require.Equal(t, "- hand-written — frozen 2026-03-01", FrozenLoopLine(Loop{Text: "hand-written"}, at))
}

// TestEvictionFlow is the write plane's sequence: evict, then record what
// left Layer 1 in decisions.md.
func TestEvictionFlow(t *testing.T) {
	now := date(2026, 3, 1)
	facts := readTestdata(t, "facts.md")
	kept, evicted, fits := EvictFacts(facts, bytesOver4(facts)-30, bytesOver4, func(f Fact) FactRank {
		return FactRank{Stale: f.Section == "Домен", Added: int64(f.Line)}
	})
	require.True(t, fits)
	require.Len(t, evicted, 2)
	var lines []string
	for _, f := range evicted {
		lines = append(lines, EvictedFactLine(f, now.AddDate(0, -2, 0), now, WhyStaleFact))
	}
	decisions := AppendToDecisionsSection(readTestdata(t, "decisions.md"), "garden-bloom-curator", SectionEvictedFacts, lines)
	require.Contains(t, decisions, "- Old fact about NotebookLM quotas — evicted 2026-02-11 (stale-fact)\n- Garden Bloom is a digital garden: notes are published from an Obsidian vault — added 2026-01-01, evicted 2026-03-01 (stale-fact)\n- Notes move through the states seed → sprout → evergreen — added 2026-01-01, evicted 2026-03-01 (stale-fact)\n  - a note becomes evergreen only after human review\n")
	require.NotContains(t, kept, "digital garden")
	require.NotContains(t, kept, "evergreen")
	require.Contains(t, kept, "## Домен\n\n## Технічні знання")
}

func TestEvictNothingToRemove(t *testing.T) {
	now := date(2026, 3, 1)
	facts := "# Facts: a1\n\n## A\n"
	kept, evicted, fits := EvictFacts(facts, 0, bytesOver4, func(Fact) FactRank { return FactRank{} })
	require.Equal(t, facts, kept)
	require.Nil(t, evicted)
	require.False(t, fits)

	loops := "# Open Loops: a1\n\n## Critical\n- [ ] loop_001: x — opened 2026-01-01 | priority: critical\n"
	kept, closed, frozen := EvictLoops(loops, 0, bytesOver4, now)
	require.Equal(t, loops, kept, "only closed and old low-priority loops are evictable")
	require.Nil(t, closed)
	require.Nil(t, frozen)
}

// smallestRemovalBisect is the plain binary search smallestRemoval
// replaced, kept as its reference.
func smallestRemovalBisect(d *doc, base, order []int, limit int, count func(string) int) (int, string) {
	fits := func(k int) (string, bool) {
		s := withoutItems(d, append(base[:len(base):len(base)], order[:k]...))
		return s, count(s) <= limit
	}
	k := sort.Search(len(order)+1, func(k int) bool {
		_, ok := fits(k)
		return ok
	})
	if k > len(order) {
		k = len(order)
	}
	s, _ := fits(k)
	return k, s
}

// The galloping search gives what bisecting gives, on random files,
// removal orders, kept-out items and limits, wherever removing base alone
// does not fit (its precondition).
func TestSmallestRemovalMatchesBisection(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	words := func(s string) int { return len(strings.Fields(s)) }
	for range 3000 {
		var b strings.Builder
		b.WriteString("# Facts: a\n\n## A\n")
		n := rng.IntN(40)
		for i := range n {
			fmt.Fprintf(&b, "- fact %d%s\n", i, strings.Repeat(" w", rng.IntN(12)))
		}
		d := newDoc(b.String())
		facts := parseFacts(d)
		perm := rng.Perm(len(facts))
		nb := 0
		if len(perm) > 0 {
			nb = rng.IntN(min(3, len(perm)) + 1)
		}
		var base, order []int
		for i, j := range perm {
			if i < nb {
				base = append(base, facts[j].Line-1)
			} else {
				order = append(order, facts[j].Line-1)
			}
		}
		limit := rng.IntN(words(b.String()) + 2)
		if words(withoutItems(d, base)) <= limit {
			continue
		}
		wk, ws := smallestRemovalBisect(d, base, order, limit, words)
		gk, gs := smallestRemoval(d, base, order, limit, words)
		require.Equal(t, wk, gk)
		require.Equal(t, ws, gs)
	}
}
