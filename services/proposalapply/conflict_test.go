package proposalapply

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/mdops"
)

// 200 concurrent proposals to one agent, all based on the same version:
// exactly one applies, every other is rejected with version_conflict, and
// history stays linear with one commit per applied proposal.
func TestConcurrentProposalsSameVersion(t *testing.T) {
	e := newEnv(t, autoApprove)
	before := e.commitCount()
	const n = 200
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, err := e.client.Propose(e.service(), &memoryv1.ProposeRequest{
				AgentId: "contended", RunId: fmt.Sprintf("run_%d", i), ExpectedVersion: ver(0),
				Updates: []*memoryv1.FileUpdate{appendFact("Race", fmt.Sprintf("- fact from run %d", i))},
			})
			require.NoError(t, err)
			ids[i] = resp.GetProposalId()
		})
	}
	wg.Wait()
	applied, rejected := 0, 0
	for _, id := range ids {
		p := e.wait(id, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED, memoryv1.ProposalStatus_PROPOSAL_STATUS_REJECTED)
		switch p.GetStatus() {
		case memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED:
			applied++
		case memoryv1.ProposalStatus_PROPOSAL_STATUS_REJECTED:
			rejected++
			require.Equal(t, memoryv1.StatusReason_STATUS_REASON_VERSION_CONFLICT, p.GetReason())
			require.Equal(t, int32(0), p.GetExpectedVersion())
			require.Equal(t, int32(1), p.GetCurrentVersion())
			require.Equal(t, "retry_with_latest", p.GetResolution())
		}
	}
	require.Equal(t, 1, applied)
	require.Equal(t, n-1, rejected)
	require.Equal(t, before+1, e.commitCount())
	// Linear: no merge commits anywhere.
	require.Empty(t, strings.TrimSpace(e.git("rev-list", "--merges", "main")))
	require.Equal(t, int32(1), e.meta("contended").Version)
}

