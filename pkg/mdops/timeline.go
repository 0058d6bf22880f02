package mdops

import (
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
//	### 09:15 — run_abc123
//	**Proposal:** proposal_xyz789
//	**Status:** applied
//	**Task:** Analyse proposal #42
//	**Result:** Proposed a facts.md update
type TimelineEntry struct {
	RunID, ProposalID, Task, Result, Status string
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
	for _, f := range []struct{ label, v string }{
		{"Proposal", e.ProposalID}, {"Status", e.Status}, {"Task", e.Task}, {"Result", e.Result},
	} {
		if v := collapseSpace(f.v); v != "" {
			block = append(block, "**"+f.label+":** "+v)
		}
	}

	d := newDoc(md)
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
