package factttl

import (
	"regexp"
	"strings"
	"time"
)

// SectionExpiredFacts is the decisions.md section (Layer 2) that archived
// facts move to, beside § "Evicted facts" and in the same style.
const SectionExpiredFacts = "Expired facts"

// ArchivedLine renders the decisions.md record of a fact archived when its
// TTL ran out: the fact verbatim (without its marker), when it expired and
// the day it was archived, as § "Evicted facts" records evictions:
//
//   - The staging DB is pg15 — expired 2026-12-04T10:00:00Z, archived 2026-12-04
//
// The fact's sub-bullets and wrapped lines (more), as they were, follow.
func ArchivedLine(body string, expired, archived time.Time, more []string) string {
	var b strings.Builder
	b.WriteString("- " + strings.TrimSpace(body) + " — expired " + expired.UTC().Truncate(time.Second).Format(TimeLayout) +
		", archived " + archived.UTC().Format("2006-01-02"))
	for _, l := range more {
		b.WriteString("\n" + l)
	}
	return b.String()
}

var archivedRe = regexp.MustCompile(`^(.+) — expired (\S+), archived ([0-9]{4}-[0-9]{2}-[0-9]{2})$`)

// Archived is a record of § "Expired facts".
type Archived struct {
	// Fact is the fact as it was, without its marker.
	Fact string
	// Expired is when its TTL ran out; ArchivedOn the day it moved.
	Expired, ArchivedOn time.Time
}

// ParseArchived reads a record ArchivedLine wrote, given as a bullet's text
// (without the "- "). ok is false for anything else, e.g. a line a person
// added to the section by hand.
func ParseArchived(text string) (Archived, bool) {
	m := archivedRe.FindStringSubmatch(strings.TrimSpace(text))
	if m == nil {
		return Archived{}, false
	}
	expired, err := time.Parse(time.RFC3339, m[2])
	if err != nil {
		return Archived{}, false
	}
	day, err := time.Parse("2006-01-02", m[3])
	if err != nil {
		return Archived{}, false
	}
	return Archived{Fact: strings.TrimSpace(m[1]), Expired: expired, ArchivedOn: day}, true
}
