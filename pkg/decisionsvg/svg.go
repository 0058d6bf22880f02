// Package decisionsvg draws the entity graph's answers as standalone SVG,
// server-side and without script, for the review console (issue #28):
//
//   - Chain: a decision chain (ExplainDecision) as a top-down layered graph,
//     the decision asked about on top and what it builds on below, edges
//     labelled with their relation;
//   - Timeline: an entity's relations over time (GetEntity's edges with
//     their valid_from / valid_to) as bars on a time axis.
//
// Everything that comes from memory (titles, labels, ids, statuses) is
// text: XML-escaped, with characters XML cannot carry replaced by U+FFFD and
// whitespace runs folded to one space, so a "<script>" in a decision title
// renders as those characters. The only attribute memory reaches is a
// class (status-<status>), reduced to [a-z0-9-].
//
// Colours are currentColor only (boxes are a faint tint of it), so an SVG
// put inline in a page takes the page's text colour and is readable in
// light and dark alike (as an <img> it has no page colour: inline it). The
// classes let a stylesheet restyle it: gb-svg and gb-chain or gb-timeline
// on the root; node with decision (and status-<status>) or entity (and
// type-<type>); edge with rel-<relation>, its arrow; bar with rel-<relation>
// and open or closed; axis, tick, now; texts title, meta, label. No <style>
// element, no style attribute and no id is emitted: a strict
// Content-Security-Policy (no 'unsafe-inline' styles) strips nothing, and
// several pictures on one page cannot clash. Each picture has a <title>
// first (its accessible name) and a <desc>, and every node, edge and bar
// its own <title> (a tooltip, and a description for assistive technology).
//
// Output is deterministic: the same input renders the same bytes (layout
// by input order, no map iteration, coordinates rounded to whole pixels),
// so pictures can be cached by content and compared in golden tests.
package decisionsvg

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrNothingToDraw is returned for an input without anything to draw (a
// nil response, a chain without decisions).
var ErrNothingToDraw = errors.New("decisionsvg: nothing to draw")

// Typography and spacing shared by both pictures, in pixels.
const (
	fontSize     = 13
	smallSize    = 11
	lineHeight   = 17
	margin       = 16
	fontFamily   = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"
	charWidth    = 7.2  // an average Latin glyph at fontSize
	wideWidth    = 13.0 // a CJK or other wide glyph at fontSize
	smallPerChar = smallSize / float64(fontSize)
)

// clean is s as it may appear in the picture: invalid UTF-8 and runes XML
// 1.0 cannot carry (control characters, U+FFFE, U+FFFF) become U+FFFD, and
// runs of white space one space, trimmed.
func clean(s string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if !xmlChar(r) {
			r = utf8.RuneError
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// xmlChar reports whether XML 1.0 allows r in content (its Char
// production), leaving out the white space clean folds anyway.
func xmlChar(r rune) bool {
	switch {
	case r < 0x20:
		return false
	case r >= 0x7f && r <= 0x9f: // C1 controls: allowed, but never meant
		return false
	case r >= 0xd800 && r <= 0xdfff, r == 0xfffe, r == 0xffff:
		return false
	}
	return r <= unicode.MaxRune
}

// esc is clean(s) escaped for XML content.
func esc(s string) string {
	return escaper.Replace(clean(s))
}

var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;")

// classPart reduces s to a CSS class fragment: lower-case letters, digits
// and single hyphens; "" when nothing is left.
func classPart(s string) string {
	var b strings.Builder
	hyphen := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if hyphen && b.Len() > 0 {
				b.WriteByte('-')
			}
			hyphen = false
			b.WriteRune(r)
			continue
		}
		hyphen = true
	}
	return b.String()
}

// textWidth estimates the rendered width of s at fontSize: there is no font
// metrics server-side, so boxes are sized generously from rune classes.
func textWidth(s string) float64 {
	w := 0.0
	for _, r := range s {
		if wide(r) {
			w += wideWidth
		} else {
			w += charWidth
		}
	}
	return w
}

// wide reports East Asian wide and full-width runes (and emoji), which
// take about a full em.
func wide(r rune) bool {
	return (r >= 0x1100 && r <= 0x115f) || (r >= 0x2e80 && r <= 0xa4cf) || (r >= 0xac00 && r <= 0xd7a3) ||
		(r >= 0xf900 && r <= 0xfaff) || (r >= 0xfe30 && r <= 0xfe4f) || (r >= 0xff00 && r <= 0xff60) ||
		(r >= 0xffe0 && r <= 0xffe6) || (r >= 0x1f300 && r <= 0x1faff) || (r >= 0x20000 && r <= 0x3fffd)
}

// wrap breaks cleaned text into at most maxLines lines of at most perLine
// runes, at spaces where it can; a text that does not fit ends in "…".
func wrap(text string, perLine, maxLines int) []string {
	var lines []string
	var cur []rune
	flush := func() {
		lines = append(lines, strings.TrimSpace(string(cur)))
		cur = cur[:0]
	}
	for _, word := range strings.Fields(text) {
		w := []rune(word)
		if len(cur) > 0 && len(cur)+1+len(w) > perLine {
			flush()
		}
		for len(w) > perLine { // a word longer than a line is cut
			if len(cur) > 0 {
				flush()
			}
			cur = append(cur, w[:perLine]...)
			flush()
			w = w[perLine:]
		}
		if len(cur) > 0 {
			cur = append(cur, ' ')
		}
		cur = append(cur, w...)
	}
	if len(cur) > 0 {
		flush()
	}
	if len(lines) > maxLines {
		last := []rune(lines[maxLines-1])
		if len(last) >= perLine {
			last = last[:perLine-1]
		}
		lines = append(lines[:maxLines-1], strings.TrimSpace(string(last))+"…")
	}
	return lines
}

// truncate shortens cleaned text to n runes, ending in "…" when cut.
func truncate(text string, n int) string {
	r := []rune(text)
	if len(r) <= n {
		return text
	}
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

// px formats a coordinate as whole pixels.
func px(v float64) string { return strconv.Itoa(int(math.Round(v))) }

// svgBuilder writes one picture.
type svgBuilder struct{ strings.Builder }

// open writes the root element, sized to its content, and its <title>.
func (b *svgBuilder) open(class string, width, height float64, title string) {
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" class="gb-svg ` + class + `" role="img" width="` + px(width) +
		`" height="` + px(height) + `" viewBox="0 0 ` + px(width) + ` ` + px(height) + `" font-family="` + fontFamily +
		`" font-size="` + strconv.Itoa(fontSize) + `" fill="currentColor">` + "\n")
	b.WriteString("<title>" + esc(title) + "</title>\n")
}

func (b *svgBuilder) close() { b.WriteString("</svg>\n") }

// text writes one line of (already cleaned or raw) memory text.
func (b *svgBuilder) text(class string, x, y float64, anchor, s string, size int) {
	b.WriteString(`<text class="` + class + `" x="` + px(x) + `" y="` + px(y) + `"`)
	if anchor != "" {
		b.WriteString(` text-anchor="` + anchor + `"`)
	}
	if size != fontSize {
		b.WriteString(` font-size="` + strconv.Itoa(size) + `"`)
	}
	b.WriteString(">" + esc(s) + "</text>\n")
}
