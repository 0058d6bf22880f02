package proposalapply

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/episode"
	"github.com/garden-bloom/memory/services/gateway"
)

// specEpisode is the spec's §12 example (ai-skills-memory-protocol.md,
// "Додаток: компактний приклад Episode (JSON)"), verbatim.
const specEpisode = `{
  "timestamp": "2025-12-30T13:00:00+02:00",
  "task_text": "Design local DB-first AI Skills memory protocol",
  "summary": "Updated protocol to SQLite graph + Chroma vectors + Ollama embeddings",
  "used_skills": ["docs", "memory-design"],
  "touched_artifacts": ["ai_skills/skills_graph_concept.md"],
  "outcome": {"status": "success", "notes": "Spec updated"},
  "errors": [],
  "tests": []
}`

func parseEpisode(t testing.TB, body string) *memoryv1.Episode {
	t.Helper()
	e := &memoryv1.Episode{}
	require.NoError(t, protojson.Unmarshal([]byte(body), e))
	return e
}

func (e *env) ingest(agent string, ep *memoryv1.Episode) *memoryv1.IngestEpisodeResponse {
	e.t.Helper()
	resp, err := e.client.IngestEpisode(e.agent(agent), &memoryv1.IngestEpisodeRequest{AgentId: agent, Episode: ep})
	require.NoError(e.t, err)
	return resp
}

// rest serves the real REST edge in front of this proposal-apply and
// returns its URL and a token for the agent.
func (e *env) rest(agent string) (url, token string) {
	e.t.Helper()
	h, err := gateway.New(context.Background(), gateway.Conns{ContextAssembly: e.server.Conn, SearchIndex: e.server.Conn,
		EntityGraph: e.server.Conn, ProposalApply: e.server.Conn}, gateway.Config{}, slog.New(slog.DiscardHandler))
	require.NoError(e.t, err)
	hs := httptest.NewServer(h)
	e.t.Cleanup(hs.Close)
	token, err = e.server.Signer.Mint("run-of-"+agent, []auth.Role{auth.RoleAgent}, []string{agent}, time.Hour)
	require.NoError(e.t, err)
	return hs.URL, token
}

func post(t testing.TB, url, token, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m), string(raw))
	return resp.StatusCode, m
}

// The spec's §12 example, POSTed as written to the documented REST path,
// is accepted and becomes one proposal, applied as one commit whose run file
// is the episode.
func TestIngestSpecExampleOverREST(t *testing.T) {
	e := newEnv(t, autoApprove)
	url, token := e.rest("coder")
	before := e.commitCount()

	code, body := post(t, url+"/v1/memory/coder/episodes", token, specEpisode)
	require.Equal(t, http.StatusOK, code, body)
	id, _ := body["episodeId"].(string)
	require.Regexp(t, `^ep-[0-9a-f]{12}$`, id)
	require.Equal(t, "runs/run_"+id+".md", body["runFile"])
	require.Equal(t, false, body["duplicate"])
	proposal := body["proposal"].(map[string]any)
	pid, _ := proposal["proposalId"].(string)
	require.NotEmpty(t, pid)
	require.Equal(t, "coder", proposal["agentId"])

	p := e.waitApplied(pid)
	require.Equal(t, "run_"+id, p.GetRunId())
	require.Equal(t, "episode:"+id, p.GetIdempotencyKey())
	require.Equal(t, "episode "+id+": Updated protocol to SQLite graph + Chroma vectors + Ollama embeddings", p.GetReasoning())
	require.Equal(t, before+1, e.commitCount(), "one episode, one commit")

	run := e.file("coder", "runs/run_"+id+".md")
	require.Equal(t, "# Episode "+id+"\n"+
		"\n"+
		"- **Episode:** [[episode:"+id+"]]\n"+
		"- **When:** 2025-12-30T11:00:00Z\n"+
		"- **Task:** [["+"task:"+episode.TaskID("Design local DB-first AI Skills memory protocol")+"|Design local DB-first AI Skills memory protocol]]\n"+
		"- **Outcome:** [[outcome:success]] — Spec updated\n"+
		"- **Skills used:** [[skill:docs]], [[skill:memory-design]]\n"+
		"- **Artifacts touched:** [[artifact:ai_skills/skills_graph_concept.md]]\n"+
		"\n"+
		"## Summary\n"+
		"\n"+
		"Updated protocol to SQLite graph + Chroma vectors + Ollama embeddings\n", run)

	// Posted again: the same proposal, flagged a duplicate, no new commit.
	code, again := post(t, url+"/v1/memory/coder/episodes", token, specEpisode)
	require.Equal(t, http.StatusOK, code, again)
	require.Equal(t, true, again["duplicate"])
	require.Equal(t, id, again["episodeId"])
	require.Equal(t, pid, again["proposal"].(map[string]any)["proposalId"])
	require.Equal(t, "applied", again["proposal"].(map[string]any)["status"])
	require.Equal(t, before+1, e.commitCount())

	// The agent's hint is a query parameter (the body is the episode).
	code, held := post(t, url+"/v1/memory/coder/episodes?auto_approve=false", token, `{"summary": "hold this one"}`)
	require.Equal(t, http.StatusOK, code, held)
	require.Equal(t, "pending", held["proposal"].(map[string]any)["status"])

	// A bad body is a 400 naming the field, and stores nothing.
	code, bad := post(t, url+"/v1/memory/coder/episodes", token, `{"summary": "x", "outcome": {"status": "done"}}`)
	require.Equal(t, http.StatusBadRequest, code, bad)
	details := bad["details"].([]any)[0].(map[string]any)
	require.Equal(t, "INVALID_ARGUMENT", details["reason"])
	require.Equal(t, "episode.outcome.status", details["metadata"].(map[string]any)["field"])
}

