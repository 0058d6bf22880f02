// Package chunker splits agent-memory Markdown (facts.md, open_loops.md,
// decisions.md, snapshots, run reports, arbitrary source documents) into
// chunks for the BM25 search index.
//
// A chunk is the smallest unit that still makes sense on its own in a search
// result: one fact, one loop, one decision entry, one paragraph. Chunking by
// Markdown structure instead of by fixed windows keeps a fact and its
// sub-bullets together and never glues two unrelated facts into one hit.
//
// Rules, applied top to bottom over the lines of the document:
//
//   - Headings (ATX, "#" to "######", at most 3 spaces of indentation, not
//     inside a code fence) are not chunks themselves; they form the heading
//     path recorded in Chunk.Headings of every chunk below them (text
//     without the "#" markers, e.g. ["Facts: curator", "Domain"]).
//     Exception: a heading followed directly (blank lines and thematic
//     breaks aside) by EOF or by another heading of the same or a higher
//     level is a title-only section; it becomes a chunk of Kind "heading" so
//     that it can still be found. A heading followed by a deeper heading is
//     not, because its text already appears in the deeper chunks' Headings.
//   - A list item ("- ", "* ", "+ ", "1. ", "1) ") together with its
//     continuation is one chunk: every following line indented more than the
//     item's marker (sub-items, indented paragraphs and code, even across
//     blank lines), lazy continuation lines (unindented text directly below
//     that does not start a new block) and, once an indented code fence has
//     opened inside the item, everything up to its closing fence. Kind is
//     "task" when the item starts with "[ ]", "[x]" or "[X]", else "bullet".
//   - A fenced code block (``` or ~~~, closed by the same character repeated
//     at least as often; unclosed runs to EOF) is one "code" chunk including
//     its fence lines. Lines inside it are never headings or list items.
//   - A GFM table (a row containing "|" followed by a delimiter row with the
//     same number of cells, then the following non-blank rows containing
//     "|") is one "table" chunk.
//   - Consecutive non-blank lines that start none of the blocks above form a
//     "paragraph" chunk. When such a block is the first thing under a
//     heading of level 2 or deeper and starts with a "**Key:** value" line
//     (the decisions.md and timeline entry shape), its Kind is "entry".
//   - Blank lines and thematic breaks ("---", "***", "___") only separate
//     chunks and belong to none: a "---" chunk would be empty to BM25.
//     Setext headings are not recognised (a "---" under text is a break).
//   - A chunk whose text is longer than Options.MaxChars (counted in runes)
//     is split at line boundaries into pieces of at most MaxChars; a single
//     line longer than MaxChars is split at the last space within the limit
//     (no earlier than half of it), else hard at the limit on a rune
//     boundary. Every piece keeps the chunk's Kind and Headings and its own
//     exact line span (pieces of one line share that line's span). Pieces
//     never start or end with blank lines.
//
// Chunk.Text is the chunk's lines joined by "\n" with trailing blank lines
// trimmed, so strings.Split(md, "\n")[StartLine-1:EndLine] reproduces it
// exactly, modulo a trailing "\r" (CRLF input is tolerated: the "\r" is
// dropped from Text) and modulo the long-line split. Chunks are returned in
// document order with non-overlapping spans; every non-blank line that is
// neither a heading nor a thematic break is in exactly one chunk. The
// result is deterministic and empty (blank) input yields nil.
package chunker

import (
	"strings"
	"unicode/utf8"
)

// DefaultMaxChars is the chunk size limit used when Options.MaxChars is not
// positive: large enough for any realistic fact, loop or decision entry, small
// enough that a long paragraph does not dominate BM25 length normalisation.
const DefaultMaxChars = 1500

// Chunk kinds, the values of Chunk.Kind.
const (
	KindBullet    = "bullet"
	KindTask      = "task"
	KindParagraph = "paragraph"
	KindHeading   = "heading"
	KindCode      = "code"
	KindTable     = "table"
	KindEntry     = "entry"
)

// Options tunes Split. The zero value is ready to use.
type Options struct {
	// MaxChars is the maximum chunk text length in runes; <= 0 means
	// DefaultMaxChars.
	MaxChars int
}

// Chunk is one searchable piece of a Markdown document.
type Chunk struct {
	// Text is the chunk's own lines joined by "\n", trailing blank lines
	// trimmed and any "\r" line ending dropped.
	Text string
	// StartLine and EndLine are the 1-based inclusive line span of Text in
	// the source, so a search hit can point at (and an editor jump to) the
	// exact lines.
	StartLine int
	EndLine   int
	// Headings is the heading path above the chunk, outermost first, heading
	// text without the "#" markers; nil before the first heading. For a
	// "heading" chunk it is the path above that heading, not including it.
	Headings []string
	// Kind is one of the Kind* constants.
	Kind string
}

