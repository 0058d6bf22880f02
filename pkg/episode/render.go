package episode

import (
	"fmt"
	"strings"
	"time"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

// Labels of the run file's header lines, in the order they are written.
// pkg/temporalgraph derives the typed edges from these lines (docs/episodes.md).
const (
	LabelEpisode     = "Episode"
	LabelWhen        = "When"
	LabelTask        = "Task"
	LabelOutcome     = "Outcome"
	LabelContext     = "Context"
	LabelSkills      = "Skills used"
	LabelArtifacts   = "Artifacts touched"
	LabelFailureMode = "Failure mode"
	LabelFix         = "Fix"
	LabelTests       = "Tests"
	LabelEnvironment = "Environment"
	LabelDuration    = "Duration"
)

// Bounds of the Fix line's link target (ShortText).
const (
	fixWords = 12
	fixBytes = 120
)

// RunFile is the episode's run file, relative to the agent folder:
// "runs/run_<id>.md". e must be normalised.
func RunFile(e *memoryv1.Episode) string {
	return "runs/" + memlayout.RunRef(e.GetRunId()) + ".md"
}

// FailureMode is the episode's failure-mode signature: the given
// failure_mode, else FailureSignature of the first error, else "" (no
// failure mode). e must be normalised.
func FailureMode(e *memoryv1.Episode) string {
	if fm := linkSafe(e.GetFailureMode()); fm != "" {
		return fm
	}
	if errs := e.GetErrors(); len(errs) > 0 {
		return FailureSignature(errs[0])
	}
	return ""
}

// EnvironmentID is the Environment node's id: os and runtime joined by "-"
// (as SkillID writes ids), or the tooling when both are empty; "" without
// an environment.
func EnvironmentID(env *memoryv1.EpisodeEnvironment) string {
	var parts []string
	for _, p := range []string{env.GetOs(), env.GetRuntime()} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		parts = env.GetTooling()
	}
	return SkillID(strings.Join(parts, " "))
}

// Render is the episode's run file, in the format docs/episodes.md
// specifies (the contract with pkg/temporalgraph):
//
//	# Episode <episode_id>
//
//	- **Episode:** [[episode:<episode_id>]]
//	- **When:** <RFC 3339 UTC time>
//	- **Task:** [[task:<task-id>|<task text, one line>]]
//	- **Outcome:** [[outcome:<status>]] (severity: <severity>) — <notes>
//	- **Context:** [[context:<level1/level2/level3>]]
//	- **Skills used:** [[skill:<skill>]], [[skill:<skill2>]]
//	- **Artifacts touched:** [[artifact:<path>]], [[artifact:<path2>]]
//	- **Failure mode:** [[failure-mode:<signature>]]
//	- **Fix:** [[fix:<short text>]]
//	- **Tests:** [[test:<name>]] pass (120 ms), [[test:<name2>]] fail
//	- **Environment:** [[environment:<os-runtime>]] <os>, <runtime>, <tooling…>
//	- **Duration:** <Go duration>
//
//	## Summary / ## Errors / ## Facts
//
// Lines and sections whose field is empty are left out. Link targets never
// hold "[", "]", "|" or a line break. In free text '<' is written "&lt;"
// so the Markdown sanitizer keeps "<nil>" or "List<T>" as text instead of
// stripping them as tags; links in errors and notes are broken up ("[ ["),
// since they are quoted output, not claims; and no free-text line can pass for a header line
// or a heading: a summary line starting with "#", "- **" or a code fence,
// and an error or fact starting with "**", get a "\" in front. e must be
// normalised (Normalize).
func Render(e *memoryv1.Episode) string {
	var b strings.Builder
	id := e.GetEpisodeId()
	fmt.Fprintf(&b, "# Episode %s\n\n", id)
	field := func(label, value string) {
		if value != "" {
			fmt.Fprintf(&b, "- **%s:** %s\n", label, value)
		}
	}
	field(LabelEpisode, link("episode", id, ""))
	if ts := e.GetTimestamp(); ts != nil {
		field(LabelWhen, ts.AsTime().UTC().Format(time.RFC3339))
	}
	if t := e.GetTaskText(); t != "" {
		field(LabelTask, link("task", TaskID(t), prose(linkSafe(t))))
	}
	field(LabelOutcome, outcomeLine(e.GetOutcome()))
	if c := e.GetContext(); c != "" {
		field(LabelContext, link("context", c, ""))
	}
	field(LabelSkills, links("skill", e.GetUsedSkills()))
	field(LabelArtifacts, links("artifact", e.GetTouchedArtifacts()))
	if fm := FailureMode(e); fm != "" {
		field(LabelFailureMode, link("failure-mode", fm, ""))
	}
	if fix := e.GetFix(); fix != "" {
		field(LabelFix, link("fix", ShortText(fix, fixWords, fixBytes), ""))
	}
	field(LabelTests, testsLine(e.GetTests()))
	if env := e.GetEnvironment(); env != nil {
		if envID := EnvironmentID(env); envID != "" {
			what := append([]string{env.GetOs(), env.GetRuntime()}, env.GetTooling()...)
			field(LabelEnvironment, link("environment", envID, "")+" "+prose(joinNonEmpty(what, ", ")))
		}
	}
	if d := e.GetDuration(); d != nil && d.AsDuration() > 0 {
		field(LabelDuration, d.AsDuration().String())
	}
	if s := e.GetSummary(); s != "" {
		b.WriteString("\n## Summary\n\n")
		for _, l := range strings.Split(s, "\n") {
			b.WriteString(summaryLine(l) + "\n")
		}
	}
	// Errors are quoted output, never links; facts may link entities
	// ([[MinIO]]) as they do in facts.md.
	bullets(&b, "Errors", e.GetErrors(), prose)
	bullets(&b, "Facts", e.GetFacts(), func(s string) string { return strings.ReplaceAll(s, "<", "&lt;") })
	return b.String()
}

