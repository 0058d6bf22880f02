package mdops

import (
	"strings"
	"time"
	"unicode"
)

// dayLayout is the date format used in every heading and loop line. Dates
// are always rendered in UTC so that the same instant yields the same text
// on every replica, whatever its local zone.
const dayLayout = "2006-01-02"

// Lines splits s into lines after normalising CRLF and lone CR to LF. A
// trailing newline does not produce an empty last element, so
// Lines("a\nb\n") is ["a" "b"] and Lines("") is nil. It is the one line
// splitter of the package so that every parser agrees on line numbers.
func Lines(s string) []string {
	s = normalizeNewlines(s)
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// normalizeNewlines turns CRLF and lone CR into LF. Lone CR is converted
// too: some terminals and viewers treat it as a line break and others do
// not, which lets text hide from one reader but not another.
func normalizeNewlines(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}

// isBlank reports whether a line holds only whitespace.
func isBlank(s string) bool { return strings.TrimSpace(s) == "" }

// render joins lines into file content: trailing blank lines are dropped and
// exactly one final newline is added, which keeps git diffs free of
// end-of-file noise. No lines at all render as "".
func render(lines []string) string {
	end := len(lines)
	for end > 0 && isBlank(lines[end-1]) {
		end--
	}
	if end == 0 {
		return ""
	}
	// One copy: Join and then + "\n" copied the file twice, and decisions.md
	// is rendered at every apply that evicts, all an agent's life.
	n := end // the newlines
	for _, l := range lines[:end] {
		n += len(l)
	}
	var b strings.Builder
	b.Grow(n)
	for _, l := range lines[:end] {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// collapseSpace trims s and folds every run of whitespace (newlines
// included) into one space. Single-line fields (loop text, titles, run ids)
// go through it so that agent text can never start a new Markdown line and
// thereby inject a heading or a fake entry.
func collapseSpace(s string) string {
	return strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
}

// day formats t as the UTC calendar day.
func day(t time.Time) string { return t.UTC().Format(dayLayout) }

// parseDay parses a YYYY-MM-DD date as midnight UTC.
func parseDay(s string) (time.Time, bool) {
	t, err := time.Parse(dayLayout, s)
	return t, err == nil
}

// leadingSpaces counts leading ASCII spaces; a tab counts as 4 because
// CommonMark treats it as reaching the next tab stop, which is what matters
// for the "up to three spaces" rules.
func leadingSpaces(s string) int {
	n := 0
	for _, c := range []byte(s) {
		switch c {
		case ' ':
			n++
		case '\t':
			n += 4
		default:
			return n
		}
	}
	return n
}

// parseATX recognises a well-formed CommonMark ATX heading: at most three
// spaces of indentation, one to six '#', then whitespace or end of line. The
// text is trimmed and an optional closing '#' sequence removed. Malformed
// headings are not headings here; ValidateHeadings reports them.
func parseATX(line string) (level int, text string, ok bool) {
	if leadingSpaces(line) > 3 {
		return 0, "", false
	}
	rest := strings.TrimLeft(line, " ")
	n := 0
	for n < len(rest) && rest[n] == '#' {
		n++
	}
	if n == 0 || n > 6 {
		return 0, "", false
	}
	if n < len(rest) && rest[n] != ' ' && rest[n] != '\t' {
		return 0, "", false
	}
	return n, stripClosingHashes(strings.TrimSpace(rest[n:])), true
}

// stripClosingHashes removes an ATX closing sequence ("## Foo ##" -> "Foo").
func stripClosingHashes(text string) string {
	t := strings.TrimRight(text, "#")
	if t == text {
		return text
	}
	if t == "" {
		return ""
	}
	if strings.HasSuffix(t, " ") || strings.HasSuffix(t, "\t") {
		return strings.TrimSpace(t)
	}
	return text
}

// fenceRun describes the fence-like prefix of a line: indentation, the
// fence character and how many times it repeats, and what follows.
func fenceRun(line string) (indent int, ch byte, n int, rest string) {
	indent = leadingSpaces(line)
	s := strings.TrimLeft(line, " \t")
	if s == "" || (s[0] != '`' && s[0] != '~') {
		return indent, 0, 0, s
	}
	ch = s[0]
	for n < len(s) && s[n] == ch {
		n++
	}
	return indent, ch, n, s[n:]
}

// fenceMask marks the lines that belong to fenced code blocks, fence lines
// included. Headings, bullets and tags inside code are literal text, so
// every structural parser consults this mask. An unclosed fence runs to the
// end of the document, as in CommonMark.
func fenceMask(lines []string) []bool {
	regions, _ := fenceRegions(lines)
	mask := make([]bool, len(lines))
	for i, r := range regions {
		mask[i] = r > 0
	}
	return mask
}

// fenceRegions numbers the fenced code blocks of lines from 1, fence lines
// included (0: not code), and returns the fence that closes a block left
// open at the end ("" when none is).
func fenceRegions(lines []string) (regions []int, openCloser string) {
	regions = make([]int, len(lines))
	var fch byte
	flen, id := 0, 0
	in := false
	for i, l := range lines {
		indent, ch, n, rest := fenceRun(l)
		if !in {
			// A backtick fence's info string holds no backtick.
			inlineCode := ch == '`' && strings.Contains(rest, "`")
			if n >= 3 && indent <= 3 && !inlineCode {
				in, fch, flen = true, ch, n
				id++
				regions[i] = id
			}
			continue
		}
		regions[i] = id
		if ch == fch && n >= flen && indent <= 3 && isBlank(rest) {
			in = false
		}
	}
	if in {
		openCloser = strings.Repeat(string(fch), flen)
	}
	return regions, openCloser
}

// doc is a parsed Markdown file: its lines plus the code-fence mask. The
// mutating operations edit lines in place and re-parse when they need to.
type doc struct {
	lines []string
	fence []bool
	// region numbers each line's fenced code block (0: not code).
	region []int
	// openFence closes a code block left open at the end ("" when none is).
	openFence string
}

// newDoc parses md, dropping trailing blank lines so that appends land
// directly after the last content line.
func newDoc(md string) *doc {
	lines := Lines(md)
	end := len(lines)
	for end > 0 && isBlank(lines[end-1]) {
		end--
	}
	d := &doc{lines: lines[:end]}
	d.refresh()
	return d
}

// refresh recomputes the fence mask after an edit.
func (d *doc) refresh() {
	d.region, d.openFence = fenceRegions(d.lines)
	d.fence = make([]bool, len(d.lines))
	for i, r := range d.region {
		d.fence[i] = r > 0
	}
}

// closeFence closes a code block the file leaves open at its end (a person
// forgot the closing fence) before an operation writes: what is added must
// not land inside the code, where no parser would find it again.
func (d *doc) closeFence() {
	if d.openFence != "" {
		d.lines = append(d.lines, d.openFence)
		d.refresh()
	}
}

// empty reports whether the document has no content at all, in which case
// the operations create the file from scratch.
func (d *doc) empty() bool { return len(d.lines) == 0 }

// heading returns the heading on line i, ignoring code blocks.
func (d *doc) heading(i int) (level int, text string, ok bool) {
	if d.fence[i] {
		return 0, "", false
	}
	return parseATX(d.lines[i])
}

// sectionEnd returns the index of the first heading of level <= maxLevel
// after line start, or len(lines).
func (d *doc) sectionEnd(start, maxLevel int) int {
	for i := start + 1; i < len(d.lines); i++ {
		if lvl, _, ok := d.heading(i); ok && lvl <= maxLevel {
			return i
		}
	}
	return len(d.lines)
}

// findH2 returns the first level-2 section whose title satisfies match, as
// the heading index and the exclusive end of its body.
func (d *doc) findH2(match func(title string) bool) (start, end int, ok bool) {
	for i := range d.lines {
		if lvl, text, isH := d.heading(i); isH && lvl == 2 && match(text) {
			return i, d.sectionEnd(i, 2), true
		}
	}
	return 0, 0, false
}

// lastContent returns the index of the last non-blank line in [start, end);
// start itself (the heading) when the body is blank.
func (d *doc) lastContent(start, end int) int {
	for i := end - 1; i > start; i-- {
		if !isBlank(d.lines[i]) {
			return i
		}
	}
	return start
}

// insertLines inserts ls before index pos verbatim.
func (d *doc) insertLines(pos int, ls ...string) {
	out := make([]string, 0, len(d.lines)+len(ls))
	out = append(out, d.lines[:pos]...)
	out = append(out, ls...)
	out = append(out, d.lines[pos:]...)
	d.lines = out
	d.refresh()
}

// insertBlock inserts a block (a section or an entry) before index pos,
// adding a blank line on either side where needed, so blocks stay visually
// separated without doubling existing blank lines.
func (d *doc) insertBlock(pos int, block []string) {
	var ls []string
	if pos > 0 && !isBlank(d.lines[pos-1]) {
		ls = append(ls, "")
	}
	ls = append(ls, block...)
	if pos < len(d.lines) && !isBlank(d.lines[pos]) {
		ls = append(ls, "")
	}
	d.insertLines(pos, ls...)
}

// removeLines deletes lines [from, to).
func (d *doc) removeLines(from, to int) {
	d.lines = append(d.lines[:from:from], d.lines[to:]...)
	d.refresh()
}

// itemEnd returns the exclusive end of the list item starting at line i:
// the item line plus any directly following indented continuation lines
// (wrapped text, sub-bullets). Removing an item removes them too, so no
// orphaned sub-bullets are left behind.
func (d *doc) itemEnd(i int) int {
	j, code := i+1, 0
	for ; j < len(d.lines); j++ {
		switch {
		case code > 0 && d.region[j] == code:
			// Inside a code block the item opened, blank and unindented
			// lines included: it ends with the block.
		case !isBlank(d.lines[j]) && leadingSpaces(d.lines[j]) > 0 && !d.isHeading(j):
			code = d.region[j]
		default:
			return j
		}
	}
	return j
}

// isHeading reports whether line i is a heading: an indented "  ## x" ends
// an item rather than continuing it, as every section parser sees it.
func (d *doc) isHeading(i int) bool {
	_, _, ok := d.heading(i)
	return ok
}

// render returns the document as file content.
func (d *doc) render() string { return render(d.lines) }

// bulletText returns the text of a top-level list item ("- x", "* x" or
// "+ x"); indented items are continuation of their parent.
func bulletText(line string) (string, bool) {
	if len(line) < 2 || (line[0] != '-' && line[0] != '*' && line[0] != '+') {
		return "", false
	}
	if line[1] != ' ' && line[1] != '\t' {
		return "", false
	}
	return strings.TrimSpace(line[2:]), true
}

// bodyLine is a line of a sectioned file with the section it is in.
type bodyLine struct{ text, section string }

// bodyLines yields each line that is neither a heading nor inside fenced
// code, with the "## " section it belongs to ("" before the first, and after
// a "# " title resets it) — the walk every parser of sectioned files shares.
func (d *doc) bodyLines(yield func(i int, l bodyLine) bool) {
	section := ""
	for i, l := range d.lines {
		if lvl, text, ok := d.heading(i); ok {
			switch lvl {
			case 1:
				section = ""
			case 2:
				section = text
			}
			continue
		}
		if d.fence[i] {
			continue
		}
		if !yield(i, bodyLine{text: l, section: section}) {
			return
		}
	}
}
