package mdops

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Loop priorities accepted by OpenLoop.
const (
	PriorityCritical = "critical"
	PriorityHigh     = "high"
	PriorityNormal   = "normal"
	PriorityLow      = "low"
)

// Canonical open_loops.md section titles. OpenLoop and CloseLoop also find
// the spec's Ukrainian titles ("Критичні", "Очікування", "Закриті (останні
// 7 днів)") so they do not create a duplicate English section next to them.
const (
	SectionCritical = "Critical"
	SectionOpen     = "Open"
	SectionWaiting  = "Waiting"
	SectionClosed   = "Closed"
)

// Loop is one task-list line of open_loops.md.
//
// Line format: every loop is one top-level task-list line, readable on its
// own in a diff:
//
//	## Open
//	- [ ] loop_003: Confirm MinIO versioning — opened 2026-02-15 | priority: low
//	## Closed
//	- [x] loop_003: Confirm MinIO versioning — closed 2026-02-16 | run_abc | opened 2026-02-15 | priority: low | resolution: Confirmed
//
// After the id comes the loop text, then " — " and a "|"-separated list of
// metadata that starts with "opened DATE" (open) or "closed DATE" (closed).
// A closed line keeps the opened date and priority, so ParseLoops loses
// nothing when a loop is closed, and puts the resolution last because it is
// free text that may itself contain " | ". The run token is the bare run id
// when it starts with "run_", otherwise "run: <id>". Dates are UTC days.
//
// The Ukrainian hand-written form of spec §3.2 ("— відкрита з DATE",
// "— закрита DATE | run_x") is understood too, so files written before this
// package keep their dates.
//
// Ids are "loop_%03d" of one more than the highest loop_N mentioned anywhere
// in the file. A closed loop that was evicted (or a frozen one) leaves the
// file, so its number can be handed out again; git history (and the
// decisions.md "Frozen loops" entry) still tell the two apart by date, which
// we accept rather than keep a counter in an HTML comment or a second file.
type Loop struct {
	// ID is "loop_NNN"; empty for lines not written in our format.
	ID string
	// Text is the loop description without id and metadata.
	Text string
	// Section is the title of the enclosing "## " section.
	Section string
	// Priority is critical|high|normal|low; empty if the line has none.
	Priority string
	// Closed reports a checked box ("- [x]").
	Closed bool
	// Opened and ClosedAt are midnight UTC of the recorded days; zero when
	// the line does not record them.
	Opened, ClosedAt time.Time
	// RunID and Resolution are recorded when a loop is closed.
	RunID, Resolution string
	// Line is the 1-based line number in the parsed file.
	Line int
}

var (
	// loopMetaRe finds where the metadata starts.
	loopMetaRe = regexp.MustCompile(` — (opened|closed|відкрита з|закрита) [0-9]{4}-[0-9]{2}-[0-9]{2}`)
	// loopNumRe finds every loop id mentioned in a file, for allocation.
	loopNumRe = regexp.MustCompile(`\bloop_([0-9]+)\b`)
	// validLoopIDRe is the syntax CloseLoop accepts.
	validLoopIDRe = regexp.MustCompile(`^loop_[0-9]+$`)
)

// ParseLoops returns every top-level task-list line ("- [ ] …" or
// "- [x] …") outside fenced code, in file order. Lines not in our format
// (hand-written "- [ ] something") are returned too, with empty ID and zero
// dates, so nothing a human wrote is invisible to the caller.
func ParseLoops(md string) []Loop {
	return parseLoops(newDoc(md))
}

// parseLoops is ParseLoops on a parsed document.
func parseLoops(d *doc) []Loop {
	var out []Loop
	for i, l := range d.bodyLines {
		mark, body, ok := loopLine(l.text)
		if !ok {
			continue
		}
		lp := parseLoopBody(body)
		lp.Closed = mark != ' '
		lp.Section = l.section
		lp.Line = i + 1
		out = append(out, lp)
	}
	return out
}

