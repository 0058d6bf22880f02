package mdops

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
)

// Decision is one decisions.md entry.
//
// File format (an ADR log; spec §3.2, English labels):
//
//	# Decisions: <agentId>
//
//	## 2026-02-17 — Use MinIO versioning
//	**Status:** accepted
//	**Context:** …
//	**Decision:** …
//	**Rationale:** …
//	**Consequences:** …
//	**Run:** run_abc123
//
// Entries are kept in the order they were added (a chronological log, oldest
// first), because appending at the end keeps git diffs to pure additions.
// Empty optional fields are omitted. Multi-line field values continue on the
// following lines. Non-entry sections such as "## Evicted facts" and
// "## Frozen loops" (see AppendToDecisionsSection) are preserved and new
// entries are inserted before them, so they stay at the bottom as an
// appendix. The spec's Ukrainian labels (Статус, Контекст, Рішення,
// Обґрунтування, Наслідки) are read as well.
type Decision struct {
	// ID is "YYYY-MM-DD-<slug of title>"; it is derived, not stored, and
	// made unique by ParseDecisions with a "-2", "-3", … suffix.
	ID string
	// Title is the heading text after the date.
	Title string
	// Status defaults to "accepted" in AddDecision.
	Status, Context, Decision, Rationale, Consequences string
	// RunID is the run that took the decision.
	RunID string
	// Date is midnight UTC of the entry's day.
	Date time.Time
}

var (
	// decisionHeadRe parses "2026-02-17 — Title" (also "–" or "-").
	decisionHeadRe = regexp.MustCompile(`^([0-9]{4}-[0-9]{2}-[0-9]{2}) +[—–-] +(.+)$`)
	// setextRe matches a setext heading underline ("===", "---").
	setextRe = regexp.MustCompile(`^ {0,3}(=+|-+)[ \t]*$`)
)

// parseFieldLine parses a "**Label:** value" line: a label of at least one
// character, none of them '*', ending in ':'; then either nothing or blanks
// (spaces, tabs) and the value. Written out rather than as a regexp because
// every line of decisions.md goes through it on every apply (the file grows
// all an agent's life), and the regexp took a tenth of the write plane's CPU.
func parseFieldLine(l string) (label, value string, ok bool) {
	rest, ok := strings.CutPrefix(l, "**")
	if !ok {
		return "", "", false
	}
	star := strings.IndexByte(rest, '*')
	if star < 2 || rest[star-1] != ':' || !strings.HasPrefix(rest[star:], "**") {
		return "", "", false
	}
	label, after := rest[:star-1], rest[star+2:]
	if after == "" {
		return label, "", true
	}
	value = strings.TrimLeft(after, " \t")
	if len(value) == len(after) {
		return "", "", false // the value must be set off by blanks
	}
	return label, value, true
}

// decisionField maps a lower-cased label to the field it sets.
func decisionField(d *Decision, label string) *string {
	switch strings.ToLower(strings.TrimSpace(label)) {
	case "status", "статус":
		return &d.Status
	case "context", "контекст":
		return &d.Context
	case "decision", "рішення":
		return &d.Decision
	case "rationale", "обґрунтування", "обгрунтування":
		return &d.Rationale
	case "consequences", "наслідки":
		return &d.Consequences
	case "run":
		return &d.RunID
	}
	return nil
}

// Slug turns a title into an id fragment: Unicode-lower-cased, letters
// (Cyrillic included), digits and combining marks kept, every other run of
// characters replaced by one '-', trimmed of '-', at most 60 runes. A title
// with no letters or digits yields "decision".
func Slug(title string) string {
	var b []rune
	dash := false
	for _, r := range strings.ToLower(title) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || (unicode.IsMark(r) && len(b) > 0 && !dash) {
			b = append(b, r)
			dash = false
		} else if len(b) > 0 && !dash {
			b = append(b, '-')
			dash = true
		}
	}
	if len(b) > 60 {
		b = b[:60]
	}
	s := strings.Trim(string(b), "-")
	if s == "" {
		return "decision"
	}
	return s
}

