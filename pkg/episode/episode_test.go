package episode_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/episode"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

// spec12 is the spec's §12 example (ai-skills-memory-protocol.md,
// "Додаток: компактний приклад Episode (JSON)"), verbatim.
const spec12 = `{
  "timestamp": "2025-12-30T13:00:00+02:00",
  "task_text": "Design local DB-first AI Skills memory protocol",
  "summary": "Updated protocol to SQLite graph + Chroma vectors + Ollama embeddings",
  "used_skills": ["docs", "memory-design"],
  "touched_artifacts": ["ai_skills/skills_graph_concept.md"],
  "outcome": {"status": "success", "notes": "Spec updated"},
  "errors": [],
  "tests": []
}`

var now = time.Date(2026, 2, 17, 14, 30, 0, 0, time.UTC)

// taskID is the contract's rule, written out: "task-" + the first 8 hex
// digits of sha256 of the whitespace-normalised, lowercased task text.
func taskID(text string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(strings.Join(strings.Fields(text), " "))))
	return "task-" + hex.EncodeToString(sum[:])[:8]
}

func decode(t *testing.T, s string) *memoryv1.Episode {
	t.Helper()
	e, err := episode.Decode([]byte(s))
	require.NoError(t, err)
	return e
}

func normalized(t *testing.T, s string) *memoryv1.Episode {
	t.Helper()
	e := decode(t, s)
	require.NoError(t, episode.Normalize(e, now))
	return e
}

func TestSpecExampleRendersTheRunFileFormat(t *testing.T) {
	e := normalized(t, spec12)
	id := e.GetEpisodeId()
	require.Regexp(t, `^ep-[0-9a-f]{12}$`, id)
	require.Equal(t, "run_"+id, e.GetRunId())
	require.Equal(t, "runs/run_"+id+".md", episode.RunFile(e))

	want := "# Episode " + id + "\n" +
		"\n" +
		"- **Episode:** [[episode:" + id + "]]\n" +
		"- **When:** 2025-12-30T11:00:00Z\n" +
		"- **Task:** [[task:" + taskID("Design local DB-first AI Skills memory protocol") + "|Design local DB-first AI Skills memory protocol]]\n" +
		"- **Outcome:** [[outcome:success]] — Spec updated\n" +
		"- **Skills used:** [[skill:docs]], [[skill:memory-design]]\n" +
		"- **Artifacts touched:** [[artifact:ai_skills/skills_graph_concept.md]]\n" +
		"\n" +
		"## Summary\n" +
		"\n" +
		"Updated protocol to SQLite graph + Chroma vectors + Ollama embeddings\n"
	require.Equal(t, want, episode.Render(e))
}

