package episode

import (
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

// IdempotencyKey is the idempotency key of an episode's proposal. With the
// agent and the run id it makes re-ingesting the episode return the proposal
// it already became.
func IdempotencyKey(e *memoryv1.Episode) string { return "episode:" + e.GetEpisodeId() }

// maxReasonSummary bounds the summary line quoted in a proposal's reasoning.
const maxReasonSummary = 200

// Reasoning is the proposal's reasoning: "episode <id>: <first line of the
// summary, else the task>", the line cut to 200 bytes.
func Reasoning(e *memoryv1.Episode) string {
	what := e.GetSummary()
	if what == "" {
		what = e.GetTaskText()
	}
	first, _, _ := strings.Cut(what, "\n")
	first = strings.TrimSpace(first)
	if len(first) > maxReasonSummary {
		first = cutRunes(first, maxReasonSummary-len("…")) + "…"
	}
	return "episode " + e.GetEpisodeId() + ": " + first
}

// Proposal is the one proposal an episode becomes, for agent: its run file
// (write_run of RunFile), its facts appended to facts.md under
// FactsSection (one update, one bullet per fact), one add_decision per
// decision, the caller's entity refs (only those: the run file's typed links
// bring their own entities, and refs the graph does not know would send the
// proposal to a person), the run's duration, and IdempotencyKey. autoApprove
// is the agent's hint, as for Propose. e must be normalised (Normalize).
func Proposal(agent string, e *memoryv1.Episode, autoApprove *bool) *memoryv1.ProposeRequest {
	updates := []*memoryv1.FileUpdate{{
		File: RunFile(e), Operation: memoryv1.Operation_OPERATION_WRITE_RUN, Content: Render(e),
	}}
	if facts := e.GetFacts(); len(facts) > 0 {
		updates = append(updates, &memoryv1.FileUpdate{
			File: memlayout.FactsFile, Operation: memoryv1.Operation_OPERATION_APPEND, Section: FactsSection,
			Content: "- " + strings.Join(facts, "\n- "),
		})
	}
	for _, d := range e.GetDecisions() {
		updates = append(updates, &memoryv1.FileUpdate{
			File: memlayout.DecisionsFile, Operation: memoryv1.Operation_OPERATION_ADD_DECISION,
			Decision: proto.Clone(d).(*memoryv1.Decision),
		})
	}
	req := &memoryv1.ProposeRequest{
		AgentId: agent, RunId: memlayout.RunRef(e.GetRunId()), Updates: updates, Reasoning: Reasoning(e),
		EntityRefs: append([]string(nil), e.GetEntityRefs()...), IdempotencyKey: IdempotencyKey(e),
		AutoApprove: autoApprove,
	}
	if d := e.GetDuration(); d != nil && d.AsDuration() > 0 {
		req.RunDuration = proto.Clone(d).(*durationpb.Duration)
	}
	return req
}

// UpdateField maps a field of an episode's proposal (as proposal-apply's
// errors name them, "updates[2].decision.title") back to the episode field
// it came from ("episode.decisions[0].title"), so errors found while
// validating or planning the proposal name what the caller sent. ok is
// false for fields that are not an update's.
func UpdateField(e *memoryv1.Episode, field string) (string, bool) {
	rest, ok := strings.CutPrefix(field, "updates[")
	if !ok {
		return "", false
	}
	idx, tail, ok := strings.Cut(rest, "]")
	if !ok {
		return "", false
	}
	i, err := strconv.Atoi(idx)
	if err != nil || i < 0 {
		return "", false
	}
	switch {
	case i == 0:
		return "episode", true // the run file: rendered from the whole episode
	case len(e.GetFacts()) > 0 && i == 1:
		return "episode.facts", true
	}
	d := i - 1
	if len(e.GetFacts()) > 0 {
		d--
	}
	if d < 0 || d >= len(e.GetDecisions()) {
		return "", false
	}
	f := "episode.decisions[" + strconv.Itoa(d) + "]"
	if sub, ok := strings.CutPrefix(tail, ".decision"); ok {
		return f + camelToSnake(sub), true
	}
	return f, true
}

// camelToSnake turns proposal field paths (".runId") into the episode's
// snake_case (".run_id").
func camelToSnake(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
