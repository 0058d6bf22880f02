package chunker

import "strings"

// Line classification. Each predicate looks at one line (without its "\r")
// and is deliberately a small subset of CommonMark/GFM: enough for the
// Markdown agents and humans write into memory files, predictable for the
// rest.

func isBlank(l string) bool { return strings.TrimSpace(l) == "" }

// indentOf returns the width of the leading whitespace, a tab counting to
// the next multiple of 4 as in CommonMark.
func indentOf(l string) int {
	w := 0
	for i := 0; i < len(l); i++ {
		switch l[i] {
		case ' ':
			w++
		case '\t':
			w += 4 - w%4
		default:
			return w
		}
	}
	return w
}

// parseHeading parses an ATX heading: up to 3 spaces, 1-6 "#", then a space,
// a tab or the end of the line ("#tag" is not a heading). The text drops an
// optional closing "#" sequence, as CommonMark does.
func parseHeading(l string) (level int, text string, ok bool) {
	t := strings.TrimLeft(l, " ")
	if len(l)-len(t) > 3 {
		return 0, "", false
	}
	for level < len(t) && t[level] == '#' {
		level++
	}
	if level == 0 || level > 6 {
		return 0, "", false
	}
	rest := t[level:]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return 0, "", false
	}
	text = strings.TrimSpace(rest)
	if stripped := strings.TrimRight(text, "#"); stripped != text {
		if stripped == "" {
			text = ""
		} else if last := stripped[len(stripped)-1]; last == ' ' || last == '\t' {
			text = strings.TrimSpace(stripped)
		}
	}
	return level, text, true
}

func isHeadingLine(l string) bool {
	_, _, ok := parseHeading(l)
	return ok
}

// fenceOpen reports whether l opens a fenced code block and returns the fence
// character and length needed to close it. Indentation is not limited so
// that fences nested in list items are recognised too. A backtick fence's
// info string cannot contain a backtick (that is inline code, not a fence).
func fenceOpen(l string) (ch byte, n int, ok bool) {
	t := strings.TrimLeft(l, " \t")
	if len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return 0, 0, false
	}
	ch = t[0]
	for n < len(t) && t[n] == ch {
		n++
	}
	if n < 3 {
		return 0, 0, false
	}
	if ch == '`' && strings.ContainsRune(t[n:], '`') {
		return 0, 0, false
	}
	return ch, n, true
}

func isFence(l string) bool {
	_, _, ok := fenceOpen(l)
	return ok
}

// fenceCloses reports whether l closes a fence opened with n times ch: at
// least n of the same character and nothing but whitespace after them.
func fenceCloses(l string, ch byte, n int) bool {
	t := strings.TrimLeft(l, " \t")
	k := 0
	for k < len(t) && t[k] == ch {
		k++
	}
	return k >= n && strings.TrimSpace(t[k:]) == ""
}

// fenceEnd returns the index of the line closing the fence opened at line i,
// or the last line if the fence is never closed.
func fenceEnd(lines []string, i int) int {
	ch, n, _ := fenceOpen(lines[i])
	for j := i + 1; j < len(lines); j++ {
		if fenceCloses(lines[j], ch, n) {
			return j
		}
	}
	return len(lines) - 1
}

// isThematicBreak matches "---", "***", "___" (3 or more, spaces allowed
// between, at most 3 spaces of indentation).
func isThematicBreak(l string) bool {
	t := strings.TrimLeft(l, " ")
	if len(l)-len(t) > 3 {
		return false
	}
	t = strings.TrimRight(t, " \t")
	if t == "" || (t[0] != '-' && t[0] != '*' && t[0] != '_') {
		return false
	}
	n := 0
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case t[0]:
			n++
		case ' ', '\t':
		default:
			return false
		}
	}
	return n >= 3
}

// listContent returns the text after a list marker ("- ", "* ", "+ ",
// "1. ", "1) "; the marker may also end the line) and whether l is a list
// item at all. Thematic breaks such as "- - -" are not list items.
func listContent(l string) (string, bool) {
	if isThematicBreak(l) {
		return "", false
	}
	t := strings.TrimLeft(l, " \t")
	i := 0
	switch {
	case t == "":
		return "", false
	case t[0] == '-' || t[0] == '*' || t[0] == '+':
		i = 1
	default:
		for i < len(t) && i < 9 && t[i] >= '0' && t[i] <= '9' {
			i++
		}
		if i == 0 || i >= len(t) || (t[i] != '.' && t[i] != ')') {
			return "", false
		}
		i++
	}
	if i == len(t) {
		return "", true
	}
	if t[i] != ' ' && t[i] != '\t' {
		return "", false
	}
	return strings.TrimLeft(t[i:], " \t"), true
}

func isListItem(l string) bool {
	_, ok := listContent(l)
	return ok
}

// isTask reports whether the list item l is a GFM task ("- [ ] …",
// "- [x] …"), the open_loops.md shape.
func isTask(l string) bool {
	c, ok := listContent(l)
	if !ok || len(c) < 3 || c[0] != '[' || c[2] != ']' {
		return false
	}
	if c[1] != ' ' && c[1] != 'x' && c[1] != 'X' {
		return false
	}
	return len(c) == 3 || c[3] == ' ' || c[3] == '\t'
}

// isKeyLine matches a "**Key:** value" (or "**Key**: value") line, the field
// shape of decisions.md and timeline entries.
func isKeyLine(l string) bool {
	if !strings.HasPrefix(l, "**") {
		return false
	}
	rest := l[2:]
	end := strings.Index(rest, "**")
	if end <= 0 {
		return false
	}
	key := rest[:end]
	if strings.HasSuffix(key, ":") && len(key) > 1 {
		return true
	}
	return strings.HasPrefix(rest[end+2:], ":")
}

// isDelimiterRow matches a GFM table delimiter row such as "|---|:--:|".
func isDelimiterRow(l string) bool {
	t := strings.TrimSpace(l)
	if t == "" {
		return false
	}
	cells := splitCells(t)
	if len(cells) == 1 && !strings.Contains(t, "|") && !strings.Contains(t, ":") {
		// A bare "---" is a thematic break, not a one-column table.
		return false
	}
	for _, c := range cells {
		c = strings.TrimSpace(c)
		c = strings.TrimPrefix(c, ":")
		c = strings.TrimSuffix(c, ":")
		if c == "" || strings.Trim(c, "-") != "" {
			return false
		}
	}
	return true
}

func cellCount(l string) int { return len(splitCells(strings.TrimSpace(l))) }

// splitCells splits a trimmed table row into cells, ignoring the optional
// outer pipes and escaped "\|".
func splitCells(t string) []string {
	t = strings.TrimPrefix(t, "|")
	if strings.HasSuffix(t, "|") && !strings.HasSuffix(t, "\\|") {
		t = t[:len(t)-1]
	}
	var cells []string
	start := 0
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case '\\':
			i++
		case '|':
			cells = append(cells, t[start:i])
			start = i + 1
		}
	}
	return append(cells, t[start:])
}
