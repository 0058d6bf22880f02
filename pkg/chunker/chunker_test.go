package chunker

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// ck builds an expected chunk; no headings means nil Headings.
func ck(kind string, start, end int, text string, headings ...string) Chunk {
	var h []string
	if len(headings) > 0 {
		h = headings
	}
	return Chunk{Text: text, StartLine: start, EndLine: end, Headings: h, Kind: kind}
}

func TestSplit(t *testing.T) {
	const facts = `# Facts: curator

## Domain
- Garden Bloom is a digital garden: notes are published from an Obsidian vault
- Notes move through the states seed → sprout → evergreen
  - a note becomes evergreen only after human review
  - reviews happen weekly

## Technical
- MinIO bucket ` + "`mcpstorage`" + ` has object versioning enabled
- Example config (kept verbatim):

` + "```yaml" + `
# not a heading, not a fact
- not a fact either
` + "```" + `

## Deprecated
<!-- removed after the commit -->
`
	const loops = `# Open Loops: curator

## Critical
- [ ] loop_004: Restore nightly MinIO backup job — opened 2026-02-14 | priority: critical

## Open
- [ ] loop_002: Confirm MinIO versioning — opened 2026-01-20 | priority: low
- [ ] Ask Anna about the tag taxonomy

## Waiting

## Closed
- [x] loop_001: Decide repository layout — closed 2026-02-01 | run_a1 | resolution: Monorepo
- [X] loop_003: Check token counter — closed 2026-02-15
`
	const decisions = `# Decisions: curator

## 2026-02-10 — Use one monorepo for all agent memory
**Status:** accepted
**Context:** Agents need human-readable, diffable memory.
**Decision:** Keep memory/<agentId>/ folders in one git repository.
**Run:** run_a1

## 2026-02-17 — Freeze low-priority loops

**Status:** accepted
**Context:** open_loops.md hit its limit,
which wrapped onto a second line.

**Consequences:** a second block is no longer directly under the heading.

## Evicted facts
- Old fact about NotebookLM quotas — evicted 2026-02-11 (stale-fact)
`
	const snapshot = `# Snapshot: curator — 2026-02-17

Intro paragraph before any section,
spanning two lines.

## Current focus
Migrating memory to the new layout.
Phase 1 is done.

Phase 2 starts next week.

---

## Risks
* MinIO backup job is failing
+ Token budget is tight

## Notes ##
### Empty sub-section
## Next steps
1. Restore backups
2) Review proposal #42
### Later
`
	const prose = "Plain text without any Markdown structure.\n" +
		"Second line of the same paragraph.\n\n\n" +
		"#hashtag is not a heading, and    indented text stays.\n" +
		"    indented line continues the paragraph\n"
	const code = "Before.\n" +
		"```go\n" +
		"func main() {\n" +
		"\n" +
		"# not a heading\n" +
		"- not a bullet\n" +
		"````\n" + // longer closing fence closes too
		"~~~\n" +
		"```\n" + // a backtick line does not close a tilde fence
		"~~~\n" +
		"```inline``` code is a paragraph\n" +
		"```\n" +
		"unclosed fence runs to EOF\n" +
		"\n" +
		"## not a heading either\n"
	const table = `# Report
Summary line directly above the table.
| Metric | Value |
|:-------|------:|
| nDCG@10 | 0.665 |
| Recall@100 | 0.908 |
Text after the table.

a | b
not a delimiter row
`
	const nested = `- top item
  continued with indentation
lazy continuation line
  - sub item
    - sub-sub item

  Paragraph inside the item after a blank line.

- second item
  ` + "```sh" + `
echo flush-left code inside the item

  # comment, not a heading
  ` + "```" + `
- third item
Paragraph? No: lazy continuation.

Paragraph after a blank line.
1. ordered one
   - nested under ordered
10. ordered ten
- - -
- [ ] task
  - [x] sub-task stays in the parent task
`
	const cyrillic = `# Факти: куратор

## Домен
- Garden Bloom — цифровий сад: нотатки публікуються з Obsidian
- Олена відповідає за таксономію тегів

## Проєктний контекст
Фаза 1 міграції пам'яті почалася 2026-02-10.
`
	tests := []struct {
		name string
		md   string
		want []Chunk
	}{
		{"empty", "", nil},
		{"blank", "\n  \n\t\n", nil},
		{"facts", facts, []Chunk{
			ck(KindBullet, 4, 4, "- Garden Bloom is a digital garden: notes are published from an Obsidian vault", "Facts: curator", "Domain"),
			ck(KindBullet, 5, 7, "- Notes move through the states seed → sprout → evergreen\n  - a note becomes evergreen only after human review\n  - reviews happen weekly", "Facts: curator", "Domain"),
			ck(KindBullet, 10, 10, "- MinIO bucket `mcpstorage` has object versioning enabled", "Facts: curator", "Technical"),
			ck(KindBullet, 11, 11, "- Example config (kept verbatim):", "Facts: curator", "Technical"),
			ck(KindCode, 13, 16, "```yaml\n# not a heading, not a fact\n- not a fact either\n```", "Facts: curator", "Technical"),
			ck(KindParagraph, 19, 19, "<!-- removed after the commit -->", "Facts: curator", "Deprecated"),
		}},
		{"open loops", loops, []Chunk{
			ck(KindTask, 4, 4, "- [ ] loop_004: Restore nightly MinIO backup job — opened 2026-02-14 | priority: critical", "Open Loops: curator", "Critical"),
			ck(KindTask, 7, 7, "- [ ] loop_002: Confirm MinIO versioning — opened 2026-01-20 | priority: low", "Open Loops: curator", "Open"),
			ck(KindTask, 8, 8, "- [ ] Ask Anna about the tag taxonomy", "Open Loops: curator", "Open"),
			ck(KindHeading, 10, 10, "## Waiting", "Open Loops: curator"),
			ck(KindTask, 13, 13, "- [x] loop_001: Decide repository layout — closed 2026-02-01 | run_a1 | resolution: Monorepo", "Open Loops: curator", "Closed"),
			ck(KindTask, 14, 14, "- [X] loop_003: Check token counter — closed 2026-02-15", "Open Loops: curator", "Closed"),
		}},
		{"decisions", decisions, []Chunk{
			ck(KindEntry, 4, 7, "**Status:** accepted\n**Context:** Agents need human-readable, diffable memory.\n**Decision:** Keep memory/<agentId>/ folders in one git repository.\n**Run:** run_a1",
				"Decisions: curator", "2026-02-10 — Use one monorepo for all agent memory"),
			ck(KindEntry, 11, 13, "**Status:** accepted\n**Context:** open_loops.md hit its limit,\nwhich wrapped onto a second line.",
				"Decisions: curator", "2026-02-17 — Freeze low-priority loops"),
			ck(KindParagraph, 15, 15, "**Consequences:** a second block is no longer directly under the heading.",
				"Decisions: curator", "2026-02-17 — Freeze low-priority loops"),
			ck(KindBullet, 18, 18, "- Old fact about NotebookLM quotas — evicted 2026-02-11 (stale-fact)", "Decisions: curator", "Evicted facts"),
		}},
		{"snapshot", snapshot, []Chunk{
			ck(KindParagraph, 3, 4, "Intro paragraph before any section,\nspanning two lines.", "Snapshot: curator — 2026-02-17"),
			ck(KindParagraph, 7, 8, "Migrating memory to the new layout.\nPhase 1 is done.", "Snapshot: curator — 2026-02-17", "Current focus"),
			ck(KindParagraph, 10, 10, "Phase 2 starts next week.", "Snapshot: curator — 2026-02-17", "Current focus"),
			ck(KindBullet, 15, 15, "* MinIO backup job is failing", "Snapshot: curator — 2026-02-17", "Risks"),
			ck(KindBullet, 16, 16, "+ Token budget is tight", "Snapshot: curator — 2026-02-17", "Risks"),
			// "## Notes ##" is followed by a deeper heading: not a chunk;
			// its title-only sub-section is, and carries it in Headings.
			ck(KindHeading, 19, 19, "### Empty sub-section", "Snapshot: curator — 2026-02-17", "Notes"),
			ck(KindBullet, 21, 21, "1. Restore backups", "Snapshot: curator — 2026-02-17", "Next steps"),
			ck(KindBullet, 22, 22, "2) Review proposal #42", "Snapshot: curator — 2026-02-17", "Next steps"),
			ck(KindHeading, 23, 23, "### Later", "Snapshot: curator — 2026-02-17", "Next steps"),
		}},
		{"title only", "# Just a title\n", []Chunk{ck(KindHeading, 1, 1, "# Just a title")}},
		{"sibling headings", "## A\n\n---\n\n## B\ntext\n", []Chunk{
			ck(KindHeading, 1, 1, "## A"),
			ck(KindParagraph, 6, 6, "text", "B"),
		}},
		{"prose", prose, []Chunk{
			ck(KindParagraph, 1, 2, "Plain text without any Markdown structure.\nSecond line of the same paragraph."),
			ck(KindParagraph, 5, 6, "#hashtag is not a heading, and    indented text stays.\n    indented line continues the paragraph"),
		}},
		{"code", code, []Chunk{
			ck(KindParagraph, 1, 1, "Before."),
			ck(KindCode, 2, 7, "```go\nfunc main() {\n\n# not a heading\n- not a bullet\n````"),
			ck(KindCode, 8, 10, "~~~\n```\n~~~"),
			ck(KindParagraph, 11, 11, "```inline``` code is a paragraph"),
			ck(KindCode, 12, 15, "```\nunclosed fence runs to EOF\n\n## not a heading either"),
		}},
		{"table", table, []Chunk{
			ck(KindParagraph, 2, 2, "Summary line directly above the table.", "Report"),
			ck(KindTable, 3, 6, "| Metric | Value |\n|:-------|------:|\n| nDCG@10 | 0.665 |\n| Recall@100 | 0.908 |", "Report"),
			ck(KindParagraph, 7, 7, "Text after the table.", "Report"),
			ck(KindParagraph, 9, 10, "a | b\nnot a delimiter row", "Report"),
		}},
		{"nested lists", nested, []Chunk{
			ck(KindBullet, 1, 7, "- top item\n  continued with indentation\nlazy continuation line\n  - sub item\n    - sub-sub item\n\n  Paragraph inside the item after a blank line."),
			ck(KindBullet, 9, 14, "- second item\n  ```sh\necho flush-left code inside the item\n\n  # comment, not a heading\n  ```"),
			ck(KindBullet, 15, 16, "- third item\nParagraph? No: lazy continuation."),
			ck(KindParagraph, 18, 18, "Paragraph after a blank line."),
			ck(KindBullet, 19, 20, "1. ordered one\n   - nested under ordered"),
			ck(KindBullet, 21, 21, "10. ordered ten"),
			ck(KindTask, 23, 24, "- [ ] task\n  - [x] sub-task stays in the parent task"),
		}},
		{"cyrillic", cyrillic, []Chunk{
			ck(KindBullet, 4, 4, "- Garden Bloom — цифровий сад: нотатки публікуються з Obsidian", "Факти: куратор", "Домен"),
			ck(KindBullet, 5, 5, "- Олена відповідає за таксономію тегів", "Факти: куратор", "Домен"),
			ck(KindParagraph, 8, 8, "Фаза 1 міграції пам'яті почалася 2026-02-10.", "Факти: куратор", "Проєктний контекст"),
		}},
		{"crlf", strings.ReplaceAll(loops, "\n", "\r\n"), nil}, // want: same as "open loops"
		{"no trailing newline", "- a\n- b", []Chunk{ck(KindBullet, 1, 1, "- a"), ck(KindBullet, 2, 2, "- b")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if tc.name == "crlf" {
				want = Split(loops, Options{})
				require.NotEmpty(t, want)
			}
			got := Split(tc.md, Options{})
			require.Equal(t, want, got)
			checkInvariants(t, tc.md, got, DefaultMaxChars)
		})
	}
}

