package mdops

// Fuzz targets for every parser and operation of the package (issue #23).
// Each checks properties, not just "no panic": outputs are whole files
// (valid UTF-8, "\n" endings, exactly one final newline), parsers are stable
// under CRLF and trailing blank lines and round-trip what the operations
// write, operations change only the lines they target and are idempotent,
// evictions are minimal and lose nothing they do not report.
//
// Seeds: the Markdown examples of the specs, copied verbatim into
// testdata/spec (testdata/spec/SOURCES names the spec file, section and
// lines of each), the package's fixtures, and field values from the spec's
// propose-memory-update example (agent-memory-git-diffmem-v1.md §4.2).
// Crashers the fuzzer finds are kept in testdata/fuzz/<Target>/ and run as
// regression tests by plain `go test`.
//
// make fuzz runs each target for $(FUZZTIME); CI runs them briefly.

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// specSeeds returns the seed documents: every testdata/spec/*.md (the
// specs' examples) and the package's fixtures.
func specSeeds(f *testing.F) []string {
	f.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "spec", "*.md"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no spec seeds in testdata/spec: %v", err)
	}
	paths = append(paths, filepath.Join("testdata", "facts.md"), filepath.Join("testdata", "open_loops.md"), filepath.Join("testdata", "decisions.md"))
	var out []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, string(b))
	}
	// Structure the examples lack: code fences, indented continuation
	// lines, setext underlines, CRLF.
	return append(out, "## A\n- a\n  - sub\n  wrapped\n\n```md\n- code\n## code\n```\n- b\n",
		"- a\n  ```\n  x\n  ```\n- b\n", "# T\r\n\r\n## S\r\n- x\r\nP\n===\n~~~\nx\n~~~\n")
}

// specSeed returns one seed document of testdata/spec.
func specSeed(f *testing.F, name string) string {
	f.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "spec", name))
	if err != nil {
		f.Fatal(err)
	}
	return string(b)
}

// Field values of the propose-memory-update example, spec
// agent-memory-git-diffmem-v1.md §4.2 (lines 553-578).
const (
	specFactContent = "- MinIO bucket mcpstorage підтримує versioning"
	specFactSection = "Технічні знання"
	specLoopID      = "loop_001"
	specResolution  = "Підтверджено через run_def456"
	specRunID       = "run_def456"
)

// requireSentinel checks that err wraps one of the package's sentinels.
func requireSentinel(t *testing.T, err error, allowed ...error) {
	t.Helper()
	for _, s := range allowed {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("error %v wraps none of %v", err, allowed)
}

// requireOut checks an operation's output file: valid UTF-8 when the input
// and the unsanitised fields (the write plane's own text) were, headings
// still valid and no code fence left open if they were, and the whole-file
// invariants; "" is allowed only if emptyOK (a removal may leave nothing).
func requireOut(t *testing.T, in, out string, emptyOK bool, fields ...string) {
	t.Helper()
	if out == "" && emptyOK {
		return
	}
	requireFile(t, out)
	valid := utf8.ValidString(in)
	for _, x := range fields {
		valid = valid && utf8.ValidString(x)
	}
	if valid {
		require.True(t, utf8.ValidString(out), "output is not valid UTF-8")
	}
	headingsOK := ValidateHeadings(in) == nil
	for _, x := range fields {
		headingsOK = headingsOK && ValidateHeadings(x) == nil
	}
	if headingsOK {
		require.NoError(t, ValidateHeadings(out), "the operation broke a heading")
	}
	if !openFenceAtEnd(in) {
		require.False(t, openFenceAtEnd(out), "the operation left a code fence open:\n--- in\n%s\n--- out\n%s", in, out)
	}
}

// openFenceAtEnd reports whether md ends inside an unclosed code fence, so
// that anything appended to it would be code.
func openFenceAtEnd(md string) bool {
	lines := append(Lines(md), "x")
	return fenceMask(lines)[len(lines)-1]
}

// readFixture returns a file of testdata.
func readFixture(f *testing.F, name string) string {
	f.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		f.Fatal(err)
	}
	return string(b)
}

// docLines is what the operations start from: md's lines, newlines
// normalised, trailing blank lines dropped.
func docLines(md string) []string { return newDoc(md).lines }

// insertion returns the lines inserted into before to give after, if after
// is before with one contiguous block inserted (nothing else changed).
func insertion(before, after []string) ([]string, bool) {
	if len(after) < len(before) {
		return nil, false
	}
	p := 0
	for p < len(before) && before[p] == after[p] {
		p++
	}
	s := 0
	for s < len(before)-p && before[len(before)-1-s] == after[len(after)-1-s] {
		s++
	}
	if p+s != len(before) {
		return nil, false
	}
	return after[p : len(after)-s], true
}

// requireInsertion checks that out is md with one contiguous block of lines
// inserted, each accepted by ok, and returns the block.
func requireInsertion(t *testing.T, md, out string, ok func(string) bool) []string {
	t.Helper()
	before := docLines(md)
	if closer := newDoc(md).openFence; closer != "" {
		// A code block left open at the end is closed first, so that what
		// is added does not land inside it.
		before = append(before, closer)
	}
	ins, contiguous := insertion(before, Lines(out))
	require.True(t, contiguous, "lines outside the insertion changed:\n--- in\n%s\n--- out\n%s", md, out)
	for _, l := range ins {
		require.True(t, ok(l), "unexpected inserted line %q", l)
	}
	return ins
}

// headingsOf lists the headings of md (outside code) as "level text".
func headingsOf(md string) []string {
	d := newDoc(md)
	var hs []string
	for i := range d.lines {
		if lvl, text, ok := d.heading(i); ok {
			hs = append(hs, fmt.Sprintf("%d %s", lvl, text))
		}
	}
	return hs
}

// factKeys identifies facts by section and text, for order-preserving
// comparisons that ignore line numbers.
func factKeys(fs []Fact) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Section + "\x00" + f.Text
	}
	return out
}

// loopKey identifies a loop by everything but its line number.
func loopKey(l Loop) string {
	l.Line = 0
	return fmt.Sprintf("%#v", l)
}

func loopKeys(ls []Loop) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = loopKey(l)
	}
	return out
}

// minus returns all without the elements at the given indexes.
func minus[T any](all []T, drop map[int]bool) []T {
	var out []T
	for i, x := range all {
		if !drop[i] {
			out = append(out, x)
		}
	}
	return out
}

// requireSameList compares lists, nil and empty alike.
func requireSameList[T any](t *testing.T, want, got []T, msg string) {
	t.Helper()
	if len(want) == 0 && len(got) == 0 {
		return
	}
	require.Equal(t, want, got, msg)
}

// crlf converts md to CRLF line endings (md must have no CR).
func crlf(md string) string { return strings.ReplaceAll(md, "\n", "\r\n") }