// Many agents at once: parallel across agents, serial per agent, one commit
// each, versions consecutive per agent.
func TestManyAgentsInParallel(t *testing.T) {
	e := newEnv(t, autoApprove)
	before := e.commitCount()
	const agents, each = 10, 5
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ids []string
	for a := range agents {
		wg.Go(func() {
			for i := range each {
				resp, err := e.client.Propose(e.service(), &memoryv1.ProposeRequest{
					AgentId: fmt.Sprintf("agent-%d", a), RunId: fmt.Sprintf("run_%d", i),
					Updates: []*memoryv1.FileUpdate{appendFact("D", fmt.Sprintf("- fact %d", i))},
				})
				require.NoError(t, err)
				mu.Lock()
				ids = append(ids, resp.GetProposalId())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		e.waitApplied(id)
	}
	require.Equal(t, before+agents*each, e.commitCount())
	for a := range agents {
		require.Equal(t, int32(each), e.meta(fmt.Sprintf("agent-%d", a)).Version)
	}
	e.git("fsck", "--strict", "--full")
}

// A proposal without expectedVersion whose section changed after it was
// made waits for a person (spec §7.1, threat 4); one on another section
// applies.
func TestSectionChangedSinceProposalNeedsHumanReview(t *testing.T) {
	e := newEnv(t) // reviewed, so the proposals exist before any applies
	seed := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_0", Updates: []*memoryv1.FileUpdate{appendFact("Domain", "- old fact")}})
	_, err := e.client.ApproveProposal(e.reviewer(), &memoryv1.ApproveProposalRequest{ProposalId: seed.GetProposalId()})
	require.NoError(t, err)
	e.waitApplied(seed.GetProposalId())

	first := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{
		{File: "facts.md", Operation: memoryv1.Operation_OPERATION_REMOVE, Content: "- old fact"}}})
	second := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_2", Updates: []*memoryv1.FileUpdate{appendFact("Domain", "- from run 2")}})
	other := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_3", Updates: []*memoryv1.FileUpdate{appendFact("Elsewhere", "- from run 3")}})

	_, err = e.client.ApproveProposal(e.reviewer(), &memoryv1.ApproveProposalRequest{ProposalId: first.GetProposalId()})
	require.NoError(t, err)
	e.waitApplied(first.GetProposalId())

	_, err = e.client.ApproveProposal(e.reviewer(), &memoryv1.ApproveProposalRequest{ProposalId: second.GetProposalId()})
	require.NoError(t, err)
	p := e.wait(second.GetProposalId(), memoryv1.ProposalStatus_PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW)
	require.Equal(t, memoryv1.StatusReason_STATUS_REASON_SECTION_CONFLICT, p.GetReason())
	require.Contains(t, p.GetFlags()[0], `section "Domain"`)

	_, err = e.client.ApproveProposal(e.reviewer(), &memoryv1.ApproveProposalRequest{ProposalId: other.GetProposalId()})
	require.NoError(t, err)
	e.waitApplied(other.GetProposalId())

	// The person looks and approves again: now it applies on top.
	_, err = e.client.ApproveProposal(e.reviewer(), &memoryv1.ApproveProposalRequest{ProposalId: second.GetProposalId(), Comment: "both facts hold"})
	require.NoError(t, err)
	e.waitApplied(second.GetProposalId())
	facts := e.file("a", "facts.md")
	require.NotContains(t, facts, "- old fact")
	require.Contains(t, facts, "- from run 2")
	require.Contains(t, facts, "- from run 3")
}

// humanCommit edits a file with the real git binary through a clone and
// pushes it to the bare repository, as a person would (spec §6.5).
func humanCommit(t *testing.T, e *env, path, content, message string) string {
	t.Helper()
	wt := filepath.Join(t.TempDir(), "wt")
	run := func(dir string, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Person", "GIT_AUTHOR_EMAIL=person@example.org",
			"GIT_COMMITTER_NAME=Person", "GIT_COMMITTER_EMAIL=person@example.org")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	run(".", "clone", "-q", "--branch", "main", e.repo.Path(), wt)
	require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(wt, path)), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(wt, path), []byte(content), 0o644))
	run(wt, "add", "-A")
	run(wt, "commit", "-q", "-m", message)
	run(wt, "push", "-q", "origin", "main")
	return run(wt, "rev-parse", "HEAD")
}