// The same over gRPC, and re-ingesting before and after the apply returns
// the same proposal: one proposal, one commit, whatever the retries.
func TestIngestIsIdempotent(t *testing.T) {
	e := newEnv(t, autoApprove)
	before := e.commitCount()
	first := e.ingest("coder", parseEpisode(t, specEpisode))
	require.False(t, first.GetDuplicate())
	require.Equal(t, "runs/run_"+first.GetEpisodeId()+".md", first.GetRunFile())

	// At once (maybe before the apply) and later, after it.
	second := e.ingest("coder", parseEpisode(t, specEpisode))
	require.True(t, second.GetDuplicate())
	require.Equal(t, first.GetProposal().GetProposalId(), second.GetProposal().GetProposalId())
	e.waitApplied(first.GetProposal().GetProposalId())
	e.clock.Advance(3 * time.Hour)
	third := e.ingest("coder", parseEpisode(t, specEpisode))
	require.True(t, third.GetDuplicate())
	require.Equal(t, first.GetProposal().GetProposalId(), third.GetProposal().GetProposalId())
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED, third.GetProposal().GetStatus())
	require.Equal(t, before+1, e.commitCount())

	// Without a timestamp, each ingest would stamp its own time; the id
	// (and so the proposal) is the same anyway.
	noTime := `{"summary": "Rotated the staging database password", "used_skills": ["security-review"]}`
	a := e.ingest("coder", parseEpisode(t, noTime))
	e.clock.Advance(time.Minute)
	b := e.ingest("coder", parseEpisode(t, noTime))
	require.Equal(t, a.GetEpisodeId(), b.GetEpisodeId())
	require.Equal(t, a.GetProposal().GetProposalId(), b.GetProposal().GetProposalId())
	require.True(t, b.GetDuplicate())

	// Identical ingests racing each other still make one proposal.
	racing := parseEpisode(t, `{"summary": "Raced eight times", "episode_id": "ep-race"}`)
	ids, errs := make([]string, 8), make([]error, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			resp, err := e.client.IngestEpisode(e.agent("coder"), &memoryv1.IngestEpisodeRequest{AgentId: "coder", Episode: racing})
			ids[i], errs[i] = resp.GetProposal().GetProposalId(), err
		})
	}
	wg.Wait()
	for i, id := range ids {
		require.NoError(t, errs[i])
		require.Equal(t, ids[0], id)
	}

	// Another agent's episode with the same content is its own.
	other := e.ingest("reviewer-bot", parseEpisode(t, specEpisode))
	require.False(t, other.GetDuplicate())
	require.NotEqual(t, first.GetProposal().GetProposalId(), other.GetProposal().GetProposalId())
}

