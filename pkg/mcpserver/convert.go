package mcpserver

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/enumname"
)

// The tools speak the REST contract's words: enum values in their
// lowercase short form ("applied", "mark_stale"), times in RFC 3339 UTC,
// snake_case names. This file turns the gRPC messages into them.

// name is e's short form ("applied"), "" for the unset value.
func name(e protoreflect.Enum) string {
	if e.Number() == 0 {
		return ""
	}
	return enumname.Name(e)
}

// enumValues lists ed's short forms but the unset one and except.
func enumValues(ed protoreflect.EnumDescriptor, except ...string) []any {
	var out []any
	for _, v := range enumname.Allowed(ed) {
		if v != "unspecified" && !slices.Contains(except, v) {
			out = append(out, v)
		}
	}
	return out
}

// parseEnum reads an argument naming a value of ed; "" is the unset value.
// The input schema lists the values, so a wrong one is rare: the model
// gets the list again.
func parseEnum(ed protoreflect.EnumDescriptor, field, v string) (protoreflect.EnumNumber, error) {
	if v == "" {
		return 0, nil
	}
	n, ok := enumname.Parse(ed, v)
	if !ok || n == 0 {
		var allowed []string
		for _, a := range enumValues(ed) {
			allowed = append(allowed, a.(string))
		}
		return 0, apierr.InvalidArgument(field, fmt.Sprintf("%s: %q is not one of %s", field, apierr.Clip(v), strings.Join(allowed, ", ")))
	}
	return n, nil
}

// timeString is t in RFC 3339 UTC, "" when unset.
func timeString(t *timestamppb.Timestamp) string {
	if t == nil {
		return ""
	}
	return t.AsTime().UTC().Format(time.RFC3339)
}

// lines renders a span as "12-20" ("" when unset).
func lines(s *memoryv1.Span) string {
	if s == nil || s.GetStartLine() == 0 {
		return ""
	}
	return fmt.Sprintf("%d-%d", s.GetStartLine(), s.GetEndLine())
}

