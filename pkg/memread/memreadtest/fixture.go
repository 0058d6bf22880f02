// Package memreadtest builds realistic agent memories for budget tests: Layer 1
// files close to their hard limits, many loops and decisions, a long changelog,
// timeline days and runs, and ALWAYS_LOAD blocks both in Layer 1 (facts.md)
// and in Layer 2 files (decisions.md, changelog.md, timeline/, runs/), each
// Layer 2 block carrying a marker so a test can tell where its text ended up.
package memreadtest

import (
	"fmt"
	"math/rand"
	"strings"
)

// Size scales an agent's memory.
type Size struct {
	SnapshotTokens, FactsTokens, LoopsTokens        int
	Decisions, ChangelogEntries, TimelineDays, Runs int
}

// Full is an agent at its Layer 1 hard limits (2K / ~8K / 2K).
var Full = Size{SnapshotTokens: 1950, FactsTokens: 7900, LoopsTokens: 1950, Decisions: 30, ChangelogEntries: 30, TimelineDays: 10, Runs: 8}

// Small is a young agent.
var Small = Size{SnapshotTokens: 120, FactsTokens: 300, LoopsTokens: 80, Decisions: 3, ChangelogEntries: 3, TimelineDays: 2, Runs: 1}

// Marker is the text put in the ALWAYS_LOAD block of the Layer 2 file rel
// ("decisions.md", "changelog.md", "timeline/", "runs/").
func Marker(agent, rel string) string {
	return "L2ALWAYS" + strings.NewReplacer("/", "", ".", "", "-", "").Replace(agent+rel) + "MARK"
}

// Layer1Marker is the text in facts.md's ALWAYS_LOAD block.
func Layer1Marker(agent string) string {
	return "L1ALWAYS" + strings.ReplaceAll(agent, "-", "") + "MARK"
}

var vocab = strings.Fields(`memory agent garden bloom MinIO bucket versioning proposal commit snapshot
facts loop decision timeline run token budget context search index BM25 entity graph link
пам'ять агент сад рішення факт петля контекст пошук індекс знання проєкт домен налаштування
go-git grpc gateway tiktoken cl100k_base 2026-02-17 v1.36 mcpstorage s3://bucket/key :8080
обов'язково перевірити резервні копії щодня о 09:15 UTC — див. run_abc123 та proposal_xyz789
the curator keeps notes about releases, backups, reviews and people; Alice prefers async.`)

type gen struct {
	r     *rand.Rand
	count func(string) int
}

func (g *gen) sentence(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = vocab[g.r.Intn(len(vocab))]
	}
	return strings.Join(w, " ")
}

// grow appends lines from next until the text reaches about target tokens.
func (g *gen) grow(b *strings.Builder, target int, next func(i int) string) {
	for i := 1; ; i++ {
		line := next(i)
		if g.count(b.String()+line) > target {
			return
		}
		b.WriteString(line)
	}
}