// A failure episode with every field: each line as the format says, in its
// order, with the failure mode given and the fix.
func TestFailureEpisodeRendersEveryLine(t *testing.T) {
	e := normalized(t, `{
	  "episode_id": "ep-refund-retry-1",
	  "timestamp": "2026-02-03T09:15:30Z",
	  "task_text": "  Make  refund retries idempotent\n(payments) ",
	  "summary": "Retried refunds created duplicate ledger rows.\n# not a heading\n- **Skills used:** [[skill:fake]]",
	  "used_skills": ["Go Testing", "sql_migrations", "go-testing"],
	  "touched_artifacts": ["./services/payments/refund.go", "services\\payments\\refund_test.go", "services/payments/refund.go"],
	  "outcome": {"status": "FAILURE", "severity": "high", "notes": "ledger rows doubled; see [[incident-42]]"},
	  "errors": [" pq: duplicate key value violates unique constraint \"ledger_pkey\" ", "expected <nil>, got error", "pq: duplicate key value violates unique constraint \"ledger_pkey\""],
	  "failure_mode": "duplicate ledger row on retry",
	  "fix": "Use an idempotency key column with a unique index",
	  "tests": [{"name": "TestRefundRetry", "result": "fail", "duration_ms": 120}, {"name": "TestRefundHappyPath", "result": "pass"}],
	  "environment": {"os": "linux", "runtime": "go1.26", "tooling": ["postgres 16", "docker"]},
	  "context": "Backend / Payments : Refunds",
	  "facts": ["- Ledger rows are keyed by (refund_id, attempt)"],
	  "duration": "45s"
	}`)
	require.Equal(t, []string{"go-testing", "sql-migrations"}, e.GetUsedSkills(), "skills: normalised ids, unique")
	require.Equal(t, []string{"services/payments/refund.go", "services/payments/refund_test.go"}, e.GetTouchedArtifacts(), "paths: clean, forward slashes, no ./, unique")
	require.Equal(t, []string{`pq: duplicate key value violates unique constraint "ledger_pkey"`, "expected <nil>, got error"}, e.GetErrors(), "errors: trimmed, unique")
	require.Equal(t, "backend/payments/refunds", e.GetContext())

	want := "# Episode ep-refund-retry-1\n" +
		"\n" +
		"- **Episode:** [[episode:ep-refund-retry-1]]\n" +
		"- **When:** 2026-02-03T09:15:30Z\n" +
		"- **Task:** [[task:" + taskID("make refund retries idempotent (payments)") + "|Make refund retries idempotent (payments)]]\n" +
		"- **Outcome:** [[outcome:failure]] (severity: high) — ledger rows doubled; see [ [incident-42] ]\n" +
		"- **Context:** [[context:backend/payments/refunds]]\n" +
		"- **Skills used:** [[skill:go-testing]], [[skill:sql-migrations]]\n" +
		"- **Artifacts touched:** [[artifact:services/payments/refund.go]], [[artifact:services/payments/refund_test.go]]\n" +
		"- **Failure mode:** [[failure-mode:duplicate ledger row on retry]]\n" +
		"- **Fix:** [[fix:Use an idempotency key column with a unique index]]\n" +
		"- **Tests:** [[test:TestRefundRetry]] fail (120 ms), [[test:TestRefundHappyPath]] pass\n" +
		"- **Environment:** [[environment:linux-go1.26]] linux, go1.26, postgres 16, docker\n" +
		"- **Duration:** 45s\n" +
		"\n" +
		"## Summary\n" +
		"\n" +
		"Retried refunds created duplicate ledger rows.\n" +
		"\\# not a heading\n" +
		"\\- **Skills used:** [[skill:fake]]\n" +
		"\n" +
		"## Errors\n" +
		"\n" +
		"- pq: duplicate key value violates unique constraint \"ledger_pkey\"\n" +
		"- expected &lt;nil>, got error\n" +
		"\n" +
		"## Facts\n" +
		"\n" +
		"- Ledger rows are keyed by (refund_id, attempt)\n"
	require.Equal(t, want, episode.Render(e))
}

// Without a failure_mode, the failure mode is derived from the first error.
func TestFailureModeDerivedFromFirstError(t *testing.T) {
	e := normalized(t, `{"summary": "db down", "outcome": {"status": "failure"},
	  "errors": ["dial tcp 10.0.3.7:5432: connect: connection refused", "second"]}`)
	require.Equal(t, "dial tcp {n}: connect: connection refused", episode.FailureMode(e))
	require.Contains(t, episode.Render(e), "- **Failure mode:** [[failure-mode:dial tcp {n}: connect: connection refused]]\n")

	ok := normalized(t, `{"summary": "all good", "outcome": {"status": "success"}}`)
	require.Empty(t, episode.FailureMode(ok))
	require.NotContains(t, episode.Render(ok), "Failure mode")
}

func TestFailureSignature(t *testing.T) {
	for in, want := range map[string]string{
		"dial tcp 10.0.3.7:5432: connect: connection refused":               "dial tcp {n}: connect: connection refused",
		"dial tcp 10.0.9.1:6379: connect: connection refused":               "dial tcp {n}: connect: connection refused",
		"dial tcp [::1]:6379: connect: connection refused":                  "dial tcp {n}: connect: connection refused",
		`pq: duplicate key value violates unique constraint "refunds_pkey"`: "pq: duplicate key value violates unique constraint {str}",
		"open /etc/app/config.yaml: no such file or directory":              "open {path}: no such file or directory",
		"services/payments/refund.go:42:17: undefined: LedgerRow":           "{path}: undefined: ledgerrow",
		"i/o timeout":                  "i/o timeout",
		"can't find module 'left-pad'": "can't find module {str}",
		"panic: runtime error: index out of range [3] with length 3":         "panic: runtime error: index out of range ({n})",
		"Error: Deployment \"payments\" exceeded its progress deadline":      "error: deployment {str} exceeded its progress deadline",
		"commit 3f2a9c1e4b missing in e2e run at 2026-02-01T10:00:00Z":       "commit {hex} missing in e2e run at {time}",
		"go1.26 build failed: exit status 2":                                 "go1.26 build failed: exit status {n}",
		"request 8c3e2a4b-1f0d-4c5e-9a7b-2d6f8e1c0b3a failed after 30s: EOF": "request {id} failed after {n}s: eof",
		"GET https://api.example.com/v1/refunds?id=9 returned 503":           "get {url} returned {n}",
		"   FATAL:   password   authentication failed for user \"svc\"   ":   "fatal: password authentication failed for user {str}",
		"x | y ] z": "x / y ) z",
	} {
		require.Equal(t, want, episode.FailureSignature(in), in)
	}
}