func TestTitle(t *testing.T) {
	require.Equal(t, "Facts: curator", Title("# Facts: curator\n\n## Domain\n"))
	require.Equal(t, "Snapshot", Title("Intro\n## Section\n# Snapshot #\n# Second\n"))
	require.Equal(t, "Real", Title("```\n# Fenced\n```\n#NotHeading\n# Real\r\n"))
	require.Equal(t, "", Title("## Only a section\ntext\n"))
	require.Equal(t, "", Title(""))
}

func TestSplitLong(t *testing.T) {
	t.Run("lines packed up to the limit", func(t *testing.T) {
		md := "## S\n" + strings.Repeat("line of text number x\n", 10) // 21 runes a line
		got := Split(md, Options{MaxChars: 50})
		require.Len(t, got, 5) // two lines (43 runes) per piece
		for i, c := range got {
			require.Equal(t, KindParagraph, c.Kind)
			require.Equal(t, []string{"S"}, c.Headings)
			require.Equal(t, 2+2*i, c.StartLine)
			require.Equal(t, 3+2*i, c.EndLine)
		}
		checkInvariants(t, md, got, 50)
	})
	t.Run("code is split at line boundaries only", func(t *testing.T) {
		md := "```\n" + strings.Repeat("0123456789\n", 6) + "```\n"
		got := Split(md, Options{MaxChars: 25})
		require.Equal(t, []Chunk{
			ck(KindCode, 1, 3, "```\n0123456789\n0123456789"),
			ck(KindCode, 4, 5, "0123456789\n0123456789"),
			ck(KindCode, 6, 8, "0123456789\n0123456789\n```"),
		}, got)
		checkInvariants(t, md, got, 25)
	})
	t.Run("bullet with blank lines: pieces are trimmed", func(t *testing.T) {
		md := "- aaaaaaaaaa\n\n  bbbbbbbbbb\n\n  cccccccccc\n"
		got := Split(md, Options{MaxChars: 14})
		require.Equal(t, []Chunk{
			ck(KindBullet, 1, 1, "- aaaaaaaaaa"),
			ck(KindBullet, 3, 3, "  bbbbbbbbbb"),
			ck(KindBullet, 5, 5, "  cccccccccc"),
		}, got)
		checkInvariants(t, md, got, 14)
	})
	t.Run("long line split at spaces", func(t *testing.T) {
		long := "- " + strings.TrimSpace(strings.Repeat("слово word ", 40)) // 440 runes
		md := "# T\n" + long + "\nshort\n"
		got := Split(md, Options{MaxChars: 100})
		require.Greater(t, len(got), 4)
		for i, c := range got[:len(got)-1] {
			require.Equal(t, 2, c.StartLine)
			require.Equal(t, 2, c.EndLine)
			require.Equal(t, KindBullet, c.Kind)
			require.Equal(t, []string{"T"}, c.Headings)
			require.LessOrEqual(t, utf8.RuneCountInString(c.Text), 100)
			if i < len(got)-2 { // the line's last piece is the remainder
				require.GreaterOrEqual(t, utf8.RuneCountInString(c.Text), 90, "cut near the limit")
			}
			require.False(t, strings.HasSuffix(c.Text, " "), "cut at a space, space dropped")
		}
		last := got[len(got)-1]
		require.Equal(t, ck(KindBullet, 3, 3, "short", "T"), last, "the lazy continuation line stays in the bullet")
		checkInvariants(t, md, got, 100)
	})
	t.Run("long line without spaces cut on rune boundaries", func(t *testing.T) {
		md := strings.Repeat("ї", 25) + "\n"
		got := Split(md, Options{MaxChars: 10})
		require.Equal(t, []Chunk{
			ck(KindParagraph, 1, 1, strings.Repeat("ї", 10)),
			ck(KindParagraph, 1, 1, strings.Repeat("ї", 10)),
			ck(KindParagraph, 1, 1, strings.Repeat("ї", 5)),
		}, got)
		checkInvariants(t, md, got, 10)
	})
	t.Run("tiny limit still terminates", func(t *testing.T) {
		md := "a b  c\n\n  d e\n"
		for max := 1; max < 8; max++ {
			checkInvariants(t, md, Split(md, Options{MaxChars: max}), max)
		}
	})
}

