package memdiff

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/mdops"
)

// ic builds an ItemChange tersely for the tables.
func ic(item, change, section, before, after string) ItemChange {
	return ItemChange{Item: item, Change: change, Section: section, Before: before, After: after}
}

func TestItemsFacts(t *testing.T) {
	base := `# Facts: curator

## Infrastructure
- MinIO runs on storage-01
- Backups are nightly at 02:00
- Gateway port is 8080

## People
- Anna owns the tag taxonomy
- Олена відповідає за структуру тегів
`
	replace := func(pairs ...string) string { return strings.NewReplacer(pairs...).Replace(base) }
	cases := []struct {
		name          string
		before, after string
		want          []ItemChange
	}{
		{"unchanged", base, base, nil},
		{"whitespace and order only", base, strings.Replace(replace("- Backups are nightly at 02:00\n", ""),
			"- MinIO runs on storage-01\n", "- Backups are nightly at 02:00   \n- MinIO runs on storage-01\n", 1), nil},
		{"added", base, replace("- Gateway port is 8080\n", "- Gateway port is 8080\n- Loki keeps logs for 14 days\n"),
			[]ItemChange{ic("fact", "added", "Infrastructure", "", "Loki keeps logs for 14 days")}},
		{"removed", base, replace("- Anna owns the tag taxonomy\n", ""),
			[]ItemChange{ic("fact", "removed", "People", "Anna owns the tag taxonomy", "")}},
		{"created from nothing", "", "## A\n- one\n", []ItemChange{ic("fact", "added", "A", "", "one")}},
		{"moved to another section", base, replace("- Anna owns the tag taxonomy\n", "", "## People\n", "## People\n") + "\n## Owners\n- Anna owns the tag taxonomy\n",
			[]ItemChange{ic("fact", "changed", "Owners", "[People] Anna owns the tag taxonomy", "[Owners] Anna owns the tag taxonomy")}},
		{"section renamed moves its facts", base, replace("## People", "## Team"),
			[]ItemChange{
				ic("fact", "changed", "Team", "[People] Anna owns the tag taxonomy", "[Team] Anna owns the tag taxonomy"),
				ic("fact", "changed", "Team", "[People] Олена відповідає за структуру тегів", "[Team] Олена відповідає за структуру тегів"),
			}},
		{"reworded, word overlap", base, replace("Backups are nightly at 02:00", "Backups run nightly at 02:00"),
			// words {backups nightly at 02 00} shared, 7 in all: 5/7 ≥ 0.6
			[]ItemChange{ic("fact", "changed", "Infrastructure", "Backups are nightly at 02:00", "Backups run nightly at 02:00")}},
		{"reworded, small edit in a short fact", base, replace("Gateway port is 8080", "Gateway port is 8081"),
			// words: 3 of 5 shared (0.6) — and 1 rune of 20 changed
			[]ItemChange{ic("fact", "changed", "Infrastructure", "Gateway port is 8080", "Gateway port is 8081")}},
		{"reworded, number only", "## S\n- Port 8080\n", "## S\n- Port 9090\n",
			// words: 1 of 3 shared, but 2 runes of 9 changed (0.22 ≤ 0.3)
			[]ItemChange{ic("fact", "changed", "S", "Port 8080", "Port 9090")}},
		{"reworded, Cyrillic", base, replace("Олена відповідає за структуру тегів", "Олена відповідає за всю структуру тегів"),
			[]ItemChange{ic("fact", "changed", "People", "Олена відповідає за структуру тегів", "Олена відповідає за всю структуру тегів")}},
		{"dissimilar replacement is removed and added", base, replace("MinIO runs on storage-01", "Grafana lives at grafana.local"),
			[]ItemChange{
				ic("fact", "added", "Infrastructure", "", "Grafana lives at grafana.local"),
				ic("fact", "removed", "Infrastructure", "MinIO runs on storage-01", ""),
			}},
		{"similar texts in different sections do not pair", "## A\n- Backups are nightly at 02:00\n", "## B\n- Backups run nightly at 02:00\n",
			[]ItemChange{
				ic("fact", "removed", "A", "Backups are nightly at 02:00", ""),
				ic("fact", "added", "B", "", "Backups run nightly at 02:00"),
			}},
		{"most similar pairs first", "## S\n- the quick brown fox jumps\n- the quick brown dog sleeps\n",
			"## S\n- the quick brown dog sleeps well\n- the quick brown fox jumps high\n",
			// fox: 5/6 with "…fox jumps high", 3/8 with the dog line; each
			// old fact pairs with its own extension.
			[]ItemChange{
				ic("fact", "changed", "S", "the quick brown dog sleeps", "the quick brown dog sleeps well"),
				ic("fact", "changed", "S", "the quick brown fox jumps", "the quick brown fox jumps high"),
			}},
		{"duplicate removed once", "## S\n- x one\n- x one\n", "## S\n- x one\n",
			[]ItemChange{ic("fact", "removed", "S", "x one", "")}},
		{"sorted by section then text", "## B\n- b2\n## A\n- a1\n", "## B\n- zz new\n- aa new\n## A\n- a9 totally different\n",
			[]ItemChange{
				ic("fact", "removed", "A", "a1", ""),
				ic("fact", "added", "A", "", "a9 totally different"),
				ic("fact", "added", "B", "", "aa new"),
				ic("fact", "removed", "B", "b2", ""),
				ic("fact", "added", "B", "", "zz new"),
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Items("facts.md", tc.before, tc.after))
			// Deterministic: the same call gives the same result.
			require.Equal(t, Items("facts.md", tc.before, tc.after), Items("facts.md", tc.before, tc.after))
		})
	}
}

