// Package episode turns a structured episode (spec AI Skills Memory Protocol
// §4.1–4.2, §8.4.2 strategy A, §12) into what the write plane stores: it
// normalises and validates an Episode (§8.4.5 step 0), derives its ids,
// renders its run file (runs/run_<id>.md, the format pkg/temporalgraph
// reads its typed edges from) and builds the one ProposeRequest that
// IngestEpisode submits. Everything here is pure and deterministic — no
// I/O, no clock but the one passed in, no LLM — so memctl and the MCP
// server validate with exactly the rules proposal-apply enforces.
//
// docs/episodes.md is the reference; docs/episode.schema.json is the JSON
// Schema of the body.
package episode

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/mdops"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

// SchemaVersion is the only episode schema version; an empty
// schema_version means it.
const SchemaVersion = "1"

// Values of the enumerated string fields.
var (
	// Statuses are outcome.status values; empty normalises to "partial".
	Statuses = []string{"success", "failure", "partial"}
	// Severities are outcome.severity values; empty is allowed.
	Severities = []string{"low", "medium", "high", "critical"}
	// TestResults are tests[].result values.
	TestResults = []string{"pass", "fail", "skip"}
)

// Limits on an episode, so one episode cannot bloat the store. Byte limits
// are on the normalised value. The run file as a whole is also bound by the
// run file's token limit (memlayout.RunLimit), which proposal-apply checks.
const (
	MaxTaskTextBytes    = 4 << 10
	MaxSummaryBytes     = 16 << 10
	MaxSkills           = 50
	MaxSkillBytes       = 64
	MaxArtifacts        = 200
	MaxArtifactBytes    = 512
	MaxNotesBytes       = 2 << 10
	MaxErrors           = 20
	MaxErrorBytes       = 4 << 10
	MaxFailureModeBytes = 256
	MaxFixBytes         = 2 << 10
	MaxTests            = 200
	MaxTestNameBytes    = 256
	MaxEnvFieldBytes    = 128
	MaxTooling          = 20
	MaxContextBytes     = 512
	MaxContextLevels    = 8
	MaxContextLevel     = 64
	MaxFacts            = 20
	MaxFactBytes        = 1 << 10
	MaxDecisions        = 10
	MaxDecisionBytes    = 16 << 10
	// MaxShortTitle bounds a decision's one-line fields (title, status,
	// run_id).
	MaxShortTitle     = 512
	MaxEntityRefs     = 100
	MaxEntityRefBytes = 512
	// MaxFuture is how far in the future a timestamp may lie (clock skew
	// between the agent and the server); an episode is something that
	// happened.
	MaxFuture = 24 * time.Hour
)

// FactsSection is the facts.md section an episode's facts are appended to.
const FactsSection = "Learned"

// idRe is an episode id: a lowercase slug that is also a valid run id, so
// the run file can be named after it.
var idRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// ValidID reports whether id is a valid episode id.
func ValidID(id string) bool { return idRe.MatchString(id) }

// Normalize canonicalises e in place (spec §8.4.5 step 0) and validates it.
// Afterwards every field holds its canonical value and the defaults are
// filled: schema_version "1", episode_id (ID), timestamp (now when absent),
// outcome.status ("partial"), run_id ("run_" + episode_id when absent, else
// the given one in run_<id> form).
//
// Canonical values: skills are lowercase slugs; artifact paths are cleaned,
// with forward slashes and no leading "./"; errors, facts and every one-line
// field are trimmed with inner whitespace collapsed to single spaces; list
// entries are unique (first occurrence kept, order kept); the context is its
// levels, trimmed and lowercased, joined by "/".
//
// A bad field is an InvalidArgument status (pkg/apierr) naming it, e.g.
// "episode.outcome.status" or "episode.used_skills[2]"; e is then left
// partly normalised and must not be used. Normalize is idempotent.
func Normalize(e *memoryv1.Episode, now time.Time) error {
	if e == nil {
		return apierr.InvalidArgument("episode", "episode is required")
	}
	n := normalizer{e: e}
	n.scalars()
	n.lists()
	n.nested()
	if n.err != nil {
		return n.err
	}
	givenTime := e.GetTimestamp() != nil
	if err := checkTime(e, now); err != nil {
		return err
	}
	if e.GetEpisodeId() == "" {
		e.EpisodeId = DeriveID(e, givenTime)
	}
	if e.GetTimestamp() == nil {
		e.Timestamp = timestamppb.New(now.UTC().Truncate(time.Second))
	}
	if e.GetRunId() == "" {
		e.RunId = memlayout.RunRef(e.GetEpisodeId())
	}
	return nil
}

// normalizer normalises one episode field by field, keeping the first error.
type normalizer struct {
	e   *memoryv1.Episode
	err error
}

func (n *normalizer) fail(err error) {
	if n.err == nil {
		n.err = err
	}
}

