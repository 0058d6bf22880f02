package temporalgraph

import (
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/garden-bloom/memory/pkg/mdops"
)

// Entity types.
const (
	TypeAgent    = "agent"
	TypeConcept  = "concept"
	TypeArtifact = "artifact"
	TypeDecision = "decision"
	TypePerson   = "person"
	TypeProject  = "project"

	// The typed nodes of episodes (ai-skills-memory-protocol §4.1),
	// derived from episode run files (episode.go) and typed links.
	TypeSkill       = "skill"
	TypeEpisode     = "episode"
	TypeOutcome     = "outcome"
	TypeFailureMode = "failure_mode"
	TypeFix         = "fix"
	TypeContext     = "context"
	TypeTest        = "test"
	TypeEnvironment = "environment"
	TypeTask        = "task"
)

// Types lists every entity type, in the API's enum order.
var Types = []string{
	TypeAgent, TypeConcept, TypeArtifact, TypeDecision, TypePerson, TypeProject,
	TypeSkill, TypeEpisode, TypeOutcome, TypeFailureMode, TypeFix, TypeContext, TypeTest, TypeEnvironment, TypeTask,
}

// Relations.
const (
	RelMentions  = "mentions"
	RelRefersTo  = "refers_to"
	RelDecidedBy = "decided_by"
	RelRelatesTo = "relates_to"

	// The typed edges of episodes (ai-skills-memory-protocol §4.2).
	RelUsedSkill       = "used_skill"       // episode → skill
	RelTouchedArtifact = "touched_artifact" // episode → artifact
	RelResultedIn      = "resulted_in"      // episode → outcome
	RelHasFailureMode  = "has_failure_mode" // outcome → failure mode
	RelMitigatedBy     = "mitigated_by"     // failure mode → fix
	RelInContext       = "in_context"       // episode → context
	RelChildOf         = "child_of"         // context → its parent context
	RelRanTest         = "ran_test"         // episode → test
	RelHasEpisode      = "has_episode"      // task → episode
	RelRanIn           = "ran_in"           // episode → environment
)

// Relations lists every relation the graph derives.
var Relations = []string{
	RelMentions, RelRelatesTo, RelDecidedBy, RelRefersTo,
	RelUsedSkill, RelTouchedArtifact, RelResultedIn, RelHasFailureMode, RelMitigatedBy,
	RelInContext, RelChildOf, RelRanTest, RelHasEpisode, RelRanIn,
}

// Mention is one thing Extract found in a file.
//
// With Target == "" it only declares an entity (EntityID, Label, Type) seen
// at Line. With Target != "" it is also an edge EntityID —Relation→ Target;
// Label and Type then describe EntityID, and Target is declared by another
// mention of the same result. The Graph builds nodes and edges from these
// alone, so Extract is the single place where the rules live.
type Mention struct {
	EntityID string
	Label    string
	// Type is one of the Type* constants.
	Type string
	// Relation is one of the Rel* constants.
	Relation string
	// Target is the other end's entity id, or "" for a declaration.
	Target string
	// Line is 1-based (0 for mentions that come from a commit message).
	Line int
}

// typePrefixes are the wiki-link prefixes that set an entity's type.
// "decision:" is deliberately absent: decision ids are derived from
// decisions.md (date + title), and a hand-written link could not reproduce
// them reliably.
// Values are the constants themselves: a type taken from the text would be
// a substring keeping the whole file in memory for as long as the graph
// holds the entity.
var typePrefixes = map[string]string{
	TypeAgent: TypeAgent, TypeConcept: TypeConcept, TypeArtifact: TypeArtifact, TypePerson: TypePerson, TypeProject: TypeProject,
	TypeSkill: TypeSkill, TypeEpisode: TypeEpisode, TypeOutcome: TypeOutcome, TypeFix: TypeFix, TypeContext: TypeContext,
	TypeTest: TypeTest, TypeEnvironment: TypeEnvironment, TypeTask: TypeTask,
	"failure-mode": TypeFailureMode, "failure_mode": TypeFailureMode,
}