// checkInvariants asserts the properties every Split result must have:
// spans in range, ordered and non-overlapping (only pieces of one split
// line may share it), text reproducing the source lines (a piece of a split
// line is a part of it, and the pieces cover the line), the size limit,
// valid UTF-8, and that every content line (not blank, not a heading, not a
// thematic break; judged by an independent fence tracker) is covered.
func checkInvariants(t *testing.T, md string, chunks []Chunk, max int) {
	t.Helper()
	src := strings.Split(md, "\n")
	if len(src) > 1 && src[len(src)-1] == "" {
		src = src[:len(src)-1]
	}
	for i := range src {
		src[i] = strings.TrimSuffix(src[i], "\r")
	}
	cover := make([][]int, len(src)) // chunk indexes covering each line
	pieces := map[int][]string{}     // pieces of split lines
	prevEnd, prevPiece := 0, false
	for i, c := range chunks {
		require.GreaterOrEqual(t, c.StartLine, 1, "chunk %d", i)
		require.LessOrEqual(t, c.StartLine, c.EndLine, "chunk %d", i)
		require.LessOrEqual(t, c.EndLine, len(src), "chunk %d", i)
		require.NotEmpty(t, strings.TrimSpace(c.Text), "chunk %d", i)
		require.True(t, utf8.ValidString(c.Text), "chunk %d", i)
		require.LessOrEqual(t, utf8.RuneCountInString(c.Text), max, "chunk %d", i)
		require.Contains(t, []string{KindBullet, KindTask, KindParagraph, KindHeading, KindCode, KindTable, KindEntry}, c.Kind)
		lines := src[c.StartLine-1 : c.EndLine]
		require.False(t, isBlank(lines[0]) || isBlank(lines[len(lines)-1]), "chunk %d starts or ends blank", i)
		piece := false
		if whole := strings.Join(lines, "\n"); c.Text != whole {
			require.Equal(t, c.StartLine, c.EndLine, "only a single long line may be cut: chunk %d %q", i, c.Text)
			require.Contains(t, whole, c.Text, "chunk %d", i)
			pieces[c.StartLine-1] = append(pieces[c.StartLine-1], c.Text)
			piece = true
		}
		if c.StartLine <= prevEnd {
			require.True(t, piece && prevPiece && c.StartLine == prevEnd, "chunk %d overlaps the previous one", i)
		}
		prevEnd, prevPiece = c.EndLine, piece
		for l := c.StartLine - 1; l < c.EndLine; l++ {
			cover[l] = append(cover[l], i)
		}
		if c.Kind == KindHeading {
			require.Equal(t, c.StartLine, c.EndLine)
			require.True(t, isRefHeading(src[c.StartLine-1]), "heading chunk %q", c.Text)
		}
	}
	// The pieces of a split line, in order, make up the line: only
	// whitespace between and around them.
	for l, ps := range pieces {
		rest := src[l]
		for _, p := range ps {
			at := strings.Index(rest, p)
			require.GreaterOrEqual(t, at, 0, "line %d piece %q", l+1, p)
			require.Empty(t, strings.TrimSpace(rest[:at]), "line %d: text lost before %q", l+1, p)
			rest = rest[at+len(p):]
		}
		require.Empty(t, strings.TrimSpace(rest), "line %d: text lost at the end", l+1)
	}
	inFence := false
	var fch string
	var flen int
	for l, s := range src {
		if strings.TrimSpace(s) == "" {
			continue // blank lines may sit inside a chunk, never at its edge (checked above)
		}
		switch {
		case inFence:
			t := strings.TrimLeft(s, " \t")
			if n := len(t) - len(strings.TrimLeft(t, fch)); n >= flen && strings.TrimSpace(t[n:]) == "" {
				inFence = false
			}
		case isRefFence(s):
			t := strings.TrimLeft(s, " \t")
			fch = t[:1]
			flen = len(t) - len(strings.TrimLeft(t, fch))
			inFence = true
		case isRefHeading(s), isRefBreak(s):
			// Not content: at most one chunk (a "heading" chunk, or the
			// list item a deeper-indented "---" belongs to), or the pieces
			// of a split one.
			if len(cover[l]) > 1 {
				_, cut := pieces[l]
				require.True(t, cut, "line %d %q covered by several chunks", l+1, s)
			}
			continue
		}
		require.NotEmpty(t, cover[l], "line %d %q not covered", l+1, s)
		if len(cover[l]) > 1 {
			_, cut := pieces[l]
			require.True(t, cut, "line %d %q covered by several chunks", l+1, s)
		}
	}
}

