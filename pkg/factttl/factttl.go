// Package factttl reads and writes the TTL marker of a facts.md bullet
// (memory-bridge §4, "TTL Manager"): how long a fact stays true and what
// happens when it does not. The marker lives in the Markdown, at the end of
// the fact's line, so `git diff` and `git log -p` show when a fact got a TTL
// and when it ran out:
//
//   - The staging DB is pg15 _(expires 2026-12-04T10:00:00Z, then archive)_
//   - The staging DB is pg15 _(stale since 2026-12-04T10:00:00Z)_
//
// The first form is a fact with a TTL: at the time given it is marked stale
// (mark_stale, the default when ", then …" is left out), moved to Layer 2
// (archive: decisions.md § "Expired facts") or removed (delete). The second
// is a fact whose TTL ran out with mark_stale: it stays, marked.
//
// Only a trailing "_(expires …)_" or "_(stale since …)_" is a marker, after a
// space and with nothing after it; a fact that merely mentions "expires"
// anywhere else is plain text. A trailing group in one of those two forms
// that does not parse (a bad time, an unknown action) is an error, so a
// typo is refused instead of silently ignored. Times are RFC 3339; the
// package writes them in UTC to the second. Everything here is pure: no
// clock, no I/O.
package factttl

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Action is what happens to a fact when its TTL runs out.
type Action string

// The actions of memory-bridge §4.1 (TTLAction), by their marker names.
const (
	// MarkStale keeps the fact in facts.md, marked "_(stale since …)_".
	MarkStale Action = "mark_stale"
	// Archive moves the fact to decisions.md § "Expired facts" (Layer 2).
	Archive Action = "archive"
	// Delete removes the fact; git history keeps it.
	Delete Action = "delete"
)

// Actions lists the actions in the order they are documented.
var Actions = []Action{MarkStale, Archive, Delete}

// ParseAction returns the action named s ("mark_stale", "archive",
// "delete"; "" is mark_stale).
func ParseAction(s string) (Action, error) {
	switch a := Action(s); a {
	case "":
		return MarkStale, nil
	case MarkStale, Archive, Delete:
		return a, nil
	}
	return "", fmt.Errorf("%w: unknown action %q (want mark_stale, archive or delete)", ErrMalformed, s)
}

// ErrMalformed wraps every error about a marker that does not parse.
var ErrMalformed = errors.New("malformed TTL marker")

// Kind says which of the two marker forms a Marker is.
type Kind int

const (
	// Expires is "_(expires <time>, then <action>)_": a TTL still running
	// or run out but not yet acted on.
	Expires Kind = iota + 1
	// Stale is "_(stale since <time>)_": the TTL ran out with mark_stale.
	Stale
)

// Marker is a parsed TTL marker.
type Marker struct {
	Kind Kind
	// At is when the fact expires (Expires) or since when it is stale
	// (Stale: the expiry that made it so).
	At time.Time
	// Action is what happens at At (Expires only).
	Action Action
}

// ExpiresAt is the marker of a fact that expires at t, then action ("" is
// mark_stale).
func ExpiresAt(t time.Time, action Action) Marker {
	if action == "" {
		action = MarkStale
	}
	return Marker{Kind: Expires, At: t, Action: action}
}

// StaleSince is the marker of a fact marked stale, its TTL having run out
// at t.
func StaleSince(t time.Time) Marker { return Marker{Kind: Stale, At: t} }

// TimeLayout is how markers write times: RFC 3339 in UTC, to the second.
const TimeLayout = "2006-01-02T15:04:05Z"

// String renders the marker as it is written after a fact.
func (m Marker) String() string {
	at := m.At.UTC().Truncate(time.Second).Format(TimeLayout)
	if m.Kind == Stale {
		return "_(stale since " + at + ")_"
	}
	action := m.Action
	if action == "" {
		action = MarkStale
	}
	return "_(expires " + at + ", then " + string(action) + ")_"
}

// Due reports whether the marker's TTL has run out at now and its action
// has not been applied yet: an Expires marker whose time is not after now.
func (m Marker) Due(now time.Time) bool { return m.Kind == Expires && !m.At.After(now) }

// Lapsed reports whether a fact with this marker is past its TTL at now:
// due, or already marked stale.
func (m Marker) Lapsed(now time.Time) bool { return m.Kind == Stale || m.Due(now) }