// FuzzSanitize checks Sanitize's contract on arbitrary input: errors wrap
// the documented sentinel, accepted output is valid UTF-8, free of CR, NUL
// and active content, never longer than the input, keeps a final newline,
// and is a fixed point.
func FuzzSanitize(f *testing.F) {
	for _, s := range []string{
		"<b>bold</b>", "a < b", "`<b>`", "<ScRiPt>", "<img src=x onerror=alert(1)>",
		"[x](JaVaScRiPt:alert(1))", "<<b>b>", "<!-- x", "```\n<b>\n```", "<a href='&#106;avascript:x'>",
		"<im<b>g src=x onerror=alert(1)>", "\\<b>", "<https://x.y>", "x\r\ny",
		specFactContent, specResolution, "\xff", "a\x00b", AlwaysLoadOpen + "\nx\n" + AlwaysLoadClose,
	} {
		f.Add(s)
	}
	for _, s := range specSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := Sanitize(in)
		if err != nil {
			requireSentinel(t, err, ErrInvalidUTF8, ErrNUL, ErrScript, ErrBadContent)
			if !utf8.ValidString(in) {
				require.ErrorIs(t, err, ErrInvalidUTF8)
			} else if strings.Contains(in, "\x00") {
				require.ErrorIs(t, err, ErrNUL)
			}
			return
		}
		require.True(t, utf8.ValidString(in), "invalid UTF-8 accepted")
		require.NotContains(t, in, "\x00", "NUL accepted")
		require.True(t, utf8.ValidString(out))
		require.NotContains(t, out, "\r")
		require.NotContains(t, out, "\x00")
		require.NoError(t, checkActive(out))
		require.LessOrEqual(t, len(out), len(normalizeNewlines(in)), "Sanitize only removes")
		if strings.HasSuffix(normalizeNewlines(in), "\n") {
			require.True(t, strings.HasSuffix(out, "\n"), "final newline lost")
		}
		again, err := Sanitize(out)
		require.NoError(t, err)
		require.Equal(t, out, again)
	})
}

// FuzzHeadings checks ValidateHeadings and CheckSnapshot against the
// heading parser every section parser uses: a file passes ValidateHeadings
// exactly when every '#' line outside code is a heading parseATX accepts
// with text, the error names the first bad line, CRLF changes nothing, and
// CheckSnapshot accepts exactly the valid files whose first content line is
// a "# " title.
func FuzzHeadings(f *testing.F) {
	for _, s := range specSeeds(f) {
		f.Add(s)
	}
	for _, s := range []string{"#hashtag", "## ", "####### x", "## a ##", "   # x", "    # x", "```\n#x\n```", "\n\n# T\n## S", "# T\n##x", "#\tx", "# #"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		lines := Lines(md)
		mask := fenceMask(lines)
		bad := -1
		for i, l := range lines {
			if mask[i] || leadingSpaces(l) > 3 || !strings.HasPrefix(strings.TrimLeft(l, " "), "#") {
				continue
			}
			if _, text, ok := parseATX(l); !ok || text == "" {
				bad = i
				break
			}
		}
		err := ValidateHeadings(md)
		if bad < 0 {
			require.NoError(t, err)
		} else {
			require.ErrorIs(t, err, ErrBadHeading)
			require.Contains(t, err.Error(), fmt.Sprintf(": line %d ", bad+1))
		}
		if !strings.Contains(md, "\r") {
			require.Equal(t, err == nil, ValidateHeadings(crlf(md)) == nil, "CRLF changed the verdict")
		}

		serr := CheckSnapshot(md)
		first := firstContent(lines)
		titled := false
		if first < len(lines) {
			lvl, text, ok := parseATX(lines[first])
			titled = ok && lvl == 1 && text != "" && strings.HasPrefix(lines[first], "# ")
		}
		if titled && err == nil {
			require.NoError(t, serr)
			// A valid snapshot stays valid with another section.
			require.NoError(t, CheckSnapshot(md+"\n\n## More\n- x\n"))
			require.NoError(t, CheckSnapshot("\n \n"+md))
		} else {
			require.ErrorIs(t, serr, ErrBadContent)
			if titled {
				require.ErrorIs(t, serr, ErrBadHeading)
			}
		}
	})
}

// renderFacts writes facts as a facts.md in the package's format: each
// section as a "## " heading (with a closing sequence, so titles ending in
// '#' survive), a section "" after others as a "# " title.
func renderFacts(facts []Fact) string {
	var b strings.Builder
	cur := ""
	for _, f := range facts {
		if f.Section != cur {
			if f.Section == "" {
				b.WriteString("# T\n")
			} else {
				b.WriteString("## " + f.Section + " ##\n")
			}
			cur = f.Section
		}
		b.WriteString("- " + f.Text + "\n")
	}
	return b.String()
}

// FuzzParseFacts checks ParseFacts on arbitrary files: every fact points at
// its own top-level bullet outside code, in the section of the nearest
// "## " above it; CRLF and trailing blank lines change nothing; facts
// rendered back into a file parse to the same facts; FactHash ignores the
// bullet and surrounding space.
func FuzzParseFacts(f *testing.F) {
	for _, s := range specSeeds(f) {
		f.Add(s)
	}
	f.Add("- a\n  - sub\n- b\n## S ##\n* c\n+ d\n-e\n")
	f.Fuzz(func(t *testing.T, md string) {
		facts := ParseFacts(md)
		lines := Lines(md)
		mask := fenceMask(lines)
		// The section of each line, walked independently of bodyLines.
		section := make([]string, len(lines))
		cur := ""
		for i, l := range lines {
			if !mask[i] {
				if lvl, text, ok := parseATX(l); ok && lvl <= 2 {
					cur = map[bool]string{true: "", false: text}[lvl == 1]
				}
			}
			section[i] = cur
		}
		for _, fc := range facts {
			require.GreaterOrEqual(t, fc.Line, 1)
			require.LessOrEqual(t, fc.Line, len(lines))
			i := fc.Line - 1
			require.False(t, mask[i], "fact inside code")
			text, ok := bulletText(lines[i])
			require.True(t, ok)
			require.Equal(t, text, fc.Text)
			require.NotEmpty(t, fc.Text)
			require.Equal(t, strings.TrimSpace(fc.Text), fc.Text)
			require.Equal(t, section[i], fc.Section)
			require.Len(t, FactHash(fc.Text), 64)
			require.Equal(t, FactHash(fc.Text), FactHash(" "+fc.Text+" \t"))
			if !strings.HasPrefix(fc.Text, "- ") {
				require.Equal(t, FactHash(fc.Text), FactHash("- "+fc.Text))
			}
		}
		require.Equal(t, factKeys(facts), factKeys(ParseFacts(md+"\n\n \n")))
		if !strings.Contains(md, "\r") {
			require.Equal(t, facts, ParseFacts(crlf(md)))
		}
		require.Equal(t, factKeys(facts), factKeys(ParseFacts(renderFacts(facts))), "parse(render(facts)) must round-trip")
	})
}