// Split chunks md according to the package rules.
func Split(md string, opts Options) []Chunk {
	if strings.TrimSpace(md) == "" {
		return nil
	}
	limit := opts.MaxChars
	if limit <= 0 {
		limit = DefaultMaxChars
	}
	p := &parser{lines: splitLines(md), limit: limit}
	if !strings.Contains(md, "\r") {
		// Lines are then md's bytes between its "\n"s, so a block of lines
		// is a substring of md (text): joining them copied the whole file
		// again for every version the search index chunks.
		p.md = md
		p.starts = make([]int, len(p.lines))
		for i := 1; i < len(p.lines); i++ {
			p.starts[i] = p.starts[i-1] + len(p.lines[i-1]) + 1
		}
	}
	p.run()
	return p.out
}

// text is lines [start, end] joined by "\n".
func (p *parser) text(start, end int) string {
	if p.starts == nil {
		return strings.Join(p.lines[start:end+1], "\n")
	}
	return p.md[p.starts[start] : p.starts[end]+len(p.lines[end])]
}

// Title returns the text of the first level-1 ("# ") heading outside code
// fences, or "" if there is none; it names a document in search results.
func Title(md string) string {
	lines := splitLines(md)
	for i := 0; i < len(lines); i++ {
		if _, _, ok := fenceOpen(lines[i]); ok {
			i = fenceEnd(lines, i)
			continue
		}
		if level, text, ok := parseHeading(lines[i]); ok && level == 1 {
			return text
		}
	}
	return ""
}