func TestHumanEditIsReportedNotOverwritten(t *testing.T) {
	e := newEnv(t)
	seed := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{
		{File: "snapshot.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "# Snapshot: a\n\nv1\n"}}})
	_, err := e.client.ApproveProposal(e.reviewer(), &memoryv1.ApproveProposalRequest{ProposalId: seed.GetProposalId()})
	require.NoError(t, err)
	e.waitApplied(seed.GetProposalId())

	stream, err := e.client.WatchCommits(e.service(), &memoryv1.WatchCommitsRequest{})
	require.NoError(t, err)
	pending := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_2", ExpectedVersion: ver(1), Updates: []*memoryv1.FileUpdate{
		{File: "snapshot.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "# Snapshot: a\n\nv2 from the agent\n"}}})

	sha := humanCommit(t, e, "memory/a/snapshot.md", "# Snapshot: a\n\nfixed by a person\n", "fix the snapshot by hand")
	got, err := stream.Recv()
	require.NoError(t, err)
	require.Equal(t, sha, got.GetCommit().GetSha())
	require.True(t, got.GetCommit().GetHumanEdit())
	require.Equal(t, "a", got.GetCommit().GetAgentId())
	require.Equal(t, []string{"memory/a/snapshot.md"}, got.GetCommit().GetFiles())

	// The version did not move (no meta.json change), but the file did: the
	// agent's replace must not silently overwrite the person's fix.
	_, err = e.client.ApproveProposal(e.reviewer(), &memoryv1.ApproveProposalRequest{ProposalId: pending.GetProposalId()})
	require.NoError(t, err)
	p := e.wait(pending.GetProposalId(), memoryv1.ProposalStatus_PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW)
	require.Contains(t, p.GetFlags()[0], "snapshot.md")
	require.Contains(t, e.file("a", "snapshot.md"), "fixed by a person")

	// Applies build on the person's commit: the next version is 2.
	next := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_3", ExpectedVersion: ver(1), Updates: []*memoryv1.FileUpdate{appendFact("D", "- x")}})
	_, err = e.client.ApproveProposal(e.reviewer(), &memoryv1.ApproveProposalRequest{ProposalId: next.GetProposalId()})
	require.NoError(t, err)
	e.waitApplied(next.GetProposalId())
	require.Equal(t, int32(2), e.meta("a").Version)
	require.Contains(t, e.file("a", "snapshot.md"), "fixed by a person")
	got, err = stream.Recv()
	require.NoError(t, err)
	require.False(t, got.GetCommit().GetHumanEdit())
	require.Equal(t, next.GetProposalId(), got.GetCommit().GetProposalId())
	require.Equal(t, int32(2), got.GetCommit().GetVersion())
}

func TestWatchCommitsReplaysFromSHA(t *testing.T) {
	e := newEnv(t, autoApprove)
	ctx := context.Background()
	start, err := e.repo.Head(ctx)
	require.NoError(t, err)
	var want []string
	for i := range 3 {
		resp := e.propose(&memoryv1.ProposeRequest{AgentId: fmt.Sprintf("w%d", i%2), RunId: fmt.Sprintf("run_%d", i), Updates: []*memoryv1.FileUpdate{appendFact("D", fmt.Sprintf("- %d", i))}})
		want = append(want, e.waitApplied(resp.GetProposalId()).GetCommitSha())
	}
	sctx, cancel := context.WithCancel(e.service())
	defer cancel()
	stream, err := e.client.WatchCommits(sctx, &memoryv1.WatchCommitsRequest{FromSha: start.String()})
	require.NoError(t, err)
	for _, sha := range want {
		got, err := stream.Recv()
		require.NoError(t, err)
		require.Equal(t, sha, got.GetCommit().GetSha())
		require.Equal(t, []string{"memory/"}, []string{got.GetCommit().GetFiles()[0][:7]})
	}
	// Live after the replay, filtered by agent.
	only, err := e.client.WatchCommits(sctx, &memoryv1.WatchCommitsRequest{FromSha: want[0], AgentId: "w1"})
	require.NoError(t, err)
	got, err := only.Recv()
	require.NoError(t, err)
	require.Equal(t, want[1], got.GetCommit().GetSha())
	resp := e.propose(&memoryv1.ProposeRequest{AgentId: "w1", RunId: "run_9", Updates: []*memoryv1.FileUpdate{appendFact("D", "- live")}})
	sha := e.waitApplied(resp.GetProposalId()).GetCommitSha()
	got, err = only.Recv()
	require.NoError(t, err)
	require.Equal(t, sha, got.GetCommit().GetSha())
	require.Equal(t, "run_9", got.GetCommit().GetRunId())

	bad, err := e.client.WatchCommits(sctx, &memoryv1.WatchCommitsRequest{FromSha: "0123456789abcdef0123456789abcdef01234567"})
	require.NoError(t, err)
	_, err = bad.Recv()
	require.Equal(t, codes.NotFound, status.Code(err))
	// Agents may watch only their own commits; the whole stream is for services.
	own, err := e.client.WatchCommits(e.agent("w1"), &memoryv1.WatchCommitsRequest{})
	require.NoError(t, err)
	_, err = own.Recv()
	require.Equal(t, codes.PermissionDenied, status.Code(err))
}

func TestPushesToRemote(t *testing.T) {
	remote := filepath.Join(t.TempDir(), "remote.git")
	out, err := exec.Command("git", "init", "-q", "--bare", remote).CombinedOutput()
	require.NoError(t, err, string(out))
	e := newEnv(t, autoApprove, func(c *Config) { c.GitRemoteURL = remote })
	resp := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{appendFact("D", "- pushed")}})
	sha := e.waitApplied(resp.GetProposalId()).GetCommitSha()
	require.Eventually(t, func() bool {
		out, err := exec.Command("git", "--git-dir", remote, "rev-parse", "main").Output()
		return err == nil && strings.TrimSpace(string(out)) == sha
	}, 20*time.Second, 20*time.Millisecond)
	sync, err := e.client.SyncRemote(e.as("root", adminRole()), &memoryv1.SyncRemoteRequest{})
	require.NoError(t, err)
	require.Equal(t, sha, sync.GetHeadCommit())
	_, err = e.client.SyncRemote(e.service(), &memoryv1.SyncRemoteRequest{})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
}

func TestFactUsageReports(t *testing.T) {
	e := newEnv(t, autoApprove)
	resp, err := e.client.ReportFactUsage(e.service(), &memoryv1.ReportFactUsageRequest{AgentId: "a", Usages: []*memoryv1.FactUsage{{FactHash: mdops.FactHash("- x")}}})
	require.NoError(t, err)
	require.Equal(t, int32(0), resp.GetAccepted(), "the agent has no such fact")
	e.waitApplied(e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{appendFact("Domain", "- x")}}).GetProposalId())
	resp, err = e.client.ReportFactUsage(e.service(), &memoryv1.ReportFactUsageRequest{AgentId: "a", Usages: []*memoryv1.FactUsage{{FactHash: mdops.FactHash("- x")}}})
	require.NoError(t, err)
	require.Equal(t, int32(1), resp.GetAccepted())
	_, err = e.client.ReportFactUsage(e.service(), &memoryv1.ReportFactUsageRequest{AgentId: "a", Usages: []*memoryv1.FactUsage{{FactHash: "nothex"}}})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	_, err = e.client.ReportFactUsage(e.agent("a"), &memoryv1.ReportFactUsageRequest{AgentId: "a"})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
}

