package proposalapply

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
)

// The contract of PreviewProposal (issue #28): "the exact diff the commit
// would make", rendered from a dry-run apply, with nothing written.

func (e *env) preview(ctx context.Context, id string) *memoryv1.PreviewProposalResponse {
	e.t.Helper()
	resp, err := e.client.PreviewProposal(ctx, &memoryv1.PreviewProposalRequest{ProposalId: id})
	require.NoError(e.t, err)
	return resp
}

// approveAndWait has a reviewer approve id and waits until it is applied.
func (e *env) approveAndWait(id string) *memoryv1.Proposal {
	e.t.Helper()
	_, err := e.client.ApproveProposal(e.reviewer(), &memoryv1.ApproveProposalRequest{ProposalId: id})
	require.NoError(e.t, err)
	return e.waitApplied(id)
}

// written is everything a preview must leave alone: main's head, the
// proposal as stored, and every object of the object store (proposal log,
// fact index), the fact index flushed first.
type written struct {
	head     string
	proposal *memoryv1.Proposal
	objects  map[string][32]byte
}

func (e *env) written(id string) written {
	e.t.Helper()
	ctx := context.Background()
	require.NoError(e.t, e.svc.WaitIdle(ctx))
	require.NoError(e.t, e.svc.facts.Flush(ctx))
	w := written{head: strings.TrimSpace(e.git("rev-parse", "main")), objects: map[string][32]byte{}}
	resp, err := e.client.GetProposal(e.service(), &memoryv1.GetProposalRequest{ProposalId: id})
	require.NoError(e.t, err)
	w.proposal = resp.GetProposal()
	for info, err := range e.blobs.List(ctx, "") {
		require.NoError(e.t, err)
		r, _, err := e.blobs.Get(ctx, info.Key)
		require.NoError(e.t, err)
		data, err := io.ReadAll(r)
		require.NoError(e.t, r.Close())
		require.NoError(e.t, err)
		w.objects[info.Key] = sha256.Sum256(data)
	}
	return w
}

func (e *env) requireUnchanged(before written, id string) {
	e.t.Helper()
	after := e.written(id)
	require.Equal(e.t, before.head, after.head, "a preview makes no commit")
	require.True(e.t, proto.Equal(before.proposal, after.proposal), "a preview does not change the proposal:\n%v\n%v", before.proposal, after.proposal)
	require.Equal(e.t, before.objects, after.objects, "a preview writes nothing to the object store")
}

// gitDiff is `git diff` of a commit against its parent, for one agent's
// folder with paths relative to it (spec DiffMem §6.3: "git diff HEAD~1
// HEAD -- memory/<agentId>/"), as file → the diff from its "---" line on.
func (e *env) gitDiff(sha, agent string) map[string]string {
	e.t.Helper()
	out := e.git("-c", "core.quotePath=true", "diff", "--no-color", "--no-ext-diff", "--relative=memory/"+agent+"/", sha+"~1", sha)
	files := map[string]string{}
	for _, chunk := range strings.Split(out, "diff --git ")[1:] {
		header, body, ok := strings.Cut(chunk, "\n--- ")
		require.True(e.t, ok, "a diff without a --- line: %q", chunk)
		name := strings.Fields(header)[1] // b/<name>
		files[strings.TrimPrefix(name, "b/")] = "--- " + body
	}
	return files
}

func diffsByFile(files []*memoryv1.FileDiff) map[string]string {
	m := map[string]string{}
	for _, f := range files {
		m[f.GetFile()] = f.GetUnifiedDiff()
	}
	return m
}

func fileNames(files []*memoryv1.FileDiff) []string {
	var names []string
	for _, f := range files {
		names = append(names, f.GetFile())
	}
	return names
}

