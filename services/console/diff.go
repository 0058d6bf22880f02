package console

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// diffLine is one line of a unified diff as the page shows it.
type diffLine struct {
	// Kind is "add", "del", "ctx", "hunk" (an @@ header) or "meta" (the
	// ---/+++ headers and "\ No newline").
	Kind string
	// Old and New are the line's numbers in the old and new file (0 =
	// none on that side).
	Old, New int
	Text     string
}

// splitRow is one row of the side-by-side view: the old line on the left,
// the new one on the right; a missing side is nil.
type splitRow struct {
	Hunk        string // set on hunk header rows only
	Left, Right *diffLine
}

// fileDiff is one file of a diff, ready for either view.
type fileDiff struct {
	File    string
	Change  string // "added", "removed", "changed"
	Added   int
	Removed int
	Lines   []diffLine
	Rows    []splitRow
	// Empty: the diff has no hunks (only the file's mode, or nothing).
	Empty bool
}

// parseUnified reads a unified diff (what DiffMemory and PreviewProposal
// return per file) into lines with their numbers.
func parseUnified(text string) []diffLine {
	var out []diffLine
	oldN, newN := 0, 0
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "@@"):
			oldN, newN = hunkStarts(l)
			out = append(out, diffLine{Kind: "hunk", Text: l})
		case strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ") || strings.HasPrefix(l, `\`) || strings.HasPrefix(l, "diff "):
			out = append(out, diffLine{Kind: "meta", Text: l})
		case strings.HasPrefix(l, "+"):
			out = append(out, diffLine{Kind: "add", New: newN, Text: l[1:]})
			newN++
		case strings.HasPrefix(l, "-"):
			out = append(out, diffLine{Kind: "del", Old: oldN, Text: l[1:]})
			oldN++
		case l == "" && oldN == 0 && newN == 0:
			// before any hunk: nothing
		default:
			out = append(out, diffLine{Kind: "ctx", Old: oldN, New: newN, Text: strings.TrimPrefix(l, " ")})
			oldN++
			newN++
		}
	}
	return out
}

// hunkStarts reads the starting line numbers of "@@ -a,b +c,d @@".
func hunkStarts(h string) (oldStart, newStart int) {
	f := strings.Fields(h)
	if len(f) < 3 {
		return 0, 0
	}
	num := func(s string) int {
		s = strings.TrimLeft(s, "-+")
		s, _, _ = strings.Cut(s, ",")
		n, _ := strconv.Atoi(s)
		return n
	}
	return num(f[1]), num(f[2])
}

// splitRows pairs a diff's lines for the side-by-side view: context on
// both sides, and each run of removed lines beside the added lines that
// follow it.
func splitRows(lines []diffLine) []splitRow {
	var rows []splitRow
	for i := 0; i < len(lines); {
		l := lines[i]
		switch l.Kind {
		case "hunk":
			rows = append(rows, splitRow{Hunk: l.Text})
			i++
		case "ctx":
			left, right := l, l
			rows = append(rows, splitRow{Left: &left, Right: &right})
			i++
		case "del", "add":
			var dels, adds []diffLine
			for i < len(lines) && lines[i].Kind == "del" {
				dels = append(dels, lines[i])
				i++
			}
			for i < len(lines) && lines[i].Kind == "add" {
				adds = append(adds, lines[i])
				i++
			}
			for j := 0; j < len(dels) || j < len(adds); j++ {
				var row splitRow
				if j < len(dels) {
					row.Left = &dels[j]
				}
				if j < len(adds) {
					row.Right = &adds[j]
				}
				rows = append(rows, row)
			}
		default:
			i++
		}
	}
	return rows
}

// newFileDiff prepares one file's diff for the page.
func newFileDiff(file, change, unified string) fileDiff {
	lines := parseUnified(unified)
	d := fileDiff{File: file, Change: change, Lines: lines, Rows: splitRows(lines)}
	hunks := 0
	for _, l := range lines {
		switch l.Kind {
		case "add":
			d.Added++
		case "del":
			d.Removed++
		case "hunk":
			hunks++
		}
	}
	d.Empty = hunks == 0
	if d.Change == "" {
		d.Change = changeOf(unified)
	}
	return d
}

// changeOf tells from a unified diff's headers whether the file was added,
// removed or changed.
func changeOf(unified string) string {
	switch {
	case strings.Contains(unified, "--- /dev/null"):
		return "added"
	case strings.Contains(unified, "+++ /dev/null"):
		return "removed"
	default:
		return "changed"
	}
}

// fileDiffs prepares a file → unified diff map (DiffMemory's) in file order.
func fileDiffs(m map[string]string) []fileDiff {
	files := make([]string, 0, len(m))
	for f := range m {
		files = append(files, f)
	}
	sort.Strings(files)
	out := make([]fileDiff, 0, len(files))
	for _, f := range files {
		out = append(out, newFileDiff(f, "", m[f]))
	}
	return out
}

// lineNo shows a line number, or nothing for 0.
func lineNo(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}
