package temporalgraph

import (
	"strings"

	"github.com/garden-bloom/memory/pkg/mdops"
)

// runsDir is the folder of an agent's run files, where IngestEpisode
// writes an episode as runs/run_<id>.md (docs/episodes.md).
const runsDir = "runs/"

// episodeField is a "- **Label:** …" line of an episode run file.
type episodeField int

const (
	fieldEpisode episodeField = iota + 1
	fieldTask
	fieldOutcome
	fieldContext
	fieldSkills
	fieldArtifacts
	fieldFailureMode
	fieldFix
	fieldTests
	fieldEnvironment
)

// episodeFields maps the lowercased labels of an episode run file to its
// fields; "When" and "Duration" carry no entities.
var episodeFields = map[string]episodeField{
	"episode": fieldEpisode, "task": fieldTask, "outcome": fieldOutcome, "context": fieldContext,
	"skills used": fieldSkills, "artifacts touched": fieldArtifacts, "failure mode": fieldFailureMode,
	"fix": fieldFix, "tests": fieldTests, "environment": fieldEnvironment,
}

// fieldOf returns the field of a "- **Label:** value" line (or "* **").
func fieldOf(line string) (episodeField, bool) {
	t := strings.TrimLeft(line, " \t")
	if !strings.HasPrefix(t, "- **") && !strings.HasPrefix(t, "* **") {
		return 0, false
	}
	t = t[len("- **"):]
	i := strings.Index(t, ":**")
	if i <= 0 {
		return 0, false
	}
	f, ok := episodeFields[strings.ToLower(strings.TrimSpace(t[:i]))]
	return f, ok
}

// fieldLine is one field line of an episode run file: its links of the
// field's type.
type fieldLine struct {
	field episodeField
	line  int
	links []link
}

// fieldTypes is the link type each field's entities have; links of other
// types on the line only declare, as anywhere else.
var fieldTypes = map[episodeField]string{
	fieldEpisode: TypeEpisode, fieldTask: TypeTask, fieldOutcome: TypeOutcome, fieldContext: TypeContext,
	fieldSkills: TypeSkill, fieldArtifacts: TypeArtifact, fieldFailureMode: TypeFailureMode,
	fieldFix: TypeFix, fieldTests: TypeTest, fieldEnvironment: TypeEnvironment,
}

// episodeMentions returns the typed edges of an episode run file
// (ai-skills-memory-protocol §4.2, §8.4.5 step 2), nil if content is not
// one. A run file is an episode when its header — the lines before the
// first "## " heading — has a "- **Episode:** [[episode:…]]" line; only
// header lines count, so a summary or fact quoting a field line adds no
// edge. lines are content's links (scanLinks); the edges come in line
// order, each on its field's line (the outcome's edge to a failure mode on
// the Failure mode line, the task's edge to the episode on the Task line):
//
//	Episode —used_skill→ Skill            (Skills used)
//	Episode —touched_artifact→ Artifact   (Artifacts touched)
//	Episode —resulted_in→ Outcome         (Outcome)
//	Outcome —has_failure_mode→ FailureMode (Failure mode)
//	FailureMode —mitigated_by→ Fix        (Fix)
//	Episode —in_context→ Context          (Context; CHILD_OF comes with the link)
//	Episode —ran_test→ Test               (Tests)
//	Episode —ran_in→ Environment          (Environment)
//	Task —has_episode→ Episode            (Task)
func episodeMentions(content string, lines []lineLinks) []Mention {
	if !strings.Contains(content, "**Episode:**") {
		return nil // the cheap test first: most run files are not episodes
	}
	src := mdops.Lines(content)
	header := len(src)
	for i, l := range src {
		if t := strings.TrimLeft(l, " "); len(l)-len(t) <= 3 && strings.HasPrefix(t, "## ") {
			header = i
			break
		}
	}
	var fields []fieldLine
	var episode *link
	var outcomes, failureModes []link
	for _, ll := range lines {
		if ll.line > header {
			break
		}
		f, ok := fieldOf(src[ll.line-1])
		if !ok {
			continue
		}
		fl := fieldLine{field: f, line: ll.line}
		for _, l := range ll.links {
			if l.typ == fieldTypes[f] {
				fl.links = append(fl.links, l)
			}
		}
		switch {
		case len(fl.links) == 0:
			continue
		case f == fieldEpisode && episode == nil:
			episode = &fl.links[0]
		case f == fieldOutcome:
			outcomes = append(outcomes, fl.links...)
		case f == fieldFailureMode:
			failureModes = append(failureModes, fl.links...)
		}
		fields = append(fields, fl)
	}
	if episode == nil {
		return nil
	}
	ep := *episode
	var out []Mention
	edge := func(from link, rel string, to link, line int) {
		if from.id != to.id {
			out = append(out, Mention{EntityID: from.id, Label: from.label, Type: from.typ, Relation: rel, Target: to.id, Line: line})
		}
	}
	episodeRel := map[episodeField]string{
		fieldOutcome: RelResultedIn, fieldContext: RelInContext, fieldSkills: RelUsedSkill,
		fieldArtifacts: RelTouchedArtifact, fieldTests: RelRanTest, fieldEnvironment: RelRanIn,
	}
	for _, fl := range fields {
		for _, l := range fl.links {
			switch fl.field {
			case fieldEpisode:
			case fieldTask:
				edge(l, RelHasEpisode, ep, fl.line)
			case fieldFailureMode:
				for _, o := range outcomes {
					edge(o, RelHasFailureMode, l, fl.line)
				}
			case fieldFix:
				for _, fm := range failureModes {
					edge(fm, RelMitigatedBy, l, fl.line)
				}
			default:
				edge(ep, episodeRel[fl.field], l, fl.line)
			}
		}
	}
	return out
}
