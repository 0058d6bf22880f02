package episode

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// canonical is the content an episode id is derived from: the normalised
// fields in schema order. encoding/json writes struct fields in declaration
// order and escapes deterministically, so the same episode always hashes
// the same (protojson's output is deliberately unstable, so it is not used).
type canonical struct {
	SchemaVersion    string              `json:"schema_version"`
	Timestamp        string              `json:"timestamp,omitempty"`
	TaskText         string              `json:"task_text,omitempty"`
	Summary          string              `json:"summary,omitempty"`
	UsedSkills       []string            `json:"used_skills,omitempty"`
	TouchedArtifacts []string            `json:"touched_artifacts,omitempty"`
	Outcome          canonicalOutcome    `json:"outcome"`
	Errors           []string            `json:"errors,omitempty"`
	FailureMode      string              `json:"failure_mode,omitempty"`
	Fix              string              `json:"fix,omitempty"`
	Tests            []canonicalTest     `json:"tests,omitempty"`
	Environment      *canonicalEnv       `json:"environment,omitempty"`
	Context          string              `json:"context,omitempty"`
	Facts            []string            `json:"facts,omitempty"`
	Decisions        []canonicalDecision `json:"decisions,omitempty"`
	EntityRefs       []string            `json:"entity_refs,omitempty"`
	RunID            string              `json:"run_id,omitempty"`
	DurationNanos    int64               `json:"duration_ns,omitempty"`
}

type canonicalOutcome struct {
	Status   string `json:"status"`
	Severity string `json:"severity,omitempty"`
	Notes    string `json:"notes,omitempty"`
}

type canonicalTest struct {
	Name       string `json:"name"`
	Result     string `json:"result"`
	DurationMs int64  `json:"duration_ms,omitempty"`
}

type canonicalEnv struct {
	OS      string   `json:"os,omitempty"`
	Runtime string   `json:"runtime,omitempty"`
	Tooling []string `json:"tooling,omitempty"`
}

type canonicalDecision struct {
	Title        string `json:"title"`
	Status       string `json:"status,omitempty"`
	Context      string `json:"context,omitempty"`
	Decision     string `json:"decision,omitempty"`
	Rationale    string `json:"rationale,omitempty"`
	Consequences string `json:"consequences,omitempty"`
	RunID        string `json:"run_id,omitempty"`
}

// DeriveID is the id of an episode that comes without one: "ep-" + the
// first 12 hex digits of the sha256 of its canonical JSON (the normalised
// fields in schema order, empty ones left out). The timestamp is part of it
// only when the caller gave one (withTime): an episode sent twice without a
// timestamp is the same episode, although each ingest would stamp it with
// its own "now". Normalize calls it; e must be normalised.
func DeriveID(e *memoryv1.Episode, withTime bool) string {
	c := canonical{
		SchemaVersion: e.GetSchemaVersion(), TaskText: e.GetTaskText(), Summary: e.GetSummary(),
		UsedSkills: e.GetUsedSkills(), TouchedArtifacts: e.GetTouchedArtifacts(),
		Outcome: canonicalOutcome{Status: e.GetOutcome().GetStatus(), Severity: e.GetOutcome().GetSeverity(), Notes: e.GetOutcome().GetNotes()},
		Errors:  e.GetErrors(), FailureMode: e.GetFailureMode(), Fix: e.GetFix(),
		Context: e.GetContext(), Facts: e.GetFacts(), EntityRefs: e.GetEntityRefs(), RunID: e.GetRunId(),
	}
	if withTime && e.GetTimestamp() != nil {
		c.Timestamp = e.GetTimestamp().AsTime().UTC().Format(time.RFC3339Nano)
	}
	for _, t := range e.GetTests() {
		c.Tests = append(c.Tests, canonicalTest{Name: t.GetName(), Result: t.GetResult(), DurationMs: t.GetDurationMs()})
	}
	if env := e.GetEnvironment(); env != nil {
		c.Environment = &canonicalEnv{OS: env.GetOs(), Runtime: env.GetRuntime(), Tooling: env.GetTooling()}
	}
	for _, d := range e.GetDecisions() {
		c.Decisions = append(c.Decisions, canonicalDecision{Title: d.GetTitle(), Status: d.GetStatus(), Context: d.GetContext(),
			Decision: d.GetDecision(), Rationale: d.GetRationale(), Consequences: d.GetConsequences(), RunID: d.GetRunId()})
	}
	if d := e.GetDuration(); d != nil {
		c.DurationNanos = int64(d.AsDuration())
	}
	data, err := json.Marshal(c)
	if err != nil {
		// Strings, numbers and slices of them always marshal.
		panic("episode: canonical JSON: " + err.Error())
	}
	sum := sha256.Sum256(data)
	return "ep-" + hex.EncodeToString(sum[:])[:12]
}

// TaskID is the id of a task: "task-" + the first 8 hex digits of the
// sha256 of its text, lowercased with whitespace runs collapsed to one
// space and trimmed, so the same request worded with other spacing or case
// is the same task. "" for an empty text.
func TaskID(text string) string {
	norm := strings.ToLower(strings.Join(strings.Fields(text), " "))
	if norm == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(norm))
	return "task-" + hex.EncodeToString(sum[:])[:8]
}