// changedLines are a unified diff's added (+) and removed (-) lines.
func changedLines(diff string) (added, removed []string) {
	for line := range strings.SplitSeq(diff, "\n") {
		switch {
		case strings.HasPrefix(line, "+++ "), strings.HasPrefix(line, "--- "):
		case strings.HasPrefix(line, "+"):
			added = append(added, line[1:])
		case strings.HasPrefix(line, "-"):
			removed = append(removed, line[1:])
		}
	}
	return added, removed
}

// commitMessage is the commit's message byte for byte.
func (e *env) commitMessage(sha string) string {
	e.t.Helper()
	_, msg, ok := strings.Cut(e.git("cat-file", "commit", sha), "\n\n")
	require.True(e.t, ok)
	return msg
}

// requireCommitIsPreview checks the applied proposal's commit against a
// preview taken before: same parent, same message, the same diff as git
// itself prints, and the applied proposal's own preview says the same.
func (e *env) requireCommitIsPreview(p *memoryv1.Proposal, pv *memoryv1.PreviewProposalResponse) {
	e.t.Helper()
	sha := p.GetCommitSha()
	require.Equal(e.t, pv.GetBaseCommit(), strings.TrimSpace(e.git("rev-parse", sha+"~1")), "planned on the commit's parent")
	require.Equal(e.t, pv.GetCommitMessage(), e.commitMessage(sha))
	require.Equal(e.t, diffsByFile(pv.GetFiles()), e.gitDiff(sha, p.GetAgentId()), "the preview is the commit's diff as git prints it")

	applied := e.preview(e.reviewer(), p.GetProposalId())
	require.Equal(e.t, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED, applied.GetStatus())
	require.True(e.t, proto.Equal(&memoryv1.PreviewProposalResponse{Files: pv.GetFiles()}, &memoryv1.PreviewProposalResponse{Files: applied.GetFiles()}),
		"an applied proposal shows its commit's diff:\n%v\n%v", pv.GetFiles(), applied.GetFiles())
	require.Equal(e.t, pv.GetCommitMessage(), applied.GetCommitMessage())
	require.Equal(e.t, pv.GetBaseCommit(), applied.GetBaseCommit())
	require.Equal(e.t, pv.GetEvictedFacts(), applied.GetEvictedFacts())
}

// A pending append to facts.md shows exactly that line added, with the
// bookkeeping every commit carries after it; approving it then makes a
// commit whose diff is the preview's.
func TestPreviewOfAPendingAppendIsTheCommitItMakes(t *testing.T) {
	e := newEnv(t)
	const agent = "curator"
	seed := e.propose(&memoryv1.ProposeRequest{AgentId: agent, RunId: "run_1", Reasoning: "seed",
		Updates: []*memoryv1.FileUpdate{appendFact("Technical", "- The CI runs on two cores\n- Builds take four minutes")}})
	e.approveAndWait(seed.GetProposalId())

	resp := e.propose(&memoryv1.ProposeRequest{AgentId: agent, RunId: "run_7", Reasoning: "a new fact",
		Updates: []*memoryv1.FileUpdate{appendFact("Technical", "- MinIO bucket mcpstorage has versioning on")}})
	id := resp.GetProposalId()
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, resp.GetStatus())
	before := e.written(id)

	pv := e.preview(e.reviewer(), id)
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, pv.GetStatus())
	require.Equal(t, memoryv1.StatusReason_STATUS_REASON_UNSPECIFIED, pv.GetWouldFailReason())
	require.Empty(t, pv.GetWouldFailMessage())
	require.Equal(t, before.head, pv.GetBaseCommit())
	require.Equal(t, []string{"facts.md", "changelog.md", "meta.json", "timeline/2026-02-17.md"}, fileNames(pv.GetFiles()),
		"the proposal's file first, then the bookkeeping")
	facts := pv.GetFiles()[0]
	require.Equal(t, memoryv1.ChangeKind_CHANGE_KIND_CHANGED, facts.GetChange())
	require.True(t, strings.HasPrefix(facts.GetUnifiedDiff(), "--- a/facts.md\n+++ b/facts.md\n@@ "), facts.GetUnifiedDiff())
	added, removed := changedLines(facts.GetUnifiedDiff())
	require.Equal(t, []string{"- MinIO bucket mcpstorage has versioning on"}, added, "exactly that line added")
	require.Empty(t, removed)
	require.Equal(t, int32(1), facts.GetAddedLines())
	require.Zero(t, facts.GetRemovedLines())
	require.Contains(t, facts.GetUnifiedDiff(), "\n - Builds take four minutes\n", "context around the change")
	require.True(t, strings.HasPrefix(pv.GetCommitMessage(), "memory-update: curator / run_7 / "+id+"\n"), pv.GetCommitMessage())
	e.requireUnchanged(before, id)

	// Anyone who may read the proposal sees the same preview.
	require.True(t, proto.Equal(pv, e.preview(e.agent(agent), id)))

	p := e.approveAndWait(id)
	e.requireCommitIsPreview(p, pv)
}