// DecisionID is the id of a decision taken on date (UTC day) with title.
func DecisionID(date time.Time, title string) string {
	return day(date) + "-" + Slug(title)
}

// ParseDecisions returns the entries of decisions.md in file order: every
// "## YYYY-MM-DD — Title" section, with the known "**Label:**" fields.
// Other sections are skipped. IDs are unique within the result.
func ParseDecisions(md string) []Decision {
	d := newDoc(md)
	var out []Decision
	for _, e := range decisionEntries(d) {
		out = append(out, e.dec)
	}
	seen := map[string]int{}
	for i := range out {
		id := DecisionID(out[i].Date, out[i].Title)
		seen[id]++
		if n := seen[id]; n > 1 {
			id = fmt.Sprintf("%s-%d", id, n)
		}
		out[i].ID = id
	}
	return out
}

// decisionEntry is a parsed entry and its line range [start, end).
type decisionEntry struct {
	dec        Decision
	start, end int
}

// CountDecisions is len(ParseDecisions(md)) without parsing the entries'
// fields: meta.json records it at every apply.
func CountDecisions(md string) int {
	d := newDoc(md)
	n := 0
	for i := range d.lines {
		if _, _, ok := decisionHead(d, i); ok {
			n++
		}
	}
	return n
}

// decisionHead reports whether line i of d starts an entry: a level-2
// "## YYYY-MM-DD — Title" heading with a valid day.
func decisionHead(d *doc, i int) (title string, date time.Time, ok bool) {
	lvl, text, ok := d.heading(i)
	if !ok || lvl != 2 {
		return "", time.Time{}, false
	}
	m := decisionHeadRe.FindStringSubmatch(text)
	if m == nil {
		return "", time.Time{}, false
	}
	date, ok = parseDay(m[1])
	return strings.TrimSpace(m[2]), date, ok
}

// decisionEntries parses the entries of d with their ranges.
func decisionEntries(d *doc) []decisionEntry {
	var out []decisionEntry
	for i := range d.lines {
		if title, date, ok := decisionHead(d, i); ok {
			out = append(out, parseEntry(d, i, title, date))
		}
	}
	return out
}

// parseEntry parses the fields of the entry whose heading (title, date) is
// line i of d.
func parseEntry(d *doc, i int, title string, date time.Time) decisionEntry {
	e := decisionEntry{dec: Decision{Title: title, Date: date}, start: i, end: d.sectionEnd(i, 2)}
	var cur *string
	var buf []string
	flush := func() {
		if cur != nil {
			*cur = strings.TrimSpace(strings.Join(buf, "\n"))
		}
		buf = nil
	}
	for j := i + 1; j < e.end; j++ {
		l := d.lines[j]
		if !d.fence[j] {
			if label, value, ok := parseFieldLine(l); ok {
				if f := decisionField(&e.dec, label); f != nil {
					flush()
					cur = f
					buf = []string{value}
					continue
				}
			}
		}
		if cur != nil {
			buf = append(buf, l)
		}
	}
	flush()
	return e
}

// LastDecisions returns the n newest decisions, newest first: by date, and
// for the same date the one later in the file first (it was added later).
// This is what read-memory(mode=wide) loads (spec §11.6: at most 5).
func LastDecisions(md string, n int) []Decision {
	all := ParseDecisions(md)
	if n <= 0 || len(all) == 0 {
		return nil
	}
	for i, j := 0, len(all)-1; i < j; i, j = i+1, j-1 {
		all[i], all[j] = all[j], all[i]
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Date.After(all[j].Date) })
	if n < len(all) {
		all = all[:n]
	}
	return all
}