// A failure episode with errors and a fix, facts and a decision: the run
// file as the format says, the facts under "## Learned", the decision in
// decisions.md — all in one commit.
func TestIngestFailureEpisode(t *testing.T) {
	e := newEnv(t, autoApprove)
	before := e.commitCount()
	ep := parseEpisode(t, `{
	  "episode_id": "ep-probe-1",
	  "timestamp": "2026-01-12T08:30:00Z",
	  "task_text": "Deploy payments-api 1.14 to staging",
	  "summary": "Rollout stalled: new pods never became ready.",
	  "used_skills": ["k8s-deploy", "Debugging"],
	  "touched_artifacts": ["./deploy/k8s/payments-api/deployment.yaml"],
	  "outcome": {"status": "failure", "severity": "medium"},
	  "errors": ["error: deployment \"payments-api\" exceeded its progress deadline", "Readiness probe failed: HTTP probe failed with statuscode: 404"],
	  "fix": "Point the readiness probe at /healthz instead of /health",
	  "tests": [{"name": "smoke", "result": "fail", "duration_ms": 1500}],
	  "environment": {"os": "linux", "runtime": "kubectl 1.33", "tooling": ["helm 3.16"]},
	  "context": "infra/k8s",
	  "facts": ["payments-api serves readiness at /healthz"],
	  "decisions": [{"title": "Probe paths are checked in CI", "rationale": "The same mistake twice."}],
	  "duration": "1100s"
	}`)
	resp := e.ingest("coder", ep)
	require.Equal(t, "ep-probe-1", resp.GetEpisodeId())
	p := e.waitApplied(resp.GetProposal().GetProposalId())
	require.Equal(t, before+1, e.commitCount(), "run file, facts and decision in one commit")
	require.Equal(t, 1100*time.Second, p.GetRunDuration().AsDuration())

	require.Equal(t, "# Episode ep-probe-1\n"+
		"\n"+
		"- **Episode:** [[episode:ep-probe-1]]\n"+
		"- **When:** 2026-01-12T08:30:00Z\n"+
		"- **Task:** [[task:"+episode.TaskID("Deploy payments-api 1.14 to staging")+"|Deploy payments-api 1.14 to staging]]\n"+
		"- **Outcome:** [[outcome:failure]] (severity: medium)\n"+
		"- **Context:** [[context:infra/k8s]]\n"+
		"- **Skills used:** [[skill:k8s-deploy]], [[skill:debugging]]\n"+
		"- **Artifacts touched:** [[artifact:deploy/k8s/payments-api/deployment.yaml]]\n"+
		"- **Failure mode:** [[failure-mode:error: deployment {str} exceeded its progress deadline]]\n"+
		"- **Fix:** [[fix:Point the readiness probe at /healthz instead of /health]]\n"+
		"- **Tests:** [[test:smoke]] fail (1500 ms)\n"+
		"- **Environment:** [[environment:linux-kubectl-1.33]] linux, kubectl 1.33, helm 3.16\n"+
		"- **Duration:** 18m20s\n"+
		"\n"+
		"## Summary\n"+
		"\n"+
		"Rollout stalled: new pods never became ready.\n"+
		"\n"+
		"## Errors\n"+
		"\n"+
		"- error: deployment \"payments-api\" exceeded its progress deadline\n"+
		"- Readiness probe failed: HTTP probe failed with statuscode: 404\n"+
		"\n"+
		"## Facts\n"+
		"\n"+
		"- payments-api serves readiness at /healthz\n", e.file("coder", "runs/run_ep-probe-1.md"))
	facts := e.file("coder", "facts.md")
	require.Contains(t, facts, "## Learned\n")
	require.Contains(t, facts, "- payments-api serves readiness at /healthz\n")
	decisions := e.file("coder", "decisions.md")
	require.Contains(t, decisions, "Probe paths are checked in CI")
	require.Contains(t, decisions, "run_ep-probe-1")
}

