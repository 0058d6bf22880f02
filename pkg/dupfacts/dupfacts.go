// Package dupfacts finds the facts a proposal appends that the agent's
// facts.md already has, case and spacing aside: the semantic guard's
// duplicate_fact check. entity-graph's CheckProposal runs it for its
// callers; proposal-apply runs it itself, on its own copy of head, because
// the check needs facts.md and not the graph, and asking the read plane for
// it cost a round trip and a read of facts.md there on every proposal.
package dupfacts

import (
	"fmt"
	"strings"
	"unicode/utf8"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/factttl"
	"github.com/garden-bloom/memory/pkg/mdops"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

// Kind is the finding kind of a repeated fact.
const Kind = "duplicate_fact"

// Repeat is an appended line that repeats an existing fact.
type Repeat struct {
	Update   int    // index of the update in the proposal
	Line     string // the appended line, trimmed
	Existing string // the fact it repeats, as facts.md has it
}

// Detail describes the repeat for a person.
func (r Repeat) Detail() string {
	return fmt.Sprintf("%q repeats the existing fact %q", r.Line, r.Existing)
}

// Find returns, in proposal order, every line the updates append to facts.md
// that repeats one of the facts in the text readFacts returns, TTL markers
// aside. readFacts is called only when an update appends to facts.md.
func Find(updates []*memoryv1.FileUpdate, readFacts func() (string, error)) ([]Repeat, error) {
	type appended struct {
		update     int
		line, norm string
	}
	var lines []appended
	for i, u := range updates {
		if !isAppend(u) {
			continue
		}
		for _, line := range strings.Split(u.GetContent(), "\n") {
			if line = strings.TrimSpace(line); line != "" {
				lines = append(lines, appended{i, line, Normalize(line)})
			}
		}
	}
	if len(lines) == 0 {
		return nil, nil
	}
	facts, err := readFacts()
	if err != nil {
		return nil, err
	}
	known := map[string]string{} // normalised appended line -> the fact it repeats
	for _, f := range mdops.ParseFacts(facts) {
		for _, l := range lines {
			if sameFact(f.Text, l.norm) {
				known[l.norm] = f.Text
			}
		}
	}
	var out []Repeat
	for _, l := range lines {
		if was, ok := known[l.norm]; ok {
			out = append(out, Repeat{Update: l.update, Line: l.line, Existing: was})
		}
	}
	return out, nil
}

func isAppend(u *memoryv1.FileUpdate) bool {
	return u.GetFile() == memlayout.FactsFile && u.GetOperation() == memoryv1.Operation_OPERATION_APPEND
}

// Normalize compares facts the way a person would: case and spacing aside,
// and a TTL marker (pkg/factttl) aside, which says when a fact stops being
// true, not what it says.
func Normalize(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(factttl.Strip(strings.TrimPrefix(strings.TrimSpace(s), "- "))), " "))
}

// sameFact reports whether Normalize(text) == norm without building the
// normalised text: a check compares the appended facts with every fact the
// agent has, and nearly all differ within a few bytes.
func sameFact(text, norm string) bool {
	i := 0
	for word := range strings.FieldsSeq(factttl.Strip(strings.TrimPrefix(strings.TrimSpace(text), "- "))) {
		if i > 0 {
			if i >= len(norm) || norm[i] != ' ' {
				return false
			}
			i++
		}
		n, ok := matchLower(word, norm[i:])
		if !ok {
			return false
		}
		i += n
	}
	return i == len(norm)
}

// matchLower reports whether strings.ToLower(word) is a prefix of s, and
// its length.
func matchLower(word, s string) (int, bool) {
	for j := 0; j < len(word); j++ {
		c := word[j]
		if c >= utf8.RuneSelf { // not ASCII: compare the way ToLower would
			lower := strings.ToLower(word)
			return len(lower), strings.HasPrefix(s, lower)
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if j >= len(s) || s[j] != c {
			return 0, false
		}
	}
	return len(word), true
}