// AddDecision appends a decision entry to decisions.md (see the format
// above) and returns the new file.
//
// The entry's day is date, or d.Date if date is zero; both zero is
// ErrBadContent. Title is required; Status defaults to "accepted". All
// fields are agent content: sanitised; Title, Status and RunID folded to one
// line; the other fields may span lines but no line of them may look like a
// heading or a field label, which would split the entry (ErrBadContent).
// d.ID is ignored: ids are derived from date and title (DecisionID).
//
// The entry goes right after the last existing entry — before appendix
// sections such as "## Evicted facts" — or, in a file with no entries yet,
// before its first "## " section; an empty md gets "# Decisions: <agentID>".
// Adding an entry identical to an existing one (same day and fields) returns
// md unchanged, so retried proposals are idempotent.
func AddDecision(md, agentID string, d Decision, date time.Time) (string, error) {
	if date.IsZero() {
		date = d.Date
	}
	if date.IsZero() {
		return "", fmt.Errorf("%w: decision has no date", ErrBadContent)
	}
	date = startOfDay(date)
	var err error
	if d.Title, err = cleanTitle("decision title", d.Title); err != nil {
		return "", &FieldError{Field: "title", Err: err}
	}
	for _, f := range []struct {
		name, field string
		v           *string
	}{{"status", "status", &d.Status}, {"run id", "runId", &d.RunID}} {
		clean, err := Sanitize(*f.v)
		if err != nil {
			return "", &FieldError{Field: f.field, Err: fmt.Errorf("%s: %w", f.name, err)}
		}
		*f.v = collapseSpace(clean)
	}
	if d.Status == "" {
		d.Status = "accepted"
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"context", &d.Context}, {"decision", &d.Decision}, {"rationale", &d.Rationale}, {"consequences", &d.Consequences}} {
		if *f.v, err = cleanBlock(f.name, *f.v); err != nil {
			return "", &FieldError{Field: f.name, Err: err}
		}
	}
	d.Date = date

	doc := newDoc(md)
	doc.closeFence()
	// Only an entry of the same day and title can be the same entry: the
	// others' fields are not parsed (the file grows all an agent's life).
	lastEnd := -1 // the end of the last entry, where the new one goes
	for i := range doc.lines {
		title, date, ok := decisionHead(doc, i)
		if !ok {
			continue
		}
		lastEnd = doc.sectionEnd(i, 2)
		if !date.Equal(d.Date) || title != d.Title {
			continue
		}
		x := parseEntry(doc, i, title, date).dec
		if x.Status == d.Status && x.Context == d.Context &&
			x.Decision == d.Decision && x.Rationale == d.Rationale && x.Consequences == d.Consequences && x.RunID == d.RunID {
			return doc.render(), nil
		}
	}
	if doc.empty() {
		if agentID, err = cleanTitle("agent id", agentID); err != nil {
			return "", err
		}
		doc.lines = []string{"# Decisions: " + agentID}
		doc.refresh()
	}
	block := []string{"## " + day(d.Date) + " — " + d.Title, "**Status:** " + d.Status}
	for _, f := range []struct{ label, v string }{
		{"Context", d.Context}, {"Decision", d.Decision}, {"Rationale", d.Rationale},
		{"Consequences", d.Consequences}, {"Run", d.RunID},
	} {
		if f.v != "" {
			block = append(block, strings.Split("**"+f.label+":** "+f.v, "\n")...)
		}
	}
	pos := len(doc.lines)
	if lastEnd >= 0 {
		pos = lastEnd
	} else {
		for i := range doc.lines {
			if lvl, _, ok := doc.heading(i); ok && lvl == 2 {
				pos = i
				break
			}
		}
	}
	doc.insertBlock(pos, block)
	return doc.render(), nil
}

