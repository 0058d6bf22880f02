package mdops

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// forbiddenTags are elements that can run script, load active content or
// change how the rest of the page is interpreted. They are rejected (open or
// closing tag, any case, even inside code) instead of stripped: a proposal
// carrying them is an attack or a bug, and either deserves a human look.
// applet/frame/frameset are legacy embedding elements with the same power
// as iframe/object.
var forbiddenTags = map[string]bool{
	"script": true, "style": true, "iframe": true, "object": true,
	"embed": true, "svg": true, "math": true, "link": true, "meta": true,
	"base": true, "form": true, "applet": true, "frame": true,
	"frameset": true,
}

// dangerousSchemes are URL prefixes that execute code when followed.
// data:image/svg+xml is included because SVG documents can carry script.
var dangerousSchemes = []string{
	"javascript:", "vbscript:", "data:text/html", "data:image/svg+xml",
}

// maxStripPasses bounds the strip-until-stable loop of Sanitize. Each pass
// peels at least one level of tags nested inside tag syntax ("<<b>b>");
// real content needs one or two, and the cap keeps hostile input linear.
const maxStripPasses = 16

// refDefRe matches a Markdown link reference definition ("[id]: dest").
var refDefRe = regexp.MustCompile(`^ {0,3}\[(?:[^\]\\]|\\.)+\]:(.*)$`)

// Sanitize validates and cleans agent-supplied Markdown before it is written
// to memory (spec §7.1, threat 1: prompt injection through memory).
//
// It rejects, with an error naming what was found and its line:
//   - invalid UTF-8 (ErrInvalidUTF8) and NUL bytes (ErrNUL);
//   - script-capable tags such as <script>, <iframe>, <svg> (see
//     forbiddenTags), any tag with an on* event-handler attribute, and
//     javascript:, vbscript:, data:text/html (and data:image/svg+xml) URLs in
//     Markdown links, reference definitions, autolinks or tag attributes —
//     case-insensitively and ignoring whitespace, control characters,
//     backslash escapes and character references inside the URL (ErrScript).
//
// These checks run over the whole text, code spans and fenced blocks
// included: a literal `<script>` in a fact is rare enough that refusing it
// is cheaper than proving a renderer will never treat it as HTML.
//
// Otherwise every other HTML tag is removed (its inner text kept), as are
// comments, processing instructions and declarations, except inside code
// spans and fenced code blocks, where tags are literal text. Stripping
// repeats until nothing changes and the checks are re-run on the result, so
// split tags such as "<scr<b>ipt>" cannot reassemble into active content;
// the result is therefore a fixed point (Sanitize is idempotent). An
// unterminated "<!--" loses only the opener, so nothing stays hidden from a
// human reading the rendered file while the LLM reads the raw text. Entities
// such as &lt; are left alone, "a < b" stays, CRLF and lone CR become LF.
// Indented (4-space) code blocks are not recognised as code. Tags nested
// inside tag syntax more than maxStripPasses deep are refused with
// ErrBadContent.
//
// The result keeps the input's final newline or lack of one: Sanitize cleans
// fragments, not whole files.
func Sanitize(content string) (string, error) {
	if !utf8.ValidString(content) {
		for off := 0; off < len(content); {
			r, size := utf8.DecodeRuneInString(content[off:])
			if r == utf8.RuneError && size == 1 {
				return "", fmt.Errorf("%w: bad byte 0x%02x at line %d", ErrInvalidUTF8, content[off], lineAt(content, off))
			}
			off += size
		}
	}
	if i := strings.IndexByte(content, 0); i >= 0 {
		return "", fmt.Errorf("%w at line %d", ErrNUL, lineAt(content, i))
	}
	s := normalizeNewlines(content)
	for pass := 0; ; pass++ {
		if pass == maxStripPasses {
			return "", fmt.Errorf("%w: HTML tags nested more than %d deep", ErrBadContent, maxStripPasses)
		}
		if err := checkActive(s); err != nil {
			if pass > 0 {
				return "", fmt.Errorf("%w (after removing surrounding tags)", err)
			}
			return "", err
		}
		out := stripHTML(s)
		if out == s {
			return out, nil
		}
		s = out
	}
}