// idPrefixes are the types whose ids carry their type: these nodes exist
// only through episodes, and an outcome "failure", a test "lint" or a
// context "backend" must not become the plain concept of that name.
// Skills and artifacts keep the plain slug, so [[skill:go-testing]] is
// /entities/go-testing and the concept [[go-testing]] is the same node.
var idPrefixes = map[string]string{
	TypeEpisode: "episode", TypeTask: "task", TypeOutcome: "outcome", TypeFailureMode: "failure-mode",
	TypeFix: "fix", TypeContext: "context", TypeTest: "test", TypeEnvironment: "environment",
}

// link is a parsed wiki link.
type link struct{ id, label, typ string }

// parseLink parses the target part of a wiki link (or an Entity-Refs item);
// shown is the link's shown text ("" if none), which only a task's link
// uses: a task's target is a hash, its shown text the task.
func parseLink(raw, shown string) (link, bool) {
	t := strings.TrimSpace(raw)
	typ := TypeConcept
	if i := strings.IndexByte(t, ':'); i > 0 {
		if p, ok := typePrefixes[strings.ToLower(strings.TrimSpace(t[:i]))]; ok {
			typ = p
			t = strings.TrimSpace(t[i+1:])
		}
	}
	if typ == TypeConcept {
		// Most links: none of the typed rules below applies.
		id := Slug(t)
		return link{id: id, label: t, typ: typ}, id != ""
	}
	if typ == TypeContext {
		t = contextPath(t)
	}
	id := Slug(t)
	if id == "" {
		return link{}, false
	}
	if p, ok := idPrefixes[typ]; ok {
		id = typedID(p, id)
	}
	if typ == TypeTask {
		if s := strings.TrimSpace(shown); s != "" {
			t = s
		}
	}
	return link{id: id, label: t, typ: typ}, true
}

// EntityID is the id of the entity that ref — a wiki-link target, an
// entity ref, an id or a label — names, as Extract derives it: "skill:Go
// Testing" is go-testing, "outcome:failure" outcome-failure, "Go Testing"
// go-testing; "" if it names none. Ids map to themselves (they hold no
// ':'), so lookups may take any of these.
func EntityID(ref string) string {
	l, _ := parseLink(ref, "")
	return l.id
}

// typedID is the id of an entity of a type whose ids carry it: prefix +
// "-" + slug, or slug when it has that prefix already (a task link's
// target is "task-<hash>" and stays so). Cut like any slug, so
// Slug(id) == id.
func typedID(prefix, slug string) string {
	if strings.HasPrefix(slug, prefix+"-") {
		return slug
	}
	return Slug(prefix + "-" + slug)
}

// contextPath normalises a context path: levels are separated by "/" or
// ":", trimmed, and joined with "/"; levels without letters or digits are
// dropped (they would have no id of their own).
func contextPath(t string) string {
	if !strings.ContainsAny(t, "/:") {
		return t
	}
	var levels []string
	for l := range strings.FieldsFuncSeq(t, func(r rune) bool { return r == '/' || r == ':' }) {
		if l = strings.TrimSpace(l); Slug(l) != "" {
			levels = append(levels, l)
		}
	}
	return strings.Join(levels, "/")
}

// contextChain returns the declarations of the ancestors of the context l
// (a path "a/b/c" declares "a" and "a/b") and its CHILD_OF edges, each
// level to its parent (c → a/b → a), on line: the hierarchy of
// ai-skills-memory-protocol §4.2.1, built from the path alone.
func contextChain(l link, line int) []Mention {
	var out []Mention
	child := l
	for i := strings.LastIndexByte(child.label, '/'); i > 0; i = strings.LastIndexByte(child.label, '/') {
		parent := link{id: typedID(idPrefixes[TypeContext], Slug(child.label[:i])), label: child.label[:i], typ: TypeContext}
		if parent.id != child.id { // a deep path cut to Slug's limit
			out = append(out,
				Mention{EntityID: parent.id, Label: parent.label, Type: TypeContext, Relation: RelRefersTo, Line: line},
				Mention{EntityID: child.id, Label: child.label, Type: TypeContext, Relation: RelChildOf, Target: parent.id, Line: line})
		}
		child = parent
	}
	return out
}

