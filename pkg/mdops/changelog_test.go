package mdops

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAddChangelogEntry(t *testing.T) {
	at := time.Date(2026, 2, 17, 14, 30, 59, 0, time.UTC)
	out := AddChangelogEntry("", "a1", at, "run_abc123", "proposal_xyz", []string{"**facts.md:** added 2 facts", "- **open_loops.md:** closed loop_003", ""}, 30)
	require.Equal(t, "# Changelog: a1\n\n## 2026-02-17\n\n### 14:30 — run_abc123 / proposal_xyz\n- **facts.md:** added 2 facts\n- **open_loops.md:** closed loop_003\n", out)
	requireFile(t, out)

	// Idempotent.
	require.Equal(t, out, AddChangelogEntry(out, "a1", at, "run_abc123", "proposal_xyz", []string{"**facts.md:** added 2 facts", "**open_loops.md:** closed loop_003"}, 30))

	// Later the same day: on top of the day.
	out = AddChangelogEntry(out, "a1", at.Add(2*time.Hour), "run_def", "", []string{"**snapshot.md:** updated"}, 30)
	// Earlier the same day (a late retry): below the later entries.
	out = AddChangelogEntry(out, "a1", at.Add(-5*time.Hour), "", "proposal_early", nil, 30)
	// Next day: new date heading above.
	out = AddChangelogEntry(out, "a1", at.Add(24*time.Hour), "run_next", "proposal_n", []string{"x"}, 30)
	// An older day than any: new date heading at the bottom.
	out = AddChangelogEntry(out, "a1", at.Add(-72*time.Hour), "run_old", "", []string{"y"}, 30)
	require.Equal(t, "# Changelog: a1\n\n"+
		"## 2026-02-18\n\n### 14:30 — run_next / proposal_n\n- x\n\n"+
		"## 2026-02-17\n\n### 16:30 — run_def\n- **snapshot.md:** updated\n\n"+
		"### 14:30 — run_abc123 / proposal_xyz\n- **facts.md:** added 2 facts\n- **open_loops.md:** closed loop_003\n\n"+
		"### 09:30 — proposal_early\n\n"+
		"## 2026-02-14\n\n### 14:30 — run_old\n- y\n", out)
	requireFile(t, out)

	// Times are rendered in UTC.
	kyiv := time.FixedZone("EET", 2*3600)
	out2 := AddChangelogEntry("", "a1", time.Date(2026, 2, 18, 1, 15, 0, 0, kyiv), "run_z", "", nil, 30)
	require.Equal(t, "# Changelog: a1\n\n## 2026-02-17\n\n### 23:15 — run_z\n", out2)
}

func TestChangelogRotation(t *testing.T) {
	md := ""
	start := time.Date(2026, 2, 1, 8, 0, 0, 0, time.UTC)
	for i := 0; i < 45; i++ {
		at := start.Add(time.Duration(i) * 7 * time.Hour) // ~3.4 entries a day
		md = AddChangelogEntry(md, "a1", at, fmt.Sprintf("run_%02d", i), "", []string{fmt.Sprintf("**facts.md:** change %d", i)}, DefaultChangelogKeep)
		requireFile(t, md)
	}
	require.Equal(t, DefaultChangelogKeep, strings.Count(md, "\n### "))
	require.Contains(t, md, "run_44")
	require.Contains(t, md, "run_15")
	require.NotContains(t, md, "run_14")
	// No empty date headings: every "## " is followed by an entry.
	lines := Lines(md)
	for i, l := range lines {
		if strings.HasPrefix(l, "## ") {
			require.Equal(t, "", lines[i+1])
			require.True(t, strings.HasPrefix(lines[i+2], "### "), "empty day heading %q", l)
		}
	}
	// The newest entry is first.
	first := strings.Index(md, "### ")
	require.True(t, strings.HasPrefix(md[first:], "### 04:00 — run_44"), md[first:first+30])

	// keep <= 0 disables rotation; a smaller keep trims further.
	require.Equal(t, 31, strings.Count(AddChangelogEntry(md, "a1", start.Add(400*time.Hour), "run_x", "", nil, 0), "\n### "))
	small := AddChangelogEntry(md, "a1", start.Add(400*time.Hour), "run_x", "", nil, 2)
	require.Equal(t, 2, strings.Count(small, "\n### "))
	require.Equal(t, 2, strings.Count(small, "\n## "), "one day for run_x, one for run_44")
}

func TestChangelogPreservesUnknownContent(t *testing.T) {
	md := "# Changelog: a1\nIntro line kept.\n\n## 2026-02-17\nDay note kept.\n\n### 10:00 — run_a\n- a\n  continuation kept\n\n#### detail kept\n\n## Notes\nHand-written notes.\n### Not an entry\n"
	out := AddChangelogEntry(md, "a1", time.Date(2026, 2, 17, 11, 0, 0, 0, time.UTC), "run_b", "", []string{"b"}, 30)
	require.Equal(t, "# Changelog: a1\nIntro line kept.\n\n## 2026-02-17\nDay note kept.\n\n### 11:00 — run_b\n- b\n\n### 10:00 — run_a\n- a\n  continuation kept\n\n#### detail kept\n\n## Notes\nHand-written notes.\n### Not an entry\n", out)

	// Rotating everything out keeps a day heading that has text of its own.
	out = AddChangelogEntry(md, "a1", time.Date(2026, 2, 18, 9, 0, 0, 0, time.UTC), "run_c", "", nil, 1)
	require.Equal(t, "# Changelog: a1\nIntro line kept.\n\n## 2026-02-18\n\n### 09:00 — run_c\n\n## 2026-02-17\nDay note kept.\n\n## Notes\nHand-written notes.\n### Not an entry\n", out)
}
