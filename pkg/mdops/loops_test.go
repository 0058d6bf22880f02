package mdops

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func date(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

func TestOpenLoop(t *testing.T) {
	const base = "# Open Loops: a1\n\n## Open\n- [ ] loop_007: old — opened 2026-02-01 | priority: normal\n\n## Closed\n- [x] loop_009: done — closed 2026-02-02 | run_x | opened 2026-02-01 | priority: low\n"
	for _, tc := range []struct {
		name, md, section, text, priority string
		wantID, want                      string
	}{
		{
			name: "new file, default section Open", md: "", text: "Confirm MinIO versioning", priority: "low",
			wantID: "loop_001",
			want:   "# Open Loops: a1\n\n## Open\n- [ ] loop_001: Confirm MinIO versioning — opened 2026-02-17 | priority: low\n",
		},
		{
			name: "critical goes to Critical, created before Open", md: base, text: "Prod down", priority: "CRITICAL",
			wantID: "loop_010",
			want:   "# Open Loops: a1\n\n## Critical\n- [ ] loop_010: Prod down — opened 2026-02-17 | priority: critical\n\n## Open\n- [ ] loop_007: old — opened 2026-02-01 | priority: normal\n\n## Closed\n- [x] loop_009: done — closed 2026-02-02 | run_x | opened 2026-02-01 | priority: low\n",
		},
		{
			name: "empty priority is normal; id is max+1 over closed loops too", md: base, text: "New one",
			wantID: "loop_010",
			want:   "# Open Loops: a1\n\n## Open\n- [ ] loop_007: old — opened 2026-02-01 | priority: normal\n- [ ] loop_010: New one — opened 2026-02-17 | priority: normal\n\n## Closed\n- [x] loop_009: done — closed 2026-02-02 | run_x | opened 2026-02-01 | priority: low\n",
		},
		{
			name: "Waiting created before Closed", md: base, section: "waiting", text: "Reply from Olena", priority: "high",
			wantID: "loop_010",
			want:   "# Open Loops: a1\n\n## Open\n- [ ] loop_007: old — opened 2026-02-01 | priority: normal\n\n## Waiting\n- [ ] loop_010: Reply from Olena — opened 2026-02-17 | priority: high\n\n## Closed\n- [x] loop_009: done — closed 2026-02-02 | run_x | opened 2026-02-01 | priority: low\n",
		},
		{
			name: "custom section before Closed", md: base, section: "Ideas", text: "Try pgvector",
			wantID: "loop_010",
			want:   "# Open Loops: a1\n\n## Open\n- [ ] loop_007: old — opened 2026-02-01 | priority: normal\n\n## Ideas\n- [ ] loop_010: Try pgvector — opened 2026-02-17 | priority: normal\n\n## Closed\n- [x] loop_009: done — closed 2026-02-02 | run_x | opened 2026-02-01 | priority: low\n",
		},
		{
			name: "ukrainian Critical section reused", md: "# Open Loops: a1\n\n## Критичні\n- [ ] стара петля\n", text: "Нова петля\nз переносом", priority: "critical",
			wantID: "loop_001",
			want:   "# Open Loops: a1\n\n## Критичні\n- [ ] стара петля\n- [ ] loop_001: Нова петля з переносом — opened 2026-02-17 | priority: critical\n",
		},
		{
			name: "ids mentioned in text count", md: "# Open Loops: a1\n\n## Open\n- [ ] follow-up of loop_041\n", text: "x",
			wantID: "loop_042",
			want:   "# Open Loops: a1\n\n## Open\n- [ ] follow-up of loop_041\n- [ ] loop_042: x — opened 2026-02-17 | priority: normal\n",
		},
		{
			name: "ids beyond 999", md: "# Open Loops: a1\n\n## Open\n- [ ] loop_999: x — opened 2026-02-01 | priority: normal\n", text: "y",
			wantID: "loop_1000",
			want:   "# Open Loops: a1\n\n## Open\n- [ ] loop_999: x — opened 2026-02-01 | priority: normal\n- [ ] loop_1000: y — opened 2026-02-17 | priority: normal\n",
		},
		{
			name: "same open text is idempotent", md: base, text: "old",
			wantID: "loop_007",
			want:   base,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, id, err := OpenLoop(tc.md, "a1", tc.section, tc.text, tc.priority, day0)
			require.NoError(t, err)
			require.Equal(t, tc.wantID, id)
			require.Equal(t, tc.want, out)
			requireFile(t, out)
			again, id2, err := OpenLoop(out, "a1", tc.section, tc.text, tc.priority, days(1))
			require.NoError(t, err)
			require.Equal(t, out, again)
			require.Equal(t, id, id2)
		})
	}
}

