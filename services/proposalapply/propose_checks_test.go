package proposalapply

import (
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

// Issue #23 point 5, from its words: what can be known at propose time is
// refused at propose time with a precise 400, and nothing is stored — these
// were accepted as approved and ended failed at apply, or were applied
// wrongly.
func TestProposeRefusesWhatCannotApply(t *testing.T) {
	e := newEnv(t, autoApprove)
	// The agent has one fact and loops: loop_001 open, loop_002 closed.
	e.waitApplied(e.propose(&memoryv1.ProposeRequest{AgentId: "chk", RunId: "run_0", Updates: []*memoryv1.FileUpdate{
		appendFact("Domain", "- the only fact"),
		{File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_OPEN, Content: "first loop"},
		{File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_OPEN, Content: "second loop"},
	}}).GetProposalId())
	e.waitApplied(e.propose(&memoryv1.ProposeRequest{AgentId: "chk", RunId: "run_1", Updates: []*memoryv1.FileUpdate{
		{File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_CLOSE, LoopId: "loop_002", Resolution: "done"},
	}}).GetProposalId())

	oneFactOverBudget := "- " + strings.Repeat("replica zone power feed ", 2100)
	bigLoop := strings.Repeat("replica zone power feed ", 900) // ~3,600 tokens
	for _, tc := range []struct {
		name   string
		update *memoryv1.FileUpdate
		reason string
		want   string // in the message
	}{
		{"a section heading that is a file title", appendFact("# Facts: other-agent", "- a fact"), "INVALID_CONTENT", "section"},
		{"an embedded \\n# heading in a fact", appendFact("Domain", "- a fact\n# Facts: other-agent"), "INVALID_CONTENT", "heading"},
		{"an embedded \\r# heading in a fact", appendFact("Domain", "- a fact\r# Facts: other-agent"), "INVALID_CONTENT", "heading"},
		{"an embedded heading in a loop", &memoryv1.FileUpdate{File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_OPEN, Content: "loop\n# Open Loops: x"}, "INVALID_CONTENT", ""},
		{"a loop id that is a path", &memoryv1.FileUpdate{File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_CLOSE, LoopId: "../../x", Resolution: "r"}, "", "../../x"},
		{"an open loop of 3,600 tokens", &memoryv1.FileUpdate{File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_OPEN, Content: bigLoop}, "TOKEN_LIMIT_EXCEEDED", "open_loops.md"},
		{"closing an unknown loop", &memoryv1.FileUpdate{File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_CLOSE, LoopId: "loop_404", Resolution: "r"}, "INVALID_ARGUMENT", "loop_404"},
		{"closing an already-closed loop", &memoryv1.FileUpdate{File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_CLOSE, LoopId: "loop_002", Resolution: "r"}, "INVALID_ARGUMENT", "loop_002"},
		{"removing a fact that is not there", &memoryv1.FileUpdate{File: "facts.md", Operation: memoryv1.Operation_OPERATION_REMOVE, Content: "- not there"}, "INVALID_ARGUMENT", "not there"},
		{"a single fact larger than the whole facts budget", appendFact("Domain", oneFactOverBudget), "TOKEN_LIMIT_EXCEEDED", "facts.md"},
		{"an empty section", appendFact("", "- a fact"), "INVALID_ARGUMENT", "section"},
		{"an artifact name that climbs out", &memoryv1.FileUpdate{File: "runs/run_1/artifacts/../../facts.md", Operation: memoryv1.Operation_OPERATION_WRITE_ARTIFACT, Content: "x"}, "INVALID_PATH", ""},
		{"an artifact over --max-artifact-bytes", &memoryv1.FileUpdate{File: "runs/run_1/artifacts/log.txt", Operation: memoryv1.Operation_OPERATION_WRITE_ARTIFACT, Content: strings.Repeat("x", 256<<10+1)}, "REQUEST_TOO_LARGE", "at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.commitCount()
			listBefore, err := e.client.ListProposals(e.service(), &memoryv1.ListProposalsRequest{AgentId: "chk"})
			require.NoError(t, err)
			_, err = e.client.Propose(e.service(), &memoryv1.ProposeRequest{AgentId: "chk", RunId: "run_9", Updates: []*memoryv1.FileUpdate{tc.update}})
			require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			if tc.reason != "" {
				require.Equal(t, tc.reason, apierr.Info(err).GetReason(), "%v", err)
			}
			require.Contains(t, status.Convert(err).Message(), tc.want)
			require.Equal(t, before, e.commitCount())
			listAfter, err := e.client.ListProposals(e.service(), &memoryv1.ListProposalsRequest{AgentId: "chk"})
			require.NoError(t, err)
			require.Len(t, listAfter.GetProposals(), len(listBefore.GetProposals()), "nothing is stored")
		})
	}
}