// shortSHA is the first 12 hex digits of a commit, for text renderings.
func shortSHA(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// ProposalOutput is a proposal as a write tool returns it.
type ProposalOutput struct {
	ProposalID string `json:"proposal_id" jsonschema:"The proposal's id."`
	AgentID    string `json:"agent_id" jsonschema:"The agent whose memory it changes."`
	Status     string `json:"status" jsonschema:"pending, approved, applying, applied, rejected, failed or needs_human_review. applied means it is committed."`
	Reason     string `json:"reason,omitempty" jsonschema:"Why it has that status, e.g. awaiting_review, version_conflict, flagged."`
	Message    string `json:"message,omitempty" jsonschema:"Human-readable detail of the status."`
	// The optimistic-concurrency figures of a version_conflict.
	ExpectedVersion  int32    `json:"expected_version,omitempty" jsonschema:"The version the proposal was based on."`
	CurrentVersion   int32    `json:"current_version,omitempty" jsonschema:"With version_conflict: the agent's version now; read again and retry."`
	Resolution       string   `json:"resolution,omitempty" jsonschema:"With version_conflict: retry_with_latest."`
	EstimatedApplyAt string   `json:"estimated_apply_at,omitempty" jsonschema:"When it will be applied: an RFC 3339 time, or a note while it waits for a person."`
	AutoApproved     bool     `json:"auto_approved" jsonschema:"Approved by the agent's policy, without a person."`
	CommitSHA        string   `json:"commit_sha,omitempty" jsonschema:"The git commit that applied it."`
	AppliedVersion   int32    `json:"applied_version,omitempty" jsonschema:"The agent's version after the commit."`
	Flags            []string `json:"flags,omitempty" jsonschema:"Why it was flagged for a person."`
	Warnings         []string `json:"warnings,omitempty" jsonschema:"What the service noticed but accepted."`
	EvictedFacts     []string `json:"evicted_facts,omitempty" jsonschema:"Facts its commit moved from facts.md to Layer 2 to stay within the limit."`
	ReviewURL        string   `json:"review_url,omitempty" jsonschema:"Where a person reviews it."`
}

func proposalOutput(r *memoryv1.ProposeResponse) ProposalOutput {
	p := r.GetProposal()
	return ProposalOutput{
		ProposalID: r.GetProposalId(), AgentID: r.GetAgentId(), Status: name(r.GetStatus()), Reason: name(r.GetReason()),
		Message: p.GetMessage(), ExpectedVersion: r.GetExpectedVersion(), CurrentVersion: r.GetCurrentVersion(),
		Resolution: r.GetResolution(), EstimatedApplyAt: r.GetEstimatedApplyAt(), AutoApproved: p.GetAutoApproved(),
		CommitSHA: p.GetCommitSha(), AppliedVersion: p.GetAppliedVersion(), Flags: p.GetFlags(), Warnings: p.GetWarnings(),
		EvictedFacts: p.GetEvictedFacts(), ReviewURL: r.GetReviewUrl(),
	}
}

func (p ProposalOutput) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (agent %s): %s", p.ProposalID, p.AgentID, p.Status)
	if p.Reason != "" {
		fmt.Fprintf(&b, " (%s)", p.Reason)
	}
	switch {
	case p.CommitSHA != "":
		fmt.Fprintf(&b, ": commit %s, version %d", shortSHA(p.CommitSHA), p.AppliedVersion)
	case p.Resolution != "":
		fmt.Fprintf(&b, ": expected version %d, current %d: %s", p.ExpectedVersion, p.CurrentVersion, p.Resolution)
	case p.EstimatedApplyAt != "":
		fmt.Fprintf(&b, ": estimated apply %s", p.EstimatedApplyAt)
	}
	if p.Message != "" {
		b.WriteString("\n" + p.Message)
	}
	for _, f := range p.Flags {
		b.WriteString("\nflag: " + f)
	}
	for _, w := range p.Warnings {
		b.WriteString("\nwarning: " + w)
	}
	return b.String()
}

// DecisionOutput is a decisions.md entry.
type DecisionOutput struct {
	ID           string `json:"id"`
	Title        string `json:"title"`
	Status       string `json:"status,omitempty"`
	Date         string `json:"date,omitempty"`
	Context      string `json:"context,omitempty"`
	Decision     string `json:"decision,omitempty"`
	Rationale    string `json:"rationale,omitempty"`
	Consequences string `json:"consequences,omitempty"`
	RunID        string `json:"run_id,omitempty"`
}

func decisionOutput(d *memoryv1.Decision) DecisionOutput {
	return DecisionOutput{ID: d.GetId(), Title: d.GetTitle(), Status: d.GetStatus(), Date: timeString(d.GetDate()),
		Context: d.GetContext(), Decision: d.GetDecision(), Rationale: d.GetRationale(),
		Consequences: d.GetConsequences(), RunID: d.GetRunId()}
}

// EntityOutput is an entity-graph node.
type EntityOutput struct {
	EntityID    string   `json:"entity_id"`
	Type        string   `json:"type" jsonschema:"agent, concept, artifact, decision, person, project, skill, episode, outcome, failure_mode, fix, context, test, environment or task."`
	Label       string   `json:"label"`
	Aliases     []string `json:"aliases,omitempty"`
	Refs        []string `json:"refs,omitempty" jsonschema:"Files that mention it."`
	LastUpdated string   `json:"last_updated,omitempty"`
}

func entityOutput(e *memoryv1.Entity) EntityOutput {
	return EntityOutput{EntityID: e.GetEntityId(), Type: name(e.GetType()), Label: e.GetLabel(), Aliases: e.GetAliases(),
		Refs: e.GetRefs(), LastUpdated: timeString(e.GetLastUpdated())}
}

