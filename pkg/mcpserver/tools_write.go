package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
)

// UpdateInput is one change of a proposal (DiffMem §4.2).
type UpdateInput struct {
	File         string         `json:"file" jsonschema:"Path relative to the agent folder: snapshot.md, facts.md, open_loops.md, decisions.md, runs/run_<id>.md, or logic/current.pseudo.md."`
	Operation    string         `json:"operation" jsonschema:"replace = the whole file (snapshot.md, logic); append = a fact under section of facts.md; remove = an exact fact line of facts.md; open = a new loop in open_loops.md; close = a loop by loop_id with a resolution; add_decision = an ADR entry in decisions.md; write_run = runs/run_<id>.md; write_artifact = runs/run_<id>/artifacts/<name>."`
	Content      string         `json:"content,omitempty" jsonschema:"The new content (replace, append, open, write_run, write_artifact) or the exact line to remove. Facts are one Markdown bullet, e.g. '- MinIO bucket mcpstorage has versioning on'."`
	Section      string         `json:"section,omitempty" jsonschema:"append and open: the '## ' heading to add under (created if missing), e.g. Technical."`
	LoopID       string         `json:"loop_id,omitempty" jsonschema:"close: the loop's id, e.g. loop_001."`
	Resolution   string         `json:"resolution,omitempty" jsonschema:"close: how the loop was resolved."`
	LoopPriority string         `json:"loop_priority,omitempty" jsonschema:"open: critical, high, normal or low (default normal); low-priority old loops are frozen first."`
	Decision     *DecisionInput `json:"decision,omitempty" jsonschema:"add_decision: the ADR entry."`
}

// DecisionInput is an ADR-style decisions.md entry.
type DecisionInput struct {
	Title        string `json:"title" jsonschema:"One line: what was decided."`
	Status       string `json:"status,omitempty" jsonschema:"e.g. accepted, superseded."`
	Context      string `json:"context,omitempty" jsonschema:"The situation that called for a decision. Link earlier decisions as [[decision-<id>]] to chain them."`
	Decision     string `json:"decision,omitempty" jsonschema:"What was decided."`
	Rationale    string `json:"rationale,omitempty" jsonschema:"Why."`
	Consequences string `json:"consequences,omitempty" jsonschema:"What follows from it."`
}

func (d *DecisionInput) proto() *memoryv1.Decision {
	if d == nil {
		return nil
	}
	return &memoryv1.Decision{Title: d.Title, Status: d.Status, Context: d.Context, Decision: d.Decision,
		Rationale: d.Rationale, Consequences: d.Consequences}
}

// ProposeInput are propose_memory_update's arguments (DiffMem §4.2
// propose-memory-update).
type ProposeInput struct {
	AgentID         string        `json:"agent_id,omitempty" jsonschema:"The agent whose memory this is about (a slug such as garden-bloom-curator). Omit it to use the server's default agent (memctl mcp --agent, or /mcp?agent=<id>)."`
	Updates         []UpdateInput `json:"updates" jsonschema:"The changes, applied together as one git commit."`
	Reasoning       string        `json:"reasoning" jsonschema:"Why memory should change: a reviewer reads it, and it goes into the commit message."`
	ExpectedVersion *int32        `json:"expected_version,omitempty" jsonschema:"The version read_memory returned; if memory changed since, the proposal is rejected with version_conflict (read again, then retry). Omit to skip the check; 0 = the agent has no memory yet."`
	RunID           string        `json:"run_id,omitempty" jsonschema:"Your run's id, run_<letters, digits, _ or ->; default run_mcp-<UTC time>."`
	Priority        string        `json:"priority,omitempty" jsonschema:"normal (default) or high; high always waits for a person."`
	EntityRefs      []string      `json:"entity_refs,omitempty" jsonschema:"Entities the change is about (entity ids), linked in the entity graph."`
	IdempotencyKey  string        `json:"idempotency_key,omitempty" jsonschema:"With agent and run, makes a retried call return the same proposal instead of a second one."`
	AutoApprove     *bool         `json:"auto_approve,omitempty" jsonschema:"false makes the proposal wait for a person even if the agent's policy would approve it; true is only a hint, the policy decides."`
}