// FieldError names the field of a Decision that was refused (its JSON
// name: title, status, runId, context, decision, rationale, consequences),
// so an API can point at it; the message is the cause's.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// cleanBlock validates a multi-line field value: sanitised, each line's
// trailing space trimmed, blank edges dropped, and no line that would start
// a heading (ATX or setext) or a field of its own, and no unclosed code
// fence.
func cleanBlock(name, v string) (string, error) {
	clean, err := Sanitize(v)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	lines := Lines(clean)
	for i, l := range lines {
		lines[i] = strings.TrimRightFunc(l, unicode.IsSpace)
	}
	lines = trimBlankEdges(lines)
	if len(lines) > 0 {
		// Parsing trims the value like strings.TrimSpace; do the same here
		// so that what is checked is what will be read back.
		lines[0] = strings.TrimLeftFunc(lines[0], unicode.IsSpace)
	}
	var dummy Decision
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimLeft(l, " "), "#") {
			return "", fmt.Errorf("%w: %s line %d starts with '#': %q", ErrBadContent, name, i+1, l)
		}
		// The first line follows "**Label:** ", so only later ones can
		// underline the line above into a setext heading.
		if i > 0 && setextRe.MatchString(l) {
			return "", fmt.Errorf("%w: %s line %d would turn the line above into a heading: %q", ErrBadContent, name, i+1, l)
		}
		if label, _, ok := parseFieldLine(l); ok && decisionField(&dummy, label) != nil {
			return "", fmt.Errorf("%w: %s line %d looks like a field label: %q", ErrBadContent, name, i+1, l)
		}
	}
	out := strings.Join(lines, "\n")
	if out != "" {
		// The value follows "**Label:** " in the file, so its first line can
		// never open a fence, but a later one can — and an unclosed fence
		// would turn the rest of decisions.md into code.
		check := Lines("**" + name + ":** " + out)
		if !fencesClosed(check) {
			return "", fmt.Errorf("%w: %s has an unclosed code fence", ErrBadContent, name)
		}
	}
	return out, nil
}

// fencesClosed reports whether no code fence is left open after the last
// line of lines.
func fencesClosed(lines []string) bool {
	mask := fenceMask(lines)
	last := len(lines) - 1
	if !mask[last] {
		return true
	}
	// The last line is in a fence: it closes it iff appending one more
	// line leaves that line outside the fence.
	mask = fenceMask(append(lines[:last+1:last+1], "x"))
	return !mask[last+1]
}

// startOfDay truncates t to midnight UTC of its UTC day.
func startOfDay(t time.Time) time.Time {
	y, m, dd := t.UTC().Date()
	return time.Date(y, m, dd, 0, 0, 0, 0, time.UTC)
}

// AppendToDecisionsSection appends bullet lines under "## <section>" of
// decisions.md — used for the eviction records "Evicted facts" and "Frozen
// loops" (spec §11.3), which must survive in Layer 2 when the content leaves
// Layer 1. The section is found case-insensitively or created at the end of
// the file; an empty md gets the "# Decisions: <agentID>" header. Each entry
// becomes one bullet: its first line as written (a "- " marker added if it
// has none), its further lines indented under it (an evicted fact keeps its
// sub-bullets); empty entries and entries whose first line is already in
// the section are skipped, so replaying an eviction is idempotent. The inputs are generated by the write plane, not
// by agents, so they are not sanitised here.
func AppendToDecisionsSection(decisionsMD, agentID, section string, lines []string) string {
	section = collapseSpace(section)
	d := newDoc(decisionsMD)
	d.closeFence()
	start, end, found := d.findH2(titleMatcher(section))
	// present reports whether the section already has line l (trimmed) or
	// it is being added: a scan, not a set of the section's lines, since an
	// apply adds a few entries to a section that grows all an agent's life.
	var add []string
	present := func(l string) bool {
		if found {
			for i := start + 1; i < end; i++ {
				if strings.TrimSpace(d.lines[i]) == l {
					return true
				}
			}
		}
		return slices.Contains(add, l)
	}
	for _, entry := range lines {
		// An entry is one bullet, kept as written (a fact evicted verbatim),
		// with its continuation lines indented under it.
		first, rest, _ := strings.Cut(normalizeNewlines(entry), "\n")
		first = stripMarker(first)
		if first == "" {
			continue
		}
		first = "- " + first
		if present(first) {
			continue
		}
		var more []string
		for _, l := range Lines(rest) {
			if strings.TrimSpace(l) == "" {
				continue
			}
			if leadingSpaces(l) == 0 {
				l = "  " + l
			}
			more = append(more, l)
		}
		// A code block the entry opens (a fact whose block was never
		// closed) is closed with it, or the rest of the file would be code.
		if _, closer := fenceRegions(more); closer != "" {
			more = append(more, "  "+closer)
		}
		add = append(append(add, first), more...)
	}
	if len(add) == 0 {
		return d.render()
	}
	if d.empty() {
		d.lines = []string{"# Decisions: " + collapseSpace(agentID)}
		d.refresh()
	}
	if found {
		d.insertLines(d.lastContent(start, end)+1, add...)
	} else {
		d.insertBlock(len(d.lines), append([]string{"## " + section}, add...))
	}
	return d.render()
}

