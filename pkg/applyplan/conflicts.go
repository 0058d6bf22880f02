package applyplan

import (
	"fmt"
	"slices"
	"strings"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/factttl"
	"github.com/garden-bloom/memory/pkg/mdops"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

// Conflicts reports the updates whose target changed between the commit a
// proposal was based on and the head it would be applied to (spec DiffMem
// §7.1, threat 4): a replaced file, the section a fact is appended to, the
// fact being removed, the loop being closed. Opening loops, adding decisions
// and appending to a section that only grew never conflict: they only add. Such proposals wait for a person
// instead of overwriting what changed meanwhile (a run's or a human's edit).
func Conflicts(updates []*memoryv1.FileUpdate, base, head Reader) ([]string, error) {
	var out []string
	// Facts evicted to Layer 2 in the meantime left their section, but that
	// is the engine's housekeeping, not an edit: they are recorded, with
	// their text, in decisions.md.
	evicted, _, err := head(memlayout.DecisionsFile)
	if err != nil {
		return nil, err
	}
	for i, u := range updates {
		b, _, err := base(u.GetFile())
		if err != nil {
			return nil, err
		}
		h, _, err := head(u.GetFile())
		if err != nil {
			return nil, err
		}
		if b == h {
			continue
		}
		what := ""
		switch u.GetOperation() {
		case memoryv1.Operation_OPERATION_REPLACE, memoryv1.Operation_OPERATION_WRITE_RUN,
			memoryv1.Operation_OPERATION_RESTORE, memoryv1.Operation_OPERATION_DELETE:
			what = "the file"
		case memoryv1.Operation_OPERATION_APPEND:
			section := u.GetSection()
			if strings.TrimSpace(section) == "" {
				section = "General"
			}
			// Appends commute: a section that only grew meanwhile is safe to
			// append to; one whose facts were removed or reworded is not.
			kept := sectionFacts(h, section)
			if removed := missing(sectionFacts(b, section), kept); slices.ContainsFunc(removed, func(f string) bool {
				return !strings.Contains(evicted, f) && !ttlHousekeeping(f, kept)
			}) {
				what = fmt.Sprintf("section %q", section)
			}
		case memoryv1.Operation_OPERATION_REMOVE:
			if hasFact(b, u.GetContent()) != hasFact(h, u.GetContent()) {
				what = "the fact being removed"
			}
		case memoryv1.Operation_OPERATION_CLOSE:
			if loopLine(b, u.GetLoopId()) != loopLine(h, u.GetLoopId()) {
				what = "loop " + u.GetLoopId()
			}
		}
		if what != "" {
			out = append(out, fmt.Sprintf("updates[%d]: %s of %s changed since the proposal was made", i, what, u.GetFile()))
		}
	}
	return out, nil
}

// ttlHousekeeping reports whether a fact that left its section did so by
// its TTL (pkg/factttl), the write plane's housekeeping like eviction: its
// marker changed (set, removed, or rewritten "stale since") while the fact
// stayed, or it carried a TTL whose action takes it out (archive, delete).
func ttlHousekeeping(fact string, kept []string) bool {
	key := factttl.Strip(fact)
	if slices.ContainsFunc(kept, func(f string) bool { return factttl.Strip(f) == key }) {
		return true
	}
	m, ok := factttl.Of(fact)
	return ok && m.Kind == factttl.Expires && m.Action != factttl.MarkStale
}

func sectionFacts(md, section string) []string {
	var out []string
	for _, f := range mdops.ParseFacts(md) {
		if strings.EqualFold(strings.TrimSpace(f.Section), strings.TrimSpace(section)) {
			out = append(out, f.Text)
		}
	}
	return out
}

// missing lists the elements of a that are not in b.
func missing(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func hasFact(md, line string) bool {
	want := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- "))
	for _, f := range mdops.ParseFacts(md) {
		if f.Text == want {
			return true
		}
	}
	return false
}

func loopLine(md, id string) string {
	for _, l := range mdops.ParseLoops(md) {
		if l.ID == id {
			return fmt.Sprintf("%v|%s|%s", l.Closed, l.Text, l.Section)
		}
	}
	return ""
}
