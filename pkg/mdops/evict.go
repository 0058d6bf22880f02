package mdops

import (
	"sort"
	"strings"
	"time"
)

// Eviction thresholds of spec §11.3.
const (
	// StaleFactAge: a fact not added or used for longer is evicted first.
	StaleFactAge = 30 * 24 * time.Hour
	// ClosedLoopRetention: closed loops are kept this long.
	ClosedLoopRetention = 7 * 24 * time.Hour
	// FreezeLoopAge: open low-priority loops older than this may be frozen.
	FreezeLoopAge = 14 * 24 * time.Hour
)

// Eviction reasons, as recorded in decisions.md and commit messages.
const (
	// WhyStaleFact: unused for more than StaleFactAge.
	WhyStaleFact = "stale-fact"
	// WhyOverLimit: evicted only because the file was still over its limit.
	WhyOverLimit = "over-limit"
)

// Decisions.md sections that record what left Layer 1.
const (
	SectionEvictedFacts = "Evicted facts"
	SectionFrozenLoops  = "Frozen loops"
)

// FactRank is where a fact stands in the eviction order of spec §11.3 and
// integration §2.3.
type FactRank struct {
	// Stale: not added or used for more than StaleFactAge. Stale facts go
	// before all others.
	Stale bool
	// Added orders facts by the commit that added them (smaller is older):
	// many commits share a day, so a calendar date cannot order them.
	Added int64
	// Keep: never evicted — the fact was added by the proposal being
	// applied.
	Keep bool
}

// EvictFacts enforces the facts.md token limit (spec §11.3). If
// count(md) <= limit, md is returned unchanged with fits = true. Otherwise
// facts are removed in the order stale first, then oldest by Added, then by
// position (earlier line first) — never a fact ranked Keep — until
// count(kept) <= limit. Headings and section structure stay, even if a
// section becomes empty; a fact's sub-bullets leave with it.
//
// evicted lists the removed facts in removal order (line numbers refer to
// md). When even removing every fact that may go does not bring the file
// under limit, fits is false, kept is md and evicted is empty: the caller
// must refuse the change rather than evict what it cannot save.
//
// count must not grow when lines are removed: the smallest sufficient prefix
// of the order is found by galloping and binary search, so a tokenizer is
// called O(log n) times instead of once per fact.
func EvictFacts(md string, limit int, count func(string) int, rank func(Fact) FactRank) (kept string, evicted []Fact, fits bool) {
	if count(md) <= limit {
		return md, nil, true
	}
	d := newDoc(md)
	if norm := d.render(); count(norm) <= limit {
		return norm, nil, true // line endings and trailing blanks were the excess
	}
	type cand struct {
		f Fact
		r FactRank
	}
	var cands []cand
	for _, f := range parseFacts(d) {
		if r := rank(f); !r.Keep {
			cands = append(cands, cand{f, r})
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i].r, cands[j].r
		if a.Stale != b.Stale {
			return a.Stale
		}
		return a.Added < b.Added
	})
	order := make([]int, len(cands))
	for i, c := range cands {
		order[i] = c.f.Line - 1
	}
	k, out := smallestRemoval(d, nil, order, limit, count)
	if count(out) > limit {
		return md, nil, false
	}
	for _, c := range cands[:k] {
		evicted = append(evicted, c.f)
	}
	return out, evicted, true
}

// smallestRemoval finds the smallest k such that removing the items that
// start at lines base and order[:k] brings count under limit (k =
// len(order) if none does) and returns k and the resulting text. count is
// assumed monotonic in the removed set, and removing base alone (k = 0)
// must not fit: both callers have just counted that.
//
// Evictions are mostly of an item or two, so the search gallops up from
// k = 1 before bisecting: the same k, after two or three counts of a
// near-limit file instead of eight (counting is on every apply's path,
// issue #9).
func smallestRemoval(d *doc, base, order []int, limit int, count func(string) int) (int, string) {
	fitting := map[int]string{}
	fits := func(k int) bool {
		s := withoutItems(d, append(base[:len(base):len(base)], order[:k]...))
		if count(s) > limit {
			return false
		}
		fitting[k] = s
		return true
	}
	lo, hi := 0, 1 // removing order[:lo] does not fit; hi is the next to try
	for hi <= len(order) && !fits(hi) {
		lo, hi = hi, 2*hi
	}
	hi = min(hi, len(order)+1) // removing order[:hi] fits, or hi is past the end
	k := lo + 1 + sort.Search(hi-lo-1, func(i int) bool { return fits(lo + 1 + i) })
	if k > len(order) {
		k = len(order)
	}
	s, ok := fitting[k]
	if !ok { // nothing fits: remove all of order
		s = withoutItems(d, append(base[:len(base):len(base)], order[:k]...))
	}
	return k, s
}