// ParseDecisionBlock parses one decision written in the decisions.md format
// (spec DiffMem §3.2), as an agent may send it as add_decision content:
//
//	# Decisions: <agentId>            (optional)
//
//	## 2026-02-17 — Use MinIO versioning
//	**Статус:** Прийнято              (or **Status:**, and so on)
//	**Контекст:** …
//	**Рішення:** …
//	**Обґрунтування:** …
//	**Наслідки:** …
//	**Run:** run_abc123
//
// The block must hold exactly one "## YYYY-MM-DD — Title" entry, nothing but
// blank lines and an optional "# Decisions" heading before it, and at least
// one known "**Label:**" field. Field values are returned trimmed and as
// written (AddDecision sanitises them). The error wraps ErrBadContent and
// says what is wrong.
func ParseDecisionBlock(md string) (Decision, error) {
	d := newDoc(md)
	entries := decisionEntries(d)
	switch len(entries) {
	case 0:
		return Decision{}, fmt.Errorf(`%w: no "## YYYY-MM-DD — Title" decision heading (decisions.md format, spec DiffMem §3.2)`, ErrBadContent)
	case 1:
	default:
		return Decision{}, fmt.Errorf("%w: %d decision entries; send one add_decision update per decision", ErrBadContent, len(entries))
	}
	e := entries[0]
	for i := 0; i < e.start; i++ {
		if strings.TrimSpace(d.lines[i]) == "" {
			continue
		}
		if lvl, _, ok := d.heading(i); ok && lvl == 1 {
			continue
		}
		if setextRe.MatchString(d.lines[i]) {
			continue
		}
		return Decision{}, fmt.Errorf("%w: line %d before the decision heading is not a \"# Decisions\" heading: %q", ErrBadContent, i+1, d.lines[i])
	}
	if e.end < len(d.lines) {
		for i := e.end; i < len(d.lines); i++ {
			if strings.TrimSpace(d.lines[i]) != "" {
				return Decision{}, fmt.Errorf("%w: line %d after the decision entry starts another section: %q", ErrBadContent, i+1, d.lines[i])
			}
		}
	}
	dec := e.dec
	if dec.Status == "" && dec.Context == "" && dec.Decision == "" && dec.Rationale == "" && dec.Consequences == "" && dec.RunID == "" {
		return Decision{}, fmt.Errorf(`%w: decision %q has no "**Status:**", "**Context:**", "**Decision:**", "**Rationale:**", "**Consequences:**" or "**Run:**" field (Ukrainian labels as in the spec are read too)`, ErrBadContent, dec.Title)
	}
	dec.ID = DecisionID(dec.Date, dec.Title)
	return dec, nil
}