// FuzzAppendFacts checks AppendFacts on arbitrary files and content: the
// output is the input plus one contiguous block (bullets, blank lines, at
// most the new section heading); every fact of the content is then found by
// ParseFacts, the new ones in the target section; old facts survive in
// order; a retry changes nothing.
func FuzzAppendFacts(f *testing.F) {
	base := specSeed(f, "diffmem-3.2-facts.md")
	for _, s := range []string{"fact", "- a\n* b", "## x", "```\n- y", "a\n===", "<b>x</b>\n`y`", specFactContent} {
		f.Add(base, specFactSection, s)
		f.Add("", "Domain", s)
	}
	for _, s := range specSeeds(f) {
		f.Add(s, specFactSection, specFactContent)
		f.Add(s, "Domain", "- new fact\n- another")
	}
	f.Fuzz(func(t *testing.T, md, section, content string) {
		out, added, err := AppendFacts(md, "a1", section, content)
		if err != nil {
			requireSentinel(t, err, ErrBadContent, ErrInvalidUTF8, ErrNUL, ErrScript)
			return
		}
		requireOut(t, md, out, false)
		title, err := cleanTitle("section", section)
		require.NoError(t, err)
		ins := requireInsertion(t, md, out, func(l string) bool {
			_, isBullet := bulletText(l)
			return isBlank(l) || (isBullet && strings.HasPrefix(l, "- ")) || l == "## "+title || l == "# Facts: a1"
		})
		if added == 0 {
			require.Empty(t, ins)
		}

		clean, err := Sanitize(content)
		require.NoError(t, err)
		var want []string
		for _, l := range Lines(clean) {
			if x := stripMarker(l); x != "" {
				want = append(want, x)
			}
		}
		oldFacts, newFacts := ParseFacts(md), ParseFacts(out)
		require.Len(t, newFacts, len(oldFacts)+added, "appended facts must parse as facts")
		inSection := titleMatcher(title)
		var fresh []Fact
		j := 0
		for _, nf := range newFacts {
			if j < len(oldFacts) && factKeys([]Fact{nf})[0] == factKeys(oldFacts[j : j+1])[0] {
				j++
				continue
			}
			fresh = append(fresh, nf)
			require.True(t, inSection(nf.Section), "fact %q landed in section %q, not %q", nf.Text, nf.Section, title)
		}
		require.Equal(t, len(oldFacts), j, "old facts must survive in order")
		require.Len(t, fresh, added)
		for _, w := range want {
			require.True(t, slices.ContainsFunc(newFacts, func(x Fact) bool { return x.Text == w }), "appended fact %q not found", w)
		}
		if !strings.Contains(normalizeNewlines(md), "\n\n\n") {
			require.NotContains(t, out, "\n\n\n\n", "blank lines doubled")
		}
		again, added2, err := AppendFacts(out, "a1", section, content)
		require.NoError(t, err)
		require.Zero(t, added2)
		require.Equal(t, out, again, "idempotent")
	})
}

// FuzzRemoveFact checks RemoveFact: it removes exactly one contiguous block
// (the fact's bullet and its indented continuation lines); every other fact
// and heading stays as it was; ErrNotFound exactly when no fact has that
// text.
func FuzzRemoveFact(f *testing.F) {
	for _, s := range specSeeds(f) {
		f.Add(s, "", uint8(0))
		f.Add(s, "<факт 1>", uint8(1))
	}
	f.Add("- a\n  - sub\n- b\n", "- a", uint8(1))
	f.Fuzz(func(t *testing.T, md, line string, pick uint8) {
		facts := ParseFacts(md)
		if len(facts) > 0 && pick%2 == 0 {
			line = []string{"", "- ", "* ", " "}[pick/2%4] + facts[int(pick/8)%len(facts)].Text
		}
		want := stripMarker(normalizeNewlines(line))
		out, err := RemoveFact(md, line)
		idx := slices.IndexFunc(facts, func(x Fact) bool { return x.Text == want })
		if err != nil {
			if want == "" {
				require.ErrorIs(t, err, ErrBadContent)
			} else {
				require.ErrorIs(t, err, ErrNotFound)
				require.Equal(t, -1, idx, "fact %q exists but was not found", want)
			}
			return
		}
		require.GreaterOrEqual(t, idx, 0)
		requireOut(t, md, out, true)
		// Exactly the fact's line and its continuation lines (indented,
		// not blank, not a heading) are gone; a code block a continuation
		// line opens belongs to the fact to its end, blank lines included.
		d := newDoc(md)
		regions, _ := fenceRegions(d.lines)
		i, j, code := facts[idx].Line-1, facts[idx].Line, 0
		for j < len(d.lines) {
			if code > 0 && regions[j] == code {
				j++
				continue
			}
			if _, _, h := d.heading(j); h || isBlank(d.lines[j]) || leadingSpaces(d.lines[j]) == 0 {
				break
			}
			code = regions[j]
			j++
		}
		require.Equal(t, render(append(d.lines[:i:i], d.lines[j:]...)), out, "not just the fact's lines removed")
		require.Equal(t, factKeys(minus(facts, map[int]bool{idx: true})), factKeys(ParseFacts(out)), "other facts changed:\n--- in\n%s\n--- out\n%s", md, out)
		require.Equal(t, headingsOf(md), headingsOf(out), "headings changed")
	})
}

// fuzzRank is a deterministic eviction rank derived from the fact and a
// seed, with many ties.
func fuzzRank(seed uint64, f Fact) FactRank {
	h := fnv.New64a()
	_, _ = fmt.Fprintf(h, "%d\x00%s\x00%d", seed, f.Text, f.Line) // a hash never fails a write
	v := h.Sum64()
	return FactRank{Stale: v&1 == 1, Added: int64(v >> 1 % 5), Keep: v%7 == 0}
}