func TestTaskIDFollowsTheRule(t *testing.T) {
	require.Equal(t, taskID("Fix the flaky test"), episode.TaskID("  fix THE\tflaky\n test "))
	require.Regexp(t, `^task-[0-9a-f]{8}$`, episode.TaskID("Fix the flaky test"))
	require.Empty(t, episode.TaskID("  "))
}

// Spec §8.4.5 step 0: timestamp = timestamp or now; outcome.status =
// status or "partial".
func TestNormalizeDefaults(t *testing.T) {
	e := normalized(t, `{"summary": "something happened"}`)
	require.Equal(t, now, e.GetTimestamp().AsTime())
	require.Equal(t, "partial", e.GetOutcome().GetStatus())
	require.Equal(t, "1", e.GetSchemaVersion())
	require.Equal(t, "run_"+e.GetEpisodeId(), e.GetRunId())

	given := normalized(t, `{"summary": "x", "run_id": "abc123"}`)
	require.Equal(t, "run_abc123", given.GetRunId())
	require.Equal(t, "runs/run_abc123.md", episode.RunFile(given))
	require.True(t, memlayout.ValidRunID(given.GetRunId()))
}

func TestNormalizeIsIdempotent(t *testing.T) {
	for _, s := range []string{spec12, `{"summary": " a\r\nb ", "used_skills": ["K8s Deploy"], "context": "infra:k8s"}`} {
		e := normalized(t, s)
		again := proto.Clone(e).(*memoryv1.Episode)
		require.NoError(t, episode.Normalize(again, now.Add(time.Hour)))
		require.True(t, proto.Equal(e, again), "normalising twice changes nothing:\n%v\n%v", e, again)
	}
}

// The same input gives the same id; the timestamp counts only when given.
func TestDerivedIDIsDeterministic(t *testing.T) {
	a := normalized(t, spec12)
	// Same content, other key order and spacing, other skill spelling.
	b := normalized(t, `{"tests":[],"errors":[],"outcome":{"notes":"Spec updated","status":"success"},
	  "touched_artifacts":["./ai_skills/skills_graph_concept.md"],"used_skills":["Docs","memory design"],
	  "summary":"Updated protocol to SQLite graph + Chroma vectors + Ollama embeddings",
	  "task_text":"Design local DB-first AI Skills memory protocol","timestamp":"2025-12-30T11:00:00Z"}`)
	require.Equal(t, a.GetEpisodeId(), b.GetEpisodeId())

	otherTime := normalized(t, strings.Replace(spec12, "13:00:00", "14:00:00", 1))
	require.NotEqual(t, a.GetEpisodeId(), otherTime.GetEpisodeId(), "a given timestamp is part of the id")

	noTime := decode(t, `{"summary": "no time given"}`)
	require.NoError(t, episode.Normalize(noTime, now))
	later := decode(t, `{"summary": "no time given"}`)
	require.NoError(t, episode.Normalize(later, now.Add(48*time.Hour)))
	require.Equal(t, noTime.GetEpisodeId(), later.GetEpisodeId(), "without a timestamp, ingest time is not part of the id")

	given := normalized(t, `{"episode_id": "ep-mine", "summary": "x"}`)
	require.Equal(t, "ep-mine", given.GetEpisodeId())
}