// loopLine matches a top-level task-list item, `^[-*+] \[([ xX])\] (.*)$`,
// and returns its mark and what follows. By hand rather than by regexp: it
// runs on every line of open_loops.md on every apply, where the regexp
// engine showed in the write plane's profile (issue #9).
func loopLine(l string) (mark byte, body string, ok bool) {
	if len(l) < 6 || strings.IndexByte(l, '\n') >= 0 {
		return 0, "", false
	}
	if (l[0] != '-' && l[0] != '*' && l[0] != '+') || l[1] != ' ' || l[2] != '[' || l[4] != ']' || l[5] != ' ' {
		return 0, "", false
	}
	if l[3] != ' ' && l[3] != 'x' && l[3] != 'X' {
		return 0, "", false
	}
	return l[3], l[6:], true
}

// loopIDPrefix matches our id prefix, `^(loop_[0-9]+): (.*)$`, and returns
// the id and what follows.
func loopIDPrefix(body string) (id, rest string, ok bool) {
	const prefix = "loop_"
	if !strings.HasPrefix(body, prefix) || strings.IndexByte(body, '\n') >= 0 {
		return "", "", false
	}
	i := len(prefix)
	for i < len(body) && '0' <= body[i] && body[i] <= '9' {
		i++
	}
	if i == len(prefix) || !strings.HasPrefix(body[i:], ": ") {
		return "", "", false
	}
	return body[:i], body[i+2:], true
}

// parseLoopBody parses what follows the checkbox.
func parseLoopBody(body string) Loop {
	var lp Loop
	body = strings.TrimSpace(body)
	if id, rest, ok := loopIDPrefix(body); ok {
		lp.ID, body = id, rest
	}
	var loc []int
	if strings.Contains(body, " — ") { // the regexp's literal start, found faster
		loc = loopMetaRe.FindStringIndex(body)
	}
	if loc == nil {
		lp.Text = strings.TrimSpace(body)
		return lp
	}
	lp.Text = strings.TrimSpace(body[:loc[0]])
	meta := body[loc[0]+len(" — "):]
	for meta != "" {
		var tok string
		if strings.HasPrefix(meta, "resolution: ") {
			lp.Resolution = strings.TrimSpace(strings.TrimPrefix(meta, "resolution: "))
			break
		}
		if k := strings.Index(meta, " | "); k >= 0 {
			tok, meta = meta[:k], meta[k+3:]
		} else {
			tok, meta = meta, ""
		}
		tok = strings.TrimSpace(tok)
		switch {
		case strings.HasPrefix(tok, "opened "):
			lp.Opened, _ = parseDay(strings.TrimPrefix(tok, "opened "))
		case strings.HasPrefix(tok, "відкрита з "):
			lp.Opened, _ = parseDay(strings.TrimPrefix(tok, "відкрита з "))
		case strings.HasPrefix(tok, "closed "):
			lp.ClosedAt, _ = parseDay(strings.TrimPrefix(tok, "closed "))
		case strings.HasPrefix(tok, "закрита "):
			lp.ClosedAt, _ = parseDay(strings.TrimPrefix(tok, "закрита "))
		case strings.HasPrefix(tok, "priority: "):
			lp.Priority = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(tok, "priority: ")))
		case strings.HasPrefix(tok, "run: "):
			lp.RunID = strings.TrimSpace(strings.TrimPrefix(tok, "run: "))
		case strings.HasPrefix(tok, "run_") && !strings.ContainsAny(tok, " \t"):
			lp.RunID = tok
		}
	}
	return lp
}

// openLoopLine renders an open loop in our format.
func openLoopLine(id, text, priority string, opened time.Time) string {
	return fmt.Sprintf("- [ ] %s: %s — opened %s | priority: %s", id, text, day(opened), priority)
}

// closedLoopLine renders a closed loop in our format.
func closedLoopLine(lp Loop, closed time.Time, runID, resolution string) string {
	var b strings.Builder
	b.WriteString("- [x] ")
	if lp.ID != "" {
		b.WriteString(lp.ID + ": ")
	}
	b.WriteString(lp.Text + " — closed " + day(closed))
	if runID != "" {
		if strings.HasPrefix(runID, "run_") {
			b.WriteString(" | " + runID)
		} else {
			b.WriteString(" | run: " + runID)
		}
	}
	if !lp.Opened.IsZero() {
		b.WriteString(" | opened " + day(lp.Opened))
	}
	if lp.Priority != "" {
		b.WriteString(" | priority: " + lp.Priority)
	}
	if resolution != "" {
		b.WriteString(" | resolution: " + resolution)
	}
	return b.String()
}