// scalars normalises the top-level single-valued fields.
func (n *normalizer) scalars() {
	e := n.e
	switch e.GetSchemaVersion() {
	case "":
		e.SchemaVersion = SchemaVersion
	case SchemaVersion:
	default:
		n.fail(apierr.InvalidArgument("episode.schema_version",
			fmt.Sprintf("episode.schema_version %q: the only episode schema version is %q (or leave it out)", apierr.Clip(e.GetSchemaVersion()), SchemaVersion)))
	}
	if id := e.GetEpisodeId(); id != "" && !ValidID(id) {
		n.fail(apierr.InvalidArgument("episode.episode_id",
			fmt.Sprintf("episode.episode_id %q must be a slug [a-z0-9][a-z0-9_-]{0,63} (or leave it out to derive one)", apierr.Clip(id))))
	}
	if r := e.GetRunId(); r != "" {
		if !memlayout.ValidRunID(r) {
			n.fail(apierr.InvalidArgument("episode.run_id",
				fmt.Sprintf("episode.run_id %q must be run_<id> with letters, digits, _ or - (or leave it out)", apierr.Clip(r))))
		}
		e.RunId = memlayout.RunRef(r)
	}
	e.TaskText = n.line("episode.task_text", e.GetTaskText(), MaxTaskTextBytes)
	e.Summary = n.block("episode.summary", e.GetSummary(), MaxSummaryBytes)
	if e.GetTaskText() == "" && e.GetSummary() == "" {
		n.fail(apierr.InvalidArgument("episode.summary", "episode.summary: an episode needs a summary or a task_text (or both)"))
	}
	e.FailureMode = n.line("episode.failure_mode", e.GetFailureMode(), MaxFailureModeBytes)
	e.Fix = n.line("episode.fix", e.GetFix(), MaxFixBytes)
	e.Context = n.context(e.GetContext())
	if d := e.GetDuration(); d != nil && (d.CheckValid() != nil || d.AsDuration() < 0) {
		n.fail(apierr.InvalidArgument("episode.duration", "episode.duration must be a valid, non-negative duration"))
	}
}

// lists normalises the repeated string fields.
func (n *normalizer) lists() {
	e := n.e
	e.UsedSkills = n.list("episode.used_skills", e.GetUsedSkills(), MaxSkills, func(f, s string) string {
		id := SkillID(n.line(f, s, MaxSkillBytes))
		if id == "" && n.err == nil {
			n.fail(apierr.InvalidArgument(f, fmt.Sprintf("%s %q has no letters or digits", f, apierr.Clip(s))))
		}
		return n.size(f, id, MaxSkillBytes)
	})
	e.TouchedArtifacts = n.list("episode.touched_artifacts", e.GetTouchedArtifacts(), MaxArtifacts, func(f, s string) string {
		p := ArtifactPath(n.line(f, s, MaxArtifactBytes))
		if p == "" && n.err == nil {
			n.fail(apierr.InvalidArgument(f, fmt.Sprintf("%s %q is not a path", f, apierr.Clip(s))))
		}
		return n.size(f, p, MaxArtifactBytes)
	})
	e.Errors = n.list("episode.errors", e.GetErrors(), MaxErrors, func(f, s string) string {
		return n.line(f, s, MaxErrorBytes)
	})
	e.Facts = n.list("episode.facts", e.GetFacts(), MaxFacts, func(f, s string) string {
		t := n.line(f, s, MaxFactBytes)
		// The bullet marker is facts.md's, not the fact's.
		for _, m := range []string{"- ", "* ", "+ "} {
			t = strings.TrimSpace(strings.TrimPrefix(t, m))
		}
		if strings.HasPrefix(t, "#") {
			n.fail(apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_CONTENT, f,
				fmt.Sprintf("%s starts with '#': a fact is a line of text, not a heading", f)))
		}
		return t
	})
	e.EntityRefs = n.list("episode.entity_refs", e.GetEntityRefs(), MaxEntityRefs, func(f, s string) string {
		return n.line(f, s, MaxEntityRefBytes)
	})
}