// Agent returns the files of agent id (paths relative to its folder) as of
// its latest commit; Seed is a smaller first version of the same agent for a
// history to diff against. count is the token counter used for sizes.
func Agent(seed int64, id string, size Size, count func(string) int) (seed1, latest map[string]string) {
	g := &gen{r: rand.New(rand.NewSource(seed)), count: count}
	latest = map[string]string{}

	var s strings.Builder
	fmt.Fprintf(&s, "# Snapshot: %s\n\n## Роль\n%s.\n\n## Активний контекст\n", id, g.sentence(12))
	g.grow(&s, size.SnapshotTokens*2/3, func(i int) string { return fmt.Sprintf("- %s.\n", g.sentence(8+g.r.Intn(10))) })
	s.WriteString("\n## Ключові факти\n")
	g.grow(&s, size.SnapshotTokens, func(i int) string { return fmt.Sprintf("- %s.\n", g.sentence(6+g.r.Intn(8))) })
	latest["snapshot.md"] = s.String()

	var f strings.Builder
	fmt.Fprintf(&f, "# Facts: %s\n\n<!-- ALWAYS_LOAD -->\n## Core Facts\n- %s %s\n- %s\n<!-- /ALWAYS_LOAD -->\n\n",
		id, Layer1Marker(id), g.sentence(10), g.sentence(12))
	for _, sec := range []string{"Домен", "Технічні знання", "Проєктний контекст"} {
		fmt.Fprintf(&f, "## %s\n", sec)
		target := g.count(f.String()) + (size.FactsTokens-g.count(f.String()))/2
		if sec == "Проєктний контекст" {
			target = size.FactsTokens
		}
		g.grow(&f, target, func(i int) string {
			return fmt.Sprintf("- %s [[entity-%d]] (2026-02-%02d)\n", g.sentence(10+g.r.Intn(14)), g.r.Intn(40), 1+g.r.Intn(17))
		})
		f.WriteString("\n")
	}
	latest["facts.md"] = f.String()

	var l strings.Builder
	fmt.Fprintf(&l, "# Open Loops: %s\n\n## Критичні\n", id)
	n := 0
	g.grow(&l, size.LoopsTokens*2/3, func(i int) string {
		n++
		return fmt.Sprintf("- [ ] loop_%03d: %s — opened 2026-02-%02d | priority: high\n", n, g.sentence(6+g.r.Intn(6)), 1+g.r.Intn(17))
	})
	l.WriteString("\n## Очікування\n")
	g.grow(&l, size.LoopsTokens, func(i int) string {
		n++
		return fmt.Sprintf("- [ ] loop_%03d: %s — opened 2026-02-%02d | priority: normal\n", n, g.sentence(5+g.r.Intn(6)), 1+g.r.Intn(17))
	})
	latest["open_loops.md"] = l.String()

	var d strings.Builder
	fmt.Fprintf(&d, "# Decisions: %s\n\n", id)
	for i := size.Decisions; i >= 1; i-- { // newest first
		day := 1 + (i-1)*45/max(size.Decisions, 1)
		fmt.Fprintf(&d, "## 2026-%02d-%02d — Decision %d %s\n**Status:** accepted\n**Context:** %s\n**Decision:** %s\n**Rationale:** %s\n",
			1+day/28, 1+day%28, i, g.sentence(3), g.sentence(20), g.sentence(15), g.sentence(18))
		if i == (size.Decisions+1)/2 { // a middle decision: never among the newest five
			fmt.Fprintf(&d, "\n<!-- ALWAYS_LOAD -->\n%s %s\n<!-- /ALWAYS_LOAD -->\n", Marker(id, "decisions.md"), g.sentence(12))
		}
		d.WriteString("\n")
	}
	latest["decisions.md"] = d.String()

	var c strings.Builder
	fmt.Fprintf(&c, "# Changelog: %s\n\n<!-- ALWAYS_LOAD -->\n%s %s\n<!-- /ALWAYS_LOAD -->\n\n", id, Marker(id, "changelog.md"), g.sentence(8))
	for i := size.ChangelogEntries; i >= 1; i-- {
		fmt.Fprintf(&c, "## 2026-02-%02d\n\n### 10:%02d — run_%d / proposal_%d\n- **facts.md:** %s\n\n", 1+i%17, i%60, i, i, g.sentence(14))
	}
	latest["changelog.md"] = c.String()

	for i := 0; i < size.TimelineDays; i++ {
		date := fmt.Sprintf("2026-02-%02d", 17-i)
		var t strings.Builder
		fmt.Fprintf(&t, "# Timeline: %s / %s\n\n## Запуски\n\n### 09:15 — run_%d\n%s\n", id, date, i, g.sentence(40))
		if i == 0 {
			fmt.Fprintf(&t, "\n<!-- ALWAYS_LOAD -->\n%s\n<!-- /ALWAYS_LOAD -->\n", Marker(id, "timeline/"))
		}
		latest["timeline/"+date+".md"] = t.String()
	}
	for i := 1; i <= size.Runs; i++ {
		var r strings.Builder
		fmt.Fprintf(&r, "# Run: run_%d\n\n## Контекст (завантажений)\n%s\n\n## Виконані кроки\n%s\n", i, g.sentence(30), g.sentence(60))
		if i == 1 {
			fmt.Fprintf(&r, "\n<!-- ALWAYS_LOAD -->\n%s\n<!-- /ALWAYS_LOAD -->\n", Marker(id, "runs/"))
		}
		latest[fmt.Sprintf("runs/run_%d.md", i)] = r.String()
	}
	latest["meta.json"] = fmt.Sprintf(`{"agentId":%q,"version":2,"lastUpdate":"2026-02-17T10:00:00Z","lastRunId":"run_%d","snapshotTokenCount":%d,"factsTokenCount":%d,"openLoopsTokenCount":%d,"openLoopsCount":%d,"decisionsCount":%d,"schemaVersion":"1.0","tokenEncoding":"cl100k_base"}`,
		id, size.Runs, count(latest["snapshot.md"]), count(latest["facts.md"]), count(latest["open_loops.md"]), n, size.Decisions)

	seed1 = map[string]string{
		"snapshot.md":   fmt.Sprintf("# Snapshot: %s\n\n## Роль\n%s.\n", id, g.sentence(10)),
		"facts.md":      fmt.Sprintf("# Facts: %s\n\n## Домен\n- %s\n", id, g.sentence(10)),
		"open_loops.md": fmt.Sprintf("# Open Loops: %s\n\n## Критичні\n- [ ] loop_001: %s — opened 2026-01-01 | priority: high\n", id, g.sentence(6)),
		"meta.json":     fmt.Sprintf(`{"agentId":%q,"version":1,"schemaVersion":"1.0"}`, id),
	}
	return seed1, latest
}