// Every bad input is refused with InvalidArgument naming the episode field,
// and nothing is stored: no proposal, no commit.
func TestIngestRejectsBadInput(t *testing.T) {
	e := newEnv(t, autoApprove)
	before := e.commitCount()
	cases := []struct{ name, body, field string }{
		{"status", `{"summary": "x", "outcome": {"status": "done"}}`, "episode.outcome.status"},
		{"severity", `{"summary": "x", "outcome": {"severity": "urgent"}}`, "episode.outcome.severity"},
		{"schema version", `{"schema_version": "2", "summary": "x"}`, "episode.schema_version"},
		{"test result", `{"summary": "x", "tests": [{"name": "t", "result": "ok"}]}`, "episode.tests[0].result"},
		{"neither summary nor task", `{"used_skills": ["go"]}`, "episode.summary"},
		{"episode id", `{"episode_id": "Has Spaces", "summary": "x"}`, "episode.episode_id"},
		{"skill", `{"summary": "x", "used_skills": ["???"]}`, "episode.used_skills[0]"},
		{"fact heading", `{"summary": "x", "facts": ["## not a fact"]}`, "episode.facts[0]"},
		{"script", `{"summary": "<script>alert(1)</script>"}`, "episode.summary"},
		{"too many facts", `{"summary": "x", "facts": [` + strings.TrimSuffix(strings.Repeat(`"f",`, 21), ",") + `]}`, "episode.facts"},
		// Found by the propose path's plan, renamed after the episode field.
		{"decision field label", `{"summary": "x", "decisions": [{"title": "T", "rationale": "**Status:** smuggled"}]}`, "episode.decisions[0].rationale"},
		{"run file over its token limit", `{"summary": "x", "errors": [` + manyErrors(20, 3000) + `]}`, "episode"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.client.IngestEpisode(e.agent("coder"), &memoryv1.IngestEpisodeRequest{AgentId: "coder", Episode: parseEpisode(t, c.body)})
			require.Equal(t, codes.InvalidArgument, status.Code(err), err)
			info := apierr.Info(err)
			require.NotNil(t, info, err)
			require.Equal(t, c.field, info.GetMetadata()["field"], err)
			msg := status.Convert(err).Message()
			require.NotContains(t, msg, "updates[", "the message names the episode's field, not the proposal's")
			require.Contains(t, msg, c.field)
		})
	}
	_, err := e.client.IngestEpisode(e.agent("coder"), &memoryv1.IngestEpisodeRequest{AgentId: "coder"})
	require.Equal(t, "episode", apierr.Info(err).GetMetadata()["field"])
	_, err = e.client.IngestEpisode(e.service(), &memoryv1.IngestEpisodeRequest{AgentId: "Bad Agent", Episode: parseEpisode(t, specEpisode)})
	require.Equal(t, "agentId", apierr.Info(err).GetMetadata()["field"])

	list, err := e.client.ListProposals(e.service(), &memoryv1.ListProposalsRequest{})
	require.NoError(t, err)
	require.Empty(t, list.GetProposals(), "nothing stored")
	require.Equal(t, before, e.commitCount(), "nothing committed")
}

// manyErrors is n distinct JSON strings of about size bytes each.
func manyErrors(n, size int) string {
	var parts []string
	for i := range n {
		parts = append(parts, `"error `+strings.Repeat(string(rune('a'+i))+"x ", size/3)+`"`)
	}
	return strings.Join(parts, ",")
}

// The same roles as Propose: an agent's token reaches only its agent; a
// reviewer cannot ingest.
func TestIngestNeedsTheAgentsToken(t *testing.T) {
	e := newEnv(t, autoApprove)
	ep := parseEpisode(t, specEpisode)
	_, err := e.client.IngestEpisode(e.agent("other"), &memoryv1.IngestEpisodeRequest{AgentId: "coder", Episode: ep})
	require.Equal(t, codes.PermissionDenied, status.Code(err), err)
	_, err = e.client.IngestEpisode(e.reviewer(), &memoryv1.IngestEpisodeRequest{AgentId: "coder", Episode: ep})
	require.Equal(t, codes.PermissionDenied, status.Code(err), err)
	_, err = e.client.IngestEpisode(context.Background(), &memoryv1.IngestEpisodeRequest{AgentId: "coder", Episode: ep})
	require.Equal(t, codes.Unauthenticated, status.Code(err), err)
	// Unauthorised callers learn nothing from validation either.
	_, err = e.client.IngestEpisode(e.agent("other"), &memoryv1.IngestEpisodeRequest{AgentId: "coder", Episode: &memoryv1.Episode{}})
	require.Equal(t, codes.PermissionDenied, status.Code(err), err)

	resp, err := e.client.IngestEpisode(e.service(), &memoryv1.IngestEpisodeRequest{AgentId: "coder", Episode: ep})
	require.NoError(t, err)
	require.Equal(t, "orchestrator", resp.GetProposal().GetProposal().GetProposedBy())
}

