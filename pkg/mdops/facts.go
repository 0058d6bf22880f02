package mdops

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/garden-bloom/memory/pkg/factttl"
)

// Fact is one bullet of facts.md.
type Fact struct {
	// Section is the title of the enclosing "## " section ("" before the
	// first one).
	Section string
	// Text is the bullet text without its "- " marker, trimmed.
	Text string
	// Line is the 1-based line number of the bullet in the parsed file.
	Line int
	// More are the fact's sub-bullets and wrapped lines, as in the file.
	More []string
}

// ParseFacts returns the facts of a facts.md file in file order: every
// top-level bullet ("- ", "* " or "+ ") outside fenced code, attributed to
// the nearest "## " section. Sub-bullets and wrapped lines belong to their
// parent fact and are not facts of their own; an "### " subsection does not
// start a new section, so the fact still belongs to its "## " section.
func ParseFacts(md string) []Fact {
	return parseFacts(newDoc(md))
}

// parseFacts is ParseFacts on an already parsed document, so that the
// editing functions and the parser agree on line numbers.
func parseFacts(d *doc) []Fact {
	var out []Fact
	for i, l := range d.bodyLines {
		if t, ok := bulletText(l.text); ok && t != "" {
			f := Fact{Section: l.section, Text: t, Line: i + 1}
			if end := d.itemEnd(i); end > i+1 {
				f.More = slices.Clone(d.lines[i+1 : end])
			}
			out = append(out, f)
		}
	}
	return out
}

// AppendFacts appends the facts in content to section of facts.md.
//
// content is agent text: it goes through Sanitize (its errors are returned
// as is), then each non-empty line becomes one bullet — "- " is added unless
// the line already starts with "- " or "* "/"+ " (normalised to "- "). A
// line that starts with '#' (after the marker) is refused with
// ErrBadContent: facts must not smuggle headings, which would reshape the
// file; this also covers "#hashtag" lines, consistent with ValidateHeadings.
// Empty content is ErrBadContent too.
//
// Facts are added at the end of the first "## " section whose title matches
// section case-insensitively after trimming (Unicode-aware, so "технічні
// знання" matches "Технічні знання"); a missing section is created at the
// end of the file; an empty md becomes "# Facts: <agentID>" plus that
// section. A fact whose text is already anywhere in the file (or earlier in
// content) is skipped, TTL markers aside (pkg/factttl: "x" is in a file that
// has "x _(expires …)_"), which makes retried proposals idempotent; added
// counts the bullets really written. Nothing else in the file changes.
func AppendFacts(md, agentID, section, content string) (out string, added int, err error) {
	section, err = cleanTitle("section", section)
	if err != nil {
		return "", 0, err
	}
	clean, err := Sanitize(content)
	if err != nil {
		return "", 0, err
	}
	var facts []string
	for n, l := range Lines(clean) {
		t := stripMarker(l)
		if t == "" {
			continue
		}
		if strings.HasPrefix(t, "#") {
			return "", 0, fmt.Errorf("%w: fact line %d starts with '#' (headings are not allowed in facts): %q", ErrBadContent, n+1, t)
		}
		facts = append(facts, t)
	}
	if len(facts) == 0 {
		return "", 0, fmt.Errorf("%w: no facts in content", ErrBadContent)
	}

	d := newDoc(md)
	d.closeFence()
	// A fact is the same fact whatever its TTL marker says (factttl): the
	// marker is when it stops being true, not what it says.
	seen := map[string]bool{}
	for _, f := range parseFacts(d) {
		seen[factttl.Strip(f.Text)] = true
	}
	var bullets []string
	for _, f := range facts {
		if key := factttl.Strip(f); !seen[key] {
			seen[key] = true
			bullets = append(bullets, "- "+f)
		}
	}
	if len(bullets) == 0 {
		return d.render(), 0, nil
	}
	if d.empty() {
		agentID, err = cleanTitle("agent id", agentID)
		if err != nil {
			return "", 0, err
		}
		d.lines = []string{"# Facts: " + agentID}
		d.refresh()
	}
	if start, end, ok := d.findH2(titleMatcher(section)); ok {
		d.insertLines(d.lastContent(start, end)+1, bullets...)
	} else {
		d.insertBlock(len(d.lines), append([]string{"## " + section}, bullets...))
	}
	return d.render(), len(bullets), nil
}

// RemoveFact removes the first fact whose text equals line, compared after
// trimming and after dropping a leading bullet marker, together with its
// sub-bullets and wrapped lines. The section heading stays even if the
// section becomes empty (stable structure). ErrNotFound if no fact matches,
// ErrBadContent if line is empty.
func RemoveFact(md, line string) (string, error) {
	want := stripMarker(normalizeNewlines(line))
	if want == "" {
		return "", fmt.Errorf("%w: empty fact", ErrBadContent)
	}
	d := newDoc(md)
	for _, f := range parseFacts(d) {
		if f.Text == want {
			i := f.Line - 1
			d.removeLines(i, d.itemEnd(i))
			return d.render(), nil
		}
	}
	return "", fmt.Errorf("%w: fact %q", ErrNotFound, want)
}

// cleanTitle validates a heading title or identifier supplied by a caller:
// sanitised, folded to one line (a newline would start a new block), a
// closing "#" sequence dropped, not empty and not starting with '#' (which
// would change the heading level).
func cleanTitle(what, s string) (string, error) {
	clean, err := Sanitize(s)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	// A trailing "#" run would be read back as an ATX closing sequence and
	// vanish from the title, so drop it now: what we write is what we read.
	clean = collapseSpace(clean)
	for { // "0 # #" reads back as "0 #", which reads back as "0"
		t := stripClosingHashes(clean)
		if t == clean {
			break
		}
		clean = t
	}
	if clean == "" {
		return "", fmt.Errorf("%w: empty %s", ErrBadContent, what)
	}
	if strings.HasPrefix(clean, "#") {
		return "", fmt.Errorf("%w: %s starts with '#': %q", ErrBadContent, what, clean)
	}
	return clean, nil
}

// titleMatcher matches section titles case-insensitively after trimming.
func titleMatcher(want string) func(string) bool {
	want = collapseSpace(want)
	return func(title string) bool { return strings.EqualFold(collapseSpace(title), want) }
}

// stripMarker trims s and removes one leading list marker ("- ", "* ",
// "+ ", or a marker alone).
func stripMarker(s string) string {
	t := strings.TrimSpace(s)
	if t == "-" || t == "*" || t == "+" {
		return ""
	}
	if u, ok := bulletText(t); ok {
		return u
	}
	return t
}

// FactHash identifies a fact by its text (without the bullet, trimmed): the
// read plane reports which facts it returned with these hashes, and the
// write plane's eviction looks them up.
func FactHash(text string) string {
	sum := sha256.Sum256([]byte(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), "- "))))
	return hex.EncodeToString(sum[:])
}
