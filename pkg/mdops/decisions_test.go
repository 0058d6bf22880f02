package mdops

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSlugAndDecisionID(t *testing.T) {
	for _, tc := range []struct{ title, want string }{
		{"Use MinIO versioning", "use-minio-versioning"},
		{"  Use   MinIO -- versioning!! ", "use-minio-versioning"},
		{"Обмежити facts.md 8 000 токенів", "обмежити-facts-md-8-000-токенів"},
		{"Ґанок і Їжак", "ґанок-і-їжак"},
		{"C++ / Go: 2 → 3", "c-go-2-3"},
		{"???", "decision"},
		{strings.Repeat("ab ", 40), strings.TrimSuffix(strings.Repeat("ab-", 20), "-")},
		{strings.Repeat("я", 70), strings.Repeat("я", 60)},
	} {
		got := Slug(tc.title)
		require.Equal(t, tc.want, got, tc.title)
		require.LessOrEqual(t, len([]rune(got)), 60)
	}
	require.Equal(t, "2026-02-17-use-minio", DecisionID(time.Date(2026, 2, 17, 23, 59, 0, 0, time.UTC), "Use MinIO"))
	// The UTC day counts, not the local one.
	kyiv := time.FixedZone("EET", 2*3600)
	require.Equal(t, "2026-02-16-x", DecisionID(time.Date(2026, 2, 17, 1, 0, 0, 0, kyiv), "x"))
}

func TestAddDecision(t *testing.T) {
	full := Decision{
		Title: "Use MinIO versioning", Context: "We lost a file once.", Decision: "Enable versioning.",
		Rationale: "Cheap insurance.", Consequences: "More storage:\n- about 10% more\n- lifecycle rule needed", RunID: "run_abc",
	}
	const fullEntry = "## 2026-02-17 — Use MinIO versioning\n**Status:** accepted\n**Context:** We lost a file once.\n**Decision:** Enable versioning.\n**Rationale:** Cheap insurance.\n**Consequences:** More storage:\n- about 10% more\n- lifecycle rule needed\n**Run:** run_abc\n"
	for _, tc := range []struct {
		name, md string
		d        Decision
		date     time.Time
		want     string
	}{
		{"new file", "", full, day0, "# Decisions: a1\n\n" + fullEntry},
		{
			"minimal entry after existing", "# Decisions: a1\n\n" + fullEntry,
			Decision{Title: "Second", Status: "proposed"}, days(1),
			"# Decisions: a1\n\n" + fullEntry + "\n## 2026-02-18 — Second\n**Status:** proposed\n",
		},
		{
			"before appendix sections", "# Decisions: a1\n\n" + fullEntry + "\n## Evicted facts\n- old — evicted 2026-02-01 (stale-fact)\n",
			Decision{Title: "Second"}, days(1),
			"# Decisions: a1\n\n" + fullEntry + "\n## 2026-02-18 — Second\n**Status:** accepted\n\n## Evicted facts\n- old — evicted 2026-02-01 (stale-fact)\n",
		},
		{
			"first entry before appendix", "# Decisions: a1\n\n## Frozen loops\n- x\n",
			Decision{Title: "First"}, day0,
			"# Decisions: a1\n\n## 2026-02-17 — First\n**Status:** accepted\n\n## Frozen loops\n- x\n",
		},
		{
			"date from Decision.Date, fields sanitised and folded", "",
			Decision{Title: "Перейти\nна <b>Go</b>", Status: " accepted \n now", Context: "<i>why</i>  \n\n", RunID: " run_x ", Date: days(-1)}, time.Time{},
			"# Decisions: a1\n\n## 2026-02-16 — Перейти на Go\n**Status:** accepted now\n**Context:** why\n**Run:** run_x\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := AddDecision(tc.md, "a1", tc.d, tc.date)
			require.NoError(t, err)
			require.Equal(t, tc.want, out)
			requireFile(t, out)
			again, err := AddDecision(out, "a1", tc.d, tc.date)
			require.NoError(t, err)
			require.Equal(t, out, again, "adding the same decision twice must be a no-op")
		})
	}
}

func TestAddDecisionErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    Decision
		date time.Time
		err  error
	}{
		{"no title", Decision{Context: "x"}, day0, ErrBadContent},
		{"blank title", Decision{Title: " \n "}, day0, ErrBadContent},
		{"no date", Decision{Title: "x"}, time.Time{}, ErrBadContent},
		{"heading in field", Decision{Title: "x", Context: "a\n## Injected"}, day0, ErrBadContent},
		{"field label in field", Decision{Title: "x", Rationale: "a\n**Status:** rejected"}, day0, ErrBadContent},
		{"setext underline in field", Decision{Title: "x", Decision: "a\n---"}, day0, ErrBadContent},
		{"unclosed fence in field", Decision{Title: "x", Context: "see\n```go\ncode"}, day0, ErrBadContent},
		{"script in title", Decision{Title: "<script>x</script>"}, day0, ErrScript},
		{"javascript link in field", Decision{Title: "x", Context: "[a](javascript:alert(1))"}, day0, ErrScript},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := AddDecision("", "a1", tc.d, tc.date)
			require.ErrorIs(t, err, tc.err)
			require.Empty(t, out)
		})
	}
	// A closed fence is fine and round-trips.
	d := Decision{Title: "x", Context: "see\n```go\n## not a heading\n```"}
	out, err := AddDecision("", "a1", d, day0)
	require.ErrorIs(t, err, ErrBadContent, "lines starting with # are refused even inside code")
	require.Empty(t, out)
	d.Context = "see\n```go\nfunc main() {}\n```"
	out, err = AddDecision("", "a1", d, day0)
	require.NoError(t, err)
	require.Equal(t, d.Context, ParseDecisions(out)[0].Context)
}

func TestParseDecisionsRoundTrip(t *testing.T) {
	in := []Decision{
		{Title: "Use MinIO", Status: "accepted", Context: "c1", Decision: "d1", Rationale: "r1", Consequences: "k1\n\n- multi\n- line", RunID: "run_1"},
		{Title: "Use MinIO", Status: "superseded", Decision: "same title, same day"},
		{Title: "Обмежити facts.md", Status: "accepted", Context: "Контекст — з тире", RunID: "run_2"},
	}
	md := ""
	for i, d := range in {
		var err error
		md, err = AddDecision(md, "a1", d, days(i/2))
		require.NoError(t, err)
	}
	got := ParseDecisions(md)
	require.Len(t, got, 3)
	want := []Decision{in[0], in[1], in[2]}
	want[0].ID, want[0].Date = "2026-02-17-use-minio", date(2026, 2, 17)
	want[1].ID, want[1].Date = "2026-02-17-use-minio-2", date(2026, 2, 17)
	want[2].ID, want[2].Date = "2026-02-18-обмежити-facts-md", date(2026, 2, 18)
	require.Equal(t, want, got)

	// Re-adding a parsed decision is a no-op: the parse is faithful.
	for _, d := range got {
		again, err := AddDecision(md, "a1", d, d.Date)
		require.NoError(t, err)
		require.Equal(t, md, again)
	}
}

func TestParseDecisionsTestdata(t *testing.T) {
	got := ParseDecisions(readTestdata(t, "decisions.md"))
	require.Equal(t, []Decision{
		{
			ID: "2026-02-10-use-one-monorepo-for-all-agent-memory", Title: "Use one monorepo for all agent memory", Status: "accepted",
			Context: "Agents need human-readable, diffable memory.", Decision: "Keep memory/<agentId>/ folders in one git repository.",
			Rationale: "One place to audit; cheap cross-agent history.", Consequences: "Repository size grows; needs periodic gc.",
			RunID: "run_a1", Date: date(2026, 2, 10),
		},
		{
			ID: "2026-02-12-обмежити-facts-md-8-000-токенів", Title: "Обмежити facts.md 8 000 токенів", Status: "Прийнято",
			Context: "Контекст агента зростає без меж.", Decision: "Жорсткий ліміт і витіснення.", RunID: "run_b2", Date: date(2026, 2, 12),
		},
	}, got)
	require.Nil(t, ParseDecisions("# Decisions: a1\n\n## Not a decision\n**Status:** x\n"))
}