// sectionKey maps a section title to a comparison key: lower-cased, a
// trailing parenthesised note dropped ("Закриті (останні 7 днів)"), and the
// spec's Ukrainian titles mapped to the English canonical ones.
func sectionKey(title string) string {
	k := strings.ToLower(collapseSpace(title))
	if i := strings.Index(k, " ("); i > 0 && strings.HasSuffix(k, ")") {
		k = k[:i]
	}
	switch k {
	case "критичні", "критичне":
		return "critical"
	case "відкриті":
		return "open"
	case "очікування":
		return "waiting"
	case "закриті":
		return "closed"
	}
	return k
}

// canonicalLoopSections is the order new canonical sections are kept in.
var canonicalLoopSections = []string{"critical", "open", "waiting", "closed"}

// canonicalLoopTitles is how canonical sections are spelled when created,
// whatever case the caller used.
var canonicalLoopTitles = map[string]string{
	"critical": SectionCritical, "open": SectionOpen,
	"waiting": SectionWaiting, "closed": SectionClosed,
}

// ensureLoopSection returns the body range of the section with the given
// title, creating it if needed. A canonical section is created before the
// first existing canonical section that should follow it (so Closed stays
// last); any other section before Closed, or at the end.
func ensureLoopSection(d *doc, title string) (start, end int) {
	key := sectionKey(title)
	if s, e, ok := d.findH2(func(t string) bool { return sectionKey(t) == key }); ok {
		return s, e
	}
	rank := len(canonicalLoopSections) - 1 // non-canonical: before Closed
	for i, k := range canonicalLoopSections {
		if k == key {
			rank = i
		}
	}
	pos := len(d.lines)
	for i := range d.lines {
		lvl, t, ok := d.heading(i)
		if !ok || lvl != 2 {
			continue
		}
		for r, k := range canonicalLoopSections {
			if k == sectionKey(t) && (r > rank || (r == rank && key != k)) {
				pos = i
				break
			}
		}
		if pos != len(d.lines) {
			break
		}
	}
	if c, ok := canonicalLoopTitles[key]; ok {
		title = c
	}
	d.insertBlock(pos, []string{"## " + title})
	s, e, _ := d.findH2(func(t string) bool { return sectionKey(t) == key })
	return s, e
}

// nextLoopID returns one more than the highest loop_N mentioned in the file.
func nextLoopID(d *doc) string {
	maxN := 0
	for _, l := range d.lines {
		for _, m := range loopNumRe.FindAllStringSubmatch(l, -1) {
			if n, err := strconv.Atoi(m[1]); err == nil && n > maxN {
				maxN = n
			}
		}
	}
	return fmt.Sprintf("loop_%03d", maxN+1)
}