// FuzzEvictFacts checks EvictFacts with a byte-count tokenizer: kept is
// within the limit whenever removing every evictable fact would be; the
// evicted facts are facts of the input (never Keep), in rank order, the
// smallest sufficient prefix of that order, and exactly what is missing
// from the output; headings stay.
func FuzzEvictFacts(f *testing.F) {
	for _, s := range specSeeds(f) {
		for _, cut := range []int{0, 20, 100} {
			f.Add(s, len(s)-cut, uint64(cut))
		}
	}
	f.Fuzz(func(t *testing.T, md string, limit int, seed uint64) {
		count := func(s string) int { return len(s) }
		rank := func(x Fact) FactRank { return fuzzRank(seed, x) }
		kept, evicted, fits := EvictFacts(md, limit, count, rank)
		kept2, evicted2, fits2 := EvictFacts(md, limit, count, rank)
		require.Equal(t, kept, kept2, "deterministic")
		require.Equal(t, evicted, evicted2, "deterministic")
		require.Equal(t, fits, fits2, "deterministic")
		if len(md) <= limit {
			require.True(t, fits)
			require.Equal(t, md, kept)
			require.Empty(t, evicted)
			return
		}
		d := newDoc(md)
		facts := parseFacts(d)
		byLine := map[int]int{}
		var all []int
		for i, x := range facts {
			byLine[x.Line] = i
			if !rank(x).Keep {
				all = append(all, x.Line-1)
			}
		}
		canFit := len(withoutItems(d, all)) <= limit
		require.Equal(t, canFit, fits, "fits must say whether removing every evictable fact is enough")
		if !fits {
			require.Equal(t, md, kept)
			require.Empty(t, evicted)
			return
		}
		require.LessOrEqual(t, len(kept), limit)
		requireOut(t, md, kept, true)
		less := func(a, b Fact) bool {
			ra, rb := rank(a), rank(b)
			if ra.Stale != rb.Stale {
				return ra.Stale
			}
			if ra.Added != rb.Added {
				return ra.Added < rb.Added
			}
			return a.Line < b.Line
		}
		drop := map[int]bool{}
		var starts []int
		for k, e := range evicted {
			i, ok := byLine[e.Line]
			require.True(t, ok, "evicted fact %q is not a fact of the input", e.Text)
			require.Equal(t, facts[i].Text, e.Text)
			require.Equal(t, facts[i].Section, e.Section)
			require.False(t, drop[i], "evicted twice")
			require.False(t, rank(e).Keep, "evicted a Keep fact")
			if k > 0 {
				require.True(t, less(evicted[k-1], e), "not in eviction order")
			}
			drop[i] = true
			starts = append(starts, e.Line-1)
		}
		if len(evicted) > 0 {
			last := evicted[len(evicted)-1]
			for i, x := range facts {
				if !drop[i] && !rank(x).Keep {
					require.True(t, less(last, x), "fact %q should have gone before %q", x.Text, last.Text)
				}
			}
			require.Greater(t, len(withoutItems(d, starts[:len(starts)-1])), limit, "evicted more than needed")
			require.Equal(t, withoutItems(d, starts), kept)
		} else {
			// Nothing evicted: md, or md merely normalised (CRLF, trailing
			// blank lines) if that alone brought it under the limit.
			require.Contains(t, []string{md, render(d.lines)}, kept)
		}
		require.Equal(t, factKeys(minus(facts, drop)), factKeys(ParseFacts(kept)), "kept facts changed:\n--- in\n%s\n--- out\n%s", md, kept)
		require.Equal(t, headingsOf(md), headingsOf(kept), "headings changed")
		for _, e := range evicted {
			rec := EvictedFactLine(e, days(-40), day0, WhyStaleFact)
			first, _, _ := strings.Cut(rec, "\n")
			require.Equal(t, "- "+e.Text+" — added 2026-01-08, evicted 2026-02-17 (stale-fact)", first)
			require.True(t, slices.Equal(e.More, Lines(rec)[1:]), "record %q lost the fact's continuation lines %q", rec, e.More)
		}
	})
}

// FuzzParseLoops checks ParseLoops on arbitrary files: each loop points at
// its own task-list line outside code; CRLF and trailing blank lines change
// nothing; and the package's own loop lines round-trip: rendering a parsed
// loop as an open or closed line parses back to the same fields.
func FuzzParseLoops(f *testing.F) {
	for _, s := range specSeeds(f) {
		f.Add(s)
	}
	f.Add("- [ ] loop_7: x — opened 2026-02-01 | priority: low\n* [X] y — closed 2026-02-02 | run: a b | resolution: r | s\n")
	f.Fuzz(func(t *testing.T, md string) {
		loops := ParseLoops(md)
		lines := Lines(md)
		mask := fenceMask(lines)
		for _, l := range loops {
			require.GreaterOrEqual(t, l.Line, 1)
			require.LessOrEqual(t, l.Line, len(lines))
			require.False(t, mask[l.Line-1], "loop inside code")
			mark, _, ok := loopLine(lines[l.Line-1])
			require.True(t, ok)
			require.Equal(t, mark != ' ', l.Closed)
			require.Equal(t, strings.TrimSpace(l.Text), l.Text)
			require.Equal(t, strings.ToLower(strings.TrimSpace(l.Priority)), l.Priority)
			if l.ID != "" {
				require.Regexp(t, validLoopIDRe, l.ID)
			}
			for _, tm := range []time.Time{l.Opened, l.ClosedAt} {
				require.True(t, tm.IsZero() || tm.Equal(startOfDay(tm)))
			}
		}
		require.Equal(t, loopKeys(loops), loopKeys(ParseLoops(md+"\n\n \n")))
		if !strings.Contains(md, "\r") {
			require.Equal(t, loops, ParseLoops(crlf(md)))
		}
		for _, l := range loops {
			var line string
			want := Loop{ID: l.ID, Text: l.Text, Closed: l.Closed, Section: "S", Priority: l.Priority, Opened: l.Opened, Line: 2}
			switch {
			case !l.Closed && l.ID != "":
				line = openLoopLine(l.ID, l.Text, l.Priority, l.Opened)
			case l.Closed && l.ID != "" && !strings.ContainsAny(l.RunID, " \t|"):
				// CloseLoop closes only loops with an id and refuses run ids
				// with spaces or '|'.
				line = closedLoopLine(l, l.ClosedAt, l.RunID, l.Resolution)
				want.ClosedAt, want.RunID, want.Resolution = l.ClosedAt, l.RunID, l.Resolution
			default:
				continue
			}
			got := ParseLoops("## S\n" + line + "\n")
			require.Len(t, got, 1, "rendered loop %q", line)
			require.Equal(t, want, got[0], "parse(render(loop)) for %q", line)
		}
	})
}

// FuzzLoopRoundTrip checks that any accepted loop text and resolution come
// back unchanged from ParseLoops, before and after closing.
func FuzzLoopRoundTrip(f *testing.F) {
	for _, s := range []string{"Confirm MinIO", "a — b | c", "loop_001: x", "resolution: x | y", "— closed 2026", "Петля", specResolution} {
		f.Add(s, s)
	}
	base := readFixture(f, "open_loops.md")
	f.Fuzz(func(t *testing.T, text, resolution string) {
		out, id, err := OpenLoop(base, "a1", "", text, "low", day0)
		if err != nil {
			return
		}
		clean, _ := Sanitize(text)
		want := collapseSpace(clean)
		find := func(md string) Loop {
			for _, l := range ParseLoops(md) {
				if l.ID == id {
					return l
				}
			}
			t.Fatalf("loop %s not found in\n%s", id, md)
			return Loop{}
		}
		l := find(out)
		require.Equal(t, want, l.Text)
		require.Equal(t, PriorityLow, l.Priority)
		require.Equal(t, date(2026, 2, 17), l.Opened)
		require.Len(t, ParseLoops(out), len(ParseLoops(base))+1)

		closed, err := CloseLoop(out, id, resolution, "run_f", days(1))
		if err != nil {
			return
		}
		l = find(closed)
		require.True(t, l.Closed)
		require.Equal(t, want, l.Text)
		res, _ := Sanitize(resolution)
		require.Equal(t, collapseSpace(res), l.Resolution)
		require.Equal(t, "run_f", l.RunID)
		require.Equal(t, date(2026, 2, 18), l.ClosedAt)
		require.Equal(t, date(2026, 2, 17), l.Opened)
	})
}