// The semantic guard does not flag an entity the same proposal introduces.
func TestGuardKnowsEntitiesTheProposalIntroduces(t *testing.T) {
	e := newEnv(t, autoApprove)
	graph := &recordingGuard{findings: []*memoryv1.CheckFinding{{Kind: "unknown_entity_ref", Detail: "unknown"}}}
	e.guard = graph
	e.restart(autoApprove)
	resp := e.propose(&memoryv1.ProposeRequest{AgentId: "g", RunId: "run_1", EntityRefs: []string{"minio"},
		Updates: []*memoryv1.FileUpdate{appendFact("Technical", "- [[MinIO]] keeps versions of every object")}})
	require.Empty(t, resp.GetProposal().GetFlags())
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED, resp.GetStatus())
	require.Empty(t, graph.asked(), "nothing left to ask the graph")
}

// Issue #23 point 3: ALWAYS_LOAD blocks belong in Layer 1. One in a Layer 2
// file is accepted with a warning (it will never be auto-loaded); the
// blocks of Layer 1 have a cap of their own, enforced at propose.
func TestAlwaysLoadWarningAndCap(t *testing.T) {
	e := newEnv(t, autoApprove)
	resp := e.propose(&memoryv1.ProposeRequest{AgentId: "al", RunId: "run_1", Updates: []*memoryv1.FileUpdate{
		{File: "decisions.md", Operation: memoryv1.Operation_OPERATION_ADD_DECISION, Decision: &memoryv1.Decision{
			Title: "Pin this", Decision: "<!-- ALWAYS_LOAD -->\nAlways use MinIO\n<!-- /ALWAYS_LOAD -->"}},
		{File: "runs/run_1.md", Operation: memoryv1.Operation_OPERATION_WRITE_RUN, Content: "# Run: run_1\n<!-- ALWAYS_LOAD -->\nx\n<!-- /ALWAYS_LOAD -->\n"},
	}})
	require.Len(t, resp.GetProposal().GetWarnings(), 2, "%q", resp.GetProposal().GetWarnings())
	require.Contains(t, resp.GetProposal().GetWarnings()[0], "decisions.md is Layer 2")
	require.Contains(t, resp.GetProposal().GetWarnings()[1], "runs/run_1.md is Layer 2")
	require.Len(t, e.waitApplied(resp.GetProposalId()).GetWarnings(), 2, "the applied proposal keeps its warnings")

	small := "# Snapshot: al\n<!-- ALWAYS_LOAD -->\nuse MinIO\n<!-- /ALWAYS_LOAD -->\n"
	e.waitApplied(e.propose(&memoryv1.ProposeRequest{AgentId: "al", RunId: "run_2", Updates: []*memoryv1.FileUpdate{
		{File: "snapshot.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: small}}}).GetProposalId())

	big := "# Snapshot: al\n<!-- ALWAYS_LOAD -->\n" + strings.Repeat("always remember the zones ", 250) + "\n<!-- /ALWAYS_LOAD -->\n"
	before := e.commitCount()
	_, err := e.client.Propose(e.service(), &memoryv1.ProposeRequest{AgentId: "al", RunId: "run_3", Updates: []*memoryv1.FileUpdate{
		{File: "snapshot.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: big}}})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	info := apierr.Info(err)
	require.Equal(t, "TOKEN_LIMIT_EXCEEDED", info.GetReason())
	require.Equal(t, "ALWAYS_LOAD", info.GetMetadata()["file"])
	require.Equal(t, "1000", info.GetMetadata()["limit"])
	require.Equal(t, before, e.commitCount())

	// The cap is a flag.
	e.restart(autoApprove, func(c *Config) { c.AlwaysLoadLimit = 5000 })
	e.waitApplied(e.propose(&memoryv1.ProposeRequest{AgentId: "al", RunId: "run_3", Updates: []*memoryv1.FileUpdate{
		{File: "snapshot.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: big}}}).GetProposalId())
}

// Issue #23 point 4 (spec integration §1, DiffMem §3.2): run artifacts,
// logic versions, and a timeline that carries durations and stays within
// 2,000 tokens a day.
func TestRunsArtifactsLogicVersionsTimeline(t *testing.T) {
	e := newEnv(t, autoApprove)
	art := "{\"rows\": 3}\n  kept   byte for byte"
	p := e.waitApplied(e.propose(&memoryv1.ProposeRequest{AgentId: "rt", RunId: "run_a1", RunDuration: durationpb.New(45 * time.Second),
		Updates: []*memoryv1.FileUpdate{
			{File: "runs/run_a1.md", Operation: memoryv1.Operation_OPERATION_WRITE_RUN, Content: "# Run: run_a1\n"},
			{File: "runs/run_a1/artifacts/report.json", Operation: memoryv1.Operation_OPERATION_WRITE_ARTIFACT, Content: art},
			{File: "logic/current.pseudo.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "1. look\n"},
		}}).GetProposalId())
	require.Equal(t, art, e.file("rt", "runs/run_a1/artifacts/report.json"))
	require.Contains(t, e.file("rt", "timeline/2026-02-17.md"), "### 14:30 — run_a1\n**Duration:** 45s\n")
	require.Contains(t, e.git("show", "--name-only", "--format=", p.GetCommitSha()), "memory/rt/runs/run_a1/artifacts/report.json")

	// Replacing the logic keeps the previous files under logic/versions/.
	p = e.waitApplied(e.propose(&memoryv1.ProposeRequest{AgentId: "rt", RunId: "run_a2", Updates: []*memoryv1.FileUpdate{
		{File: "logic/current.pseudo.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "1. look\n2. think\n"}}}).GetProposalId())
	require.Equal(t, "1. look\n", e.file("rt", "logic/versions/v1/current.pseudo.md"))
	require.Equal(t, "1. look\n2. think\n", e.file("rt", "logic/current.pseudo.md"))
	require.Contains(t, e.git("show", "--name-only", "--format=", p.GetCommitSha()), "logic/rt/versions/v1/current.pseudo.md")

	// A busy day's timeline stays within its 2,000 tokens.
	for i := range 60 {
		e.clock.Advance(7 * time.Minute)
		e.waitApplied(e.propose(&memoryv1.ProposeRequest{AgentId: "rt", RunId: fmt.Sprintf("run_b%02d", i),
			Reasoning: "Analyse the replication lag of the eastern region and record what changed there",
			Updates:   []*memoryv1.FileUpdate{appendFact("Domain", fmt.Sprintf("- fact %d", i))}}).GetProposalId())
		tl := e.file("rt", "timeline/2026-02-17.md")
		require.LessOrEqual(t, e.counter.Count(tl), memlayout.TimelineDayLimit, "run %d", i)
		require.Contains(t, tl, fmt.Sprintf("run_b%02d", i), "the newest run is in the timeline")
	}
	require.Contains(t, e.file("rt", "timeline/2026-02-17.md"), "**Earlier:** ")
}