func TestLastDecisions(t *testing.T) {
	md := "# Decisions: a1\n\n" +
		"## 2026-02-10 — A\n**Status:** accepted\n\n" +
		"## 2026-02-12 — B\n**Status:** accepted\n\n" +
		"## 2026-02-11 — C (added late, older date)\n**Status:** accepted\n\n" +
		"## 2026-02-12 — D\n**Status:** accepted\n"
	titles := func(ds []Decision) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.Title)
		}
		return out
	}
	require.Equal(t, []string{"D", "B", "C (added late, older date)", "A"}, titles(LastDecisions(md, 10)))
	require.Equal(t, []string{"D", "B"}, titles(LastDecisions(md, 2)))
	require.Nil(t, LastDecisions(md, 0))
	require.Nil(t, LastDecisions("", 5))
}

func TestAppendToDecisionsSection(t *testing.T) {
	out := AppendToDecisionsSection("", "a1", SectionEvictedFacts, []string{"- f1 — evicted 2026-03-01 (stale-fact)", "", "f2"})
	require.Equal(t, "# Decisions: a1\n\n## Evicted facts\n- f1 — evicted 2026-03-01 (stale-fact)\n- f2\n", out)
	requireFile(t, out)

	// Idempotent, appends only what is new, to the end of the section;
	// an entry's further lines are indented under it.
	out = AppendToDecisionsSection(out, "a1", "evicted FACTS", []string{"f2", "f3\nwrapped"})
	require.Equal(t, "# Decisions: a1\n\n## Evicted facts\n- f1 — evicted 2026-03-01 (stale-fact)\n- f2\n- f3\n  wrapped\n", out)
	require.Equal(t, out, AppendToDecisionsSection(out, "a1", SectionEvictedFacts, []string{"f3"}))
	require.Equal(t, out, AppendToDecisionsSection(out, "a1", SectionEvictedFacts, nil))

	// A new section goes to the end; decisions added later go before it.
	out = AppendToDecisionsSection(out, "a1", SectionFrozenLoops, []string{"- loop_001: x — opened 2026-01-01 | priority: low | frozen 2026-03-01"})
	out, err := AddDecision(out, "a1", Decision{Title: "Later"}, day0)
	require.NoError(t, err)
	require.Equal(t, "# Decisions: a1\n\n## 2026-02-17 — Later\n**Status:** accepted\n\n## Evicted facts\n- f1 — evicted 2026-03-01 (stale-fact)\n- f2\n- f3\n  wrapped\n\n## Frozen loops\n- loop_001: x — opened 2026-01-01 | priority: low | frozen 2026-03-01\n", out)
}

func TestDecisionsGolden(t *testing.T) {
	md := readTestdata(t, "decisions.md")
	out, err := AddDecision(md, "garden-bloom-curator", Decision{
		Title:        "Freeze low-priority loops after 14 days",
		Context:      "open_loops.md hit its 2 000-token limit.",
		Decision:     "Move low-priority loops older than 14 days to decisions.md.",
		Rationale:    "Spec §11.3.",
		Consequences: "Frozen loops must be reopened by hand.",
		RunID:        "run_c3",
	}, day0)
	require.NoError(t, err)
	out = AppendToDecisionsSection(out, "garden-bloom-curator", SectionFrozenLoops, []string{
		FrozenLoopLine(Loop{ID: "loop_002", Text: "Confirm MinIO versioning for all buckets", Priority: "low", Opened: date(2026, 1, 20)}, day0),
	})
	requireFile(t, out)
	golden(t, "decisions.golden.md", out)
	require.Len(t, ParseDecisions(out), 3)
}