// FuzzOpenCloseLoop checks OpenLoop and CloseLoop on arbitrary files.
// OpenLoop: one contiguous insertion; the new loop parses back with its
// text, priority, day and section, under a fresh id; other loops unchanged;
// a retry returns the same file and id. CloseLoop: the loop parses back
// closed, with its text, opened day and priority kept and the resolution,
// run and day recorded, in the Closed section; other loops unchanged; a
// second close is ErrNotFound; ErrNotFound exactly when no open loop has
// the id.
func FuzzOpenCloseLoop(f *testing.F) {
	for _, s := range specSeeds(f) {
		f.Add(s, "", "Нова петля", "low", specResolution, specRunID, uint8(0))
		f.Add(s, "Очікування", "Підтвердження від Олени", "", "", "", uint8(1))
	}
	f.Fuzz(func(t *testing.T, md, section, text, priority, resolution, runID string, pick uint8) {
		oldLoops := ParseLoops(md)
		base := md
		out, id, err := OpenLoop(md, "a1", section, text, priority, day0)
		if err != nil {
			requireSentinel(t, err, ErrBadContent, ErrInvalidUTF8, ErrNUL, ErrScript)
		} else {
			requireOut(t, md, out, false)
			require.Regexp(t, validLoopIDRe, id)
			clean, _ := Sanitize(text)
			wantText := collapseSpace(clean)
			prio := strings.ToLower(strings.TrimSpace(priority))
			if prio == "" {
				prio = PriorityNormal
			}
			newLoops := ParseLoops(out)
			if dup := slices.IndexFunc(oldLoops, func(l Loop) bool { return !l.Closed && l.ID != "" && l.Text == wantText }); dup >= 0 {
				require.Equal(t, oldLoops[dup].ID, id)
				require.Equal(t, render(docLines(md)), out)
			} else {
				wantSection := section
				if strings.TrimSpace(section) == "" {
					wantSection = map[bool]string{true: SectionCritical, false: SectionOpen}[prio == PriorityCritical]
				}
				wantSection, err = cleanTitle("section", wantSection)
				require.NoError(t, err)
				requireInsertion(t, md, out, func(l string) bool {
					_, _, isLoop := loopLine(l)
					lvl, _, isH := parseATX(l)
					return isBlank(l) || isLoop || (isH && lvl == 2) || l == "# Open Loops: a1"
				})
				idN, _ := strconv.Atoi(strings.TrimPrefix(id, "loop_"))
				for _, m := range loopNumRe.FindAllStringSubmatch(md, -1) {
					if n, err := strconv.Atoi(m[1]); err == nil {
						require.Less(t, n, idN, "id %s is not fresh", id)
					}
				}
				i := slices.IndexFunc(newLoops, func(l Loop) bool { return l.ID == id })
				require.GreaterOrEqual(t, i, 0, "opened loop %s not found in\n%s", id, out)
				l := newLoops[i]
				require.Equal(t, Loop{ID: id, Text: wantText, Section: l.Section, Priority: prio, Opened: date(2026, 2, 17), Line: l.Line}, l)
				require.Equal(t, sectionKey(wantSection), sectionKey(l.Section), "wrong section")
				require.Equal(t, loopKeys(oldLoops), loopKeys(minus(newLoops, map[int]bool{i: true})), "other loops changed")
			}
			again, id2, err := OpenLoop(out, "a1", section, text, priority, day0)
			require.NoError(t, err)
			require.Equal(t, id, id2)
			require.Equal(t, out, again, "idempotent")
			base = out
		}

		loops := ParseLoops(base)
		var open []Loop
		for _, l := range loops {
			if !l.Closed && l.ID != "" {
				open = append(open, l)
			}
		}
		loopID := fmt.Sprintf("loop_%03d", pick%8)
		if len(open) > 0 && pick%2 == 0 {
			loopID = open[int(pick/2)%len(open)].ID
		}
		closed, err := CloseLoop(base, loopID, resolution, runID, days(1))
		target := slices.IndexFunc(loops, func(l Loop) bool { return !l.Closed && l.ID == loopID })
		if err != nil {
			requireSentinel(t, err, ErrBadContent, ErrNotFound, ErrInvalidUTF8, ErrNUL, ErrScript)
			if errors.Is(err, ErrNotFound) {
				require.Equal(t, -1, target, "open loop %s exists but was not found", loopID)
			}
			return
		}
		require.GreaterOrEqual(t, target, 0)
		requireOut(t, base, closed, false)
		after := ParseLoops(closed)
		// The newly closed loop (a hand-edited file may already hold a
		// closed loop with the same id).
		i := slices.IndexFunc(after, func(l Loop) bool {
			return l.ID == loopID && l.Closed && !slices.ContainsFunc(loops, func(o Loop) bool {
				return o.Closed && o.ID == l.ID && o.Text == l.Text && o.ClosedAt.Equal(l.ClosedAt) && o.Resolution == l.Resolution && o.RunID == l.RunID
			})
		})
		require.GreaterOrEqual(t, i, 0, "closed loop %s not found in\n%s", loopID, closed)
		res, _ := Sanitize(resolution)
		run, _ := Sanitize(runID)
		was, l := loops[target], after[i]
		require.Equal(t, Loop{ID: loopID, Text: was.Text, Section: l.Section, Priority: was.Priority, Closed: true,
			Opened: was.Opened, ClosedAt: date(2026, 2, 18), RunID: collapseSpace(run), Resolution: collapseSpace(res), Line: l.Line}, l)
		require.Equal(t, "closed", sectionKey(l.Section))
		require.Equal(t, loopKeys(minus(loops, map[int]bool{target: true})), loopKeys(minus(after, map[int]bool{i: true})), "other loops changed")
		if !slices.ContainsFunc(after, func(l Loop) bool { return !l.Closed && l.ID == loopID }) {
			_, err = CloseLoop(closed, loopID, resolution, runID, days(2))
			require.ErrorIs(t, err, ErrNotFound, "second close")
		}
	})
}

