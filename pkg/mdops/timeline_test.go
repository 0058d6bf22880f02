package mdops

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAddTimelineEntry(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2026, 2, 17, h, m, 0, 0, time.UTC) }
	md := AddTimelineEntry("", "a1", at(14, 30), TimelineEntry{RunID: "run_def456", ProposalID: "proposal_xyz", Status: "applied", Task: "Analyse\nproposal #42", Result: "Proposed a facts.md update"})
	require.Equal(t, "# Timeline: a1 / 2026-02-17\n\n## Runs\n\n### 14:30 — run_def456\n**Proposal:** proposal_xyz\n**Status:** applied\n**Task:** Analyse proposal #42\n**Result:** Proposed a facts.md update\n", md)
	requireFile(t, md)

	// Out-of-order arrivals are filed in time order; empty fields omitted.
	md = AddTimelineEntry(md, "a1", at(9, 15), TimelineEntry{RunID: "run_abc123", Status: "rejected"})
	md = AddTimelineEntry(md, "a1", at(23, 0), TimelineEntry{RunID: "run_late"})
	md = AddTimelineEntry(md, "a1", at(14, 30), TimelineEntry{RunID: "run_same_minute", Task: "second"})
	require.Equal(t, "# Timeline: a1 / 2026-02-17\n\n## Runs\n\n"+
		"### 09:15 — run_abc123\n**Status:** rejected\n\n"+
		"### 14:30 — run_def456\n**Proposal:** proposal_xyz\n**Status:** applied\n**Task:** Analyse proposal #42\n**Result:** Proposed a facts.md update\n\n"+
		"### 14:30 — run_same_minute\n**Task:** second\n\n"+
		"### 23:00 — run_late\n", md)
	requireFile(t, md)

	// Idempotent.
	require.Equal(t, md, AddTimelineEntry(md, "a1", at(9, 15), TimelineEntry{RunID: "run_abc123", Status: "rejected"}))
}

func TestAddTimelineEntryExistingFile(t *testing.T) {
	at := time.Date(2026, 2, 17, 12, 0, 0, 0, time.UTC)
	// Spec §3.2 Ukrainian section is reused; other content stays.
	md := "# Timeline: a1 / 2026-02-17\n\n## Запуски\n\n### 09:15 — run_abc123\n**Тривалість:** 45с\n\n## Notes\nkept\n"
	require.Equal(t, "# Timeline: a1 / 2026-02-17\n\n## Запуски\n\n### 09:15 — run_abc123\n**Тривалість:** 45с\n\n### 12:00 — run_x\n**Status:** applied\n\n## Notes\nkept\n",
		AddTimelineEntry(md, "a1", at, TimelineEntry{RunID: "run_x", Status: "applied"}))

	// A missing Runs section is created at the end.
	require.Equal(t, "# Timeline: a1 / 2026-02-17\nintro\n\n## Runs\n\n### 12:00\n",
		AddTimelineEntry("# Timeline: a1 / 2026-02-17\nintro\n", "a1", at, TimelineEntry{}))
}

// Spec DiffMem §3.2: a day's timeline file is at most 2,000 tokens and an
// entry carries the run's duration. Older entries of the day fold into one
// summary line; the newest entries stay whole.
func TestTimelineDayStaysWithinLimit(t *testing.T) {
	md := ""
	at := date(2026, 2, 17)
	for i := range 200 {
		md = AddTimelineEntry(md, "a1", at.Add(time.Duration(i)*4*time.Minute), TimelineEntry{
			RunID: fmt.Sprintf("run_%03d", i), ProposalID: fmt.Sprintf("proposal_%03d", i), Status: "applied",
			Task: "Analyse the replication lag of the eastern region", Result: "updated facts.md", Duration: 45 * time.Second})
		md = FoldTimeline(md, 500, bytesOver4)
		require.LessOrEqual(t, bytesOver4(md), 500, "entry %d", i)
		requireFile(t, md)
		require.Contains(t, md, fmt.Sprintf("### %s — run_%03d\n**Duration:** 45s\n", at.Add(time.Duration(i)*4*time.Minute).Format("15:04"), i), "the newest entry stays whole")
	}
	require.Regexp(t, `\n## Runs\n\n\*\*Earlier:\*\* 1\d\d runs 00:00–\d\d:\d\d folded \(see git history\)\n\n### `, md)
	require.Equal(t, 1, strings.Count(md, "**Earlier:**"))
	// Under the limit nothing changes.
	require.Equal(t, md, FoldTimeline(md, 10000, bytesOver4))
}