// lineAt returns the 1-based line number of byte offset off.
func lineAt(s string, off int) int {
	return strings.Count(s[:off], "\n") + 1
}

// isHTMLSpace reports the whitespace characters of the HTML tokenizer.
func isHTMLSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}

func isASCIILetter(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }

func isASCIIDigit(c byte) bool { return c >= '0' && c <= '9' }

// isASCIIPunct reports the characters CommonMark allows to be backslash
// escaped.
func isASCIIPunct(c byte) bool {
	return strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", c) >= 0
}

// checkActive looks for active content anywhere in s. It is deliberately
// more permissive about what counts as a tag than stripHTML (it follows the
// browser's tokenizer, not CommonMark), because a false positive costs a
// rejected proposal and a false negative costs an injected script.
func checkActive(s string) error {
	for i := 0; i < len(s); i++ {
		if s[i] != '<' {
			continue
		}
		if err := checkTag(s, i); err != nil {
			return err
		}
	}
	// Inline links and images: [text](destination "title").
	for off := 0; ; {
		k := strings.Index(s[off:], "](")
		if k < 0 {
			break
		}
		start := off + k + 2
		if scheme, bad := dangerousURL(s[start:], true); bad {
			return fmt.Errorf("%w: dangerous URL scheme %q in link at line %d", ErrScript, scheme, lineAt(s, start))
		}
		off = start
	}
	// Reference definitions: [id]: destination (possibly on the next line).
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		m := refDefRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		dest := m[1]
		if i+1 < len(lines) {
			dest += "\n" + lines[i+1]
		}
		if scheme, bad := dangerousURL(dest, true); bad {
			return fmt.Errorf("%w: dangerous URL scheme %q in link definition at line %d", ErrScript, scheme, i+1)
		}
	}
	return nil
}