func (s *server) propose(ctx context.Context, c Caller, in ProposeInput) (ProposalOutput, error) {
	agentID, err := agent(in.AgentID, c)
	if err != nil {
		return ProposalOutput{}, err
	}
	priority, err := parseEnum(memoryv1.Priority(0).Descriptor(), "priority", in.Priority)
	if err != nil {
		return ProposalOutput{}, err
	}
	req := &memoryv1.ProposeRequest{AgentId: agentID, RunId: in.RunID, ExpectedVersion: in.ExpectedVersion,
		Reasoning: in.Reasoning, Priority: memoryv1.Priority(priority), EntityRefs: in.EntityRefs,
		IdempotencyKey: in.IdempotencyKey, AutoApprove: in.AutoApprove, Tool: "propose-memory-update"}
	if req.RunId == "" {
		req.RunId = defaultRunID(time.Now())
	}
	for i, u := range in.Updates {
		field := fmt.Sprintf("updates[%d]", i)
		op, err := parseEnum(memoryv1.Operation(0).Descriptor(), field+".operation", u.Operation)
		if err != nil {
			return ProposalOutput{}, err
		}
		lp, err := parseEnum(memoryv1.LoopPriority(0).Descriptor(), field+".loop_priority", u.LoopPriority)
		if err != nil {
			return ProposalOutput{}, err
		}
		req.Updates = append(req.Updates, &memoryv1.FileUpdate{File: u.File, Operation: memoryv1.Operation(op), Content: u.Content,
			Section: u.Section, LoopId: u.LoopID, Resolution: u.Resolution, LoopPriority: memoryv1.LoopPriority(lp),
			Decision: u.Decision.proto()})
	}
	resp, err := s.clients.ProposalApply.Propose(ctx, req)
	if err != nil {
		return ProposalOutput{}, err
	}
	return proposalOutput(resp), nil
}

// defaultRunID names the run of a proposal whose caller gave none.
func defaultRunID(now time.Time) string {
	return "run_mcp-" + now.UTC().Format("20060102-150405")
}

// SetTTLInput are set_ttl's arguments (memory-bridge §4, §7 rlm_set_ttl).
type SetTTLInput struct {
	AgentID    string `json:"agent_id,omitempty" jsonschema:"The agent whose memory this is about (a slug such as garden-bloom-curator). Omit it to use the server's default agent (memctl mcp --agent, or /mcp?agent=<id>)."`
	Fact       string `json:"fact" jsonschema:"The fact: its exact line in facts.md, or its text without the leading '- '."`
	TTLSeconds int64  `json:"ttl_seconds" jsonschema:"Time to live from now, in seconds (e.g. 604800 = 7 days); 0 removes the fact's TTL."`
	OnExpire   string `json:"on_expire,omitempty" jsonschema:"What happens when it runs out: mark_stale (default; the fact stays, marked stale), archive (moved to decisions.md, Layer 2) or delete (removed; git history keeps it)."`
	RunID      string `json:"run_id,omitempty" jsonschema:"Your run's id, run_<letters, digits, _ or ->; optional."`
}

// SetTTLOutput is set_ttl's answer: the proposal that writes the TTL into
// facts.md.
type SetTTLOutput struct {
	Proposal  ProposalOutput `json:"proposal"`
	ExpiresAt string         `json:"expires_at,omitempty" jsonschema:"When the fact expires; absent when the TTL was removed."`
}

func (o SetTTLOutput) text() string {
	t := o.Proposal.text()
	if o.ExpiresAt != "" {
		t += "\nexpires at " + o.ExpiresAt
	}
	return t
}

func (s *server) setTTL(ctx context.Context, c Caller, in SetTTLInput) (SetTTLOutput, error) {
	agentID, err := agent(in.AgentID, c)
	if err != nil {
		return SetTTLOutput{}, err
	}
	if in.TTLSeconds < 0 {
		return SetTTLOutput{}, apierr.InvalidArgument("ttl_seconds", "ttl_seconds must not be negative (0 removes the TTL)")
	}
	action, err := parseEnum(memoryv1.TTLAction(0).Descriptor(), "on_expire", in.OnExpire)
	if err != nil {
		return SetTTLOutput{}, err
	}
	resp, err := s.clients.ProposalApply.SetFactTTL(ctx, &memoryv1.SetFactTTLRequest{AgentId: agentID, Fact: in.Fact,
		Ttl: durationpb.New(time.Duration(in.TTLSeconds) * time.Second), OnExpire: memoryv1.TTLAction(action), RunId: in.RunID})
	if err != nil {
		return SetTTLOutput{}, err
	}
	return SetTTLOutput{Proposal: proposalOutput(resp.GetProposal()), ExpiresAt: timeString(resp.GetExpiresAt())}, nil
}

