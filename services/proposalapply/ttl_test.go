package proposalapply

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

// The test clock starts at 2026-02-17T14:30:00Z (harness_test.go).

// seedFacts appends facts to sections of an agent's facts.md and waits for
// the commit.
func seedFacts(e *env, agent string, sections ...[2]string) {
	e.t.Helper()
	var updates []*memoryv1.FileUpdate
	for _, s := range sections {
		updates = append(updates, appendFact(s[0], s[1]))
	}
	resp := e.propose(&memoryv1.ProposeRequest{AgentId: agent, RunId: "run_seed", Updates: updates})
	e.waitApplied(resp.GetProposalId())
}

func (e *env) proposalCount(agent string) int {
	e.t.Helper()
	resp, err := e.client.ListProposals(e.service(), &memoryv1.ListProposalsRequest{AgentId: agent})
	require.NoError(e.t, err)
	return len(resp.GetProposals())
}

// requireInvalid checks an error's code, reason and field.
func requireInvalid(t *testing.T, err error, reason, field, says string) {
	t.Helper()
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	info := apierr.Info(err)
	require.Equal(t, reason, info.GetReason(), "%v", err)
	require.Equal(t, field, info.GetMetadata()["field"], "%v", err)
	require.Contains(t, status.Convert(err).Message(), says)
}

// "Propose with an APPEND whose content carries a valid marker is accepted
// as is; a malformed marker (bad time, unknown action) is refused with
// INVALID_CONTENT naming the problem." Nothing is stored for a refusal.
func TestProposeTTLMarkers(t *testing.T) {
	e := newEnv(t, autoApprove)
	facts := "- The staging DB is pg15 _(expires 2026-12-04T10:00:00Z, then archive)_\n" +
		"- Redis runs 7.2 _(stale since 2026-01-01T00:00:00Z)_\n" +
		"- Bob was on call _(expires 2026-01-01T00:00:00Z, then delete)_\n" + // already run out: kept as is
		"- The TLS certificate expires 2027-01-01T00:00:00Z\n"
	seedFacts(e, "mk", [2]string{"Infra", facts})
	require.Contains(t, e.file("mk", "facts.md"), "## Infra\n"+facts, "accepted byte for byte")

	n, commits := e.proposalCount("mk"), e.commitCount()
	for _, tc := range []struct{ content, says string }{
		{"- ok\n- The DB is pg15 _(expires 2026-12-04T10:00:00Z, then forget)_", `line 2: malformed TTL marker: unknown action "forget"`},
		{"- The DB is pg15 _(expires next week)_", `line 1: malformed TTL marker: time "next week" is not RFC 3339`},
		{"- The DB is pg15 _(stale since 2026-12-04)_", `time "2026-12-04" is not RFC 3339`},
		{"- _(expires 2026-12-04T10:00:00Z)_", "has no fact before it"},
		{"- x _(expires 2026-12-04T10:00:00Z)_ _(stale since 2026-12-04T10:00:00Z)_", "more than one TTL marker"},
	} {
		_, err := e.client.Propose(e.service(), &memoryv1.ProposeRequest{AgentId: "mk", RunId: "run_bad",
			Updates: []*memoryv1.FileUpdate{appendFact("Infra", tc.content)}})
		requireInvalid(t, err, "INVALID_CONTENT", "updates[0].content", tc.says)
	}
	require.Equal(t, n, e.proposalCount("mk"), "nothing stored")
	require.Equal(t, commits, e.commitCount())
}