func TestItemsFactsWithMdops(t *testing.T) {
	// The write plane's own operations produce the edits Items must see.
	before, _, err := mdops.AppendFacts("", "curator", "Infra", "MinIO runs on storage-01\nBackups are nightly")
	require.NoError(t, err)
	after, _, err := mdops.AppendFacts(before, "curator", "Люди", "Олена веде теги")
	require.NoError(t, err)
	after, err = mdops.RemoveFact(after, "- Backups are nightly")
	require.NoError(t, err)
	require.Equal(t, []ItemChange{
		ic("fact", "removed", "Infra", "Backups are nightly", ""),
		ic("fact", "added", "Люди", "", "Олена веде теги"),
	}, Items("facts.md", before, after))
}

func TestItemsLoops(t *testing.T) {
	day := func(s string) time.Time {
		d, err := time.Parse("2006-01-02", s)
		require.NoError(t, err)
		return d
	}
	base := `# Open Loops: curator

## Critical
- [ ] loop_004: Restore nightly MinIO backup job — opened 2026-02-14 | priority: critical

## Open
- [ ] loop_002: Confirm MinIO versioning for all buckets — opened 2026-01-20 | priority: low
- [ ] Ask Anna about the tag taxonomy — відкрита з 2026-02-01

## Closed
- [x] loop_001: Decide repository layout — closed 2026-02-01 | run_a1 | opened 2026-01-15 | priority: high | resolution: Monorepo
`
	opened, id, err := mdops.OpenLoop(base, "curator", "", "Review proposal #42", "normal", day("2026-02-16"))
	require.NoError(t, err)
	require.Equal(t, "loop_005", id)
	closed, err := mdops.CloseLoop(base, "loop_002", "All buckets versioned", "run_c3", day("2026-02-17"))
	require.NoError(t, err)

	l002 := "- [ ] loop_002: Confirm MinIO versioning for all buckets — opened 2026-01-20 | priority: low"
	anna := "- [ ] Ask Anna about the tag taxonomy — відкрита з 2026-02-01"
	cases := []struct {
		name          string
		before, after string
		want          []ItemChange
	}{
		{"unchanged", base, base, nil},
		{"opened", base, opened, []ItemChange{ic("loop", "added", "Open", "",
			"- [ ] loop_005: Review proposal #42 — opened 2026-02-16 | priority: normal")}},
		{"closed", base, closed, []ItemChange{ic("loop", "changed", "Closed", l002,
			"- [x] loop_002: Confirm MinIO versioning for all buckets — closed 2026-02-17 | run_c3 | opened 2026-01-20 | priority: low | resolution: All buckets versioned")}},
		{"priority changed", base, strings.Replace(base, "priority: low", "priority: high", 1),
			[]ItemChange{ic("loop", "changed", "Open", l002, strings.Replace(l002, "low", "high", 1))}},
		{"text changed keeps id", base, strings.Replace(base, "for all buckets", "for every bucket", 1),
			[]ItemChange{ic("loop", "changed", "Open", l002, strings.Replace(l002, "for all buckets", "for every bucket", 1))}},
		{"moved to another section", base, strings.Replace(strings.Replace(base, l002+"\n", "", 1), "## Closed\n", "## Waiting\n"+l002+"\n\n## Closed\n", 1),
			[]ItemChange{ic("loop", "changed", "Waiting", l002, l002)}},
		{"removed (evicted)", base, strings.Replace(base, "- [x] loop_001: Decide repository layout — closed 2026-02-01 | run_a1 | opened 2026-01-15 | priority: high | resolution: Monorepo\n", "", 1),
			[]ItemChange{ic("loop", "removed", "Closed", "- [x] loop_001: Decide repository layout — closed 2026-02-01 | run_a1 | opened 2026-01-15 | priority: high | resolution: Monorepo", "")}},
		{"hand-written loop ticked", base, strings.Replace(base, "- [ ] Ask", "- [x] Ask", 1),
			[]ItemChange{ic("loop", "changed", "Open", anna, strings.Replace(anna, "- [ ]", "- [x]", 1))}},
		{"hand-written loop reworded is removed and added", base, strings.Replace(base, "about the tag taxonomy", "about tags", 1),
			[]ItemChange{
				ic("loop", "added", "Open", "", "- [ ] Ask Anna about tags — відкрита з 2026-02-01"),
				ic("loop", "removed", "Open", anna, ""),
			}},
		{"format only (Ukrainian to English metadata)", base, strings.Replace(base, "відкрита з", "opened", 1), nil},
		{"file created", "", "## Open\n- [ ] loop_001: First — opened 2026-02-01 | priority: normal\n",
			[]ItemChange{ic("loop", "added", "Open", "", "- [ ] loop_001: First — opened 2026-02-01 | priority: normal")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Items("open_loops.md", tc.before, tc.after))
		})
	}
}