// A proposal that pushes facts.md over 8,000 tokens shows the eviction
// its commit makes: the facts that go, decisions.md receiving them, the
// commit message saying so.
func TestPreviewShowsTheEviction(t *testing.T) {
	e := newEnv(t, autoApprove)
	for b := range 5 {
		resp := e.propose(&memoryv1.ProposeRequest{AgentId: "ev", RunId: fmt.Sprintf("run_old%d", b),
			Updates: []*memoryv1.FileUpdate{appendFact("Domain", factBatch(fmt.Sprintf("old%d", b), 45))}})
		e.waitApplied(resp.GetProposalId())
	}
	e.clock.Advance(40 * 24 * time.Hour)
	// High priority waits for a person whatever the policy says.
	resp := e.propose(&memoryv1.ProposeRequest{AgentId: "ev", RunId: "run_new", Priority: memoryv1.Priority_PRIORITY_HIGH,
		Updates: []*memoryv1.FileUpdate{appendFact("Domain", factBatch("new", 45))}})
	id := resp.GetProposalId()
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, resp.GetStatus())
	before := e.written(id)

	pv := e.preview(e.reviewer(), id)
	require.Empty(t, pv.GetWouldFailReason())
	require.NotEmpty(t, pv.GetEvictedFacts())
	require.Contains(t, pv.GetCommitMessage(), "\nevicted: stale-fact\n")
	diffs := diffsByFile(pv.GetFiles())
	_, factsRemoved := changedLines(diffs["facts.md"])
	for _, f := range pv.GetEvictedFacts() {
		require.Contains(t, factsRemoved, "- "+f, "an evicted fact leaves facts.md")
	}
	decAdded, _ := changedLines(diffs["decisions.md"])
	require.Contains(t, decAdded, "## Evicted facts")
	require.Contains(t, diffs["decisions.md"], pv.GetEvictedFacts()[0], "and lands in decisions.md")
	e.requireUnchanged(before, id)

	p := e.approveAndWait(id)
	require.Equal(t, pv.GetEvictedFacts(), p.GetEvictedFacts())
	e.requireCommitIsPreview(p, pv)
}