// LinkedIDs returns the ids of the entities s links to ([[…]]), in order of
// first link: the nodes the graph made of them.
func LinkedIDs(s string) []string {
	var ids []string
	for _, l := range linksIn(s) {
		if !slices.Contains(ids, l.id) {
			ids = append(ids, l.id)
		}
	}
	return ids
}

// linksIn returns the wiki links of s in order.
func linksIn(s string) []link {
	var out []link
	for {
		target, shown, rest, ok := nextWikiLink(s)
		if !ok {
			return out
		}
		if l, ok := parseLink(target, shown); ok {
			out = append(out, l)
		}
		s = rest
	}
}

// nextWikiLink finds the leftmost wiki link in s, [[Target]] or
// [[Target|shown text]], as the regular expression
// \[\[([^\[\]|\n]+)(?:\|([^\[\]\n]*))?\]\] would (the tests hold it to that)
// but without the regexp engine, the costly part of parsing on the graph's
// first start (docs/performance.md): target and shown are the groups, rest
// what follows the match. The classes
// exclude the bytes a match ends on, so the match at a start, if any, is
// unique, and a failed start moves on by one byte, as the engine does.
func nextWikiLink(s string) (target, shown, rest string, ok bool) {
	for {
		i := strings.Index(s, "[[")
		if i < 0 {
			return "", "", "", false
		}
		s = s[i+1:] // the next start to try, should this one fail
		t := s[1:]
		n := strings.IndexAny(t, "[]|\n")
		if n > 0 {
			end := n
			if t[n] == '|' {
				m := strings.IndexAny(t[n+1:], "[]\n")
				if m < 0 {
					continue
				}
				end = n + 1 + m
			}
			if strings.HasPrefix(t[end:], "]]") {
				if end > n {
					shown = t[n+1 : end]
				}
				return t[:n], shown, t[end+2:], true
			}
		}
	}
}

// lineLinks are the links found on one line.
type lineLinks struct {
	line  int
	links []link
}

