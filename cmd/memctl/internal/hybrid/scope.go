package hybrid

import (
	"slices"
	"strings"
	"unicode"
)

// Link is a [[type:target|shown]] wiki link of a hit's lines.
type Link struct {
	// Type is the prefix before ":" when it is one ("skill", "episode"…),
	// lowercased, with "-" as "_"; "" when there is none.
	Type   string
	Target string
	Shown  string
}

// knownTypes are the link prefixes that name an entity type.
var knownTypes = []string{"agent", "concept", "artifact", "person", "project", "skill", "episode", "outcome",
	"failure_mode", "fix", "context", "test", "environment", "task"}

// Links returns the wiki links of text in order: [[Target]] or
// [[Target|shown]], targets without "[", "]", "|" or a newline.
func Links(text string) []Link {
	var out []Link
	for {
		i := strings.Index(text, "[[")
		if i < 0 {
			return out
		}
		text = text[i+2:]
		j := strings.Index(text, "]]")
		if j < 0 {
			return out
		}
		inner := text[:j]
		if strings.ContainsAny(inner, "[]\n") {
			continue
		}
		target, shown, _ := strings.Cut(inner, "|")
		l := Link{Target: strings.TrimSpace(target), Shown: strings.TrimSpace(shown)}
		if p, rest, ok := strings.Cut(l.Target, ":"); ok {
			t := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(p)), "-", "_")
			if slices.Contains(knownTypes, t) {
				l.Type, l.Target = t, strings.TrimSpace(rest)
			}
		}
		if l.Target != "" {
			out = append(out, l)
		}
		text = text[j+2:]
	}
}

// Label is the label the graph gives a link's entity: a task is labelled
// with its shown text, a context with its path ("/"-separated), anything
// else with its target.
func (l Link) Label() string {
	switch {
	case l.Type == "task" && l.Shown != "":
		return l.Shown
	case l.Type == "context":
		return ContextPath(l.Target)
	}
	return l.Target
}

// ContextPath normalises a context path: levels split at "/" or ":",
// trimmed, joined with "/".
func ContextPath(s string) string {
	var levels []string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == ':' }) {
		if l = strings.TrimSpace(l); l != "" {
			levels = append(levels, l)
		}
	}
	return strings.Join(levels, "/")
}

// words are the lowercased letter-and-digit runs of s.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// MatchContexts returns the context paths a scope text selects, and their
// descendants (ai-skills-memory-protocol §4.2.1 scoped retrieval): a
// context matches when the words of its last level occur, in order and
// adjacent, among the words of any of texts ("java" matches "we discuss
// Java patterns"; "data-science" matches "data science"); a descendant of
// a context is every context whose path continues its path. paths are
// the labels of the agent's context entities; the result is sorted.
func MatchContexts(texts []string, paths []string) []string {
	var textWords [][]string
	for _, t := range texts {
		textWords = append(textWords, words(t))
	}
	var matched []string
	for _, p := range paths {
		p = ContextPath(p)
		leaf := p[strings.LastIndexByte(p, '/')+1:]
		lw := words(leaf)
		if len(lw) == 0 {
			continue
		}
		for _, tw := range textWords {
			if containsRun(tw, lw) {
				matched = append(matched, p)
				break
			}
		}
	}
	var scope []string
	for _, p := range paths {
		p = ContextPath(p)
		for _, m := range matched {
			if p == m || strings.HasPrefix(p, m+"/") {
				scope = append(scope, p)
				break
			}
		}
	}
	slices.Sort(scope)
	return slices.Compact(scope)
}

// containsRun reports whether run occurs in ws as adjacent words.
func containsRun(ws, run []string) bool {
	for i := 0; i+len(run) <= len(ws); i++ {
		if slices.Equal(ws[i:i+len(run)], run) {
			return true
		}
	}
	return false
}