// A proposal whose expectedVersion is no longer the agent's version would
// commit nothing: the preview says version_conflict (not an RPC error) and
// the apply then refuses it with the same words.
func TestPreviewOfAVersionConflict(t *testing.T) {
	e := newEnv(t)
	stale := e.propose(&memoryv1.ProposeRequest{AgentId: "vc", RunId: "run_1", ExpectedVersion: ver(0),
		Updates: []*memoryv1.FileUpdate{appendFact("Domain", "- made on version 0")}})
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, stale.GetStatus())
	other := e.propose(&memoryv1.ProposeRequest{AgentId: "vc", RunId: "run_2",
		Updates: []*memoryv1.FileUpdate{appendFact("Domain", "- another run's fact")}})
	e.approveAndWait(other.GetProposalId())
	before := e.written(stale.GetProposalId())

	pv := e.preview(e.reviewer(), stale.GetProposalId())
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, pv.GetStatus())
	require.Equal(t, memoryv1.StatusReason_STATUS_REASON_VERSION_CONFLICT, pv.GetWouldFailReason())
	require.Equal(t, "version_conflict: expected version 0, current version 1", pv.GetWouldFailMessage())
	require.Empty(t, pv.GetFiles())
	require.Empty(t, pv.GetCommitMessage())
	require.Equal(t, before.head, pv.GetBaseCommit())
	e.requireUnchanged(before, stale.GetProposalId())

	_, err := e.client.ApproveProposal(e.reviewer(), &memoryv1.ApproveProposalRequest{ProposalId: stale.GetProposalId()})
	require.NoError(t, err)
	p := e.wait(stale.GetProposalId(), memoryv1.ProposalStatus_PROPOSAL_STATUS_REJECTED)
	require.Equal(t, pv.GetWouldFailReason(), p.GetReason())
	require.Equal(t, pv.GetWouldFailMessage(), p.GetMessage())
	require.Equal(t, before.head, strings.TrimSpace(e.git("rev-parse", "main")), "and indeed no commit")
}

// Spec §7.1 threat 4: a pending proposal whose section changed since it was
// made would stop at needs_human_review, so its preview says so and why;
// once there, the preview is what approving it again commits.
func TestPreviewOfASectionConflict(t *testing.T) {
	e := newEnv(t)
	seed := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_0", Updates: []*memoryv1.FileUpdate{appendFact("Domain", "- old fact")}})
	e.approveAndWait(seed.GetProposalId())
	first := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_1", Updates: []*memoryv1.FileUpdate{
		{File: "facts.md", Operation: memoryv1.Operation_OPERATION_REMOVE, Content: "- old fact"}}})
	second := e.propose(&memoryv1.ProposeRequest{AgentId: "a", RunId: "run_2", Updates: []*memoryv1.FileUpdate{appendFact("Domain", "- from run 2")}})
	e.approveAndWait(first.GetProposalId())

	pv := e.preview(e.reviewer(), second.GetProposalId())
	require.Equal(t, memoryv1.StatusReason_STATUS_REASON_SECTION_CONFLICT, pv.GetWouldFailReason())
	require.Contains(t, pv.GetWouldFailMessage(), `section "Domain"`, "the message names what changed")
	require.Empty(t, pv.GetFiles())

	_, err := e.client.ApproveProposal(e.reviewer(), &memoryv1.ApproveProposalRequest{ProposalId: second.GetProposalId()})
	require.NoError(t, err)
	e.wait(second.GetProposalId(), memoryv1.ProposalStatus_PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW)

	before := e.written(second.GetProposalId())
	pv = e.preview(e.reviewer(), second.GetProposalId())
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW, pv.GetStatus())
	require.Empty(t, pv.GetWouldFailReason(), pv.GetWouldFailMessage())
	added, removed := changedLines(diffsByFile(pv.GetFiles())["facts.md"])
	require.Equal(t, []string{"- from run 2"}, added)
	require.Empty(t, removed)
	e.requireUnchanged(before, second.GetProposalId())

	p := e.approveAndWait(second.GetProposalId())
	e.requireCommitIsPreview(p, pv)
}