// EpisodeInput is an episode (docs/episodes.md; spec AI Skills Memory
// Protocol §4.1–4.2), with the proto's snake_case JSON names.
type EpisodeInput struct {
	SchemaVersion    string             `json:"schema_version,omitempty" jsonschema:"Schema version of the episode: 1 (the default)."`
	EpisodeID        string             `json:"episode_id,omitempty" jsonschema:"A stable id (slug); omitted = derived from the content, so ingesting the same episode twice is harmless."`
	Timestamp        string             `json:"timestamp,omitempty" jsonschema:"When it happened, RFC 3339 (e.g. 2026-03-01T09:30:00Z); omitted = now."`
	TaskText         string             `json:"task_text" jsonschema:"What the agent was asked to do."`
	Summary          string             `json:"summary,omitempty" jsonschema:"What happened, in a few sentences."`
	UsedSkills       []string           `json:"used_skills,omitempty" jsonschema:"Skills used, e.g. git-rebase, sql-migrations."`
	TouchedArtifacts []string           `json:"touched_artifacts,omitempty" jsonschema:"Files or other artifacts read or changed, e.g. src/db/migrate.go."`
	Outcome          *OutcomeInput      `json:"outcome,omitempty" jsonschema:"How it ended."`
	Errors           []string           `json:"errors,omitempty" jsonschema:"Error messages seen; the first one names the failure mode when failure_mode is not given."`
	FailureMode      string             `json:"failure_mode,omitempty" jsonschema:"The failure mode's signature, when known (short, e.g. migration lock timeout)."`
	Fix              string             `json:"fix,omitempty" jsonschema:"What fixed or mitigates the failure mode."`
	Tests            []EpisodeTestInput `json:"tests,omitempty" jsonschema:"Tests the episode ran."`
	Environment      *EnvironmentInput  `json:"environment,omitempty" jsonschema:"Where it ran."`
	Context          string             `json:"context,omitempty" jsonschema:"Context path, / or : separated, most general first, e.g. programming/go/testing."`
	Facts            []string           `json:"facts,omitempty" jsonschema:"Facts to remember, appended to facts.md (one bullet each)."`
	Decisions        []DecisionInput    `json:"decisions,omitempty" jsonschema:"Decisions made, added to decisions.md."`
	EntityRefs       []string           `json:"entity_refs,omitempty" jsonschema:"Extra entities it is about (entity ids)."`
	RunID            string             `json:"run_id,omitempty" jsonschema:"Run id of its run file; omitted = derived from episode_id."`
	Duration         string             `json:"duration,omitempty" jsonschema:"How long the run took, e.g. 45s, 2m30s."`
}

// OutcomeInput is how an episode ended.
type OutcomeInput struct {
	Status   string `json:"status,omitempty" jsonschema:"success, failure or partial (default partial)."`
	Severity string `json:"severity,omitempty" jsonschema:"low, medium, high or critical; optional."`
	Notes    string `json:"notes,omitempty" jsonschema:"A line about the outcome."`
}

// EpisodeTestInput is a test an episode ran.
type EpisodeTestInput struct {
	Name       string `json:"name" jsonschema:"The test's name."`
	Result     string `json:"result,omitempty" jsonschema:"pass, fail or skip."`
	DurationMS int64  `json:"duration_ms,omitempty" jsonschema:"How long it took, in milliseconds."`
}

// EnvironmentInput is where an episode ran.
type EnvironmentInput struct {
	OS      string   `json:"os,omitempty" jsonschema:"e.g. linux."`
	Runtime string   `json:"runtime,omitempty" jsonschema:"e.g. go1.27."`
	Tooling []string `json:"tooling,omitempty" jsonschema:"e.g. docker, make."`
}