// "SetFactTTL … makes an ordinary proposal that rewrites the fact's line
// with the marker (ttl 0 removes it) … keep the fact in its section.
// expires_at = now + ttl." One commit; git shows the marker.
func TestSetFactTTLOneCommitGitShowsMarker(t *testing.T) {
	e := newEnv(t, autoApprove)
	seedFacts(e, "st", [2]string{"Infra", "- The staging DB is pg15\n- Deploys go through Argo"}, [2]string{"People", "- Alice owns billing"})
	commits := e.commitCount()

	resp, err := e.client.SetFactTTL(e.agent("st"), &memoryv1.SetFactTTLRequest{AgentId: "st",
		Fact: "The staging DB is pg15", Ttl: durationpb.New(720 * time.Hour), OnExpire: memoryv1.TTLAction_TTL_ACTION_ARCHIVE})
	require.NoError(t, err)
	want := time.Date(2026, 3, 19, 14, 30, 0, 0, time.UTC)
	require.Equal(t, want, resp.GetExpiresAt().AsTime(), "now + ttl")
	p := e.waitApplied(resp.GetProposal().GetProposalId())
	require.Equal(t, commits+1, e.commitCount(), "one commit")
	require.Equal(t, "run-of-st", p.GetProposedBy())
	require.Contains(t, p.GetReasoning(), "expires 2026-03-19T14:30:00Z, then archive")

	show := e.git("show", "--format=%s", p.GetCommitSha(), "--", "memory/st/facts.md")
	require.Contains(t, show, "\n-- The staging DB is pg15\n")
	require.Contains(t, show, "\n+- The staging DB is pg15 _(expires 2026-03-19T14:30:00Z, then archive)_\n")
	require.Equal(t, "# Facts: st\n\n## Infra\n- Deploys go through Argo\n- The staging DB is pg15 _(expires 2026-03-19T14:30:00Z, then archive)_\n\n## People\n- Alice owns billing\n",
		e.file("st", "facts.md"), "the fact stays in its section")

	// A new TTL replaces the marker; the line with its marker names the fact too.
	e.clock.Advance(time.Hour)
	resp, err = e.client.SetFactTTL(e.service(), &memoryv1.SetFactTTLRequest{AgentId: "st",
		Fact: "- The staging DB is pg15 _(expires 2026-03-19T14:30:00Z, then archive)_", Ttl: durationpb.New(90 * time.Second)})
	require.NoError(t, err)
	e.waitApplied(resp.GetProposal().GetProposalId())
	require.Contains(t, e.file("st", "facts.md"), "- The staging DB is pg15 _(expires 2026-02-17T15:31:30Z, then mark_stale)_\n", "mark_stale is the default")

	// ttl 0 removes it.
	resp, err = e.client.SetFactTTL(e.service(), &memoryv1.SetFactTTLRequest{AgentId: "st", Fact: "The staging DB is pg15", Ttl: durationpb.New(0)})
	require.NoError(t, err)
	require.Nil(t, resp.GetExpiresAt())
	e.waitApplied(resp.GetProposal().GetProposalId())
	require.Contains(t, e.file("st", "facts.md"), "- The staging DB is pg15\n")
	require.NotContains(t, e.file("st", "facts.md"), "_(")
	require.Equal(t, commits+3, e.commitCount())
}

