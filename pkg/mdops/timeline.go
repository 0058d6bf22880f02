package mdops

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// TimelineEntry is one run recorded in a day's timeline file. Empty fields
// are left out of the entry.
//
// File format (timeline/<date>.md; spec §3.2, English labels), oldest
// first:
//
//	# Timeline: <agentId> / 2026-02-17
//
//	## Runs
//
//	**Earlier:** 12 runs 00:03–09:02 folded (see git history)
//
//	### 09:15 — run_abc123
//	**Duration:** 45s
//	**Proposal:** proposal_xyz789
//	**Status:** applied
//	**Task:** Analyse proposal #42
//	**Result:** Proposed a facts.md update
type TimelineEntry struct {
	RunID, ProposalID, Task, Result, Status string
	// Duration is how long the run took; zero = unknown, left out.
	Duration time.Duration
}

// AddTimelineEntry adds e, at the time of day of at (UTC), to the "## Runs"
// section of a timeline/<date>.md file and returns the new file. Entries are
// kept in time order: the new one goes after every entry with the same or an
// earlier HH:MM, so same-minute entries stay in arrival order. An identical
// entry (same heading and lines) is not added twice. An empty md becomes
// "# Timeline: <agentID> / <UTC day of at>" with a "## Runs" section; a
// missing "## Runs" (or the spec's "## Запуски") section is created at the
// end. Field values are folded to one line; they come from the write plane
// and are not sanitised here, so agent-written Task/Result text must go
// through Sanitize first.
func AddTimelineEntry(md, agentID string, at time.Time, e TimelineEntry) string {
	at = at.UTC()
	clock := at.Format("15:04")
	heading := "### " + clock
	if run := collapseSpace(e.RunID); run != "" {
		heading += " — " + run
	}
	block := []string{heading}
	if e.Duration > 0 {
		block = append(block, "**Duration:** "+e.Duration.Round(time.Second).String())
	}
	for _, f := range []struct{ label, v string }{
		{"Proposal", e.ProposalID}, {"Status", e.Status}, {"Task", e.Task}, {"Result", e.Result},
	} {
		if v := collapseSpace(f.v); v != "" {
			block = append(block, "**"+f.label+":** "+v)
		}
	}

	d := newDoc(md)
	d.closeFence()
	if d.empty() {
		d.lines = []string{"# Timeline: " + collapseSpace(agentID) + " / " + day(at), "", "## Runs"}
		d.refresh()
	}
	isRuns := func(t string) bool {
		k := strings.ToLower(collapseSpace(t))
		return k == "runs" || k == "запуски"
	}
	start, end, ok := d.findH2(isRuns)
	if !ok {
		d.insertBlock(len(d.lines), []string{"## Runs"})
		start, end, _ = d.findH2(isRuns)
	}
	pos := end
	for i := start + 1; i < end; i++ {
		lvl, t, ok := d.heading(i)
		if !ok || lvl != 3 {
			continue
		}
		entryEnd := d.sectionEnd(i, 3)
		if strings.Join(trimBlankEdges(d.lines[i:entryEnd]), "\n") == strings.Join(block, "\n") {
			return d.render()
		}
		if m := clockRe.FindStringSubmatch(t); m != nil && m[1] > clock && pos == end {
			pos = i
		}
	}
	// Insert after the last non-blank line before pos, so the blank line
	// that separates entries is reused rather than doubled.
	for pos > start+1 && isBlank(d.lines[pos-1]) {
		pos--
	}
	d.insertBlock(pos, block)
	return d.render()
}

// earlierRe reads the summary line FoldTimeline leaves.
var earlierRe = regexp.MustCompile(`^\*\*Earlier:\*\* (\d+) runs? (\d\d:\d\d)–(\d\d:\d\d) folded`)

// FoldTimeline keeps a day's timeline file within limit tokens (spec DiffMem
// §3.2: ≤ 2,000 tokens a file): while it is over, the oldest "### " entry of
// its "## Runs" section is folded into one summary line at the top of the
// section — "**Earlier:** 12 runs 00:03–09:02 folded (see git history)" —
// which counts the folded entries and their time span; the entries
// themselves stay in git history and the changelog. The newest entry is
// never folded, so a file whose last entry alone is over the limit stays
// over it. md is returned unchanged when it fits or has no such section.
func FoldTimeline(md string, limit int, count func(string) int) string {
	if count(md) <= limit {
		return md
	}
	d := newDoc(md)
	isRuns := func(t string) bool {
		k := strings.ToLower(collapseSpace(t))
		return k == "runs" || k == "запуски"
	}
	for count(d.render()) > limit {
		start, end, ok := d.findH2(isRuns)
		if !ok {
			break
		}
		var entries []int
		for i := start + 1; i < end; i++ {
			if lvl, _, ok := d.heading(i); ok && lvl == 3 {
				entries = append(entries, i)
			}
		}
		if len(entries) < 2 {
			break
		}
		first := entries[0]
		_, title, _ := d.heading(first)
		clock := ""
		if m := clockRe.FindStringSubmatch(title); m != nil {
			clock = m[1]
		}
		n, from, to := 1, clock, clock
		summary := -1
		for i := start + 1; i < first; i++ {
			if m := earlierRe.FindStringSubmatch(d.lines[i]); m != nil {
				summary = i
				k, _ := strconv.Atoi(m[1])
				n, from = k+1, m[2]
				if to == "" {
					to = m[3]
				}
			}
		}
		if from == "" {
			from = to
		}
		line := fmt.Sprintf("**Earlier:** %d runs %s–%s folded (see git history)", n, from, to)
		d.removeLines(first, d.sectionEnd(first, 3))
		if summary >= 0 {
			d.lines[summary] = line
			d.refresh()
		} else {
			d.insertBlock(start+1, []string{line})
		}
	}
	return d.render()
}