// The agent's logic lives outside its memory folder (logic/<agentId>/):
// the preview names those files as proposals do, relative to the agent,
// with the previous version kept under logic/versions/.
func TestPreviewOfALogicChange(t *testing.T) {
	e := newEnv(t)
	logic := func(run, content string) string {
		return e.propose(&memoryv1.ProposeRequest{AgentId: "ops", RunId: run, Updates: []*memoryv1.FileUpdate{
			{File: "logic/current.pseudo.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: content}}}).GetProposalId()
	}
	e.approveAndWait(logic("run_1", "# Logic\n\n1. read\n"))
	id := logic("run_2", "# Logic\n\n1. read\n2. think\n")

	pv := e.preview(e.reviewer(), id)
	require.Equal(t, []string{"logic/current.pseudo.md", "logic/versions/v1/current.pseudo.md", "changelog.md", "meta.json", "timeline/2026-02-17.md"},
		fileNames(pv.GetFiles()))
	added, _ := changedLines(pv.GetFiles()[0].GetUnifiedDiff())
	require.Equal(t, []string{"2. think"}, added)
	require.Equal(t, memoryv1.ChangeKind_CHANGE_KIND_ADDED, pv.GetFiles()[1].GetChange())
	require.True(t, strings.HasPrefix(pv.GetFiles()[1].GetUnifiedDiff(), "--- /dev/null\n+++ b/logic/versions/v1/current.pseudo.md\n"))

	p := e.approveAndWait(id)
	applied := e.preview(e.reviewer(), p.GetProposalId())
	require.True(t, proto.Equal(&memoryv1.PreviewProposalResponse{Files: pv.GetFiles()}, &memoryv1.PreviewProposalResponse{Files: applied.GetFiles()}),
		"the commit's diff is the preview's:\n%v\n%v", pv.GetFiles(), applied.GetFiles())
}

// A proposal a reviewer rejected never commits (its status says so); its
// preview still shows what it would have committed on the current files.
func TestPreviewOfARejectedProposal(t *testing.T) {
	e := newEnv(t)
	resp := e.propose(&memoryv1.ProposeRequest{AgentId: "rj", RunId: "run_1", Updates: []*memoryv1.FileUpdate{appendFact("Domain", "- a doubtful fact")}})
	_, err := e.client.RejectProposal(e.reviewer(), &memoryv1.RejectProposalRequest{ProposalId: resp.GetProposalId(), Reason: "doubtful"})
	require.NoError(t, err)
	before := e.written(resp.GetProposalId())

	pv := e.preview(e.reviewer(), resp.GetProposalId())
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_REJECTED, pv.GetStatus())
	require.Empty(t, pv.GetWouldFailReason())
	added, _ := changedLines(diffsByFile(pv.GetFiles())["facts.md"])
	require.Contains(t, added, "- a doubtful fact")
	e.requireUnchanged(before, resp.GetProposalId())
}

// Who may read a proposal (GetProposal's roles) may preview it; another
// agent's proposal reads as not found, as does an unknown id.
func TestPreviewIsForWhoMayReadTheProposal(t *testing.T) {
	e := newEnv(t)
	resp := e.propose(&memoryv1.ProposeRequest{AgentId: "alpha", RunId: "run_1", Updates: []*memoryv1.FileUpdate{appendFact("Domain", "- alpha's fact")}})
	id := resp.GetProposalId()
	for name, ctx := range map[string]context.Context{
		"own agent": e.agent("alpha"), "reviewer": e.reviewer(), "service": e.service(),
		"admin": e.as("root", adminRole()),
	} {
		_, err := e.client.PreviewProposal(ctx, &memoryv1.PreviewProposalRequest{ProposalId: id})
		require.NoError(t, err, name)
	}
	notFound := func(ctx context.Context, id string) {
		t.Helper()
		_, err := e.client.PreviewProposal(ctx, &memoryv1.PreviewProposalRequest{ProposalId: id})
		require.Equal(t, codes.NotFound, status.Code(err), err)
		require.Equal(t, "PROPOSAL_NOT_FOUND", apierr.Info(err).GetReason())
		require.NotContains(t, status.Convert(err).Message(), "alpha's fact")
	}
	notFound(e.agent("beta"), id)
	notFound(e.as("beta-reviewer", []auth.Role{auth.RoleReviewer}, "beta"), id)
	notFound(e.as("root", adminRole()), "proposal_doesnotexist0000000000")
	notFound(e.as("root", adminRole()), "")

	_, err := e.client.PreviewProposal(context.Background(), &memoryv1.PreviewProposalRequest{ProposalId: id})
	require.Equal(t, codes.Unauthenticated, status.Code(err))
}