// SetFactTTL goes through the agent's review policy like any proposal.
func TestSetFactTTLFollowsPolicy(t *testing.T) {
	e := newEnv(t)
	seed := e.propose(&memoryv1.ProposeRequest{AgentId: "rv", RunId: "run_seed", Updates: []*memoryv1.FileUpdate{appendFact("Infra", "- The staging DB is pg15")}})
	_, err := e.client.ApproveProposal(e.reviewer(), &memoryv1.ApproveProposalRequest{ProposalId: seed.GetProposalId()})
	require.NoError(t, err)
	e.waitApplied(seed.GetProposalId())

	resp, err := e.client.SetFactTTL(e.agent("rv"), &memoryv1.SetFactTTLRequest{AgentId: "rv", Fact: "The staging DB is pg15", Ttl: durationpb.New(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, resp.GetProposal().GetStatus(), "the policy does not auto-approve")
	// Asking again is the same proposal.
	again, err := e.client.SetFactTTL(e.agent("rv"), &memoryv1.SetFactTTLRequest{AgentId: "rv", Fact: "The staging DB is pg15", Ttl: durationpb.New(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, resp.GetProposal().GetProposalId(), again.GetProposal().GetProposalId())
	_, err = e.client.ApproveProposal(e.reviewer(), &memoryv1.ApproveProposalRequest{ProposalId: resp.GetProposal().GetProposalId()})
	require.NoError(t, err)
	e.waitApplied(resp.GetProposal().GetProposalId())
	require.Contains(t, e.file("rv", "facts.md"), "- The staging DB is pg15 _(expires 2026-02-17T15:30:00Z, then mark_stale)_")
}

// "Every bad input gets a precise error … and changes nothing."
func TestSetFactTTLRejects(t *testing.T) {
	e := newEnv(t, autoApprove)
	seedFacts(e, "bad", [2]string{"Infra", "- The staging DB is pg15\n- Carol reviews proposals\n- Redis runs 7.2 _(stale since 2026-01-01T00:00:00Z)_"})
	// Two facts that say the same, and one with sub-bullets, written by a person.
	humanCommit(t, e, "memory/bad/facts.md", e.file("bad", "facts.md")+"- Carol reviews proposals _(expires 2027-01-01T00:00:00Z)_\n- Deploys go through Argo\n  - and Flux for the edge\n", "add facts by hand")
	humanCommit(t, e, "memory/nosec/facts.md", "# Facts: nosec\n- loose fact\n", "a fact above any section")
	proposals, commits := e.proposalCount("bad"), e.commitCount()
	ttl := durationpb.New(time.Hour)
	for _, tc := range []struct {
		name                string
		ctx                 context.Context
		req                 *memoryv1.SetFactTTLRequest
		code                codes.Code
		reason, field, says string
	}{
		{"not a slug", e.service(), &memoryv1.SetFactTTLRequest{AgentId: "Bad Agent", Fact: "x", Ttl: ttl}, codes.InvalidArgument, "INVALID_AGENT_ID", "agentId", "slug"},
		{"another agent's token", e.agent("other"), &memoryv1.SetFactTTLRequest{AgentId: "bad", Fact: "The staging DB is pg15", Ttl: ttl}, codes.PermissionDenied, "PERMISSION_DENIED", "", ""},
		{"a reviewer cannot propose", e.reviewer(), &memoryv1.SetFactTTLRequest{AgentId: "bad", Fact: "The staging DB is pg15", Ttl: ttl}, codes.PermissionDenied, "PERMISSION_DENIED", "", ""},
		{"no fact", e.service(), &memoryv1.SetFactTTLRequest{AgentId: "bad", Fact: "  ", Ttl: ttl}, codes.InvalidArgument, "INVALID_ARGUMENT", "fact", "fact is required"},
		{"two lines", e.service(), &memoryv1.SetFactTTLRequest{AgentId: "bad", Fact: "a\nb", Ttl: ttl}, codes.InvalidArgument, "INVALID_ARGUMENT", "fact", "one line"},
		{"no ttl", e.service(), &memoryv1.SetFactTTLRequest{AgentId: "bad", Fact: "The staging DB is pg15"}, codes.InvalidArgument, "INVALID_ARGUMENT", "ttl", "ttl is required"},
		{"negative", e.service(), &memoryv1.SetFactTTLRequest{AgentId: "bad", Fact: "The staging DB is pg15", Ttl: durationpb.New(-time.Hour)}, codes.InvalidArgument, "INVALID_ARGUMENT", "ttl", "must not be negative"},
		{"under a minute", e.service(), &memoryv1.SetFactTTLRequest{AgentId: "bad", Fact: "The staging DB is pg15", Ttl: durationpb.New(30 * time.Second)}, codes.InvalidArgument, "INVALID_ARGUMENT", "ttl", "shorter than 1m0s"},
		{"over ten years", e.service(), &memoryv1.SetFactTTLRequest{AgentId: "bad", Fact: "The staging DB is pg15", Ttl: durationpb.New(11 * 365 * 24 * time.Hour)}, codes.InvalidArgument, "INVALID_ARGUMENT", "ttl", "longer than"},
		{"invalid duration", e.service(), &memoryv1.SetFactTTLRequest{AgentId: "bad", Fact: "The staging DB is pg15", Ttl: &durationpb.Duration{Seconds: 10, Nanos: -1}}, codes.InvalidArgument, "INVALID_ARGUMENT", "ttl", "not a valid duration"},
		{"unknown action", e.service(), &memoryv1.SetFactTTLRequest{AgentId: "bad", Fact: "The staging DB is pg15", Ttl: ttl, OnExpire: 42}, codes.InvalidArgument, "INVALID_ARGUMENT", "onExpire", "mark_stale, archive or delete"},
		{"bad run", e.service(), &memoryv1.SetFactTTLRequest{AgentId: "bad", Fact: "The staging DB is pg15", Ttl: ttl, RunId: "run with spaces"}, codes.InvalidArgument, "INVALID_ARGUMENT", "runId", "run_<id>"},
		{"not there", e.service(), &memoryv1.SetFactTTLRequest{AgentId: "bad", Fact: "The prod DB is pg16", Ttl: ttl}, codes.InvalidArgument, "INVALID_ARGUMENT", "fact", `"The prod DB is pg16" is not in facts.md`},
		{"ambiguous", e.service(), &memoryv1.SetFactTTLRequest{AgentId: "bad", Fact: "Carol reviews proposals _(stale since 2020-01-01T00:00:00Z)_", Ttl: ttl}, codes.InvalidArgument, "INVALID_ARGUMENT", "fact",
			"matches 2 facts of facts.md; send the exact line of one: line 5: - Carol reviews proposals; line 7: - Carol reviews proposals _(expires 2027-01-01T00:00:00Z)_"},
		{"sub-bullets", e.service(), &memoryv1.SetFactTTLRequest{AgentId: "bad", Fact: "Deploys go through Argo", Ttl: ttl}, codes.InvalidArgument, "INVALID_ARGUMENT", "fact", "1 sub-bullet or wrapped line(s)"},
		{"no TTL to remove", e.service(), &memoryv1.SetFactTTLRequest{AgentId: "bad", Fact: "The staging DB is pg15", Ttl: durationpb.New(0)}, codes.InvalidArgument, "INVALID_ARGUMENT", "ttl", "has no TTL to remove"},
		{"above any section", e.service(), &memoryv1.SetFactTTLRequest{AgentId: "nosec", Fact: "loose fact", Ttl: ttl}, codes.InvalidArgument, "INVALID_ARGUMENT", "fact", "above its first"},
		{"no such agent", e.service(), &memoryv1.SetFactTTLRequest{AgentId: "nobody", Fact: "x", Ttl: ttl}, codes.NotFound, "AGENT_NOT_FOUND", "", "has no memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.client.SetFactTTL(tc.ctx, tc.req)
			require.Equal(t, tc.code, status.Code(err), "%v", err)
			require.Equal(t, tc.reason, apierr.Info(err).GetReason(), "%v", err)
			require.Equal(t, tc.field, apierr.Info(err).GetMetadata()["field"], "%v", err)
			require.Contains(t, status.Convert(err).Message(), tc.says)
		})
	}
	require.Equal(t, proposals, e.proposalCount("bad"), "nothing stored")
	require.Equal(t, commits, e.commitCount(), "nothing committed")
}

// expiringFacts are facts whose TTLs ran out before the test clock's
// 2026-02-17T14:30Z, one with each action, and one still running.
var expiringFacts = [][2]string{
	{"Infra", "- Staging DB is pg15 _(expires 2026-02-17T10:00:00Z)_\n" +
		"- Old bucket is gardenbloom-old _(expires 2026-02-17T11:00:00Z, then archive)_\n" +
		"- Bob is on call _(expires 2026-02-17T12:00:00Z, then delete)_\n" +
		"- Deploys go through Argo _(expires 2026-02-18T09:00:00Z, then delete)_\n" +
		"- Carol reviews proposals"},
	{"People", "- Alice owns billing _(expires 2026-02-17T13:00:00Z, then mark_stale)_"},
}

// "An expired mark_stale / archive / delete fact each acted on by the
// scheduler …, one commit per agent-batch; a non-expired fact untouched."
func TestSchedulerAppliesExpiryActionsInOneCommit(t *testing.T) {
	e := newEnv(t, autoApprove)
	seedFacts(e, "sch", expiringFacts...)
	commits := e.commitCount()

	e.svc.StartTTL(20 * time.Millisecond)
	require.Eventually(t, func() bool { return e.commitCount() == commits+1 }, 20*time.Second, 10*time.Millisecond)
	require.NoError(t, e.svc.WaitIdle(context.Background()))
	require.Equal(t, "# Facts: sch\n\n"+
		"## Infra\n"+
		"- Deploys go through Argo _(expires 2026-02-18T09:00:00Z, then delete)_\n"+
		"- Carol reviews proposals\n"+
		"- Staging DB is pg15 _(stale since 2026-02-17T10:00:00Z)_\n\n"+
		"## People\n"+
		"- Alice owns billing _(stale since 2026-02-17T13:00:00Z)_\n", e.file("sch", "facts.md"))
	require.Contains(t, e.file("sch", "decisions.md"), "## Expired facts\n- Old bucket is gardenbloom-old — expired 2026-02-17T11:00:00Z, archived 2026-02-17\n")
	msg := e.git("log", "-1", "--format=%B", "main")
	require.Contains(t, msg, "memory-update: sch / run_fact-ttl / proposal_")
	require.Contains(t, msg, "Files: decisions.md, facts.md")
	require.Contains(t, msg, `Reason: Fact TTL expiry (4): mark_stale "Staging DB is pg15"; archive "Old bucket is gardenbloom-old"; delete "Bob is on call"; mark_stale "Alice owns billing"`)
	require.Contains(t, msg, "Auto-approved: true")

	// The markers say it is done: later ticks change nothing…
	e.requireCommitCountStays(commits+1, 300*time.Millisecond)
	// …until the next TTL runs out.
	e.clock.Advance(24 * time.Hour)
	require.Eventually(t, func() bool { return e.commitCount() == commits+2 }, 20*time.Second, 10*time.Millisecond)
	require.NoError(t, e.svc.WaitIdle(context.Background()))
	require.NotContains(t, e.file("sch", "facts.md"), "Argo")
	e.requireCommitCountStays(commits+2, 200*time.Millisecond)
}

// One proposal per agent, each its own commit touching only that agent.
func TestSchedulerOneCommitPerAgent(t *testing.T) {
	e := newEnv(t, autoApprove)
	for _, a := range []string{"one", "two"} {
		seedFacts(e, a, expiringFacts...)
	}
	seedFacts(e, "fresh", [2]string{"Infra", "- Deploys go through Argo _(expires 2026-03-01T00:00:00Z)_"})
	commits := e.commitCount()
	sched := newTTLScheduler(e.svc)
	ps, err := sched.tick(context.Background())
	require.NoError(t, err)
	require.Len(t, ps, 2)
	for i, a := range []string{"one", "two"} {
		require.Equal(t, a, ps[i].GetAgentId())
		e.waitApplied(ps[i].GetProposalId())
	}
	require.Equal(t, commits+2, e.commitCount())
	for _, a := range []string{"one", "two"} {
		files := strings.Fields(e.git("log", "-1", "--format=", "--name-only", "--grep", "memory-update: "+a+" / run_fact-ttl", "main"))
		require.NotEmpty(t, files)
		for _, f := range files {
			require.True(t, strings.HasPrefix(f, "memory/"+a+"/"), f)
		}
	}
	require.Equal(t, "# Facts: fresh\n\n## Infra\n- Deploys go through Argo _(expires 2026-03-01T00:00:00Z)_\n", e.file("fresh", "facts.md"))
}

// "Idempotent across restarts and crashes (a second run must not
// double-apply)."
func TestSchedulerSecondRunDoesNotDoubleApply(t *testing.T) {
	e := newEnv(t, autoApprove)
	seedFacts(e, "idem", expiringFacts...)
	commits := e.commitCount()
	sched := newTTLScheduler(e.svc)
	ps, err := sched.tick(context.Background())
	require.NoError(t, err)
	require.Len(t, ps, 1)
	// Asked again at once — before or after the apply, whichever comes
	// first: the same proposal, or nothing left to do.
	again, err := sched.expire(context.Background(), "idem", e.clock.Now())
	require.NoError(t, err)
	if again != nil {
		require.Equal(t, ps[0].GetProposalId(), again.GetProposalId())
	}
	e.waitApplied(ps[0].GetProposalId())
	require.NoError(t, e.svc.WaitIdle(context.Background()))
	ps, err = sched.tick(context.Background())
	require.NoError(t, err)
	require.Empty(t, ps)

	// A new process over the same data indexes head and finds nothing due.
	e.restart(autoApprove)
	ps, err = newTTLScheduler(e.svc).tick(context.Background())
	require.NoError(t, err)
	require.Empty(t, ps)
	require.Equal(t, commits+1, e.commitCount())
	require.Equal(t, 1, strings.Count(e.file("idem", "decisions.md"), "Old bucket is gardenbloom-old"))
}

// A crash after the proposal was stored but before it applied: the next
// start's recovery applies it, and the scheduler of the new process finds
// the same proposal rather than making another.
func TestSchedulerAfterCrashBeforeApply(t *testing.T) {
	e := newEnv(t, autoApprove)
	seedFacts(e, "crash", expiringFacts...)
	commits := e.commitCount()
	// The proposal the scheduler would make, stored as the crashed process
	// left it: approved, not applied.
	sched := newTTLScheduler(e.svc)
	require.NoError(t, sched.refresh(context.Background()))
	e.svc.engine.stop() // no apply from here on, as in a process about to die
	p, err := sched.expire(context.Background(), "crash", e.clock.Now())
	require.NoError(t, err)
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED, p.GetStatus())
	require.Equal(t, commits, e.commitCount())

	e.restart(autoApprove) // recovery re-queues it
	again, err := newTTLScheduler(e.svc).expire(context.Background(), "crash", e.clock.Now())
	require.NoError(t, err)
	if again != nil {
		require.Equal(t, p.GetProposalId(), again.GetProposalId(), "the same proposal, not a second one")
	}
	e.waitApplied(p.GetProposalId())
	require.NoError(t, e.svc.WaitIdle(context.Background()))
	require.Equal(t, commits+1, e.commitCount())
	ps, err := newTTLScheduler(e.svc).tick(context.Background())
	require.NoError(t, err)
	require.Empty(t, ps)
}

// A person's commit is followed too: a TTL written by hand is acted on,
// and one removed by hand is not.
func TestSchedulerFollowsHumanEdits(t *testing.T) {
	e := newEnv(t, autoApprove)
	seedFacts(e, "hum", [2]string{"Infra", "- Carol reviews proposals"})
	sched := newTTLScheduler(e.svc)
	require.NoError(t, sched.refresh(context.Background()))
	require.Empty(t, sched.next)
	humanCommit(t, e, "memory/hum/facts.md", "# Facts: hum\n\n## Infra\n- Carol reviews proposals _(expires 2026-02-17T14:00:00Z, then delete)_\n- Dan is away _(expires 2026-02-20T00:00:00Z)_\n", "ttl by hand")
	ps, err := sched.tick(context.Background())
	require.NoError(t, err)
	require.Len(t, ps, 1)
	e.waitApplied(ps[0].GetProposalId())
	require.Equal(t, "# Facts: hum\n\n## Infra\n- Dan is away _(expires 2026-02-20T00:00:00Z)_\n", e.file("hum", "facts.md"))
	require.NoError(t, sched.refresh(context.Background()))
	require.Equal(t, time.Date(2026, 2, 20, 0, 0, 0, 0, time.UTC), sched.next["hum"])

	humanCommit(t, e, "memory/hum/facts.md", "# Facts: hum\n\n## Infra\n- Dan is away\n", "no TTL after all")
	e.clock.Advance(7 * 24 * time.Hour)
	ps, err = sched.tick(context.Background())
	require.NoError(t, err)
	require.Empty(t, ps)
	require.Empty(t, sched.next)
}

// Facts past their TTL or marked stale go first when facts.md is over its
// limit: they are stale (spec DiffMem §11.3, "stale first").
func TestEvictionTakesTTLStaleFactsFirst(t *testing.T) {
	e := newEnv(t, autoApprove)
	for b := range 5 {
		resp := e.propose(&memoryv1.ProposeRequest{AgentId: "evt", RunId: fmt.Sprintf("run_old%d", b),
			Updates: []*memoryv1.FileUpdate{appendFact("Domain", factBatch(fmt.Sprintf("old%d", b), 45))}})
		e.waitApplied(resp.GetProposalId())
	}
	// The newest fact of all, marked stale.
	newest := "old4 fact 044: the storage cluster keeps its replicas in three zones for durability, and every zone runs its own independent power and network feeds"
	resp := e.propose(&memoryv1.ProposeRequest{AgentId: "evt", RunId: "run_mark", Updates: []*memoryv1.FileUpdate{
		{File: "facts.md", Operation: memoryv1.Operation_OPERATION_REMOVE, Content: "- " + newest},
		appendFact("Domain", "- "+newest+" _(stale since 2026-02-01T00:00:00Z)_")}})
	// The semantic guard sees the same fact appended again and asks a person.
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, resp.GetStatus())
	_, err := e.client.ApproveProposal(e.reviewer(), &memoryv1.ApproveProposalRequest{ProposalId: resp.GetProposalId()})
	require.NoError(t, err)
	e.waitApplied(resp.GetProposalId())

	resp = e.propose(&memoryv1.ProposeRequest{AgentId: "evt", RunId: "run_new",
		Updates: []*memoryv1.FileUpdate{appendFact("Domain", factBatch("new", 45))}})
	p := e.waitApplied(resp.GetProposalId())
	require.NotEmpty(t, p.GetEvictedFacts())
	require.Equal(t, newest+" _(stale since 2026-02-01T00:00:00Z)_", p.GetEvictedFacts()[0], "the stale fact goes first, though it is the newest")
	require.Contains(t, p.GetEvictedFacts()[1], "old0 fact 000", "then the oldest")
	require.Contains(t, e.file("evt", "decisions.md"), "- "+newest+" _(stale since 2026-02-01T00:00:00Z)_ — added 2026-02-17, evicted 2026-02-17 (stale-fact)")
	require.LessOrEqual(t, e.meta("evt").FactsTokenCount, memlayout.FactsLimit)
}

// Duplicate detection looks past the marker: appending a fact the agent
// already has with a TTL adds nothing, and the semantic guard says why.
func TestDuplicateFactsLookPastTheMarker(t *testing.T) {
	e := newEnv(t, autoApprove)
	seedFacts(e, "dup", [2]string{"Infra", "- The staging DB is pg15 _(expires 2026-12-04T10:00:00Z, then archive)_"})
	resp := e.propose(&memoryv1.ProposeRequest{AgentId: "dup", RunId: "run_again", Updates: []*memoryv1.FileUpdate{appendFact("Infra", "- the staging db is  pg15")}})
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, resp.GetStatus())
	require.Contains(t, strings.Join(resp.GetProposal().GetFlags(), "\n"), `duplicate_fact: "- the staging db is  pg15" repeats the existing fact "The staging DB is pg15 _(expires 2026-12-04T10:00:00Z, then archive)_"`)

	resp = e.propose(&memoryv1.ProposeRequest{AgentId: "dup", RunId: "run_exact", Updates: []*memoryv1.FileUpdate{appendFact("Infra", "- The staging DB is pg15")}})
	_, err := e.client.ApproveProposal(e.reviewer(), &memoryv1.ApproveProposalRequest{ProposalId: resp.GetProposalId()})
	require.NoError(t, err)
	e.waitApplied(resp.GetProposalId())
	require.Equal(t, "# Facts: dup\n\n## Infra\n- The staging DB is pg15 _(expires 2026-12-04T10:00:00Z, then archive)_\n", e.file("dup", "facts.md"),
		"the same fact is not added twice")
}