// scanLinks returns the wiki links per line (1-based, mdops.Lines numbering
// so it agrees with mdops.ParseFacts), skipping fenced code blocks: code
// samples are not claims about entities.
func scanLinks(content string) []lineLinks {
	var out []lineLinks
	var fence string
	for i, l := range mdops.Lines(content) {
		t := strings.TrimLeft(l, " ")
		if len(l)-len(t) <= 3 && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")) {
			switch {
			case fence == "":
				fence = t[:3]
			case strings.HasPrefix(t, fence):
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		if ls := linksIn(l); len(ls) > 0 {
			out = append(out, lineLinks{line: i + 1, links: ls})
		}
	}
	return out
}

// agentOf returns the agent folder of a memory/<agent>/… path: its id
// (Slug of the folder name), the folder name, and the path inside it.
func agentOf(p string) (id, name, rest string) {
	parts := strings.SplitN(p, "/", 3)
	if len(parts) < 3 || parts[0] != "memory" {
		return "", "", ""
	}
	return Slug(parts[1]), parts[1], parts[2]
}

// cleanPath normalises a repository path to slash form without "./".
func cleanPath(p string) string {
	return strings.TrimPrefix(path.Clean(strings.ReplaceAll(p, "\\", "/")), "/")
}

// isMarkdown reports whether p is a Markdown file; memory is Markdown only,
// anything else (blobs, JSON) carries no entity claims.
func isMarkdown(p string) bool {
	return strings.EqualFold(path.Ext(p), ".md")
}

// Extract returns the mentions in the file at path (a repository path such
// as "memory/curator/facts.md") with the given content, ordered by line.
// Non-Markdown files yield nil. The rules are listed in the package comment.
func Extract(p, content string) []Mention {
	ms, _ := extract(cleanPath(p), content)
	return ms
}

// extract is Extract on a clean path; for an agent's facts.md it also
// returns the parsed facts, which derive needs too (parsing them was a
// tenth of deriving the file).
func extract(p, content string) ([]Mention, []mdops.Fact) {
	if !isMarkdown(p) {
		return nil, nil
	}
	agentID, agentName, rest := agentOf(p)
	lines := scanLinks(content)

	var out []Mention
	for _, ll := range lines {
		for _, l := range ll.links {
			out = append(out, Mention{EntityID: l.id, Label: l.label, Type: l.typ, Relation: RelRefersTo, Line: ll.line})
			if l.typ == TypeContext && strings.IndexByte(l.label, '/') > 0 {
				out = append(out, contextChain(l, ll.line)...)
			}
		}
	}
	var facts []mdops.Fact
	if agentID != "" {
		switch {
		case rest == "facts.md":
			facts = mdops.ParseFacts(content)
			out = mergeByLine(out, factPairs(facts, lines))
		case rest == "decisions.md":
			out = append(out, decisionMentions(content, agentID, lines)...)
			slices.SortStableFunc(out, func(a, b Mention) int { return a.Line - b.Line })
		case strings.HasPrefix(rest, runsDir):
			out = mergeByLine(out, episodeMentions(content, lines))
		}
	}

	if agentID != "" {
		// The agent mentions everything in its own folder. Built after
		// the sort so each agent edge follows the mentions of its line.
		withAgent := make([]Mention, 0, 2*len(out))
		for i := 0; i < len(out); {
			j := i
			for j < len(out) && out[j].Line == out[i].Line {
				j++
			}
			withAgent = append(withAgent, out[i:j]...)
			for _, m := range out[i:j] {
				// Only where the file names an entity (a link or a
				// decision heading): relates_to and a decision's
				// refers_to join entities already named on that line.
				named := m.Target == "" || m.Relation == RelDecidedBy
				if named && m.EntityID != agentID {
					withAgent = append(withAgent, Mention{EntityID: agentID, Label: agentName, Type: TypeAgent, Relation: RelMentions, Target: m.EntityID, Line: m.Line})
				}
			}
			i = j
		}
		out = withAgent
	}
	return dedupe(out), facts
}

// mergeByLine merges two lists in line order into one, a's mentions first
// on a line both have: what a stable sort of a then b would give, without
// moving every mention of a facts.md around.
func mergeByLine(a, b []Mention) []Mention {
	if len(b) == 0 {
		return a
	}
	out := make([]Mention, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if b[0].Line < a[0].Line {
			out, b = append(out, b[0]), b[1:]
		} else {
			out, a = append(out, a[0]), a[1:]
		}
	}
	out = append(out, a...)
	return append(out, b...)
}

// factPairs returns relates_to mentions between the distinct entities
// linked on one fact bullet line, each unordered pair once with
// EntityID < Target. Both facts and lines are in line order.
func factPairs(facts []mdops.Fact, lines []lineLinks) []Mention {
	var out []Mention
	k := 0
	for _, f := range facts {
		for k < len(lines) && lines[k].line < f.Line {
			k++
		}
		if k == len(lines) {
			break
		}
		if lines[k].line != f.Line || len(lines[k].links) < 2 {
			continue
		}
		var ls []link
		for _, l := range lines[k].links {
			if !slices.ContainsFunc(ls, func(x link) bool { return x.id == l.id }) {
				ls = append(ls, l)
			}
		}
		for i := range ls {
			for j := i + 1; j < len(ls); j++ {
				a, b := ls[i], ls[j]
				if b.id < a.id {
					a, b = b, a
				}
				out = append(out, Mention{EntityID: a.id, Label: a.label, Type: a.typ, Relation: RelRelatesTo, Target: b.id, Line: f.Line})
			}
		}
	}
	return out
}

// decisionHeadRe matches a decisions.md entry heading, as mdops does.
var decisionHeadRe = regexp.MustCompile(`^ {0,3}## +([0-9]{4}-[0-9]{2}-[0-9]{2}) +[—–-] +(.+?)[ \t]*$`)

// decisionMentions returns, for each decision, its decided_by mention and
// refers_to mentions for the wiki links in its fields.
func decisionMentions(content, agentID string, lines []lineLinks) []Mention {
	src := mdops.Lines(content)
	var out []Mention
	cursor := 0
	for _, d := range mdops.ParseDecisions(content) {
		date := d.Date.UTC().Format("2006-01-02")
		// Locate the entry (heading line, section end) for line numbers;
		// ParseDecisions has none. Entries come in file order, so a
		// forward cursor keeps duplicates apart.
		start, end := 0, len(src)
		for i := cursor; i < len(src); i++ {
			if !strings.Contains(src[i], "## ") {
				continue // not a heading: cheaper than the regexp, run on every line
			}
			if m := decisionHeadRe.FindStringSubmatch(src[i]); m != nil && m[1] == date && strings.TrimSpace(m[2]) == d.Title {
				start = i + 1
				cursor = i + 1
				break
			}
		}
		if start > 0 {
			for i := start; i < len(src); i++ {
				if strings.HasPrefix(strings.TrimLeft(src[i], " "), "## ") {
					end = i
					break
				}
			}
		}
		// "decision " + date + " " + title slugs to "decision-" +
		// Slug(date+" "+title) while keeping the id within Slug's limit,
		// so Slug(id) == id.
		id := Slug("decision " + date + " " + d.Title)
		out = append(out, Mention{EntityID: id, Label: d.Title, Type: TypeDecision, Relation: RelDecidedBy, Target: agentID, Line: start})
		fields := strings.Join([]string{d.Title, d.Status, d.Context, d.Decision, d.Rationale, d.Consequences}, "\n")
		seen := map[string]bool{}
		for _, l := range linksIn(fields) {
			if seen[l.id] || l.id == id {
				continue
			}
			seen[l.id] = true
			out = append(out, Mention{EntityID: id, Label: d.Title, Type: TypeDecision, Relation: RelRefersTo, Target: l.id, Line: linkLine(lines, l.id, start, end)})
		}
	}
	return out
}

// linkLine is the first line in [start, end] holding a link to id, or start.
func linkLine(lines []lineLinks, id string, start, end int) int {
	for _, ll := range lines {
		if ll.line < start || ll.line > end {
			continue
		}
		for _, l := range ll.links {
			if l.id == id {
				return ll.line
			}
		}
	}
	return start
}

// dedupe drops exact repeats, keeping the first. ms is in line order and
// a repeat has the same line, so only the mentions of one line are
// compared, which costs less than a set of all of them; a line naming many
// entities gets a set, as its pairs grow with the square.
func dedupe(ms []Mention) []Mention {
	out := ms[:0]
	lineStart := 0 // where the current line's mentions begin in out
	var seen map[Mention]bool
	for _, m := range ms {
		if len(out) > lineStart && out[lineStart].Line != m.Line {
			lineStart, seen = len(out), nil
		}
		switch line := out[lineStart:]; {
		case seen != nil:
			if seen[m] {
				continue
			}
		case len(line) < dedupeScanMax:
			if slices.Contains(line, m) {
				continue
			}
		default:
			seen = make(map[Mention]bool, 2*len(line))
			for _, x := range line {
				seen[x] = true
			}
			if seen[m] {
				continue
			}
		}
		if seen != nil {
			seen[m] = true
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// dedupeScanMax is how many mentions of one line dedupe compares one by one
// before it keeps a set instead.
const dedupeScanMax = 32