// OpenLoop adds an open loop to open_loops.md and returns the new file and
// the loop's id.
//
// priority is critical, high, normal or low (case-insensitive; empty means
// normal; anything else is ErrBadContent). section defaults to "Critical"
// for critical loops and "Open" otherwise; it may not be the Closed section.
// text is agent content: sanitised and folded to one line; empty text, or
// text containing our metadata marker (" — opened 2026-…"), is
// ErrBadContent. date is the opened day (UTC) and must not be zero.
//
// The loop goes at the end of its section; a missing section is created in
// canonical order (Critical, Open, Waiting, …, Closed) and an empty md
// becomes "# Open Loops: <agentID>". If an open loop (with an id) already
// has exactly this text, its id is returned and md is unchanged, so a
// retried proposal does not open the loop twice. See the format notes above for how
// ids are allocated.
func OpenLoop(md, agentID, section, text, priority string, date time.Time) (out, loopID string, err error) {
	priority = strings.ToLower(strings.TrimSpace(priority))
	switch priority {
	case "":
		priority = PriorityNormal
	case PriorityCritical, PriorityHigh, PriorityNormal, PriorityLow:
	default:
		return "", "", fmt.Errorf("%w: priority %q (want critical, high, normal or low)", ErrBadContent, priority)
	}
	if date.IsZero() {
		return "", "", fmt.Errorf("%w: zero opened date", ErrBadContent)
	}
	clean, err := Sanitize(text)
	if err != nil {
		return "", "", err
	}
	// A loop is one line: text on further lines is folded into it, but a
	// heading there was meant to reshape the file, as in a fact.
	for n, l := range Lines(clean) {
		if n > 0 && strings.HasPrefix(strings.TrimSpace(l), "#") {
			return "", "", fmt.Errorf("%w: loop text line %d starts with '#' (headings are not allowed in loops): %q", ErrBadContent, n+1, strings.TrimSpace(l))
		}
	}
	text = collapseSpace(clean)
	if text == "" {
		return "", "", fmt.Errorf("%w: empty loop text", ErrBadContent)
	}
	if loopMetaRe.MatchString(text) {
		return "", "", fmt.Errorf("%w: loop text contains the metadata marker: %q", ErrBadContent, text)
	}
	if strings.TrimSpace(section) == "" {
		section = SectionOpen
		if priority == PriorityCritical {
			section = SectionCritical
		}
	}
	if section, err = cleanTitle("section", section); err != nil {
		return "", "", err
	}
	if sectionKey(section) == "closed" {
		return "", "", fmt.Errorf("%w: cannot open a loop in section %q", ErrBadContent, section)
	}

	d := newDoc(md)
	d.closeFence()
	for _, lp := range parseLoops(d) {
		if !lp.Closed && lp.ID != "" && lp.Text == text {
			return d.render(), lp.ID, nil
		}
	}
	if d.empty() {
		if agentID, err = cleanTitle("agent id", agentID); err != nil {
			return "", "", err
		}
		d.lines = []string{"# Open Loops: " + agentID}
		d.refresh()
	}
	loopID = nextLoopID(d)
	start, end := ensureLoopSection(d, section)
	d.insertLines(d.lastContent(start, end)+1, openLoopLine(loopID, text, priority, date))
	return d.render(), loopID, nil
}

// ValidLoopID reports whether id is a loop id CloseLoop accepts (loop_NNN).
func ValidLoopID(id string) bool { return validLoopIDRe.MatchString(strings.TrimSpace(id)) }

// CloseLoop closes the open loop loopID: its line (with any continuation
// lines, which are dropped) is removed from where it is and re-added, in the
// closed format, at the end of the Closed section, which is created at the
// end of the file if missing. resolution (free text, sanitised, one line)
// and runID are optional; date is the closing day and must not be zero.
//
// ErrNotFound if there is no open loop with that id — including when it is
// already closed, so a second close is reported rather than silently
// rewriting the first one's resolution. ErrBadContent for a malformed id.
func CloseLoop(md, loopID, resolution, runID string, date time.Time) (string, error) {
	loopID = strings.TrimSpace(loopID)
	if !validLoopIDRe.MatchString(loopID) {
		return "", fmt.Errorf("%w: loop id %q (want loop_NNN)", ErrBadContent, loopID)
	}
	if date.IsZero() {
		return "", fmt.Errorf("%w: zero closing date", ErrBadContent)
	}
	res, err := Sanitize(resolution)
	if err != nil {
		return "", err
	}
	resolution = collapseSpace(res)
	run, err := Sanitize(runID)
	if err != nil {
		return "", err
	}
	runID = collapseSpace(run)
	if strings.ContainsAny(runID, " |") {
		return "", fmt.Errorf("%w: run id %q", ErrBadContent, runID)
	}

	d := newDoc(md)
	d.closeFence()
	var target *Loop
	closed := false
	for _, lp := range parseLoops(d) {
		if lp.ID != loopID {
			continue
		}
		if !lp.Closed {
			target = &lp
			break
		}
		closed = true
	}
	if target == nil {
		if closed {
			return "", fmt.Errorf("%w: %s is already closed", ErrNotFound, loopID)
		}
		return "", fmt.Errorf("%w: no open loop %s", ErrNotFound, loopID)
	}
	i := target.Line - 1
	d.removeLines(i, d.itemEnd(i))
	line := closedLoopLine(*target, date, runID, resolution)
	if start, end, ok := d.findH2(func(t string) bool { return sectionKey(t) == "closed" }); ok {
		d.insertLines(d.lastContent(start, end)+1, line)
	} else {
		d.insertBlock(len(d.lines), []string{"## " + SectionClosed, line})
	}
	return d.render(), nil
}