// EdgeOutput is a temporal relation between two entities.
type EdgeOutput struct {
	From      string   `json:"from"`
	To        string   `json:"to"`
	Relation  string   `json:"relation" jsonschema:"mentions, relates_to, decided_by, refers_to, follows_from, used_skill, touched_artifact, resulted_in, has_failure_mode, mitigated_by, in_context, child_of, ran_test, has_episode or ran_in."`
	ValidFrom string   `json:"valid_from,omitempty" jsonschema:"When the relation appeared (commit time)."`
	ValidTo   string   `json:"valid_to,omitempty" jsonschema:"When it disappeared; empty while it holds."`
	Weight    float64  `json:"weight"`
	Evidence  []string `json:"evidence,omitempty" jsonschema:"Where it was seen: file@commit:lines."`
}

func edgeOutputs(edges []*memoryv1.Edge) []EdgeOutput {
	out := make([]EdgeOutput, 0, len(edges))
	for _, e := range edges {
		eo := EdgeOutput{From: e.GetFromEntityId(), To: e.GetToEntityId(), Relation: name(e.GetRelation()),
			ValidFrom: timeString(e.GetValidFrom()), ValidTo: timeString(e.GetValidTo()), Weight: e.GetWeight()}
		for _, ev := range e.GetEvidence() {
			s := ev.GetFile()
			if ev.GetCommit() != "" {
				s += "@" + shortSHA(ev.GetCommit())
			}
			if l := lines(ev.GetSpan()); l != "" {
				s += ":" + l
			}
			eo.Evidence = append(eo.Evidence, s)
		}
		out = append(out, eo)
	}
	return out
}

func edgesText(b *strings.Builder, edges []EdgeOutput) {
	for _, e := range edges {
		fmt.Fprintf(b, "- %s %s %s", e.From, e.Relation, e.To)
		if e.ValidFrom != "" {
			fmt.Fprintf(b, " (since %s", e.ValidFrom)
			if e.ValidTo != "" {
				fmt.Fprintf(b, ", until %s", e.ValidTo)
			}
			b.WriteString(")")
		}
		b.WriteString("\n")
	}
}

// StaleFactOutput is a fact whose TTL ran out.
type StaleFactOutput struct {
	Fact        string `json:"fact" jsonschema:"The fact line as facts.md holds it."`
	Section     string `json:"section,omitempty"`
	ExpiresAt   string `json:"expires_at,omitempty"`
	OnExpire    string `json:"on_expire,omitempty" jsonschema:"mark_stale, archive or delete."`
	MarkedStale bool   `json:"marked_stale" jsonschema:"Already marked stale in facts.md."`
	Archived    bool   `json:"archived" jsonschema:"Archived to decisions.md (Layer 2)."`
}

func staleFactOutputs(facts []*memoryv1.StaleFact) []StaleFactOutput {
	out := make([]StaleFactOutput, 0, len(facts))
	for _, f := range facts {
		out = append(out, StaleFactOutput{Fact: f.GetFact(), Section: f.GetSection(), ExpiresAt: timeString(f.GetExpiresAt()),
			OnExpire: name(f.GetOnExpire()), MarkedStale: f.GetMarkedStale(), Archived: f.GetArchived()})
	}
	return out
}

func staleFactsText(b *strings.Builder, facts []StaleFactOutput) {
	for _, f := range facts {
		fmt.Fprintf(b, "- %s", f.Fact)
		var notes []string
		if f.Section != "" {
			notes = append(notes, "section "+f.Section)
		}
		if f.ExpiresAt != "" {
			notes = append(notes, "expired "+f.ExpiresAt)
		}
		if f.OnExpire != "" {
			notes = append(notes, "on expiry "+f.OnExpire)
		}
		if f.Archived {
			notes = append(notes, "archived")
		} else if f.MarkedStale {
			notes = append(notes, "marked stale")
		}
		if len(notes) > 0 {
			fmt.Fprintf(b, " (%s)", strings.Join(notes, "; "))
		}
		b.WriteString("\n")
	}
}