// Reference classifiers for checkInvariants, written independently of the
// package's own (fences at any indentation, as the tests write them).
func isRefHeading(s string) bool {
	if t := strings.TrimLeft(s, " "); len(s)-len(t) <= 3 {
		s = t
	}
	n := len(s) - len(strings.TrimLeft(s, "#"))
	return n >= 1 && n <= 6 && (len(s) == n || s[n] == ' ')
}

func isRefFence(s string) bool {
	t := strings.TrimLeft(s, " \t")
	return (strings.HasPrefix(t, "```") && !strings.Contains(strings.TrimLeft(t, "`"), "`")) || strings.HasPrefix(t, "~~~")
}

func isRefBreak(s string) bool {
	t := strings.ReplaceAll(strings.TrimSpace(s), " ", "")
	return len(t) >= 3 && (strings.Trim(t, "-") == "" || strings.Trim(t, "*") == "" || strings.Trim(t, "_") == "")
}

func BenchmarkSplit(b *testing.B) {
	md := strings.Repeat("## Section\n- fact one about MinIO and git\n  - sub item\n\nA paragraph of text.\n\n", 200) +
		strings.Repeat("word ", 200000) + "\n"
	b.ReportAllocs()
	for b.Loop() {
		Split(md, Options{})
	}
}

// BenchmarkSplitDecisionLog chunks a decisions.md of about 300 KB, the
// shape the search index rechunks after every eviction: ADR entries, then
// one long "Evicted facts" appendix of bullets.
func BenchmarkSplitDecisionLog(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("# Decisions: agent-00001\n\n")
	for i := range 150 {
		fmt.Fprintf(&sb, "## 2026-11-%02d — Decision %d: move the quiet backup to the eastern bucket\n**Status:** accepted\n**Context:** The nightly backup of the storage cluster ran long again.\n**Decision:** Move it to the eastern bucket.\n**Rationale:** Its zone has headroom.\n**Consequences:** The restore drill changes.\n**Run:** run_%06d\n\n", 1+i%28, i, i)
	}
	sb.WriteString("## Evicted facts\n")
	for i := range 1500 {
		fmt.Fprintf(&sb, "- The [[entity:cluster-%d]] keeps its replicas in three zones for durability (evicted 2026-11-27, over-limit, added 2026-11-26)\n", i)
	}
	md := sb.String()
	b.SetBytes(int64(len(md)))
	b.ReportAllocs()
	for b.Loop() {
		Split(md, Options{})
	}
}