// withoutItems renders d without the list items starting at the given
// line indexes (and their continuation lines).
func withoutItems(d *doc, starts []int) string {
	drop := make(map[int]bool, len(starts))
	for _, i := range starts {
		for j := i; j < d.itemEnd(i); j++ {
			drop[j] = true
		}
	}
	out := make([]string, 0, len(d.lines))
	for i, l := range d.lines {
		if !drop[i] {
			out = append(out, l)
		}
	}
	return render(out)
}

// EvictLoops enforces the open_loops.md token limit (spec §11.3). If
// count(md) <= limit, md is returned unchanged. Otherwise:
//  1. every closed loop closed more than ClosedLoopRetention before now is
//     removed (they are due anyway; a closed loop without a date stays);
//  2. if still over the limit, open loops with priority "low" opened more
//     than FreezeLoopAge before now are removed ("frozen"), oldest first
//     (ties: earlier line first), until count(kept) <= limit.
//
// Other loops are never touched, so the result may still be over the limit;
// the caller decides what to do then. removedClosed is in file order, frozen
// in removal order, both with line numbers of md; record frozen loops in decisions.md with FrozenLoopLine
// and AppendToDecisionsSection(…, SectionFrozenLoops, …). count must be
// monotonic, as for EvictFacts.
func EvictLoops(md string, limit int, count func(string) int, now time.Time) (kept string, removedClosed, frozen []Loop) {
	if count(md) <= limit {
		return md, nil, nil
	}
	d := newDoc(md)
	if norm := d.render(); count(norm) <= limit {
		return norm, nil, nil
	}
	loops := parseLoops(d)
	var drop []int
	for _, lp := range loops {
		if lp.Closed && !lp.ClosedAt.IsZero() && now.Sub(lp.ClosedAt) > ClosedLoopRetention {
			removedClosed = append(removedClosed, lp)
			drop = append(drop, lp.Line-1)
		}
	}
	kept = withoutItems(d, drop)
	if count(kept) <= limit {
		return kept, removedClosed, nil
	}
	var cands []Loop
	for _, lp := range loops {
		if !lp.Closed && lp.Priority == PriorityLow && !lp.Opened.IsZero() && now.Sub(lp.Opened) > FreezeLoopAge {
			cands = append(cands, lp)
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].Opened.Before(cands[j].Opened) })
	order := make([]int, len(cands))
	for i, lp := range cands {
		order[i] = lp.Line - 1
	}
	k, out := smallestRemoval(d, drop, order, limit, count)
	if k == 0 && len(drop) == 0 {
		return md, nil, nil
	}
	if k > 0 {
		frozen = cands[:k:k]
	}
	return out, removedClosed, frozen
}

// EvictedFactLine renders the decisions.md record of an evicted fact, its
// text verbatim with the day it was added (when known) and the day it left:
// "- <fact> — added 2026-02-01, evicted 2026-03-01 (stale-fact)". The
// fact's sub-bullets and wrapped lines (Fact.More) follow, as they were.
func EvictedFactLine(f Fact, added, evicted time.Time, why string) string {
	var b strings.Builder
	b.WriteString("- " + f.Text + " — ")
	if !added.IsZero() {
		b.WriteString("added " + day(added) + ", ")
	}
	b.WriteString("evicted " + day(evicted) + " (" + strings.TrimSpace(why) + ")")
	for _, l := range f.More {
		b.WriteString("\n" + l)
	}
	return b.String()
}

// FrozenLoopLine renders the decisions.md record of a frozen loop:
// "- loop_003: <text> — opened 2026-02-01 | priority: low | frozen 2026-03-01".
// It keeps id, opened day and priority so the loop can be reopened by hand.
func FrozenLoopLine(l Loop, date time.Time) string {
	var b strings.Builder
	b.WriteString("- ")
	if l.ID != "" {
		b.WriteString(l.ID + ": ")
	}
	b.WriteString(collapseSpace(l.Text) + " —")
	if !l.Opened.IsZero() {
		b.WriteString(" opened " + day(l.Opened) + " |")
	}
	if l.Priority != "" {
		b.WriteString(" priority: " + l.Priority + " |")
	}
	b.WriteString(" frozen " + day(date))
	return b.String()
}
