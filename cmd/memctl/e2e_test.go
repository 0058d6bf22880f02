package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// specExample is the episode of ai-skills-memory-protocol §12, verbatim.
const specExample = `{
  "timestamp": "2025-12-30T13:00:00+02:00",
  "task_text": "Design local DB-first AI Skills memory protocol",
  "summary": "Updated protocol to SQLite graph + Chroma vectors + Ollama embeddings",
  "used_skills": ["docs", "memory-design"],
  "touched_artifacts": ["ai_skills/skills_graph_concept.md"],
  "outcome": {"status": "success", "notes": "Spec updated"},
  "errors": [],
  "tests": []
}`

// dayEpisodes are varied episodes of one agent's day: successes and
// failures with fixes, tests, environments, contexts and a decision.
var dayEpisodes = []string{
	strings.Join(strings.Fields(specExample), " "),
	`{"episode_id": "ep-refund-keys", "timestamp": "2026-01-05T09:12:00Z", "task_text": "Add idempotency keys to the refunds API", "summary": "Added an Idempotency-Key header to POST /v1/refunds; replays return the stored response.", "used_skills": ["api-design", "go-testing"], "touched_artifacts": ["services/payments/refunds/handler.go"], "outcome": {"status": "success"}, "tests": [{"name": "TestRefundReplay", "result": "pass", "duration_ms": 84}], "environment": {"os": "linux", "runtime": "go1.26"}, "context": "backend/payments/refunds", "facts": ["Refund idempotency keys are scoped per merchant"], "decisions": [{"title": "Refund idempotency keys live in Postgres", "context": "Replays must survive a cache flush.", "decision": "Store keys in refund_requests.", "rationale": "One transaction covers the refund and its key."}]}`,
	`{"episode_id": "ep-refund-migration", "timestamp": "2026-01-05T14:40:00Z", "task_text": "Run the refund migration on staging", "summary": "The migration failed on staging: a unique constraint already existed.", "used_skills": ["sql-migrations", "debugging"], "touched_artifacts": ["migrations/0042_refund_requests.sql"], "outcome": {"status": "failure", "severity": "medium"}, "errors": ["pq: duplicate key value violates unique constraint \"refund_requests_pkey\""], "fix": "Make the migration idempotent with IF NOT EXISTS", "context": "backend/payments/refunds"}`,
	`{"episode_id": "ep-refund-migration-2", "timestamp": "2026-01-06T08:55:00Z", "task_text": "Re-run the refund migration after making it idempotent", "summary": "The migration now applies cleanly and is a no-op on a second run.", "used_skills": ["sql-migrations"], "touched_artifacts": ["migrations/0042_refund_requests.sql"], "outcome": {"status": "success"}, "tests": [{"name": "migrate-up-twice", "result": "pass"}], "context": "backend/payments/refunds"}`,
	`{"episode_id": "ep-ci-postgres", "timestamp": "2026-01-06T11:20:00Z", "task_text": "Fix the failing integration tests in CI", "summary": "Integration tests could not reach Postgres: the job started before the service was healthy.", "used_skills": ["ci-pipelines", "debugging"], "touched_artifacts": [".github/workflows/ci.yml"], "outcome": {"status": "failure", "severity": "low"}, "errors": ["dial tcp 127.0.0.1:5432: connect: connection refused"], "fix": "Wait for the postgres health check before integration tests", "tests": [{"name": "TestLedgerIntegration", "result": "fail"}], "context": "infra/ci"}`,
}