// IngestEpisodeInput are ingest_episode's arguments.
type IngestEpisodeInput struct {
	AgentID     string       `json:"agent_id,omitempty" jsonschema:"The agent whose memory this is about (a slug such as garden-bloom-curator). Omit it to use the server's default agent (memctl mcp --agent, or /mcp?agent=<id>)."`
	Episode     EpisodeInput `json:"episode" jsonschema:"The episode: one structured event of your work. It becomes one proposal: a run file, its facts and decisions, and typed entity-graph edges (skills, artifacts, outcome, failure mode, fix, context, tests, environment)."`
	AutoApprove *bool        `json:"auto_approve,omitempty" jsonschema:"As for propose_memory_update: false waits for a person; true is a hint the agent's policy decides on."`
}

// IngestEpisodeOutput is ingest_episode's answer.
type IngestEpisodeOutput struct {
	EpisodeID string         `json:"episode_id" jsonschema:"The episode's id, given or derived."`
	RunFile   string         `json:"run_file" jsonschema:"The run file written, relative to the agent folder."`
	Duplicate bool           `json:"duplicate" jsonschema:"It was ingested before; its proposal is returned again."`
	Proposal  ProposalOutput `json:"proposal"`
}

func (o IngestEpisodeOutput) text() string {
	dup := ""
	if o.Duplicate {
		dup = " (ingested before)"
	}
	return fmt.Sprintf("episode %s%s -> %s\n%s", o.EpisodeID, dup, o.RunFile, o.Proposal.text())
}

func (s *server) ingestEpisode(ctx context.Context, c Caller, in IngestEpisodeInput) (IngestEpisodeOutput, error) {
	agentID, err := agent(in.AgentID, c)
	if err != nil {
		return IngestEpisodeOutput{}, err
	}
	ep, err := in.Episode.proto()
	if err != nil {
		return IngestEpisodeOutput{}, err
	}
	resp, err := s.clients.ProposalApply.IngestEpisode(ctx, &memoryv1.IngestEpisodeRequest{AgentId: agentID, Episode: ep,
		AutoApprove: in.AutoApprove})
	if err != nil {
		return IngestEpisodeOutput{}, err
	}
	return IngestEpisodeOutput{EpisodeID: resp.GetEpisodeId(), RunFile: resp.GetRunFile(), Duplicate: resp.GetDuplicate(),
		Proposal: proposalOutput(resp.GetProposal())}, nil
}

// proto is the episode as the API takes it; only the two fields whose
// text must be parsed (a time, a duration) can be wrong here — the
// service checks the rest.
func (e *EpisodeInput) proto() (*memoryv1.Episode, error) {
	ep := &memoryv1.Episode{SchemaVersion: e.SchemaVersion, EpisodeId: e.EpisodeID, TaskText: e.TaskText, Summary: e.Summary,
		UsedSkills: e.UsedSkills, TouchedArtifacts: e.TouchedArtifacts, Errors: e.Errors, FailureMode: e.FailureMode,
		Fix: e.Fix, Context: e.Context, Facts: e.Facts, EntityRefs: e.EntityRefs, RunId: e.RunID}
	if e.Timestamp != "" {
		t, err := time.Parse(time.RFC3339, strings.TrimSpace(e.Timestamp))
		if err != nil {
			return nil, apierr.InvalidArgument("episode.timestamp",
				fmt.Sprintf("episode.timestamp %q is not an RFC 3339 time such as 2026-03-01T09:30:00Z", apierr.Clip(e.Timestamp)))
		}
		ep.Timestamp = timestamppb.New(t)
	}
	if e.Duration != "" {
		d, err := time.ParseDuration(strings.TrimSpace(e.Duration))
		if err != nil || d < 0 {
			return nil, apierr.InvalidArgument("episode.duration",
				fmt.Sprintf("episode.duration %q is not a duration such as 45s or 2m30s", apierr.Clip(e.Duration)))
		}
		ep.Duration = durationpb.New(d)
	}
	if o := e.Outcome; o != nil {
		ep.Outcome = &memoryv1.EpisodeOutcome{Status: o.Status, Severity: o.Severity, Notes: o.Notes}
	}
	for _, t := range e.Tests {
		ep.Tests = append(ep.Tests, &memoryv1.EpisodeTest{Name: t.Name, Result: t.Result, DurationMs: t.DurationMS})
	}
	if env := e.Environment; env != nil {
		ep.Environment = &memoryv1.EpisodeEnvironment{Os: env.OS, Runtime: env.Runtime, Tooling: env.Tooling}
	}
	for i := range e.Decisions {
		ep.Decisions = append(ep.Decisions, e.Decisions[i].proto())
	}
	return ep, nil
}