func TestTTLConfigValidate(t *testing.T) {
	fs := flagSet()
	var c TTLConfig
	c.RegisterFlags(fs)
	require.Equal(t, time.Minute, c.Interval, "default 1m")
	require.NoError(t, c.Validate())
	for _, bad := range []time.Duration{-time.Second, time.Millisecond} {
		c.Interval = bad
		require.Error(t, c.Validate(), bad)
	}
	c.Interval = 0
	require.NoError(t, c.Validate(), "0 turns the scheduler off")
}

// TTL housekeeping in a section is not an edit a waiting proposal must be
// reviewed again for, as eviction is not: an append to the section still
// applies after the scheduler marked, archived and deleted facts there.
func TestExpiryIsNoConflictForAppends(t *testing.T) {
	e := newEnv(t, autoApprove)
	seedFacts(e, "cf", expiringFacts...)
	// Waits for a person (high priority), based on the commit before the expiry.
	waiting := e.propose(&memoryv1.ProposeRequest{AgentId: "cf", RunId: "run_wait", Priority: memoryv1.Priority_PRIORITY_HIGH,
		Updates: []*memoryv1.FileUpdate{appendFact("Infra", "- Erin joins the on-call rota"), appendFact("People", "- Frank owns search")}})
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, waiting.GetStatus())

	ps, err := newTTLScheduler(e.svc).tick(context.Background())
	require.NoError(t, err)
	require.Len(t, ps, 1)
	e.waitApplied(ps[0].GetProposalId())

	_, err = e.client.ApproveProposal(e.reviewer(), &memoryv1.ApproveProposalRequest{ProposalId: waiting.GetProposalId()})
	require.NoError(t, err)
	e.waitApplied(waiting.GetProposalId())
	facts := e.file("cf", "facts.md")
	require.Contains(t, facts, "- Erin joins the on-call rota\n")
	require.Contains(t, facts, "- Frank owns search\n")
	require.Contains(t, facts, "- Staging DB is pg15 _(stale since 2026-02-17T10:00:00Z)_\n")

	// A person's edit of the section still sends such a proposal back to review.
	edited := e.propose(&memoryv1.ProposeRequest{AgentId: "cf", RunId: "run_wait2", Priority: memoryv1.Priority_PRIORITY_HIGH,
		Updates: []*memoryv1.FileUpdate{appendFact("Infra", "- Grace joins the on-call rota")}})
	humanCommit(t, e, "memory/cf/facts.md", strings.Replace(e.file("cf", "facts.md"), "- Carol reviews proposals\n", "- Carol reviews every proposal\n", 1), "reword by hand")
	_, err = e.client.ApproveProposal(e.reviewer(), &memoryv1.ApproveProposalRequest{ProposalId: edited.GetProposalId()})
	require.NoError(t, err)
	p := e.wait(edited.GetProposalId(), memoryv1.ProposalStatus_PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED)
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW, p.GetStatus())
}