// A subscriber without from_sha gets only commits made after it subscribed,
// even when the hub had not yet caught up with main: a client that saw a
// commit land and then subscribes must not be sent it as new.
func TestWatchCommitsStartsAtMainsHead(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	h := newHub(e.repo, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Hour) // advanced by hand only
	require.NoError(t, h.start(ctx))
	humanCommit(t, e, "memory/a/snapshot.md", "# Snapshot: a\n\nbefore\n", "before subscribing")

	sub, replay, err := h.subscribe(ctx, "", "")
	require.NoError(t, err)
	require.Empty(t, replay)
	after := humanCommit(t, e, "memory/a/snapshot.md", "# Snapshot: a\n\nafter\n", "after subscribing")
	require.NoError(t, h.advance(ctx))
	require.Len(t, sub.ch, 1)
	require.Equal(t, after, (<-sub.ch).GetSha())
}

// When the hub cannot follow main (a person force-pushed an unrelated
// history), subscribing still works: from where the stream is, as the
// follow loop keeps logging the problem.
func TestWatchCommitsSubscribesWhenMainCannotBeFollowed(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	h := newHub(e.repo, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Hour)
	require.NoError(t, h.start(ctx))
	wt := filepath.Join(t.TempDir(), "wt")
	git := func(dir string, args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=P", "GIT_AUTHOR_EMAIL=p@example.org", "GIT_COMMITTER_NAME=P", "GIT_COMMITTER_EMAIL=p@example.org")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	git(".", "clone", "-q", "--branch", "main", e.repo.Path(), wt)
	git(wt, "checkout", "-q", "--orphan", "other")
	require.NoError(t, os.WriteFile(filepath.Join(wt, "README.md"), []byte("rewritten\n"), 0o644))
	git(wt, "add", "-A")
	git(wt, "commit", "-q", "-m", "unrelated history")
	git(wt, "push", "-q", "-f", "origin", "other:main")
	require.Error(t, h.advance(ctx), "main is no longer a descendant of the stream's position")

	sub, replay, err := h.subscribe(ctx, "", "")
	require.NoError(t, err)
	require.Empty(t, replay)
	require.NotNil(t, sub)
}