// FuzzEvictLoops checks EvictLoops with a byte-count tokenizer: every
// closed loop past retention goes once the file is over the limit; frozen
// loops are open, low, old, oldest first and as few as needed; all are
// loops of the input and exactly what is missing from the output; headings
// stay; FrozenLoopLine keeps what reopening a loop needs.
func FuzzEvictLoops(f *testing.F) {
	for _, s := range specSeeds(f) {
		f.Add(s, len(s)-40, int16(30))
	}
	f.Add(readFixture(f, "open_loops.md"), 100, int16(40))
	f.Fuzz(func(t *testing.T, md string, limit int, nowOff int16) {
		count := func(s string) int { return len(s) }
		now := day0.AddDate(0, 0, int(nowOff)%400)
		kept, removed, frozen := EvictLoops(md, limit, count, now)
		kept2, removed2, frozen2 := EvictLoops(md, limit, count, now)
		require.Equal(t, kept, kept2, "deterministic")
		require.Equal(t, removed, removed2, "deterministic")
		require.Equal(t, frozen, frozen2, "deterministic")
		if len(md) <= limit {
			require.Equal(t, md, kept)
			require.Empty(t, removed)
			require.Empty(t, frozen)
			return
		}
		d := newDoc(md)
		loops := parseLoops(d)
		byLine := map[int]int{}
		for i, l := range loops {
			byLine[l.Line] = i
		}
		drop := map[int]bool{}
		var starts []int
		due := 0
		for _, l := range loops {
			if l.Closed && !l.ClosedAt.IsZero() && now.Sub(l.ClosedAt) > ClosedLoopRetention {
				due++
			}
		}
		require.Len(t, removed, due, "every closed loop past retention goes")
		for k, l := range removed {
			i, ok := byLine[l.Line]
			require.True(t, ok)
			require.Equal(t, loops[i], l)
			require.True(t, l.Closed && now.Sub(l.ClosedAt) > ClosedLoopRetention)
			if k > 0 {
				require.Less(t, removed[k-1].Line, l.Line, "file order")
			}
			drop[i] = true
			starts = append(starts, l.Line-1)
		}
		var cands []Loop
		for _, l := range loops {
			if !l.Closed && l.Priority == PriorityLow && !l.Opened.IsZero() && now.Sub(l.Opened) > FreezeLoopAge {
				cands = append(cands, l)
			}
		}
		for k, l := range frozen {
			i, ok := byLine[l.Line]
			require.True(t, ok)
			require.Equal(t, loops[i], l)
			require.False(t, drop[i], "removed twice")
			require.True(t, !l.Closed && l.Priority == PriorityLow && !l.Opened.IsZero() && now.Sub(l.Opened) > FreezeLoopAge, "froze %+v", l)
			if k > 0 {
				p := frozen[k-1]
				require.True(t, p.Opened.Before(l.Opened) || (p.Opened.Equal(l.Opened) && p.Line < l.Line), "not oldest first")
			}
			drop[i] = true
			starts = append(starts, l.Line-1)
		}
		if len(frozen) > 0 {
			require.Greater(t, len(withoutItems(d, starts[:len(starts)-1])), limit, "froze more than needed")
			last := frozen[len(frozen)-1]
			for _, c := range cands {
				if !drop[byLine[c.Line]] {
					require.True(t, last.Opened.Before(c.Opened) || (last.Opened.Equal(c.Opened) && last.Line < c.Line), "loop %q should have been frozen first", c.Text)
				}
			}
		}
		if len(kept) > limit {
			require.Len(t, frozen, len(cands), "over the limit but not every candidate frozen")
		}
		if len(starts) == 0 {
			require.Contains(t, []string{md, render(d.lines)}, kept, "nothing removed: md, at most normalised")
		} else {
			require.Equal(t, withoutItems(d, starts), kept)
			requireOut(t, md, kept, true)
		}
		require.Equal(t, loopKeys(minus(loops, drop)), loopKeys(ParseLoops(kept)), "kept loops changed:\n--- in\n%s\n--- out\n%s", md, kept)
		require.Equal(t, headingsOf(md), headingsOf(kept), "headings changed")
		for _, l := range frozen {
			rec := FrozenLoopLine(l, now)
			require.True(t, strings.HasPrefix(rec, "- ") && !strings.Contains(rec, "\n"), "record %q", rec)
			back := parseLoopBody(strings.TrimPrefix(rec, "- "))
			if l.ID != "" || l.Text != "" {
				require.Equal(t, []any{l.ID, collapseSpace(l.Text), l.Opened, l.Priority}, []any{back.ID, back.Text, back.Opened, back.Priority}, "frozen record %q", rec)
			}
		}
	})
}

// FuzzParseDecisions checks ParseDecisions and LastDecisions on arbitrary
// files: ids are unique and derived from day and title; CRLF changes
// nothing; an entry written back by AddDecision parses to an entry that
// AddDecision writes identically (parse∘render is a fixed point);
// LastDecisions returns the n newest; Slug is a clean fixed point.
func FuzzParseDecisions(f *testing.F) {
	for _, s := range specSeeds(f) {
		f.Add(s, uint8(2))
	}
	f.Fuzz(func(t *testing.T, md string, n uint8) {
		decs := ParseDecisions(md)
		ids := map[string]bool{}
		for _, d := range decs {
			require.False(t, ids[d.ID], "duplicate id %s", d.ID)
			ids[d.ID] = true
			require.True(t, strings.HasPrefix(d.ID, DecisionID(d.Date, d.Title)), "id %s", d.ID)
			require.True(t, d.Date.Equal(startOfDay(d.Date)))
			require.NotEmpty(t, d.Title)
			require.Equal(t, strings.TrimSpace(d.Title), d.Title)
			s := Slug(d.Title)
			require.NotEmpty(t, s)
			require.LessOrEqual(t, utf8.RuneCountInString(s), 60)
			require.False(t, strings.HasPrefix(s, "-") || strings.HasSuffix(s, "-") || strings.Contains(s, "--"), "slug %q", s)
			require.Equal(t, s, Slug(s), "Slug is a fixed point")
		}
		if !strings.Contains(md, "\r") {
			require.Equal(t, decs, ParseDecisions(crlf(md)))
		}
		require.Equal(t, decs, ParseDecisions(md+"\n\n"))

		last := LastDecisions(md, int(n%8))
		require.Len(t, last, min(int(n%8), len(decs)))
		for i, d := range last {
			require.Contains(t, decs, d)
			if i > 0 {
				require.False(t, d.Date.After(last[i-1].Date), "not newest first")
			}
		}
		for _, d := range decs[:min(len(decs), 3)] {
			out, err := AddDecision("", "a1", d, time.Time{})
			if err != nil {
				requireSentinel(t, err, ErrBadContent, ErrInvalidUTF8, ErrNUL, ErrScript)
				continue
			}
			got := ParseDecisions(out)
			require.Len(t, got, 1, "written decision not parsed back:\n%s", out)
			again, err := AddDecision("", "a1", got[0], time.Time{})
			require.NoError(t, err)
			require.Equal(t, out, again, "parse(render(decision)) must be a fixed point")
		}
	})
}

// FuzzDecisionRoundTrip checks that any accepted decision parses back to
// the same fields and never disturbs the entries before it.
func FuzzDecisionRoundTrip(f *testing.F) {
	f.Add("Title", "ctx\nline 2", "dec", "run_1")
	f.Add("Рішення — з тире", "```\ncode\n```", "**Note:** x", "")
	base := readFixture(f, "decisions.md")
	f.Fuzz(func(t *testing.T, title, context, decision, run string) {
		d := Decision{Title: title, Context: context, Decision: decision, RunID: run}
		out, err := AddDecision(base, "a1", d, day0)
		if err != nil {
			return
		}
		requireFile(t, out)
		got := ParseDecisions(out)
		require.Len(t, got, len(ParseDecisions(base))+1)
		require.Equal(t, ParseDecisions(base), got[:len(got)-1])
		last := got[len(got)-1]
		wantTitle, err := cleanTitle("title", title)
		require.NoError(t, err)
		require.Equal(t, wantTitle, last.Title, "the title reads back as written")
		again, err := AddDecision(out, "a1", last, last.Date)
		require.NoError(t, err)
		require.Equal(t, out, again, "parsed entry must equal the written one")
	})
}