// nested normalises outcome, tests, environment and decisions.
func (n *normalizer) nested() {
	e := n.e
	if e.Outcome == nil {
		e.Outcome = &memoryv1.EpisodeOutcome{}
	}
	o := e.Outcome
	o.Status = strings.ToLower(strings.TrimSpace(o.GetStatus()))
	if o.Status == "" {
		o.Status = "partial"
	}
	if !slices.Contains(Statuses, o.Status) {
		n.fail(apierr.InvalidArgument("episode.outcome.status",
			fmt.Sprintf("episode.outcome.status %q must be one of %s (or leave it out for partial)", apierr.Clip(o.Status), strings.Join(Statuses, ", "))))
	}
	o.Severity = strings.ToLower(strings.TrimSpace(o.GetSeverity()))
	if o.Severity != "" && !slices.Contains(Severities, o.Severity) {
		n.fail(apierr.InvalidArgument("episode.outcome.severity",
			fmt.Sprintf("episode.outcome.severity %q must be one of %s, or empty", apierr.Clip(o.Severity), strings.Join(Severities, ", "))))
	}
	o.Notes = n.line("episode.outcome.notes", o.GetNotes(), MaxNotesBytes)

	if len(e.GetTests()) > MaxTests {
		n.fail(tooMany("episode.tests", len(e.GetTests()), MaxTests))
	}
	var tests []*memoryv1.EpisodeTest
	seen := map[string]bool{}
	for i, t := range e.GetTests() {
		f := fmt.Sprintf("episode.tests[%d]", i)
		if t == nil {
			n.fail(apierr.InvalidArgument(f, f+" is empty"))
			continue
		}
		t.Name = n.line(f+".name", t.GetName(), MaxTestNameBytes)
		if t.Name == "" {
			n.fail(apierr.InvalidArgument(f+".name", f+".name is required"))
		}
		t.Result = strings.ToLower(strings.TrimSpace(t.GetResult()))
		if !slices.Contains(TestResults, t.Result) {
			n.fail(apierr.InvalidArgument(f+".result",
				fmt.Sprintf("%s.result %q must be one of %s", f, apierr.Clip(t.Result), strings.Join(TestResults, ", "))))
		}
		if t.GetDurationMs() < 0 {
			n.fail(apierr.InvalidArgument(f+".duration_ms", f+".duration_ms must not be negative"))
		}
		key := t.Name + "\x00" + t.Result + "\x00" + strconv.FormatInt(t.DurationMs, 10)
		if !seen[key] {
			seen[key] = true
			tests = append(tests, t)
		}
	}
	e.Tests = tests

	if env := e.GetEnvironment(); env != nil {
		env.Os = n.line("episode.environment.os", env.GetOs(), MaxEnvFieldBytes)
		env.Runtime = n.line("episode.environment.runtime", env.GetRuntime(), MaxEnvFieldBytes)
		env.Tooling = n.list("episode.environment.tooling", env.GetTooling(), MaxTooling, func(f, s string) string {
			return n.line(f, s, MaxEnvFieldBytes)
		})
		if env.Os == "" && env.Runtime == "" && len(env.Tooling) == 0 {
			e.Environment = nil
		}
	}

	if len(e.GetDecisions()) > MaxDecisions {
		n.fail(tooMany("episode.decisions", len(e.GetDecisions()), MaxDecisions))
	}
	for i, d := range e.GetDecisions() {
		f := fmt.Sprintf("episode.decisions[%d]", i)
		if d == nil {
			n.fail(apierr.InvalidArgument(f, f+" is empty"))
			continue
		}
		d.Title = n.line(f+".title", d.GetTitle(), MaxShortTitle)
		if d.Title == "" {
			n.fail(apierr.InvalidArgument(f+".title", f+".title is required"))
		}
		d.Status = n.line(f+".status", d.GetStatus(), MaxShortTitle)
		d.RunId = n.line(f+".run_id", d.GetRunId(), MaxShortTitle)
		for _, fld := range []struct {
			name string
			v    *string
		}{{"context", &d.Context}, {"decision", &d.Decision}, {"rationale", &d.Rationale}, {"consequences", &d.Consequences}} {
			*fld.v = n.block(f+"."+fld.name, *fld.v, MaxDecisionBytes)
		}
		// Ids and dates of decisions.md entries are derived when applied.
		d.Id, d.Date = "", nil
	}
}

// checkTime validates the timestamp.
func checkTime(e *memoryv1.Episode, now time.Time) error {
	ts := e.GetTimestamp()
	if ts == nil {
		return nil
	}
	if err := ts.CheckValid(); err != nil {
		return apierr.InvalidArgument("episode.timestamp", "episode.timestamp is not a valid time")
	}
	if ts.AsTime().After(now.Add(MaxFuture)) {
		return apierr.InvalidArgument("episode.timestamp",
			fmt.Sprintf("episode.timestamp %s is more than %s in the future: an episode is something that happened", ts.AsTime().UTC().Format(time.RFC3339), MaxFuture))
	}
	return nil
}