func TestOpenLoopSequence(t *testing.T) {
	md := ""
	var ids []string
	for _, text := range []string{"a", "b", "c"} {
		var id string
		var err error
		md, id, err = OpenLoop(md, "a1", "", text, "", day0)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	require.Equal(t, []string{"loop_001", "loop_002", "loop_003"}, ids)

	// Closing does not free an id: the closed line still holds it.
	md, err := CloseLoop(md, "loop_003", "", "", days(1))
	require.NoError(t, err)
	_, id, err := OpenLoop(md, "a1", "", "d", "", days(1))
	require.NoError(t, err)
	require.Equal(t, "loop_004", id)

	// Documented limitation: once a loop's line has left the file (evicted
	// or removed by hand), the max+1 rule may hand its number out again.
	md = "# Open Loops: a1\n\n## Open\n- [ ] loop_001: a — opened 2026-02-17 | priority: normal\n"
	_, id, err = OpenLoop(md, "a1", "", "e", "", days(1))
	require.NoError(t, err)
	require.Equal(t, "loop_002", id)
}

func TestOpenLoopErrors(t *testing.T) {
	for _, tc := range []struct {
		name, section, text, priority string
		date                          time.Time
		err                           error
	}{
		{"bad priority", "", "x", "urgent", day0, ErrBadContent},
		{"empty text", "", "  \n ", "", day0, ErrBadContent},
		{"zero date", "", "x", "", time.Time{}, ErrBadContent},
		{"closed section", "Closed", "x", "", day0, ErrBadContent},
		{"ukrainian closed section", "Закриті (останні 7 днів)", "x", "", day0, ErrBadContent},
		{"metadata marker in text", "", "x — opened 2026-01-01 | priority: low", "", day0, ErrBadContent},
		{"script in text", "", "<script>", "", day0, ErrScript},
		{"handler in text", "", `<a onclick="x">`, "", day0, ErrScript},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, id, err := OpenLoop("", "a1", tc.section, tc.text, tc.priority, tc.date)
			require.ErrorIs(t, err, tc.err)
			require.Empty(t, out)
			require.Empty(t, id)
		})
	}
}

func TestCloseLoop(t *testing.T) {
	const md = "# Open Loops: a1\n\n## Critical\n- [ ] loop_001: Prod down — opened 2026-02-10 | priority: critical\n  - note under the loop\n\n## Open\n- [ ] loop_002: Check <b>x</b> — opened 2026-02-11 | priority: low\n"

	out, err := CloseLoop(md, "loop_001", "Fixed the\nDNS record | finally", "run_abc", day0)
	require.NoError(t, err)
	require.Equal(t, "# Open Loops: a1\n\n## Critical\n\n## Open\n- [ ] loop_002: Check <b>x</b> — opened 2026-02-11 | priority: low\n\n## Closed\n- [x] loop_001: Prod down — closed 2026-02-17 | run_abc | opened 2026-02-10 | priority: critical | resolution: Fixed the DNS record | finally\n", out)
	requireFile(t, out)

	out, err = CloseLoop(out, "loop_002", "", "manual-42", days(1))
	require.NoError(t, err)
	require.Equal(t, "# Open Loops: a1\n\n## Critical\n\n## Open\n\n## Closed\n- [x] loop_001: Prod down — closed 2026-02-17 | run_abc | opened 2026-02-10 | priority: critical | resolution: Fixed the DNS record | finally\n- [x] loop_002: Check <b>x</b> — closed 2026-02-18 | run: manual-42 | opened 2026-02-11 | priority: low\n", out)

	loops := ParseLoops(out)
	require.Len(t, loops, 2)
	require.Equal(t, Loop{ID: "loop_001", Text: "Prod down", Section: "Closed", Priority: "critical", Closed: true,
		Opened: date(2026, 2, 10), ClosedAt: date(2026, 2, 17), RunID: "run_abc", Resolution: "Fixed the DNS record | finally", Line: 8}, loops[0])
	require.Equal(t, "manual-42", loops[1].RunID)
	require.Empty(t, loops[1].Resolution)

	_, err = CloseLoop(out, "loop_001", "", "", day0)
	require.ErrorIs(t, err, ErrNotFound)
	require.Contains(t, err.Error(), "already closed")
	_, err = CloseLoop(out, "loop_404", "", "", day0)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = CloseLoop(out, "404", "", "", day0)
	require.ErrorIs(t, err, ErrBadContent)
	_, err = CloseLoop(md, "loop_001", "", "", time.Time{})
	require.ErrorIs(t, err, ErrBadContent)
	_, err = CloseLoop(md, "loop_001", "", "run x", day0)
	require.ErrorIs(t, err, ErrBadContent)
	_, err = CloseLoop(md, "loop_001", "<iframe src=x>", "", day0)
	require.ErrorIs(t, err, ErrScript)
}

