package memdiff

import (
	"strconv"
	"strings"
)

// noNewline is git's marker after a last line that has no newline.
const noNewline = "\\ No newline at end of file\n"

// Unified returns the unified diff between two versions of the file at
// path, as `git diff` prints it after its "diff --git" and "index" lines,
// and the number of added and deleted lines.
//
// before and after are the file contents; nil means the file is absent on
// that side (created or deleted), which makes the header name /dev/null as
// git does. The header is "--- a/<path>" and "+++ b/<path>", with git's
// C-style quoting of unusual paths (non-ASCII bytes, quotes, control
// characters) and the tab git appends to a path containing a space.
//
// contextLines is the number of unchanged lines shown around each change
// (git's -U; git's default is 3); a negative value counts as 0. Changes
// separated by at most 2×contextLines unchanged lines share a hunk, as in
// git. Hunk headers are "@@ -l,s +l,s @@": a count of 1 is omitted and an
// empty range is given as the line before it ("-0,0" for an empty side).
// Git's function-context text after the closing "@@" is not produced: it
// depends on per-path attributes that the caller's repository may define.
//
// Lines are split at "\n" only, so "\r" stays part of a line, as in git. A
// last line without a newline differs from the same line with one and is
// followed by git's "\ No newline at end of file".
//
// When there is no line to show — identical contents, both absent, or an
// absent file against an empty one (git shows only mode lines for those) —
// the result is "", 0, 0.
func Unified(path string, before, after *string, contextLines int) (diff string, added, deleted int) {
	var b, a string
	if before != nil {
		b = *before
	}
	if after != nil {
		a = *after
	}
	if a == b {
		return "", 0, 0
	}
	if contextLines < 0 {
		contextLines = 0
	}
	old, cur := splitLines(b), splitLines(a)
	f1, f2 := lineDiff(old, cur)

	var sb strings.Builder
	tab := ""
	if strings.Contains(path, " ") {
		tab = "\t"
	}
	if before == nil {
		sb.WriteString("--- /dev/null\n")
	} else {
		sb.WriteString("--- " + quotePath("a/"+path) + tab + "\n")
	}
	if after == nil {
		sb.WriteString("+++ /dev/null\n")
	} else {
		sb.WriteString("+++ " + quotePath("b/"+path) + tab + "\n")
	}

	changes := script(f1, f2)
	for i := 0; i < len(changes); {
		// A hunk takes changes while the unchanged gap to the next one is
		// small enough that their contexts would touch or overlap.
		j := i + 1
		for j < len(changes) && changes[j].i1-(changes[j-1].i1+changes[j-1].n1) <= 2*contextLines {
			j++
		}
		first, last := changes[i], changes[j-1]
		s1 := max(first.i1-contextLines, 0)
		s2 := max(first.i2-contextLines, 0)
		e1 := min(last.i1+last.n1+contextLines, f1.n())
		e2 := min(last.i2+last.n2+contextLines, f2.n())
		sb.WriteString("@@ -" + hunkRange(s1, e1-s1) + " +" + hunkRange(s2, e2-s2) + " @@\n")
		p1 := s1
		for _, c := range changes[i:j] {
			for ; p1 < c.i1; p1++ {
				writeLine(&sb, ' ', old[p1])
			}
			for k := 0; k < c.n1; k++ {
				writeLine(&sb, '-', old[c.i1+k])
			}
			for k := 0; k < c.n2; k++ {
				writeLine(&sb, '+', cur[c.i2+k])
			}
			p1 = c.i1 + c.n1
			deleted += c.n1
			added += c.n2
		}
		for ; p1 < e1; p1++ {
			writeLine(&sb, ' ', old[p1])
		}
		i = j
	}
	return sb.String(), added, deleted
}

// splitLines splits s after every "\n", keeping the newline, so that a
// last line without one is a different line from the same text with one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	out := strings.SplitAfter(s, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// change is a replaced block: n1 old lines at i1 became n2 new lines at i2
// (0-based; either count may be 0).
type change struct{ i1, n1, i2, n2 int }

// script lists the changed blocks in file order.
func script(f1, f2 *diffFile) []change {
	var out []change
	i1, i2 := 0, 0
	for i1 < f1.n() || i2 < f2.n() {
		if !f1.changed(i1) && !f2.changed(i2) {
			i1++
			i2++
			continue
		}
		c := change{i1: i1, i2: i2}
		for f1.changed(i1) {
			i1++
		}
		for f2.changed(i2) {
			i2++
		}
		c.n1, c.n2 = i1-c.i1, i2-c.i2
		out = append(out, c)
	}
	return out
}

// hunkRange formats one side of a hunk header the way git does: 1-based
// start, count omitted when 1, and for an empty range the line before it.
func hunkRange(start, count int) string {
	switch count {
	case 0:
		return strconv.Itoa(start) + ",0"
	case 1:
		return strconv.Itoa(start + 1)
	}
	return strconv.Itoa(start+1) + "," + strconv.Itoa(count)
}

// writeLine writes one diff line; line keeps its newline if it had one.
func writeLine(sb *strings.Builder, prefix byte, line string) {
	sb.WriteByte(prefix)
	sb.WriteString(line)
	if !strings.HasSuffix(line, "\n") {
		sb.WriteString("\n" + noNewline)
	}
}

// quotePath quotes name as git does with core.quotePath on (its default):
// unchanged unless it has a control character, '"', '\\', DEL or a
// non-ASCII byte, in which case it is put in double quotes with C escapes
// and octal for the other bytes. Quoting keeps the header one line and
// unambiguous whatever the file is called.
func quotePath(name string) string {
	needs := false
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			needs = true
			break
		}
	}
	if !needs {
		return name
	}
	var sb strings.Builder
	sb.WriteByte('"')
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch c {
		case '\a':
			sb.WriteString(`\a`)
		case '\b':
			sb.WriteString(`\b`)
		case '\t':
			sb.WriteString(`\t`)
		case '\n':
			sb.WriteString(`\n`)
		case '\v':
			sb.WriteString(`\v`)
		case '\f':
			sb.WriteString(`\f`)
		case '\r':
			sb.WriteString(`\r`)
		case '"':
			sb.WriteString(`\"`)
		case '\\':
			sb.WriteString(`\\`)
		default:
			if c < 0x20 || c >= 0x7f {
				sb.WriteByte('\\')
				sb.WriteByte('0' + c>>6)
				sb.WriteByte('0' + c>>3&7)
				sb.WriteByte('0' + c&7)
			} else {
				sb.WriteByte(c)
			}
		}
	}
	sb.WriteByte('"')
	return sb.String()
}