// checkTag inspects the '<' at s[i]: forbidden element names, event-handler
// attributes, dangerous attribute values and dangerous autolinks.
func checkTag(s string, i int) error {
	j := i + 1
	closing := false
	if j < len(s) && s[j] == '/' {
		closing = true
		j++
	}
	// Element name as far as it is alphanumeric: "<script", "<SCRIPT/x",
	// "<script\n" and "</script" all yield "script".
	k := j
	for k < len(s) && (isASCIILetter(s[k]) || isASCIIDigit(s[k]) || s[k] == '-') {
		k++
	}
	if k > j && isASCIILetter(s[j]) {
		name := strings.ToLower(s[j:k])
		if forbiddenTags[name] {
			what := "forbidden tag"
			if name == "script" {
				what = "script tag"
			}
			return fmt.Errorf("%w: %s %q at line %d", ErrScript, what, s[i:k], lineAt(s, i))
		}
	}
	if closing || j >= len(s) || !isASCIILetter(s[j]) {
		return nil
	}
	// Autolink <scheme:...>.
	if autolinkScheme(s[j:]) {
		e := j
		for e < len(s) && s[e] != '>' && s[e] != '<' && !isHTMLSpace(s[e]) {
			e++
		}
		if scheme, bad := dangerousURL(s[j:e], true); bad {
			return fmt.Errorf("%w: dangerous URL scheme %q in autolink at line %d", ErrScript, scheme, lineAt(s, i))
		}
	}
	// Browser tokenizer: the tag name runs to whitespace, '/' or '>'.
	p := j
	for p < len(s) && !isHTMLSpace(s[p]) && s[p] != '/' && s[p] != '>' {
		p++
	}
	tag := s[i:p]
	// The scan stops at the next '<' outside quotes: whatever follows it is
	// inspected by its own checkTag call, which keeps the whole check
	// linear-ish on hostile input such as thousands of unclosed tags.
	for p < len(s) && s[p] != '>' && s[p] != '<' {
		if isHTMLSpace(s[p]) || s[p] == '/' {
			p++
			continue
		}
		// Attribute name: up to whitespace, '/', '>' or '=' (a leading '='
		// is part of the name, as in the HTML tokenizer).
		ns := p
		p++
		for p < len(s) && !isHTMLSpace(s[p]) && s[p] != '/' && s[p] != '>' && s[p] != '=' && s[p] != '<' {
			p++
		}
		attr := s[ns:p]
		if name := strings.ToLower(attr); len(name) > 2 && strings.HasPrefix(name, "on") {
			return fmt.Errorf("%w: event handler attribute %q in tag %q at line %d", ErrScript, attr, tag, lineAt(s, ns))
		}
		q := p
		for q < len(s) && isHTMLSpace(s[q]) {
			q++
		}
		if q >= len(s) || s[q] != '=' {
			continue
		}
		q++
		for q < len(s) && isHTMLSpace(s[q]) {
			q++
		}
		var val string
		switch {
		case q < len(s) && (s[q] == '"' || s[q] == '\''):
			e := strings.IndexByte(s[q+1:], s[q])
			if e < 0 {
				val, p = s[q+1:], len(s)
			} else {
				val, p = s[q+1:q+1+e], q+2+e
			}
		default:
			// Browsers keep '/' inside an unquoted value, but splitting there
			// too errs on the safe side for "<img/src=x/onerror=...>".
			e := q
			for e < len(s) && !isHTMLSpace(s[e]) && s[e] != '>' && s[e] != '<' && s[e] != '/' {
				e++
			}
			val, p = s[q:e], e
		}
		if scheme, bad := dangerousURL(val, false); bad {
			return fmt.Errorf("%w: dangerous URL scheme %q in attribute %q of tag %q at line %d", ErrScript, scheme, attr, tag, lineAt(s, q))
		}
	}
	return nil
}

// autolinkScheme reports whether s (the text after '<') starts like a
// CommonMark autolink, <scheme:...>, whose scheme is 2 to 32 characters.
func autolinkScheme(s string) bool {
	if s == "" || !isASCIILetter(s[0]) {
		return false
	}
	for i := 1; i < len(s) && i <= 32; i++ {
		c := s[i]
		switch {
		case c == ':':
			return i >= 2
		case isASCIILetter(c) || isASCIIDigit(c) || c == '+' || c == '.' || c == '-':
		default:
			return false
		}
	}
	return false
}

// dangerousURL normalises a URL the way a browser or Markdown renderer
// would before looking at its scheme — character references decoded,
// backslash escapes removed, whitespace and control characters dropped,
// lower-cased — and reports the dangerous scheme it starts with (prefix
// mode, for Markdown destinations: raw may run on past the destination,
// since only its first characters matter and a ')' or '>' ends any match)
// or contains (for attribute values, where e.g.
// style="...url(javascript:...)" also matters).
func dangerousURL(raw string, prefix bool) (string, bool) {
	limit := 0
	if prefix {
		limit = maxSchemeLen + 1 // + an optional leading '<'
	}
	u := normalizeURL(raw, limit)
	if prefix {
		u = strings.TrimPrefix(u, "<")
	}
	for _, sch := range dangerousSchemes {
		if (prefix && strings.HasPrefix(u, sch)) || (!prefix && strings.Contains(u, sch)) {
			return sch, true
		}
	}
	return "", false
}

// maxSchemeLen is the length of the longest entry of dangerousSchemes.
var maxSchemeLen = func() int {
	n := 0
	for _, s := range dangerousSchemes {
		n = max(n, len(s))
	}
	return n
}()