func TestCloseLoopUsesExistingClosedSection(t *testing.T) {
	md := "# Open Loops: a1\n\n## Open\n- [ ] loop_001: a — opened 2026-02-10 | priority: normal\n\n## Закриті (останні 7 днів)\n- [x] стара — закрита 2026-02-16 | run_old\n\n## Notes\nfree text\n"
	out, err := CloseLoop(md, "loop_001", "ok", "run_1", day0)
	require.NoError(t, err)
	require.Equal(t, "# Open Loops: a1\n\n## Open\n\n## Закриті (останні 7 днів)\n- [x] стара — закрита 2026-02-16 | run_old\n- [x] loop_001: a — closed 2026-02-17 | run_1 | opened 2026-02-10 | priority: normal | resolution: ok\n\n## Notes\nfree text\n", out)
}

func TestParseLoops(t *testing.T) {
	got := ParseLoops(readTestdata(t, "open_loops.md"))
	require.Equal(t, []Loop{
		{ID: "loop_004", Text: "Restore nightly MinIO backup job", Section: "Critical", Priority: "critical", Opened: date(2026, 2, 14), Line: 4},
		{ID: "loop_002", Text: "Confirm MinIO versioning for all buckets", Section: "Open", Priority: "low", Opened: date(2026, 1, 20), Line: 7},
		{ID: "loop_005", Text: "Review proposal #42 for facts.md", Section: "Open", Priority: "normal", Opened: date(2026, 2, 16), Line: 8},
		{Text: "Ask Anna about the tag taxonomy", Section: "Open", Opened: date(2026, 2, 1), Line: 9},
		{Text: "Підтвердження від Олени щодо структури тегів", Section: "Waiting", Line: 12},
		{ID: "loop_001", Text: "Decide repository layout", Section: "Closed", Priority: "high", Closed: true, Opened: date(2026, 1, 15), ClosedAt: date(2026, 2, 1), RunID: "run_a1", Resolution: "Monorepo (variant B)", Line: 15},
		{ID: "loop_003", Text: "Check token counter", Section: "Closed", Priority: "normal", Closed: true, Opened: date(2026, 2, 10), ClosedAt: date(2026, 2, 15), RunID: "run_b2", Resolution: "tiktoken cl100k", Line: 16},
	}, got)

	// Spec §3.2 closed form and things that are not loops.
	got = ParseLoops("## Закриті\n- [X] петля — закрита 2026-02-16 | run_abc\n  - [ ] nested is not a loop\n- plain bullet\n```\n- [ ] in code\n```\n")
	require.Equal(t, []Loop{{Text: "петля", Section: "Закриті", Closed: true, ClosedAt: date(2026, 2, 16), RunID: "run_abc", Line: 2}}, got)
}

func TestLoopsGolden(t *testing.T) {
	md := readTestdata(t, "open_loops.md")
	out, id, err := OpenLoop(md, "garden-bloom-curator", "", "Migrate snapshots to the 2 000-token limit", "high", day0)
	require.NoError(t, err)
	require.Equal(t, "loop_006", id)
	out, err = CloseLoop(out, "loop_005", "Approved with edits", "run_c3", day0)
	require.NoError(t, err)
	requireFile(t, out)
	golden(t, "open_loops.golden.md", out)
}