// Every bad input is refused with InvalidArgument naming the field.
func TestValidationNamesTheField(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	cases := []struct{ name, body, field string }{
		{"schema version", `{"schema_version": "2", "summary": "x"}`, "episode.schema_version"},
		{"status", `{"summary": "x", "outcome": {"status": "done"}}`, "episode.outcome.status"},
		{"severity", `{"summary": "x", "outcome": {"severity": "urgent"}}`, "episode.outcome.severity"},
		{"test result", `{"summary": "x", "tests": [{"name": "a", "result": "pass"}, {"name": "b", "result": "ok"}]}`, "episode.tests[1].result"},
		{"test name", `{"summary": "x", "tests": [{"result": "pass"}]}`, "episode.tests[0].name"},
		{"test duration", `{"summary": "x", "tests": [{"name": "a", "result": "pass", "duration_ms": -1}]}`, "episode.tests[0].duration_ms"},
		{"no summary nor task", `{"used_skills": ["go"]}`, "episode.summary"},
		{"blank summary and task", `{"summary": "  ", "task_text": "\n"}`, "episode.summary"},
		{"episode id", `{"episode_id": "Not A Slug", "summary": "x"}`, "episode.episode_id"},
		{"episode id too long", `{"episode_id": "` + long(65) + `", "summary": "x"}`, "episode.episode_id"},
		{"run id", `{"run_id": "../etc", "summary": "x"}`, "episode.run_id"},
		{"skill", `{"summary": "x", "used_skills": ["go", "--"]}`, "episode.used_skills[1]"},
		{"empty skill", `{"summary": "x", "used_skills": [""]}`, "episode.used_skills[0]"},
		{"skill too long", `{"summary": "x", "used_skills": ["` + long(65) + `"]}`, "episode.used_skills[0]"},
		{"artifact", `{"summary": "x", "touched_artifacts": ["./"]}`, "episode.touched_artifacts[0]"},
		{"empty error", `{"summary": "x", "errors": ["boom", " "]}`, "episode.errors[1]"},
		{"too many errors", `{"summary": "x", "errors": [` + strings.Repeat(`"e",`, 20) + `"e"]}`, "episode.errors"},
		{"fact heading", `{"summary": "x", "facts": ["# Heading"]}`, "episode.facts[0]"},
		{"fact too long", `{"summary": "x", "facts": ["` + long(1025) + `"]}`, "episode.facts[0]"},
		{"script in summary", `{"summary": "<script>alert(1)</script>"}`, "episode.summary"},
		{"javascript link in fix", `{"summary": "x", "fix": "[click](javascript:alert(1))"}`, "episode.fix"},
		{"control character", `{"summary": "x", "failure_mode": "a\u001bb"}`, "episode.failure_mode"},
		{"context level", `{"summary": "x", "context": "a/--/b"}`, "episode.context"},
		{"context depth", `{"summary": "x", "context": "a/b/c/d/e/f/g/h/i"}`, "episode.context"},
		{"future", `{"summary": "x", "timestamp": "2026-02-19T14:30:01Z"}`, "episode.timestamp"},
		{"duration", `{"summary": "x", "duration": "-5s"}`, "episode.duration"},
		{"decision title", `{"summary": "x", "decisions": [{"decision": "use it"}]}`, "episode.decisions[0].title"},
		{"environment", `{"summary": "x", "environment": {"tooling": ["ok", ""]}}`, "episode.environment.tooling[1]"},
		{"summary too long", `{"summary": "` + long(16<<10+1) + `"}`, "episode.summary"},
		{"entity ref", `{"summary": "x", "entity_refs": [" "]}`, "episode.entity_refs[0]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := decode(t, c.body)
			err := episode.Normalize(e, now)
			require.Error(t, err)
			require.Equal(t, codes.InvalidArgument, status.Code(err), err)
			info := apierr.Info(err)
			require.NotNil(t, info, err)
			require.Equal(t, c.field, info.GetMetadata()["field"], err)
			require.Contains(t, status.Convert(err).Message(), strings.Split(c.field, "[")[0], "the message names the field too")
		})
	}
}