func TestItemsDecisions(t *testing.T) {
	base := `# Decisions: curator

## 2026-02-10 — Use one monorepo for all agent memory
**Status:** proposed
**Context:** Agents need human-readable, diffable memory.
**Decision:** Keep memory/<agentId>/ folders in one git repository.
**Run:** run_a1

## 2026-02-12 — Обмежити facts.md 8 000 токенів
**Статус:** Прийнято
**Рішення:** Жорсткий ліміт
і витіснення.

## Evicted facts
- Old fact — evicted 2026-02-11 (stale-fact)
`
	added, err := mdops.AddDecision(base, "curator", mdops.Decision{Title: "Index memory with BM25", Decision: "Use bluge."},
		time.Date(2026, 2, 17, 9, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	mono := "2026-02-10 — Use one monorepo for all agent memory"
	ukr := "2026-02-12 — Обмежити facts.md 8 000 токенів"
	cases := []struct {
		name          string
		before, after string
		want          []ItemChange
	}{
		{"unchanged", base, base, nil},
		{"appendix only", base, strings.Replace(base, "(stale-fact)", "(stale-fact)\n- Another — evicted 2026-02-12", 1), nil},
		{"added", base, added, []ItemChange{ic("decision", "added", "2026-02-17 — Index memory with BM25", "", "status: accepted | decision: Use bluge.")}},
		{"status changed", base, strings.Replace(base, "proposed", "accepted", 1),
			[]ItemChange{ic("decision", "changed", mono, "status: proposed", "status: accepted")}},
		{"field added and folded", base, strings.Replace(base, "**Run:** run_a1", "**Rationale:** One place\nto audit.\n**Run:** run_b9", 1),
			[]ItemChange{ic("decision", "changed", mono, "rationale: (none) | run: run_a1", "rationale: One place to audit. | run: run_b9")}},
		{"multi-line value folded", base, strings.Replace(base, "Жорсткий ліміт\nі витіснення.", "Жорсткий ліміт і архів.", 1),
			[]ItemChange{ic("decision", "changed", ukr, "decision: Жорсткий ліміт і витіснення.", "decision: Жорсткий ліміт і архів.")}},
		{"retitled is removed and added", base, strings.Replace(base, "Use one monorepo", "Use a monorepo", 1),
			[]ItemChange{
				ic("decision", "added", "2026-02-10 — Use a monorepo for all agent memory", "", "status: proposed | decision: Keep memory/<agentId>/ folders in one git repository."),
				ic("decision", "removed", mono, "status: proposed | decision: Keep memory/<agentId>/ folders in one git repository.", ""),
			}},
		{"title case only is a change", base, strings.Replace(base, "Use one monorepo", "Use One Monorepo", 1),
			[]ItemChange{ic("decision", "changed", "2026-02-10 — Use One Monorepo for all agent memory",
				"title: Use one monorepo for all agent memory", "title: Use One Monorepo for all agent memory")}},
		{"removed", base, strings.Replace(base, "## 2026-02-12 — Обмежити facts.md 8 000 токенів\n**Статус:** Прийнято\n**Рішення:** Жорсткий ліміт\nі витіснення.\n\n", "", 1),
			[]ItemChange{ic("decision", "removed", ukr, "status: Прийнято | decision: Жорсткий ліміт і витіснення.", "")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Items("decisions.md", tc.before, tc.after))
		})
	}
}

func TestItemsOtherFiles(t *testing.T) {
	for _, rel := range []string{"snapshot.md", "changelog.md", "timeline/2026-02-17.md", "runs/facts.md", "Facts.md", ""} {
		require.Nil(t, Items(rel, "## S\n- a\n", "## S\n- b\n"), rel)
	}
}

func TestItemsRewriteIsBounded(t *testing.T) {
	// A wholesale rewrite of a big section must stay fast: past the
	// edit-work bound only the word rule pairs facts.
	var b, a strings.Builder
	b.WriteString("## S\n")
	a.WriteString("## S\n")
	for i := 0; i < 600; i++ {
		b.WriteString("- " + strings.Repeat("old fact text ", 8) + strings.Repeat("x", i%7) + "\n")
		a.WriteString("- " + strings.Repeat("new note body ", 8) + strings.Repeat("y", i%5) + "\n")
	}
	got := Items("facts.md", b.String(), a.String())
	require.NotEmpty(t, got)
}

func TestSummary(t *testing.T) {
	cases := []struct {
		commits, files, added, deleted int
		want                           string
	}{
		{5, 3, 14, 2, "5 commits, 3 files, +14 −2"},
		{1, 1, 1, 0, "1 commit, 1 file, +1 −0"},
		{0, 0, 0, 0, "0 commits, 0 files, +0 −0"},
		{2, 1, 0, 7, "2 commits, 1 file, +0 −7"},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, Summary(tc.commits, tc.files, tc.added, tc.deleted))
	}
	require.Contains(t, Summary(1, 1, 1, 1), "\u2212", "the minus sign, not a hyphen")
}