// normalizeURL implements the normalisation described at dangerousURL,
// stopping once the result has limit bytes (limit <= 0: no limit), which
// keeps the prefix checks O(1) per link however long the text after it.
func normalizeURL(raw string, limit int) string {
	var b strings.Builder
	emit := func(r rune) {
		if r < 0x21 || r == 0x7f || unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) {
			return // browsers strip these from URLs
		}
		b.WriteRune(unicode.ToLower(r))
	}
	for i := 0; i < len(raw) && (limit <= 0 || b.Len() < limit); {
		if raw[i] == '\\' && i+1 < len(raw) && isASCIIPunct(raw[i+1]) {
			i++ // `javascript\:` is "javascript:" to CommonMark
			continue
		}
		if raw[i] == '&' {
			if r, n := decodeEntity(raw[i:]); n > 0 {
				for _, c := range r {
					emit(c)
				}
				i += n
				continue
			}
		}
		r, size := utf8.DecodeRuneInString(raw[i:])
		emit(r)
		i += size
	}
	return b.String()
}

// namedEntities are the character references that matter for hiding a URL
// scheme; other named references cannot produce scheme characters.
var namedEntities = map[string]string{
	"colon": ":", "tab": "\t", "newline": "\n", "sol": "/", "lpar": "(",
	"rpar": ")", "period": ".", "amp": "&", "lt": "<", "gt": ">",
	"quot": "\"", "apos": "'", "nbsp": " ", "excl": "!", "num": "#",
}

// decodeEntity decodes the character reference at the start of s (which
// begins with '&'): numeric ones with or without the trailing ';', as HTML
// attribute parsing allows, and the named ones in namedEntities. It returns
// the decoded text and the bytes consumed, or n == 0 if s does not start
// with a reference we know.
func decodeEntity(s string) (string, int) {
	if len(s) > 2 && s[1] == '#' {
		j := 2
		base := 10
		if s[j] == 'x' || s[j] == 'X' {
			base = 16
			j++
		}
		k := j
		for k < len(s) && k-j < 8 && ((base == 10 && isASCIIDigit(s[k])) || (base == 16 && strings.IndexByte("0123456789abcdefABCDEF", s[k]) >= 0)) {
			k++
		}
		if k == j {
			return "", 0
		}
		n, err := strconv.ParseUint(s[j:k], base, 32)
		r := rune(n)
		if err != nil || n == 0 || !utf8.ValidRune(r) {
			r = utf8.RuneError
		}
		if k < len(s) && s[k] == ';' {
			k++
		}
		return string(r), k
	}
	if e := strings.IndexByte(s[:min(len(s), 12)], ';'); e > 1 {
		if v, ok := namedEntities[strings.ToLower(s[1:e])]; ok {
			return v, e + 1
		}
	}
	return "", 0
}

// stripHTML removes tags, comments, processing instructions and
// declarations outside code (see Sanitize). Fenced code block lines pass
// through untouched; everything between fences is processed as one segment
// so that code spans and tags may span lines.
func stripHTML(s string) string {
	lines := strings.Split(s, "\n")
	mask := fenceMask(lines)
	var parts []string
	for i := 0; i < len(lines); {
		if mask[i] {
			parts = append(parts, lines[i])
			i++
			continue
		}
		j := i
		for j < len(lines) && !mask[j] {
			j++
		}
		parts = append(parts, stripInline(strings.Join(lines[i:j], "\n")))
		i = j
	}
	return strings.Join(parts, "\n")
}

// inlineStripper strips markup from a segment that contains no fenced code.
// It remembers failed searches for closing delimiters: if no "-->" follows
// position p, none follows any later position either, so hostile input full
// of unclosed openers costs linear rather than quadratic time.
type inlineStripper struct {
	seg string
	// noClose[d] is the smallest position from which a search for
	// delimiter d failed: searches from there on fail too.
	noClose map[string]int
	// spanFail[n] is the paragraph end before which no backtick run of
	// length n closes a code span (searches starting earlier failed).
	spanFail map[int]int
}