// The marker's fixed pieces.
const (
	open          = "_("
	closing       = ")_"
	expiresWord   = "expires "
	staleWord     = "stale since "
	thenSeparator = ", then "
)

// Split separates a fact's text (a bullet without its "- ", as
// mdops.ParseFacts gives it) into the fact itself and its trailing marker.
// ok is false when the text has no marker; err is set (wrapping
// ErrMalformed) when it ends in what must be one but does not parse, or when
// a marker has no fact before it.
func Split(text string) (body string, m Marker, ok bool, err error) {
	text = strings.TrimSpace(text)
	inner, body, found := trailingGroup(text)
	if !found {
		return text, Marker{}, false, nil
	}
	switch {
	case strings.HasPrefix(inner, expiresWord):
		rest := inner[len(expiresWord):]
		at, action, hasAction := strings.Cut(rest, thenSeparator)
		m = Marker{Kind: Expires, Action: MarkStale}
		if hasAction {
			if m.Action, err = ParseAction(action); err != nil || action == "" {
				return text, Marker{}, false, fmt.Errorf("%w: unknown action %q after %q (want mark_stale, archive or delete)", ErrMalformed, action, "then")
			}
		}
		if m.At, err = parseTime(at); err != nil {
			return text, Marker{}, false, err
		}
	case strings.HasPrefix(inner, staleWord):
		m = Marker{Kind: Stale}
		if m.At, err = parseTime(inner[len(staleWord):]); err != nil {
			return text, Marker{}, false, err
		}
	default:
		// "_(see below)_" is emphasis, not a marker.
		return text, Marker{}, false, nil
	}
	if body == "" {
		return text, Marker{}, false, fmt.Errorf("%w: %q has no fact before it", ErrMalformed, open+inner+closing)
	}
	return body, m, true, nil
}

// trailingGroup finds a trailing " _(…)_" group: its inside and the text
// before it (trimmed). A group alone on the line counts too, so that a
// marker without a fact can be refused.
func trailingGroup(text string) (inner, before string, ok bool) {
	if !strings.HasSuffix(text, closing) {
		return "", "", false
	}
	i := strings.LastIndex(text[:len(text)-len(closing)], open)
	if i < 0 || (i > 0 && text[i-1] != ' ' && text[i-1] != '\t') {
		return "", "", false
	}
	inner = text[i+len(open) : len(text)-len(closing)]
	if strings.Contains(inner, closing) {
		return "", "", false // "_(a)_ and _(b)_": the group does not span the end
	}
	return inner, strings.TrimSpace(text[:i]), true
}

// parseTime parses a marker's time: RFC 3339, e.g. 2026-12-04T10:00:00Z.
func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil || strings.ContainsAny(s, " \t") {
		return time.Time{}, fmt.Errorf("%w: time %q is not RFC 3339 (e.g. 2026-12-04T10:00:00Z)", ErrMalformed, s)
	}
	return t, nil
}

// Check reports a malformed marker in a fact's text, or a fact with more
// than one marker (a marker written after another): nil when the text has
// one well-formed marker or none.
func Check(text string) error {
	body, _, ok, err := Split(text)
	if err != nil || !ok {
		return err
	}
	if _, _, again, _ := Split(body); again {
		return fmt.Errorf("%w: %q carries more than one TTL marker; keep only the last", ErrMalformed, text)
	}
	return nil
}

// Strip returns the fact without its marker: what the fact says, for
// matching facts whatever their TTL. A text whose marker does not parse is
// returned whole.
func Strip(text string) string {
	body, _, _, _ := Split(text)
	return body
}

// With returns the fact (without a marker) followed by m.
func With(body string, m Marker) string {
	return strings.TrimSpace(body) + " " + m.String()
}

// Of returns the marker of a fact's text and whether it has a well-formed
// one.
func Of(text string) (Marker, bool) {
	_, m, ok, err := Split(text)
	return m, ok && err == nil
}

// Lapsed reports whether the fact's text carries a marker that is past its
// TTL at now (see Marker.Lapsed). A quick look for the closing ")_" keeps
// the many facts without a marker cheap.
func Lapsed(text string, now time.Time) bool {
	if !strings.HasSuffix(strings.TrimSpace(text), closing) {
		return false
	}
	m, ok := Of(text)
	return ok && m.Lapsed(now)
}