// FuzzAddDecision checks AddDecision on arbitrary files: one contiguous
// insertion; the entries before stay as they were and the new one parses
// back with the cleaned fields; a retry changes nothing.
func FuzzAddDecision(f *testing.F) {
	for _, s := range specSeeds(f) {
		f.Add(s, "Використати MinIO versioning", "Прийнято", "Контекст\nрядок 2", "Рішення", specRunID)
	}
	f.Add("", "T", "", "```\nx\n```", "", "")
	f.Fuzz(func(t *testing.T, md, title, status, context, decision, run string) {
		d := Decision{Title: title, Status: status, Context: context, Decision: decision, Rationale: "because", RunID: run}
		out, err := AddDecision(md, "a1", d, day0)
		if err != nil {
			requireSentinel(t, err, ErrBadContent, ErrInvalidUTF8, ErrNUL, ErrScript)
			return
		}
		requireOut(t, md, out, false)
		requireInsertion(t, md, out, func(string) bool { return true })
		// A code block left open at the end is closed before the entry is
		// written, and its closing line belongs to the entry it was open in.
		closed := newDoc(md)
		closed.closeFence()
		old, got := ParseDecisions(closed.render()), ParseDecisions(out)
		if len(got) == len(old) {
			require.Equal(t, closed.render(), out, "a duplicate must leave the file alone")
		} else {
			require.Len(t, got, len(old)+1, "new entry not parsed back:\n%s", out)
			requireSameList(t, old, got[:len(old)], "earlier entries changed")
			last := got[len(got)-1]
			require.Equal(t, date(2026, 2, 17), last.Date)
			wantTitle, err := cleanTitle("t", title)
			require.NoError(t, err)
			require.Equal(t, wantTitle, last.Title)
			wantCtx, err := cleanBlock("context", context)
			require.NoError(t, err)
			require.Equal(t, wantCtx, last.Context)
			wantDec, err := cleanBlock("decision", decision)
			require.NoError(t, err)
			require.Equal(t, wantDec, last.Decision)
			require.Equal(t, "because", last.Rationale)
			cleanRun, _ := Sanitize(run)
			require.Equal(t, collapseSpace(cleanRun), last.RunID)
			cleanStatus, _ := Sanitize(status)
			require.Equal(t, cmpOr(collapseSpace(cleanStatus), "accepted"), last.Status)
		}
		again, err := AddDecision(out, "a1", d, day0)
		require.NoError(t, err)
		require.Equal(t, out, again, "idempotent")
	})
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// FuzzAppendToDecisionsSection checks the eviction records in
// decisions.md: records of facts parsed from any facts.md and of frozen
// loops land, one bullet each with the fact's continuation lines, in the
// named section; one contiguous insertion; decision entries untouched; a
// replay changes nothing.
func FuzzAppendToDecisionsSection(f *testing.F) {
	facts := readFixture(f, "facts.md")
	for _, s := range specSeeds(f) {
		f.Add(s, facts, "Confirm MinIO versioning", uint8(0))
		f.Add(s, "- a\n  - sub\n", "x", uint8(1))
	}
	f.Fuzz(func(t *testing.T, md, factsMD, loopText string, which uint8) {
		section := []string{SectionEvictedFacts, SectionFrozenLoops}[which%2]
		var records []string
		for _, x := range ParseFacts(factsMD)[:min(2, len(ParseFacts(factsMD)))] {
			records = append(records, EvictedFactLine(x, days(-40), day0, WhyStaleFact))
		}
		records = append(records, FrozenLoopLine(Loop{ID: "loop_007", Text: loopText, Opened: days(-20), Priority: PriorityLow}, day0))
		presentBefore := map[string]bool{}
		if d := newDoc(md); true {
			if start, end, ok := d.findH2(titleMatcher(section)); ok {
				for _, l := range d.lines[start+1 : end] {
					presentBefore[strings.TrimSpace(l)] = true
				}
			}
		}
		out := AppendToDecisionsSection(md, "a1", section, records)
		requireOut(t, md, out, false, records...)
		requireInsertion(t, md, out, func(string) bool { return true })
		requireSameList(t, ParseDecisions(md), ParseDecisions(out), "decision entries changed")
		d := newDoc(out)
		start, end, ok := d.findH2(titleMatcher(section))
		require.True(t, ok, "section %q not found in\n%s", section, out)
		body := strings.Join(d.lines[start+1:end], "\n") + "\n"
		firsts := map[string]bool{}
		for _, r := range records {
			rl := Lines(r)
			var want []string
			for k, l := range rl {
				switch {
				case k == 0:
					want = append(want, "- "+stripMarker(l))
				case isBlank(l):
				case leadingSpaces(l) == 0:
					want = append(want, "  "+l)
				default:
					want = append(want, l)
				}
			}
			if presentBefore[want[0]] || firsts[want[0]] {
				want = want[:1] // replayed: the first line was there already
			}
			firsts[want[0]] = true
			require.Contains(t, body, strings.Join(want, "\n")+"\n", "record %q missing from section %q", r, section)
		}
		require.Equal(t, out, AppendToDecisionsSection(out, "a1", section, records), "replay must be idempotent")
	})
}

// changelogEntries returns the entries of a changelog as (date, heading +
// bullets) in file order.
func changelogEntries(md string) (days, entries []string) {
	_, secs := parseChangelog(md)
	for _, s := range secs {
		for _, e := range s.entries {
			days = append(days, s.date)
			entries = append(entries, strings.Join(e.lines, "\n"))
		}
	}
	return days, entries
}

// FuzzChangelog checks AddChangelogEntry. On any file: the output is a
// whole file, idempotent, with no entry that was not in the input or the
// new one, non-day sections kept, and rotation to keep entries. Built from
// scratch with three entries: exactly the keep newest entries, newest
// first (same minute: later arrival first), one heading per day.
func FuzzChangelog(f *testing.F) {
	spec := specSeed(f, "diffmem-3.2-changelog.md")
	for _, s := range specSeeds(f) {
		f.Add(s, uint16(0), uint16(60), uint16(3000), "run_abc123", "proposal_xyz789", "**facts.md:** Додано факт про MinIO конфігурацію", "", int8(30))
	}
	f.Add(spec, uint16(4000), uint16(4000), uint16(10), "r", "", "a\nb", "- c", int8(2))
	f.Fuzz(func(t *testing.T, md string, m1, m2, m3 uint16, run, prop, l1, l2 string, keep int8) {
		at := func(m uint16) time.Time { return day0.Add(time.Duration(int(m)%8640-4320) * time.Minute) }
		lines := []string{l1, l2}
		out := AddChangelogEntry(md, "a1", at(m1), run, prop, lines, int(keep))
		requireOut(t, md, out, false, run, prop, l1, l2)
		require.Equal(t, out, AddChangelogEntry(out, "a1", at(m1), run, prop, lines, int(keep)), "idempotent")
		_, oldEntries := changelogEntries(md)
		_, newEntries := changelogEntries(out)
		probe := AddChangelogEntry("", "a1", at(m1), run, prop, lines, 0)
		_, mine := changelogEntries(probe)
		require.Len(t, mine, 1)
		for _, e := range newEntries {
			require.True(t, e == mine[0] || slices.Contains(oldEntries, e), "invented entry %q", e)
		}
		if keep > 0 {
			require.LessOrEqual(t, len(newEntries), int(keep))
		} else {
			require.Contains(t, newEntries, mine[0])
		}
		nonDay := func(md string) []string {
			_, secs := parseChangelog(md)
			var hs []string
			for _, s := range secs {
				if s.date == "" {
					hs = append(hs, strings.Join(s.head, "\n"))
				}
			}
			return hs
		}
		closed := md
		if d := newDoc(md); d.openFence != "" {
			d.closeFence() // a code block left open is closed before writing
			closed = d.render()
		}
		require.Equal(t, nonDay(closed), nonDay(out), "non-day sections changed")

		// From scratch: the keep newest, newest first.
		k := int(keep%4+4)%4 + 1
		type ent struct {
			at    time.Time
			n     int
			entry string
		}
		var all []ent
		doc := ""
		for n, m := range []uint16{m1, m2, m3} {
			r := fmt.Sprintf("%s-%d", collapseSpace(run), n)
			doc = AddChangelogEntry(doc, "a1", at(m), r, "", nil, k)
			_, e := changelogEntries(AddChangelogEntry("", "a1", at(m), r, "", nil, 0))
			all = append(all, ent{at(m).Truncate(time.Minute), n, e[0]})
		}
		sort.SliceStable(all, func(i, j int) bool {
			if !all[i].at.Equal(all[j].at) {
				return all[i].at.After(all[j].at)
			}
			return all[i].n > all[j].n
		})
		var want, wantDays []string
		for _, e := range all[:min(k, len(all))] {
			want = append(want, e.entry)
			if d := day(e.at); len(wantDays) == 0 || wantDays[len(wantDays)-1] != d {
				wantDays = append(wantDays, d)
			}
		}
		gotDays, got := changelogEntries(doc)
		require.Equal(t, want, got, "not the %d newest entries, newest first:\n%s", k, doc)
		var dayHeads []string
		_, secs := parseChangelog(doc)
		for _, s := range secs {
			dayHeads = append(dayHeads, s.date)
		}
		require.Equal(t, wantDays, dayHeads, "day headings")
		require.Equal(t, slices.Compact(gotDays), dayHeads)
	})
}

// FuzzTimeline checks AddTimelineEntry. On any file: one contiguous
// insertion, the entry present as a "### " heading plus its lines inside
// the Runs section, idempotent. Built from scratch: the title carries the
// day, and entries are in time order, same minute in arrival order.
func FuzzTimeline(f *testing.F) {
	for _, s := range specSeeds(f) {
		f.Add(s, uint16(555), uint16(870), "run_abc123", "proposal_xyz789", "Аналіз Proposal #42", "Запропоновано оновлення facts.md", "applied")
	}
	f.Add("", uint16(0), uint16(0), "", "", "", "", "")
	f.Fuzz(func(t *testing.T, md string, m1, m2 uint16, run, prop, task, result, status string) {
		at := func(m uint16) time.Time {
			return day0.Truncate(24 * time.Hour).Add(time.Duration(m%1440) * time.Minute)
		}
		e := TimelineEntry{RunID: run, ProposalID: prop, Task: task, Result: result, Status: status}
		out := AddTimelineEntry(md, "a1", at(m1), e)
		requireOut(t, md, out, false, run, prop, task, result, status)
		require.Equal(t, out, AddTimelineEntry(out, "a1", at(m1), e), "idempotent")
		probe := Lines(AddTimelineEntry("", "a1", at(m1), e))
		block := probe[slices.IndexFunc(probe, func(l string) bool { return strings.HasPrefix(l, "### ") }):]
		ins := requireInsertion(t, md, out, func(string) bool { return true })
		if len(ins) > 0 {
			require.Contains(t, "\n"+strings.Join(ins, "\n")+"\n", "\n"+strings.Join(block, "\n")+"\n")
		}
		d := newDoc(out)
		start, end, ok := d.findH2(func(t string) bool {
			k := strings.ToLower(collapseSpace(t))
			return k == "runs" || k == "запуски"
		})
		require.True(t, ok, "no Runs section in\n%s", out)
		found := false
		for i := start + 1; i+len(block) <= end && !found; i++ {
			lvl, _, isH := d.heading(i)
			found = isH && lvl == 3 && slices.Equal(d.lines[i:i+len(block)], block)
		}
		require.True(t, found, "entry %q not in the Runs section of\n%s", block, out)

		// From scratch: time order, same minute in arrival order.
		doc := ""
		var want []string
		type ent struct {
			m    int
			n    int
			head string
		}
		var all []ent
		for n, m := range []uint16{m1, m2, m1} {
			x := TimelineEntry{RunID: fmt.Sprintf("r%d", n), Task: task}
			doc = AddTimelineEntry(doc, "a1", at(m), x)
			all = append(all, ent{int(m % 1440), n, fmt.Sprintf("### %s — r%d", at(m).Format("15:04"), n)})
		}
		sort.SliceStable(all, func(i, j int) bool { return all[i].m < all[j].m })
		for _, x := range all {
			want = append(want, x.head)
		}
		var got []string
		for _, l := range Lines(doc) {
			if strings.HasPrefix(l, "### ") {
				got = append(got, l)
			}
		}
		require.Equal(t, "# Timeline: a1 / 2026-02-17", Lines(doc)[0])
		require.Equal(t, want, got, "entries out of order:\n%s", doc)
	})
}

// FuzzParseDecisionBlock checks ParseDecisionBlock, which reads a decision
// proposed as a decisions.md block (issue #24): it refuses with
// ErrBadContent or returns a decision that AddDecision writes and
// ParseDecisions reads back with the same title and fields.
func FuzzParseDecisionBlock(f *testing.F) {
	for _, s := range specSeeds(f) {
		f.Add(s)
	}
	f.Add("## 2026-02-17 — Use MinIO\n**Status:** accepted\n**Context:** x\n**Decision:** y\n")
	f.Fuzz(func(t *testing.T, block string) {
		d, err := ParseDecisionBlock(block)
		if err != nil {
			require.ErrorIs(t, err, ErrBadContent)
			return
		}
		require.NotEmpty(t, strings.TrimSpace(d.Title))
		out, err := AddDecision("", "a1", d, day0)
		if err != nil {
			requireSentinel(t, err, ErrBadContent, ErrInvalidUTF8, ErrNUL, ErrScript)
			return
		}
		got := ParseDecisions(out)
		require.Len(t, got, 1, "the parsed decision must write one entry:\n%s", out)
		wantTitle, err := cleanTitle("title", d.Title)
		require.NoError(t, err)
		require.Equal(t, wantTitle, got[0].Title)
	})
}