// stripInline strips markup from a segment that contains no fenced code.
func stripInline(seg string) string {
	st := &inlineStripper{seg: seg, noClose: map[string]int{}, spanFail: map[int]int{}}
	return st.run()
}

func (st *inlineStripper) run() string {
	seg := st.seg
	var b strings.Builder
	for i := 0; i < len(seg); {
		c := seg[i]
		switch {
		case c == '\\' && i+1 < len(seg) && isASCIIPunct(seg[i+1]):
			// An escaped character is literal text (`\<b>` shows "<b>").
			b.WriteString(seg[i : i+2])
			i += 2
		case c == '`':
			n := 0
			for i+n < len(seg) && seg[i+n] == '`' {
				n++
			}
			if end := st.codeSpanEnd(i+n, n); end >= 0 {
				b.WriteString(seg[i:end])
				i = end
			} else {
				b.WriteString(seg[i : i+n])
				i += n
			}
		case c == '<':
			if end, ok := st.markupEnd(i); ok {
				i = end
			} else {
				b.WriteByte('<')
				i++
			}
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// index finds delim in seg at or after from, remembering failures.
func (st *inlineStripper) index(from int, delim string) int {
	if fail, ok := st.noClose[delim]; ok && from >= fail {
		return -1
	}
	e := strings.Index(st.seg[from:], delim)
	if e < 0 {
		if fail, ok := st.noClose[delim]; !ok || from < fail {
			st.noClose[delim] = from
		}
		return -1
	}
	return from + e
}

// codeSpanEnd finds the backtick run of exactly n that closes a code span
// opened before from, returning the index after it, or -1. A code span does
// not cross a blank line (a paragraph break).
func (st *inlineStripper) codeSpanEnd(from, n int) int {
	s := st.seg
	if from < st.spanFail[n] {
		return -1
	}
	for i := from; i < len(s); {
		switch s[i] {
		case '`':
			m := 0
			for i+m < len(s) && s[i+m] == '`' {
				m++
			}
			if m == n {
				return i + m
			}
			i += m
		case '\n':
			rest := s[i+1:]
			if k := strings.IndexByte(rest, '\n'); k >= 0 && isBlank(rest[:k]) {
				st.spanFail[n] = i
				return -1
			}
			i++
		default:
			i++
		}
	}
	st.spanFail[n] = len(s)
	return -1
}

// markupEnd reports whether seg[i] ('<') starts something to strip and
// where it ends. Tags follow CommonMark's raw-HTML grammar (leniently:
// attributes need not be separated by whitespace), so "a < b", "<3",
// "List<K, V>", email and URL autolinks are not tags and stay.
func (st *inlineStripper) markupEnd(i int) (int, bool) {
	rest := st.seg[i:]
	switch {
	case strings.HasPrefix(rest, AlwaysLoadOpen), strings.HasPrefix(rest, AlwaysLoadClose):
		// The ALWAYS_LOAD markers hide nothing: they are kept verbatim.
		return 0, false
	case strings.HasPrefix(rest, "<!--"):
		body := rest[4:]
		switch {
		case strings.HasPrefix(body, ">"):
			return i + 5, true
		case strings.HasPrefix(body, "->"):
			return i + 6, true
		}
		if e := st.index(i+4, "-->"); e >= 0 {
			return e + 3, true
		}
		// Unterminated: drop only the opener so the text stays visible.
		return i + 4, true
	case strings.HasPrefix(rest, "<![CDATA["):
		if e := st.index(i, "]]>"); e >= 0 {
			return e + 3, true
		}
		return 0, false
	case strings.HasPrefix(rest, "<!") && len(rest) > 2 && isASCIILetter(rest[2]):
		if e := st.index(i, ">"); e >= 0 {
			return e + 1, true
		}
		return 0, false
	case strings.HasPrefix(rest, "<?"):
		if e := st.index(i, "?>"); e >= 0 {
			return e + 2, true
		}
		return 0, false
	}
	p := 1
	closing := false
	if p < len(rest) && rest[p] == '/' {
		closing = true
		p++
	}
	if p >= len(rest) || !isASCIILetter(rest[p]) {
		return 0, false
	}
	for p < len(rest) && (isASCIILetter(rest[p]) || isASCIIDigit(rest[p]) || rest[p] == '-') {
		p++
	}
	if closing {
		for p < len(rest) && isHTMLSpace(rest[p]) {
			p++
		}
		if p < len(rest) && rest[p] == '>' {
			return i + p + 1, true
		}
		return 0, false
	}
	if p < len(rest) && !isHTMLSpace(rest[p]) && rest[p] != '/' && rest[p] != '>' {
		return 0, false
	}
	for p < len(rest) {
		switch c := rest[p]; {
		case isHTMLSpace(c):
			p++
		case c == '>':
			return i + p + 1, true
		case c == '/':
			if p+1 < len(rest) && rest[p+1] == '>' {
				return i + p + 2, true
			}
			return 0, false
		case isASCIILetter(c) || c == '_' || c == ':':
			for p < len(rest) && (isASCIILetter(rest[p]) || isASCIIDigit(rest[p]) || strings.IndexByte("_.:-", rest[p]) >= 0) {
				p++
			}
			q := p
			for q < len(rest) && isHTMLSpace(rest[q]) {
				q++
			}
			if q >= len(rest) || rest[q] != '=' {
				continue
			}
			q++
			for q < len(rest) && isHTMLSpace(rest[q]) {
				q++
			}
			if q >= len(rest) {
				return 0, false
			}
			if rest[q] == '"' || rest[q] == '\'' {
				e := st.index(i+q+1, rest[q:q+1])
				if e < 0 {
					return 0, false
				}
				p = e - i + 1
				continue
			}
			e := q
			for e < len(rest) && !isHTMLSpace(rest[e]) && strings.IndexByte("\"'=<>`", rest[e]) < 0 {
				e++
			}
			if e == q {
				return 0, false
			}
			p = e
		default:
			return 0, false
		}
	}
	return 0, false
}

// ValidateHeadings reports (ErrBadHeading, naming the line) the first
// malformed ATX heading in md outside fenced code blocks: a '#' run longer
// than six, no whitespace after the run ("##Foo"), or no text ("## ").
//
// A line starting with '#' and a non-'#', non-space character ("#hashtag",
// "#42") is reported as well: CommonMark renders it as a paragraph, but an
// author who meant a heading would silently lose a section, and our section
// parsers would disagree with the author about the structure. Lines indented
// four or more spaces are code, not headings.
func ValidateHeadings(md string) error {
	lines := Lines(md)
	mask := fenceMask(lines)
	for i, l := range lines {
		if mask[i] || leadingSpaces(l) > 3 {
			continue
		}
		rest := strings.TrimLeft(l, " ")
		if !strings.HasPrefix(rest, "#") {
			continue
		}
		n := 0
		for n < len(rest) && rest[n] == '#' {
			n++
		}
		var why string
		switch {
		case n > 6:
			why = fmt.Sprintf("%d '#' (at most 6)", n)
		case n < len(rest) && rest[n] != ' ' && rest[n] != '\t':
			why = "no space after '#'"
		case stripClosingHashes(strings.TrimSpace(rest[n:])) == "":
			why = "empty heading text"
		default:
			continue
		}
		return fmt.Errorf("%w: line %d %q: %s", ErrBadHeading, i+1, l, why)
	}
	return nil
}

// The markers of a block that basic and wide reads always load (issue #8);
// Sanitize keeps them, every other HTML comment goes.
const (
	AlwaysLoadOpen  = "<!-- ALWAYS_LOAD -->"
	AlwaysLoadClose = "<!-- /ALWAYS_LOAD -->"
)