// Issue #27 "Done when", as one agent's day against a real memoryd: init,
// ingest --wait, search --expand, export-onboarding, and the daily work,
// every command's JSON output checked.
func TestADayOfWork(t *testing.T) {
	s := server(t)
	const agent = "e2e-day"
	c := memctlFor(t, s, s.operator(t))

	// init: a template, a fact and a loop; the onboarding waits for a
	// reviewer (default policy), --approve approves it, then the facts
	// and loops follow as a second proposal.
	doc := c.jsonOK("init", agent, "--template", "coding-agent", "--fact", "Build: make build, then make test",
		"--loop", "Fix the flaky CI job", "--approve")
	require.Equal(t, agent, doc["agentId"])
	require.NotEmpty(t, get(doc, "onboarding", "proposalId"))
	require.Equal(t, "applied", get(doc, "onboarding", "status"))
	require.NotEmpty(t, get(doc, "additions", "proposalId"))
	require.Contains(t, []any{"approved", "applying", "applied"}, get(doc, "additions", "status"))
	c.fails(exitConflict, "ALREADY_EXISTS", "init", agent)

	require.Eventually(t, func() bool {
		r := c.run("read", agent, "--mode", "wide", "-o", "json")
		return r.code == 0 && strings.Contains(r.stdout, "make build, then make test") && strings.Contains(r.stdout, "Fix the flaky CI job")
	}, 30*time.Second, 50*time.Millisecond, "read shows the init's fact and loop")
	read := c.jsonOK("read", agent, "--mode", "wide")
	require.Equal(t, "wide", read["mode"])
	require.Contains(t, get(read, "content", "snapshot.md"), "## Role")
	require.NotEmpty(t, list(read["files"]))
	snap := c.jsonOK("snapshot", "create", agent, "--label", "day-one")
	require.Equal(t, "snapshot_day-one", snap["snapshotId"])

	// ingest --wait: every episode one proposal, applied, its run file at
	// HEAD of the real repository.
	episodes := writeFile(t, "day.jsonl", strings.Join(dayEpisodes, "\n")+"\n")
	ing := c.jsonOK("ingest", episodes, "--agent", agent, "--wait", "--approve")
	require.EqualValues(t, len(dayEpisodes), ing["episodes"])
	require.EqualValues(t, len(dayEpisodes), ing["applied"], "%v", ing)
	require.EqualValues(t, 0, ing["duplicates"])
	tree := s.git(t, "ls-tree", "-r", "--name-only", "main", "memory/"+agent+"/runs/")
	var proposals []string
	for _, r := range list(ing["results"]) {
		require.Equal(t, "applied", get(r, "status"), "%v", r)
		require.Contains(t, tree, "memory/"+agent+"/"+get(r, "runFile").(string))
		proposals = append(proposals, get(r, "proposalId").(string))
	}
	require.Equal(t, "ep-refund-keys", get(ing, "results", 1, "episodeId"))
	head := s.git(t, "rev-parse", "main")

	// Re-ingesting is idempotent: the same proposals, no new commit.
	again := c.jsonOK("ingest", episodes, "--agent", agent, "--wait")
	require.EqualValues(t, len(dayEpisodes), again["duplicates"])
	require.EqualValues(t, len(dayEpisodes), again["applied"])
	for i, r := range list(again["results"]) {
		require.Equal(t, proposals[i], get(r, "proposalId"))
	}
	require.Equal(t, head, s.git(t, "rev-parse", "main"))

	// log, diff, context, status.
	logDoc := c.jsonOK("log", agent, "--limit", "3")
	require.Len(t, list(logDoc["commits"]), 3)
	require.Equal(t, strings.TrimSpace(head), get(logDoc, "commits", 0, "sha"))
	diff := c.jsonOK("diff", agent, "--from", "HEAD~2", "--format", "facts")
	require.NotEmpty(t, diff["summary"])
	ctxDoc := c.jsonOK("context", agent, "--query", "refund idempotency")
	require.NotEmpty(t, list(ctxDoc["sections"]))
	require.Equal(t, agent, ctxDoc["agentId"])
	st := c.jsonOK("status", agent)
	require.GreaterOrEqual(t, get(st, "meta", "version"), float64(7))
	require.EqualValues(t, len(dayEpisodes), st["runs"])
	srv := c.jsonOK("status")
	for _, v := range srv["services"].(map[string]any) {
		require.Equal(t, "serving", v)
	}

	// search: BM25 hits; --expand ranks graph neighbours; --context-text
	// keeps to the episodes of the contexts the text names.
	hits := c.jsonOK("search", "make build", "--agent", agent)
	require.Contains(t, get(hits, "results", 0, "file"), "memory/"+agent+"/facts.md")
	require.Eventually(t, func() bool {
		r := c.run("search", "migration staging", "--agent", agent, "--expand", "-o", "json")
		if r.code != 0 {
			return false
		}
		x := r.json(t)
		return slices.Contains(entityLabels(x, "episode"), "ep-refund-migration") && slices.Contains(entityLabels(x, "skill"), "sql-migrations")
	}, 30*time.Second, 100*time.Millisecond, "search --expand reaches the episode and its skill through the graph")
	x := c.jsonOK("search", "migration staging", "--agent", agent, "--expand")
	require.NotEmpty(t, list(x["hits"]))
	require.NotEmpty(t, list(x["seeds"]))
	require.Contains(t, x["formula"], "spreading activation")
	scoped := c.jsonOK("search", "tests", "--agent", agent, "--context-text", "the CI pipeline is red again")
	require.Equal(t, []any{"infra/ci"}, scoped["contextScope"])
	for _, e := range entityLabels(scoped, "episode") {
		require.Equal(t, "ep-ci-postgres", e, "only the infra/ci episode is in scope")
	}

	// entities: list, get, neighbors, why.
	skills := c.jsonOK("entities", "list", "--agent", agent, "--type", "skill", "--limit", "100")
	var skillID string
	for _, e := range list(skills["entities"]) {
		if get(e, "label") == "sql-migrations" {
			skillID = get(e, "entity_id").(string)
		}
	}
	require.NotEmpty(t, skillID, "%v", skills)
	ent := c.jsonOK("entities", "get", skillID)
	require.Equal(t, skillID, get(ent, "entity", "entity_id"))
	require.Equal(t, "skill", get(ent, "entity", "type"))
	nb := c.jsonOK("entities", "neighbors", skillID, "--relation", "used_skill")
	require.NotEmpty(t, list(nb["edges"]))
	for _, e := range list(nb["edges"]) {
		require.Equal(t, "used_skill", get(e, "relation"))
	}
	why := c.jsonOK("entities", "why", "--query", "Refund idempotency keys")
	require.NotEmpty(t, list(why["chain"]))

	// proposals: one waits for a reviewer; show renders the diff it would
	// commit; reject and approve; retry of an applied one is a conflict.
	pendingDoc := c.jsonOK("ingest", writeFile(t, "one.json", `{"episode_id": "ep-pending-1", "task_text": "Review the payout report", "summary": "Checked the weekly payout report.", "outcome": {"status": "partial"}}`), "--agent", agent)
	pending := get(pendingDoc, "results", 0, "proposalId").(string)
	require.Equal(t, "pending", get(pendingDoc, "results", 0, "status"))
	listed := c.jsonOK("proposals", "list", "--agent", agent, "--status", "pending")
	require.Equal(t, pending, get(listed, "proposals", 0, "proposalId"))
	show := c.ok("proposals", "show", pending)
	require.Contains(t, show.stdout, "diff this proposal would commit if applied now")
	require.Contains(t, show.stdout, "+++ b/runs/run_ep-pending-1.md")
	require.Contains(t, show.stdout, "+- **Episode:** [[episode:ep-pending-1]]")
	showJSON := c.jsonOK("proposals", "show", pending)
	require.Equal(t, pending, showJSON["proposalId"])
	require.Equal(t, "write_run", get(showJSON, "updates", 0, "operation"))
	require.NotContains(t, show.stdout, "+++ b/meta.json", "bookkeeping only with --all")
	require.Contains(t, show.stdout, "bookkeeping files not shown: --all")
	require.Contains(t, c.ok("proposals", "show", pending, "--all").stdout, "+++ b/meta.json")
	rej := c.jsonOK("proposals", "reject", pending, "--reason", "not today")
	require.Equal(t, "rejected", get(rej, "proposal", "status"))
	c.fails(exitConflict, "INVALID_TRANSITION", "proposals", "approve", pending)
	require.Contains(t, c.ok("proposals", "show", pending).stdout, "diff this proposal would have committed (on the current files")

	second := c.jsonOK("ingest", writeFile(t, "two.yaml", "episode_id: ep-pending-2\ntask_text: Review the ledger report\nsummary: Checked the ledger.\noutcome:\n  status: success\n"), "--agent", agent)
	approveID := get(second, "results", 0, "proposalId").(string)
	// What show previews before approval is what the commit then holds.
	previewed := runFileDiff(t, c.ok("proposals", "show", approveID).stdout, "run_ep-pending-2.md")
	app := c.jsonOK("proposals", "approve", approveID, "--comment", "fine")
	require.Contains(t, []any{"approved", "applying", "applied"}, get(app, "proposal", "status"))
	require.Eventually(t, func() bool {
		r := c.run("proposals", "show", approveID, "-o", "json")
		return r.code == 0 && r.json(t)["status"] == "applied"
	}, 30*time.Second, 50*time.Millisecond)
	applied := c.ok("proposals", "show", approveID)
	require.Contains(t, applied.stdout, "diff of commit")
	require.Contains(t, applied.stdout, "+++ b/runs/run_ep-pending-2.md")
	require.Equal(t, previewed, runFileDiff(t, applied.stdout, "run_ep-pending-2.md"))
	c.fails(exitConflict, "INVALID_TRANSITION", "proposals", "retry", approveID)

	// snapshots (day-one was taken before the episodes) and backup.
	snaps := c.jsonOK("snapshot", "list", agent)
	require.Equal(t, "snapshot_day-one", get(snaps, "snapshots", 0, "snapshotId"))
	restore := c.jsonOK("snapshot", "restore", agent, "snapshot_day-one", "--reason", "drill")
	require.NotEmpty(t, get(restore, "proposal", "proposalId"))
	c.ok("proposals", "reject", get(restore, "proposal", "proposalId").(string), "--reason", "only a drill")
	backup := c.jsonOK("backup")
	require.NotEmpty(t, backup["storedAt"])
	require.Equal(t, strings.TrimSpace(s.git(t, "rev-parse", "main")), backup["headCommit"])

	// TTL and stale facts.
	stale := c.jsonOK("stale", agent)
	require.Contains(t, stale, "facts")
	ttl := c.jsonOK("stale", "set-ttl", agent, "Refund idempotency keys are scoped per merchant", "--ttl", "30d", "--on-expire", "archive")
	ttlProposal := get(ttl, "proposal", "proposalId").(string)
	expires, err := time.Parse(time.RFC3339Nano, ttl["expiresAt"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(30*24*time.Hour), expires, time.Hour)
	if get(ttl, "proposal", "status") == "pending" {
		c.ok("proposals", "approve", ttlProposal)
	}
	require.Eventually(t, func() bool {
		r := c.run("diff", agent, "--from", "HEAD~1", "--file", "facts.md", "-o", "json")
		return r.code == 0 && strings.Contains(r.stdout, "Refund idempotency keys are scoped per merchant")
	}, 30*time.Second, 100*time.Millisecond, "the TTL is written into facts.md, so git shows it")
	stale = c.jsonOK("stale", agent, "--archived")
	require.Empty(t, stale["facts"], "nothing has expired yet")
	c.fails(exitUsage, "INVALID_ARGUMENT", "stale", "set-ttl", agent, "No such fact anywhere", "--ttl", "30d")

	// export-onboarding: skills with counts and success rates, failure
	// modes with their fixes, key facts, open loops, decisions.
	out := filepath.Join(t.TempDir(), "onboarding_snapshot.yaml")
	r := c.ok("export-onboarding", "--agent", agent, "--out", out)
	require.Contains(t, r.stdout, "wrote "+out)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	var snapshot map[string]any
	require.NoError(t, yaml.Unmarshal(b, &snapshot))
	require.Equal(t, []any{agent}, snapshot["agents"])
	var sql map[string]any
	for _, sk := range list(snapshot["skills"]) {
		if get(sk, "skill") == "sql-migrations" {
			sql = sk.(map[string]any)
		}
	}
	require.NotNil(t, sql, "%s", b)
	require.Equal(t, 2, sql["episodes"])
	require.Equal(t, 1, sql["successes"])
	require.InDelta(t, 0.5, sql["success_rate"], 1e-9)
	require.NotEmpty(t, list(snapshot["failure_modes"]))
	var fixes []string
	for _, fm := range list(snapshot["failure_modes"]) {
		for _, f := range list(get(fm, "fixes")) {
			fixes = append(fixes, f.(string))
		}
	}
	require.Contains(t, strings.Join(fixes, "\n"), "IF NOT EXISTS", "%s", b)
	require.Contains(t, string(b), "make build, then make test")
	require.Contains(t, string(b), "Fix the flaky CI job")
	require.Contains(t, string(b), "Refund idempotency keys live in Postgres")
	contexts := ""
	for _, cx := range list(snapshot["contexts"]) {
		contexts += get(cx, "path").(string) + "\n"
	}
	require.Contains(t, contexts, "backend/payments/refunds")

	js := c.ok("export-onboarding", "--agent", agent, "--out", "-", "-o", "json").json(t)
	require.Equal(t, "1", js["schema_version"])
}

// entityLabels are the labels of the ranked entities of a type.
func entityLabels(doc map[string]any, typ string) []string {
	var out []string
	for _, e := range list(doc["entities"]) {
		if get(e, "type") == typ {
			out = append(out, get(e, "label").(string))
		}
	}
	return out
}

// Issue #27: exit codes for not found, unauthorized, conflict and
// unavailable, each with the server's reason on one line.
func TestExitCodesFollowTheServersReasons(t *testing.T) {
	s := server(t)
	c := memctlFor(t, s, s.operator(t))
	c.fails(exitNotFound, "AGENT_NOT_FOUND", "read", "no-such-agent")
	c.fails(exitNotFound, "PROPOSAL_NOT_FOUND", "proposals", "show", "proposal_doesnotexist0000000000")
	c.fails(exitNotFound, "ENTITY_NOT_FOUND", "entities", "get", "no-such-entity-anywhere")
	c.fails(exitUsage, "INVALID_AGENT_ID", "read", "Not_A_Slug")

	c.ok("init", "exit-codes", "--approve")
	c.fails(exitConflict, "ALREADY_EXISTS", "init", "exit-codes")

	anon := memctlFor(t, s, "")
	r := anon.fails(exitDenied, "UNAUTHENTICATED", "read", "exit-codes")
	require.Empty(t, r.stdout)
	stranger := memctlFor(t, s, s.agentToken(t, "someone-else"))
	stranger.fails(exitDenied, "PERMISSION_DENIED", "read", "exit-codes")
	stranger.fails(exitDenied, "PERMISSION_DENIED", "backup")

	down := memctlFor(t, s, s.operator(t))
	down.env[envAddr] = "127.0.0.1:1"
	down.fails(exitUnavailable, "UNAVAILABLE", "read", "exit-codes")
	down.fails(exitUnavailable, "UNAVAILABLE", "status")
}

// Issue #27 / CONVENTIONS: "Every bad input gets a precise error and
// changes nothing" — an unknown field or an invalid episode anywhere in a
// batch names its file and line, and no episode of the batch is sent.
func TestIngestOfABadBatchNamesTheLineAndSendsNothing(t *testing.T) {
	s := server(t)
	const agent = "e2e-bad-batch"
	c := memctlFor(t, s, s.operator(t))
	good := `{"task_text": "Fine", "summary": "ok", "outcome": {"status": "success"}}`
	path := writeFile(t, "batch.jsonl", good+"\n"+`{"task_text": "Typo", "sumary": "x"}`+"\n")
	r := c.fails(exitUsage, "USAGE", "ingest", path, "--agent", agent)
	require.Contains(t, r.stderr, "batch.jsonl:2")
	require.Contains(t, r.stderr, "sumary")

	path = writeFile(t, "batch2.jsonl", good+"\n\n"+`{"task_text": "Bad outcome", "outcome": {"status": "great"}}`+"\n")
	r = c.fails(exitUsage, "USAGE", "ingest", path, "--agent", agent)
	require.Contains(t, r.stderr, "batch2.jsonl:3")
	require.Contains(t, r.stderr, "outcome")
	require.Contains(t, r.stderr, "nothing was ingested")

	r = c.fails(exitUsage, "USAGE", "ingest", writeFile(t, "noagent.json", good))
	require.Contains(t, r.stderr, "--agent")

	list := c.jsonOK("proposals", "list", "--agent", agent)
	require.Empty(t, list["proposals"], "nothing was proposed")
}

// Issue #27: "--wait until applied": proposals that wait for a reviewer are
// reported, and the exit code says not everything was applied.
func TestIngestWaitReportsProposalsAwaitingReview(t *testing.T) {
	s := server(t)
	const agent = "e2e-awaiting"
	c := memctlFor(t, s, s.operator(t))
	path := writeFile(t, "eps.yaml", "task_text: One\nsummary: first\n---\ntask_text: Two\nsummary: second\n")
	r := c.run("ingest", path, "--agent", agent, "--wait", "-o", "json")
	require.Equal(t, exitError, r.code, r.String())
	doc := r.json(t)
	require.EqualValues(t, 2, doc["awaitingReview"])
	require.EqualValues(t, 0, doc["applied"])
	require.Contains(t, r.stderr, "memctl: INGEST: 2 of 2 episodes were not applied")
	require.Contains(t, r.stderr, "ingested 2 episodes")
	// Approving them as the ingest goes makes it succeed.
	doc = c.jsonOK("ingest", path, "--agent", agent, "--wait", "--approve")
	require.EqualValues(t, 2, doc["applied"])
	require.EqualValues(t, 2, doc["duplicates"])
}

// An agent's own token ingests its episodes (and only its own).
func TestAgentTokenIngestsOnlyItsOwnEpisodes(t *testing.T) {
	s := server(t)
	const agent = "e2e-agent-token"
	op := memctlFor(t, s, s.operator(t))
	op.ok("init", agent, "--approve")
	c := memctlFor(t, s, s.agentToken(t, agent))
	path := writeFile(t, "one.json", specExample)
	doc := c.jsonOK("ingest", path, "--agent", agent)
	require.EqualValues(t, 1, doc["episodes"])
	r := c.run("ingest", path, "--agent", "e2e-someone-else")
	require.Equal(t, exitDenied, r.code, r.String())
	require.Contains(t, r.stderr, "PERMISSION_DENIED")
}

// runFileDiff cuts the unified diff of runs/<name> out of proposals show's
// output: its hunks, up to the next file's header or the first line that is
// no diff line.
func runFileDiff(t testing.TB, out, name string) string {
	t.Helper()
	_, rest, ok := strings.Cut(out, "--- /dev/null\n+++ b/runs/"+name+"\n")
	require.True(t, ok, "no diff of runs/%s in:\n%s", name, out)
	var b strings.Builder
	for line := range strings.SplitAfterSeq(rest, "\n") {
		if strings.HasPrefix(line, "--- ") || line == "" || !strings.ContainsAny(line[:1], " +-@\\") {
			break
		}
		b.WriteString(line)
	}
	require.NotEmpty(t, b.String())
	return b.String()
}