// link is a typed wiki link [[type:target]] or [[type:target|label]].
func link(typ, target, label string) string {
	target = linkSafe(target)
	if target == "" {
		return ""
	}
	if label = linkSafe(label); label != "" {
		return "[[" + typ + ":" + target + "|" + label + "]]"
	}
	return "[[" + typ + ":" + target + "]]"
}

func links(typ string, targets []string) string {
	var out []string
	for _, t := range targets {
		if l := link(typ, t, ""); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, ", ")
}

func outcomeLine(o *memoryv1.EpisodeOutcome) string {
	s := link("outcome", o.GetStatus(), "")
	if sev := o.GetSeverity(); sev != "" {
		s += " (severity: " + sev + ")"
	}
	if n := o.GetNotes(); n != "" {
		s += " — " + prose(n)
	}
	return s
}

func testsLine(tests []*memoryv1.EpisodeTest) string {
	var out []string
	for _, t := range tests {
		l := link("test", t.GetName(), "")
		if l == "" {
			continue
		}
		l += " " + t.GetResult()
		if ms := t.GetDurationMs(); ms > 0 {
			l += fmt.Sprintf(" (%d ms)", ms)
		}
		out = append(out, l)
	}
	return strings.Join(out, ", ")
}

// prose is free text on a header line: '<' escaped, and "[[" / "]]" broken
// up, so the text adds no wiki links (typed edges come from the fields, not
// from what an agent wrote in its notes).
func prose(s string) string {
	s = strings.ReplaceAll(s, "<", "&lt;")
	for strings.Contains(s, "[[") || strings.Contains(s, "]]") {
		s = strings.NewReplacer("[[", "[ [", "]]", "] ]").Replace(s)
	}
	return s
}

// summaryLine escapes a summary line that would read as a heading, a code
// fence or a header line of the run file.
func summaryLine(l string) string {
	l = strings.ReplaceAll(l, "<", "&lt;")
	t := strings.TrimLeft(l, " ")
	if len(l)-len(t) > 3 {
		return l // indented code: literal
	}
	for _, p := range []string{"#", "```", "~~~", "- **"} {
		if strings.HasPrefix(t, p) {
			return l[:len(l)-len(t)] + `\` + t
		}
	}
	return l
}

// bullets writes a "## <title>" section of one bullet per item, each
// escaped by esc.
func bullets(b *strings.Builder, title string, items []string, esc func(string) string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## %s\n\n", title)
	for _, it := range items {
		it = esc(it)
		if strings.HasPrefix(it, "**") {
			it = `\` + it
		}
		b.WriteString("- " + it + "\n")
	}
}

func joinNonEmpty(parts []string, sep string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}