// The policy decides as for any proposal: the agent's hint false waits for a
// person; entity refs the episode's own links bring are not unknown.
func TestIngestFollowsThePolicy(t *testing.T) {
	e := newEnv(t, autoApprove)
	no := false
	resp, err := e.client.IngestEpisode(e.agent("coder"), &memoryv1.IngestEpisodeRequest{AgentId: "coder",
		Episode: parseEpisode(t, `{"summary": "needs a look"}`), AutoApprove: &no})
	require.NoError(t, err)
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, resp.GetProposal().GetStatus())

	strict := newEnv(t)
	resp, err = strict.client.IngestEpisode(strict.agent("coder"), &memoryv1.IngestEpisodeRequest{AgentId: "coder",
		Episode: parseEpisode(t, specEpisode)})
	require.NoError(t, err)
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, resp.GetProposal().GetStatus())
	require.Equal(t, memoryv1.StatusReason_STATUS_REASON_AWAITING_REVIEW, resp.GetProposal().GetProposal().GetReason())
}

// Every line of examples/episodes.jsonl ingests without error and applies:
// one commit per episode.
func TestIngestExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("applies every example episode")
	}
	e := newEnv(t, autoApprove)
	f, err := os.Open(filepath.Join("..", "..", "examples", "episodes.jsonl"))
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	before := e.commitCount()
	var ids []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; sc.Scan(); line++ {
		resp, err := e.client.IngestEpisode(e.agent("coder"), &memoryv1.IngestEpisodeRequest{AgentId: "coder", Episode: parseEpisode(t, sc.Text())})
		require.NoError(t, err, "line %d", line)
		require.False(t, resp.GetDuplicate(), "line %d", line)
		require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED, resp.GetProposal().GetStatus(),
			"line %d: %s", line, resp.GetProposal().GetProposal().GetMessage())
		ids = append(ids, resp.GetProposal().GetProposalId())
	}
	require.NoError(t, sc.Err())
	require.GreaterOrEqual(t, len(ids), 60)
	for _, id := range ids {
		e.waitApplied(id)
	}
	require.Equal(t, before+len(ids), e.commitCount(), "one commit per episode")
	require.Contains(t, e.file("coder", "facts.md"), "## Learned\n")
}

// benchmarkIngest ingests the example episodes (each under a fresh id) over
// gRPC from `clients` concurrent clients, all for one agent, and waits for
// all of them to be applied: episodes per second end to end, one commit
// each. b.N episodes in all.
func benchmarkIngest(b *testing.B, clients int) {
	e := newEnv(b, autoApprove)
	e.clock.real = true
	raw, err := os.ReadFile(filepath.Join("..", "..", "examples", "episodes.jsonl"))
	require.NoError(b, err)
	var examples []*memoryv1.Episode
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		examples = append(examples, parseEpisode(b, l))
	}
	ctx := e.agent("coder")
	var next atomic.Int64
	ids := make([]string, b.N)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				ep := proto.Clone(examples[i%len(examples)]).(*memoryv1.Episode)
				ep.EpisodeId = fmt.Sprintf("ep-bench-%d", i)
				if i >= len(examples) {
					// A fact appended twice is flagged for a person (the
					// semantic guard); later rounds carry none.
					ep.Facts = nil
				}
				resp, err := e.client.IngestEpisode(ctx, &memoryv1.IngestEpisodeRequest{AgentId: "coder", Episode: ep})
				require.NoError(b, err)
				ids[i] = resp.GetProposal().GetProposalId()
			}
		})
	}
	wg.Wait()
	accepted := time.Since(start)
	for _, id := range ids {
		e.waitApplied(id)
	}
	b.ReportMetric(float64(b.N)/accepted.Seconds(), "accepted/s")
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "applied/s")
}

// One client after another: each ingest waits for its own durable write.
func BenchmarkIngestEpisode(b *testing.B) { benchmarkIngest(b, 1) }

// Eight clients, as memctl ingest runs them: durable writes are shared.
func BenchmarkIngestEpisode8(b *testing.B) { benchmarkIngest(b, 8) }