// list normalises each entry with norm, drops repeats (the first is kept)
// and enforces the count.
func (n *normalizer) list(field string, in []string, maxItems int, norm func(field, s string) string) []string {
	if len(in) > maxItems {
		n.fail(tooMany(field, len(in), maxItems))
		return in
	}
	out := make([]string, 0, len(in))
	seen := make(map[string]bool, len(in))
	for i, s := range in {
		f := fmt.Sprintf("%s[%d]", field, i)
		v := norm(f, s)
		if v == "" {
			n.fail(apierr.InvalidArgument(f, f+" is empty"))
			continue
		}
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// line checks s and returns it trimmed with every run of whitespace (line
// breaks included) collapsed to one space.
func (n *normalizer) line(field, s string, maxBytes int) string {
	if err := apierr.CheckText(field, s, maxBytes*4); err != nil {
		n.fail(err)
		return s
	}
	v := strings.Join(strings.Fields(s), " ")
	if err := apierr.CheckText(field, v, maxBytes); err != nil {
		n.fail(err)
		return v
	}
	if strings.IndexFunc(v, unicode.IsControl) >= 0 {
		n.fail(apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_CONTENT, field, field+" contains a control character"))
	}
	n.active(field, v)
	return v
}

// block checks a multi-line text: line breaks normalised to \n, trailing
// spaces of each line and blank lines around it dropped.
func (n *normalizer) block(field, s string, maxBytes int) string {
	if err := apierr.CheckText(field, s, maxBytes); err != nil {
		n.fail(err)
		return s
	}
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRightFunc(l, unicode.IsSpace)
		if strings.IndexFunc(lines[i], func(r rune) bool { return unicode.IsControl(r) && r != '\t' }) >= 0 {
			n.fail(apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_CONTENT, field, field+" contains a control character"))
		}
	}
	v := strings.Trim(strings.Join(lines, "\n"), "\n")
	n.active(field, v)
	return v
}

// active refuses what the Markdown sanitizer refuses anywhere (script,
// event handlers, javascript: URLs), naming the field; other HTML is kept
// as text in the run file (Render escapes '<').
func (n *normalizer) active(field, v string) {
	if _, err := mdops.Sanitize(v); err != nil {
		n.fail(apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_CONTENT, field, fmt.Sprintf("%s: %v", field, err)))
	}
}

// size enforces a byte limit on a normalised value.
func (n *normalizer) size(field, v string, maxBytes int) string {
	if err := apierr.CheckText(field, v, maxBytes); err != nil {
		n.fail(err)
	}
	return v
}

// context normalises the context path: levels split on "/" or ":",
// trimmed, lowercased, empty levels dropped, joined by "/".
func (n *normalizer) context(s string) string {
	const field = "episode.context"
	s = n.line(field, s, MaxContextBytes)
	if s == "" {
		return ""
	}
	var levels []string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == ':' }) {
		l = strings.ToLower(strings.TrimSpace(l))
		if l == "" {
			continue
		}
		if strings.IndexFunc(l, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0 {
			n.fail(apierr.InvalidArgument(field, fmt.Sprintf("episode.context level %q has no letters or digits", apierr.Clip(l))))
		}
		if len(l) > MaxContextLevel {
			n.fail(apierr.InvalidArgument(field, fmt.Sprintf("episode.context level %q is over %d bytes", apierr.Clip(l), MaxContextLevel)))
		}
		levels = append(levels, l)
	}
	if len(levels) > MaxContextLevels {
		n.fail(apierr.InvalidArgument(field, fmt.Sprintf("episode.context has %d levels, at most %d", len(levels), MaxContextLevels)))
	}
	if len(levels) == 0 {
		n.fail(apierr.InvalidArgument(field, fmt.Sprintf("episode.context %q has no levels", apierr.Clip(s))))
	}
	return strings.Join(levels, "/")
}

// SkillID is a skill's canonical id (spec NORMALIZE_ID): lowercase, letters,
// digits and the characters . + # kept, every other run of characters one
// "-", no "-" at either end. "Go Testing" and "go_testing" are both
// "go-testing"; "C++" stays "c++". "" when nothing is left.
func SkillID(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(strings.TrimSpace(s)) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '+' || r == '#':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		default:
			dash = true
		}
	}
	id := b.String()
	if strings.IndexFunc(id, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0 {
		return ""
	}
	return id
}

// ArtifactPath is an artifact's canonical path (spec NORMALIZE_PATH): a URL
// (scheme://…) is kept as given; a file path gets forward slashes, is
// cleaned (path.Clean: no "//", "./" or "a/../") and loses a leading "./".
// "" for an empty path or ".".
func ArtifactPath(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if isURL(s) {
		return s
	}
	p := path.Clean(strings.ReplaceAll(s, `\`, "/"))
	p = strings.TrimPrefix(p, "./")
	if p == "." {
		return ""
	}
	return p
}

var urlRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)

func isURL(s string) bool { return urlRe.MatchString(s) }

func tooMany(field string, n, maxItems int) error {
	return apierr.New(codes.InvalidArgument, memoryv1.ErrorReason_ERROR_REASON_REQUEST_TOO_LARGE,
		fmt.Sprintf("%s has %d entries, at most %d allowed", field, n, maxItems),
		map[string]string{"field": field, "limit": strconv.Itoa(maxItems)})
}