// splitLines splits on "\n" exactly like strings.Split, so indexes match the
// callers' line numbers, and drops a "\r" before each "\n" (CRLF files).
func splitLines(md string) []string {
	lines := strings.Split(md, "\n")
	if n := len(lines); n > 1 && lines[n-1] == "" {
		// The final newline terminates the last line; it does not start one.
		lines = lines[:n-1]
	}
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

type headingEntry struct {
	level int
	text  string
}

// pendingHeading is a heading not yet followed by any content: it becomes a
// "heading" chunk if the section turns out to be title-only.
type pendingHeading struct {
	line     int
	level    int
	headings []string
}

type parser struct {
	lines []string
	// md and starts (each line's offset in md) are set when the lines are
	// exactly md's (no "\r" dropped): see text.
	md     string
	starts []int
	limit  int // Options.MaxChars, defaulted
	out    []Chunk

	stack   []headingEntry
	pending *pendingHeading
	// under is the level of the heading the next block sits directly
	// below, 0 once any block has been emitted after it; it decides "entry".
	under int
}

func (p *parser) run() {
	n := len(p.lines)
	for i := 0; i < n; {
		l := p.lines[i]
		switch {
		case isBlank(l):
			i++
		case isThematicBreak(l):
			p.under = 0
			i++
		case isFence(l):
			end := fenceEnd(p.lines, i)
			p.emit(KindCode, i, end)
			i = end + 1
		case isHeadingLine(l):
			p.heading(i)
			i++
		case isListItem(l):
			end := p.itemEnd(i)
			kind := KindBullet
			if isTask(l) {
				kind = KindTask
			}
			p.emit(kind, i, end)
			i = end + 1
		case p.isTableStart(i):
			end := p.tableEnd(i)
			p.emit(KindTable, i, end)
			i = end + 1
		default:
			end := i
			for end+1 < n && !p.interrupts(end+1) {
				end++
			}
			kind := KindParagraph
			if p.under >= 2 && isKeyLine(l) {
				kind = KindEntry
			}
			p.emit(kind, i, end)
			i = end + 1
		}
	}
	p.flushPending()
}

// heading records the heading at line i in the path and decides the fate of
// the previous title-only candidate.
func (p *parser) heading(i int) {
	level, text, _ := parseHeading(p.lines[i])
	if p.pending != nil && level <= p.pending.level {
		p.flushPending()
	}
	for len(p.stack) > 0 && p.stack[len(p.stack)-1].level >= level {
		p.stack = p.stack[:len(p.stack)-1]
	}
	p.pending = &pendingHeading{line: i, level: level, headings: p.path()}
	p.stack = append(p.stack, headingEntry{level: level, text: text})
	p.under = level
}

func (p *parser) flushPending() {
	if p.pending == nil {
		return
	}
	ph := p.pending
	p.pending = nil
	p.add(KindHeading, ph.line, ph.line, ph.headings)
}

// path returns a fresh copy of the current heading path (nil when empty), so
// no two chunks share a backing array a caller could mutate.
func (p *parser) path() []string {
	if len(p.stack) == 0 {
		return nil
	}
	out := make([]string, len(p.stack))
	for i, h := range p.stack {
		out[i] = h.text
	}
	return out
}

// interrupts reports whether line j starts a new block and therefore ends a
// paragraph (or the lazy continuation of a list item).
func (p *parser) interrupts(j int) bool {
	l := p.lines[j]
	return isBlank(l) || isThematicBreak(l) || isFence(l) || isHeadingLine(l) ||
		isListItem(l) || p.isTableStart(j)
}

// itemEnd returns the last line (0-based, inclusive, non-blank) of the list
// item starting at line i.
func (p *parser) itemEnd(i int) int {
	n := len(p.lines)
	marker := indentOf(p.lines[i])
	last := i
	lastIsText := true // lazy continuation only continues paragraph text
	var fch byte
	var flen int
	inFence := false
	for j := i + 1; j < n; j++ {
		l := p.lines[j]
		if inFence {
			// Inside a fence opened within the item everything up to the
			// closing fence belongs to the item, whatever its indentation:
			// agents often paste code flush-left under a bullet.
			if fenceCloses(l, fch, flen) {
				inFence = false
			}
			last = j
			continue
		}
		if isBlank(l) {
			continue // kept only if an indented line follows
		}
		if indentOf(l) > marker {
			if c, k, ok := fenceOpen(l); ok {
				fch, flen, inFence = c, k, true
				lastIsText = false
			} else {
				lastIsText = true
			}
			last = j
			continue
		}
		if j == last+1 && lastIsText && !p.interrupts(j) {
			last = j
			continue
		}
		break
	}
	return last
}

func (p *parser) isTableStart(i int) bool {
	if i+1 >= len(p.lines) {
		return false
	}
	head, delim := p.lines[i], p.lines[i+1]
	if !strings.Contains(head, "|") || !isDelimiterRow(delim) {
		return false
	}
	return cellCount(head) == cellCount(delim)
}

func (p *parser) tableEnd(i int) int {
	end := i + 1
	for end+1 < len(p.lines) {
		l := p.lines[end+1]
		if isBlank(l) || !strings.Contains(l, "|") || isFence(l) || isHeadingLine(l) {
			break
		}
		end++
	}
	return end
}

// emit records the content block of lines [start, end] (0-based): content
// means the heading above is not title-only and the next block is no longer
// directly under it. Trailing blank lines (inside an item or an unclosed
// fence) are trimmed before the chunk is added.
func (p *parser) emit(kind string, start, end int) {
	p.pending = nil
	p.under = 0
	for end > start && isBlank(p.lines[end]) {
		end--
	}
	p.add(kind, start, end, p.path())
}

// add appends lines [start, end] (0-based, non-blank edges) as one chunk,
// or as several if the text is longer than the limit.
func (p *parser) add(kind string, start, end int, headings []string) {
	text := p.text(start, end)
	if utf8.RuneCountInString(text) <= p.limit {
		p.out = append(p.out, Chunk{Text: text, StartLine: start + 1, EndLine: end + 1, Headings: headings, Kind: kind})
		return
	}
	p.split(kind, start, end, headings)
}

// split packs lines [start, end] greedily into pieces of at most p.limit
// runes.
func (p *parser) split(kind string, start, end int, headings []string) {
	add := func(text string, s, e int) {
		p.out = append(p.out, Chunk{Text: text, StartLine: s + 1, EndLine: e + 1, Headings: cloneStrings(headings), Kind: kind})
	}
	// The piece being packed is lines [bufStart, bufStart+count).
	bufStart, count, size := 0, 0, 0
	flush := func() {
		for count > 0 && isBlank(p.lines[bufStart+count-1]) {
			count--
		}
		if count > 0 {
			add(p.text(bufStart, bufStart+count-1), bufStart, bufStart+count-1)
		}
		count, size = 0, 0
	}
	for j := start; j <= end; j++ {
		l := p.lines[j]
		n := utf8.RuneCountInString(l)
		if n > p.limit {
			flush()
			for _, seg := range splitLongLine(l, p.limit) {
				add(seg, j, j)
			}
			continue
		}
		if count > 0 && size+1+n > p.limit {
			flush()
		}
		if count == 0 {
			if isBlank(l) {
				continue // pieces never start with a blank line
			}
			bufStart, size = j, n
		} else {
			size += 1 + n
		}
		count++
	}
	flush()
}

// splitLongLine cuts a line longer than limit runes into pieces of at most
// limit runes, preferring the last space within the limit so words stay whole; the
// whitespace at a cut is dropped. Cuts always fall on rune boundaries.
func splitLongLine(l string, limit int) []string {
	var segs []string
	rest := l
	runes := utf8.RuneCountInString(rest) // kept up to date: no O(n²) recount
	for runes > limit {
		lim := byteOffset(rest, limit)  // end of the first limit runes
		lo := byteOffset(rest, limit/2) // do not cut earlier than this
		seg, next := "", ""
		for b := lim; b > lo; b-- { // rest[lim] exists: rest is longer
			if rest[b] == ' ' || rest[b] == '\t' {
				seg = strings.TrimRight(rest[:b], " \t")
				next = strings.TrimLeft(rest[b:], " \t")
				break
			}
		}
		if strings.TrimSpace(seg) == "" {
			seg, next = rest[:lim], rest[lim:]
		}
		if strings.TrimSpace(seg) != "" {
			segs = append(segs, seg)
		}
		runes -= utf8.RuneCountInString(rest[:len(rest)-len(next)])
		rest = next
	}
	if strings.TrimSpace(rest) != "" {
		segs = append(segs, rest)
	}
	return segs
}

// byteOffset returns the byte index just after the first n runes of s.
func byteOffset(s string, n int) int {
	off := 0
	for i := 0; i < n && off < len(s); i++ {
		_, size := utf8.DecodeRuneInString(s[off:])
		off += size
	}
	return off
}

func cloneStrings(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s...)
}