func TestDecodeRefusesUnknownFieldsAndTakesYAML(t *testing.T) {
	_, err := episode.Decode([]byte(`{"summary": "x", "sumary": "typo"}`))
	require.Error(t, err)
	require.Equal(t, "episode", apierr.Info(err).GetMetadata()["field"])
	require.Contains(t, err.Error(), "sumary")

	y, err := episode.Decode([]byte("timestamp: 2025-12-30T13:00:00+02:00\ntask_text: Design it\nused_skills: [docs]\noutcome:\n  status: success\nduration: 90s\n"))
	require.NoError(t, err)
	require.Equal(t, time.Date(2025, 12, 30, 11, 0, 0, 0, time.UTC), y.GetTimestamp().AsTime().UTC())
	require.Equal(t, []string{"docs"}, y.GetUsedSkills())
	require.Equal(t, 90*time.Second, y.GetDuration().AsDuration())
}

// One proposal: the run file, the facts under "Learned", one add_decision
// per decision, only the caller's entity refs, the idempotency key.
func TestProposal(t *testing.T) {
	e := normalized(t, `{"episode_id": "ep-7", "summary": "Moved the queue\nsecond line", "used_skills": ["k8s-deploy"],
	  "facts": ["Queue lives in NATS", "Retries back off exponentially"],
	  "decisions": [{"title": "Use NATS for the queue", "rationale": "ops know it"}, {"title": "Drop Redis streams"}],
	  "entity_refs": ["nats"], "duration": "120s"}`)
	yes := true
	req := episode.Proposal("coder", e, &yes)
	require.Equal(t, "coder", req.GetAgentId())
	require.Equal(t, "run_ep-7", req.GetRunId())
	require.Equal(t, "episode:ep-7", req.GetIdempotencyKey())
	require.Equal(t, "episode ep-7: Moved the queue", req.GetReasoning())
	require.Equal(t, []string{"nats"}, req.GetEntityRefs(), "only the caller's refs; skills are links in the run file")
	require.Equal(t, 2*time.Minute, req.GetRunDuration().AsDuration())
	require.True(t, req.GetAutoApprove())
	require.Len(t, req.GetUpdates(), 4)
	run, facts := req.GetUpdates()[0], req.GetUpdates()[1]
	require.Equal(t, "runs/run_ep-7.md", run.GetFile())
	require.Equal(t, memoryv1.Operation_OPERATION_WRITE_RUN, run.GetOperation())
	require.Equal(t, episode.Render(e), run.GetContent())
	require.Equal(t, memlayout.FactsFile, facts.GetFile())
	require.Equal(t, memoryv1.Operation_OPERATION_APPEND, facts.GetOperation())
	require.Equal(t, "Learned", facts.GetSection())
	require.Equal(t, "- Queue lives in NATS\n- Retries back off exponentially", facts.GetContent())
	for i, title := range []string{"Use NATS for the queue", "Drop Redis streams"} {
		u := req.GetUpdates()[2+i]
		require.Equal(t, memlayout.DecisionsFile, u.GetFile())
		require.Equal(t, memoryv1.Operation_OPERATION_ADD_DECISION, u.GetOperation())
		require.Equal(t, title, u.GetDecision().GetTitle())
	}

	field, ok := episode.UpdateField(e, "updates[3].decision.runId")
	require.True(t, ok)
	require.Equal(t, "episode.decisions[1].run_id", field)
	field, _ = episode.UpdateField(e, "updates[1].content")
	require.Equal(t, "episode.facts", field)
	field, _ = episode.UpdateField(e, "updates[0].content")
	require.Equal(t, "episode", field)
	_, ok = episode.UpdateField(e, "runId")
	require.False(t, ok)

	noFacts := normalized(t, `{"summary": "s", "decisions": [{"title": "T"}]}`)
	field, _ = episode.UpdateField(noFacts, "updates[1].decision.title")
	require.Equal(t, "episode.decisions[0].title", field)
}

// The caller's message is not changed by building the proposal from it.
func TestProposalCopies(t *testing.T) {
	e := normalized(t, `{"summary": "s", "decisions": [{"title": "T"}], "duration": "1s"}`)
	req := episode.Proposal("a", e, nil)
	req.GetUpdates()[1].GetDecision().Title = "changed"
	req.RunDuration = durationpb.New(time.Hour)
	require.Equal(t, "T", e.GetDecisions()[0].GetTitle())
	require.Equal(t, time.Second, e.GetDuration().AsDuration())
	require.Nil(t, req.AutoApprove)
}
