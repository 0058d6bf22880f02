package temporalgraph

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The tests below come from ai-skills-memory-protocol §4.1 (typed nodes),
// §4.2 (typed edges with valid_from/valid_to and evidence), §4.2.1 (context
// hierarchy from a "/" or ":" separated path) and §8.4.5 (an episode's
// facts derived deterministically from its structured fields), applied to
// the run file IngestEpisode writes (docs/episodes.md).

const runPath = "memory/coder/runs/run_ep-0001.md"

// failureRun is an episode run file in the exact format of the contract,
// every field given: a failed episode with its failure mode and fix. Its
// Summary and Facts quote field lines and typed links that must add no
// typed edge (only header lines count).
const failureRun = `# Episode ep-0001

- **Episode:** [[episode:ep-0001]]
- **When:** 2026-02-17T09:00:00Z
- **Task:** [[task:task-1a2b3c4d|Fix the refund rounding bug]]
- **Outcome:** [[outcome:failure]] (severity: high) — refunds still off by a cent
- **Context:** [[context:backend/payments/refunds]]
- **Skills used:** [[skill:go-testing]], [[skill:debugging]]
- **Artifacts touched:** [[artifact:services/payments/refund.go]], [[artifact:services/payments/refund_test.go]]
- **Failure mode:** [[failure-mode:nil pointer dereference]]
- **Fix:** [[fix:check the refund before use]]
- **Tests:** [[test:TestRefundRounding]] pass (120 ms), [[test:TestRefundNil]] fail
- **Environment:** [[environment:linux-go1.24]] linux, go1.24, make
- **Duration:** 45s

## Summary

Rounding is done in cents now; the nil refund still crashes. [[skill:profiling]] was not needed.

## Errors

- runtime error: invalid memory address or nil pointer dereference

## Facts

- **Skills used:** [[skill:forged]] quoted in a fact
`

// typedEdge is an edge as the tests compare it: ends, relation and the
// evidence line in its one file.
type typedEdge struct {
	from, rel, to string
	line          int
}

// episodeRels are the typed relations of episodes.
var episodeRels = []string{RelUsedSkill, RelTouchedArtifact, RelResultedIn, RelHasFailureMode, RelMitigatedBy,
	RelInContext, RelChildOf, RelRanTest, RelHasEpisode, RelRanIn}

// typedEdges returns g's edges of the typed relations visible at at, with
// their evidence in file; each must have exactly that one evidence.
func typedEdges(t *testing.T, g *Graph, file string, at time.Time) []typedEdge {
	t.Helper()
	var out []typedEdge
	for _, e := range g.allEdges() {
		if !slices.Contains(episodeRels, e.Relation) || !visible(e, at) {
			continue
		}
		require.Len(t, e.Evidence, 1, "%s -%s-> %s", e.From, e.Relation, e.To)
		require.Equal(t, file, e.Evidence[0].File)
		out = append(out, typedEdge{e.From, e.Relation, e.To, e.Evidence[0].Line})
	}
	return out
}

func TestEpisodeRunFileYieldsTheTypedNodesAndEdges(t *testing.T) {
	g := New()
	t.Cleanup(func() { _ = g.Close() })
	g.ApplyCommit(Commit{Sha: "c1", Time: at(1), AgentID: "coder", Files: map[string]*string{runPath: ptr(failureRun)}})

	type node struct{ id, typ, label string }
	var nodes []node
	for _, n := range g.Nodes(NodeFilter{}) {
		nodes = append(nodes, node{n.ID, n.Type, n.Label})
		require.Equal(t, []string{runPath}, n.Refs, n.ID)
	}
	require.ElementsMatch(t, []node{
		{"coder", TypeAgent, "coder"},
		{"episode-ep-0001", TypeEpisode, "ep-0001"},
		{"task-1a2b3c4d", TypeTask, "Fix the refund rounding bug"},
		{"outcome-failure", TypeOutcome, "failure"},
		{"context-backend", TypeContext, "backend"},
		{"context-backend-payments", TypeContext, "backend/payments"},
		{"context-backend-payments-refunds", TypeContext, "backend/payments/refunds"},
		{"go-testing", TypeSkill, "go-testing"},
		{"debugging", TypeSkill, "debugging"},
		{"services-payments-refund-go", TypeArtifact, "services/payments/refund.go"},
		{"services-payments-refund-test-go", TypeArtifact, "services/payments/refund_test.go"},
		{"failure-mode-nil-pointer-dereference", TypeFailureMode, "nil pointer dereference"},
		{"fix-check-the-refund-before-use", TypeFix, "check the refund before use"},
		{"test-testrefundrounding", TypeTest, "TestRefundRounding"},
		{"test-testrefundnil", TypeTest, "TestRefundNil"},
		{"environment-linux-go1-24", TypeEnvironment, "linux-go1.24"},
		// Named in the summary and a fact: declared (and mentioned by
		// the agent), but no episode edge.
		{"profiling", TypeSkill, "profiling"},
		{"forged", TypeSkill, "forged"},
	}, nodes)

	ep := "episode-ep-0001"
	require.ElementsMatch(t, []typedEdge{
		{"task-1a2b3c4d", RelHasEpisode, ep, 5},
		{ep, RelResultedIn, "outcome-failure", 6},
		{ep, RelInContext, "context-backend-payments-refunds", 7},
		{"context-backend-payments-refunds", RelChildOf, "context-backend-payments", 7},
		{"context-backend-payments", RelChildOf, "context-backend", 7},
		{ep, RelUsedSkill, "go-testing", 8},
		{ep, RelUsedSkill, "debugging", 8},
		{ep, RelTouchedArtifact, "services-payments-refund-go", 9},
		{ep, RelTouchedArtifact, "services-payments-refund-test-go", 9},
		{"outcome-failure", RelHasFailureMode, "failure-mode-nil-pointer-dereference", 10},
		{"failure-mode-nil-pointer-dereference", RelMitigatedBy, "fix-check-the-refund-before-use", 11},
		{ep, RelRanTest, "test-testrefundrounding", 12},
		{ep, RelRanTest, "test-testrefundnil", 12},
		{ep, RelRanIn, "environment-linux-go1-24", 13},
	}, typedEdges(t, g, runPath, time.Time{}))

	// Besides the typed edges only the agent's mentions: no relates_to
	// fan-out between the links of a line, no other relation.
	for _, e := range g.allEdges() {
		if !slices.Contains(episodeRels, e.Relation) {
			require.Equal(t, RelMentions, e.Relation, "%s -%s-> %s", e.From, e.Relation, e.To)
			require.Equal(t, "coder", e.From)
		}
	}
	_, mentions := g.Neighbors("coder", 1, []string{RelMentions}, time.Time{})
	require.Len(t, mentions, len(nodes)-1, "the agent mentions every entity its run file names")
}

// §4.2.1: a context path, "/" or ":" separated, is a chain of contexts, each
// CHILD_OF the one before; a plain text is one flat context. The spec's own
// example hierarchy, verbatim.
func TestContextPathIsAChildOfChain(t *testing.T) {
	for _, tc := range []struct {
		name, link string
		want       []typedEdge
		labels     map[string]string
	}{
		{"slashes, the spec's example", "[[context:програмування/java/паттерни]]", []typedEdge{
			{"context-програмування-java-паттерни", RelChildOf, "context-програмування-java", 1},
			{"context-програмування-java", RelChildOf, "context-програмування", 1},
		}, map[string]string{
			"context-програмування": "програмування", "context-програмування-java": "програмування/java",
			"context-програмування-java-паттерни": "програмування/java/паттерни",
		}},
		{"colons", "[[context:programming:python:async]]", []typedEdge{
			{"context-programming-python-async", RelChildOf, "context-programming-python", 1},
			{"context-programming-python", RelChildOf, "context-programming", 1},
		}, map[string]string{
			"context-programming": "programming", "context-programming-python": "programming/python",
			"context-programming-python-async": "programming/python/async",
		}},
		{"mixed, spaced, empty levels dropped", "[[context: backend / payments:: refunds /]]", []typedEdge{
			{"context-backend-payments-refunds", RelChildOf, "context-backend-payments", 1},
			{"context-backend-payments", RelChildOf, "context-backend", 1},
		}, map[string]string{
			"context-backend": "backend", "context-backend-payments": "backend/payments",
			"context-backend-payments-refunds": "backend/payments/refunds",
		}},
		{"plain text is one flat context", "[[context:загальне]]", nil, map[string]string{"context-загальне": "загальне"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := New()
			t.Cleanup(func() { _ = g.Close() })
			g.ApplyCommit(Commit{Sha: "c1", Time: at(1), Files: map[string]*string{"notes/contexts.md": ptr(tc.link + "\n")}})
			require.ElementsMatch(t, tc.want, typedEdges(t, g, "notes/contexts.md", time.Time{}))
			got := map[string]string{}
			for _, n := range g.Nodes(NodeFilter{Type: TypeContext}) {
				got[n.ID] = n.Label
			}
			require.Equal(t, tc.labels, got)
		})
	}
}

// §4.2 and §8.4.5: a failure episode is Outcome HAS_FAILURE_MODE
// FailureMode MITIGATED_BY Fix; the walk from the failure mode finds the
// fix and the outcome, and the outcome's episodes.
func TestFailureEpisodeChainsOutcomeFailureModeFix(t *testing.T) {
	g := New()
	t.Cleanup(func() { _ = g.Close() })
	g.ApplyCommit(Commit{Sha: "c1", Time: at(1), AgentID: "coder", Files: map[string]*string{runPath: ptr(failureRun)}})
	fm := "failure-mode-nil-pointer-dereference"
	ns, es := g.Neighbors("Failure mode: nil pointer dereference", 1, []string{RelHasFailureMode, RelMitigatedBy}, time.Time{})
	require.Equal(t, []string{"fix-check-the-refund-before-use", "outcome-failure"}, ids(ns))
	require.Len(t, es, 2)
	require.Len(t, find(es, "outcome-failure", RelHasFailureMode, fm), 1)
	require.Len(t, find(es, fm, RelMitigatedBy, "fix-check-the-refund-before-use"), 1)

	// From the fix back to the episode: fix ← failure mode ← outcome ←
	// episode.
	ns, _ = g.Neighbors("fix-check-the-refund-before-use", 3, []string{RelMitigatedBy, RelHasFailureMode, RelResultedIn}, time.Time{})
	require.Equal(t, []string{"episode-ep-0001", fm, "outcome-failure"}, ids(ns))
}

// A success without failure mode or fix has no HAS_FAILURE_MODE and no
// MITIGATED_BY; lines that are not given are simply absent.
func TestSuccessEpisodeHasNoFailureMode(t *testing.T) {
	run := "# Episode ep-2\n\n- **Episode:** [[episode:ep-2]]\n- **When:** 2026-02-17T10:00:00Z\n" +
		"- **Task:** [[task:task-00000002|Write docs]]\n- **Outcome:** [[outcome:success]]\n" +
		"- **Skills used:** [[skill:docs]]\n\n## Summary\n\nDone.\n"
	g := New()
	t.Cleanup(func() { _ = g.Close() })
	g.ApplyCommit(Commit{Sha: "c1", Time: at(1), Files: map[string]*string{"memory/writer/runs/run_ep-2.md": ptr(run)}})
	require.ElementsMatch(t, []typedEdge{
		{"task-00000002", RelHasEpisode, "episode-ep-2", 5},
		{"episode-ep-2", RelResultedIn, "outcome-success", 6},
		{"episode-ep-2", RelUsedSkill, "docs", 7},
	}, typedEdges(t, g, "memory/writer/runs/run_ep-2.md", time.Time{}))
}

// episodeRun is a minimal episode run file using skill.
func episodeRun(id, skill string) string {
	return fmt.Sprintf("# Episode %s\n\n- **Episode:** [[episode:%s]]\n- **Outcome:** [[outcome:success]]\n- **Skills used:** [[skill:%s]]\n", id, id, skill)
}

// §8.4.3/§8.4.5 step 3: one skill is one node whichever episode uses it
// (stable keys); each episode's USED_SKILL edge is its own, with its own
// evidence. The shared outcome node has one RESULTED_IN per episode.
func TestTwoEpisodesShareOneSkillNode(t *testing.T) {
	g := New()
	t.Cleanup(func() { _ = g.Close() })
	a, b := "memory/coder/runs/run_a.md", "memory/coder/runs/run_b.md"
	g.ApplyCommit(Commit{Sha: "c1", Time: at(1), Files: map[string]*string{a: ptr(episodeRun("ep-a", "Go Testing"))}})
	g.ApplyCommit(Commit{Sha: "c2", Time: at(2), Files: map[string]*string{b: ptr(episodeRun("ep-b", "go-testing"))}})

	require.Len(t, g.Nodes(NodeFilter{Type: TypeSkill}), 1)
	byRef, _, ok := g.Node("skill:Go Testing", time.Time{})
	require.True(t, ok, "looked up as a typed link target")
	require.Equal(t, "go-testing", byRef.ID)
	n, es, ok := g.Node("go-testing", time.Time{})
	require.True(t, ok)
	require.Equal(t, TypeSkill, n.Type)
	require.Equal(t, "Go Testing", n.Label)
	require.Equal(t, []string{a, b}, n.Refs)
	require.Equal(t, []Evidence{{File: a, Commit: "c1", Line: 5}}, find(es, "episode-ep-a", RelUsedSkill, "go-testing")[0].Evidence)
	require.Equal(t, []Evidence{{File: b, Commit: "c2", Line: 5}}, find(es, "episode-ep-b", RelUsedSkill, "go-testing")[0].Evidence)
	require.Len(t, find(es, "episode-ep-a", RelUsedSkill, "go-testing"), 1)
	require.Equal(t, at(1), find(es, "episode-ep-a", RelUsedSkill, "go-testing")[0].ValidFrom)
	require.Equal(t, at(2), find(es, "episode-ep-b", RelUsedSkill, "go-testing")[0].ValidFrom)

	ns, used := g.Neighbors("go-testing", 1, []string{RelUsedSkill}, time.Time{})
	require.Equal(t, []string{"episode-ep-a", "episode-ep-b"}, ids(ns))
	require.Len(t, used, 2)
	ns, _ = g.Neighbors("outcome-success", 1, []string{RelResultedIn}, time.Time{})
	require.Equal(t, []string{"episode-ep-a", "episode-ep-b"}, ids(ns))
}

// §4.2: edges have valid_from and valid_to. Run rotation deletes a run
// file: its edges close at that commit, and the graph as of any point
// before still has them.
func TestDeletingTheRunFileClosesItsEdges(t *testing.T) {
	g := New()
	t.Cleanup(func() { _ = g.Close() })
	g.ApplyCommit(Commit{Sha: "c1", Time: at(1), Files: map[string]*string{runPath: ptr(failureRun)}})
	g.ApplyCommit(Commit{Sha: "c2", Time: at(2), Files: map[string]*string{"memory/coder/facts.md": ptr("# Facts: coder\n\n## Go\n- [[skill:go-testing]] needs -race\n")}})
	g.ApplyCommit(Commit{Sha: "c3", Time: at(3), Files: map[string]*string{runPath: nil}})

	before := typedEdges(t, g, runPath, at(2))
	require.Len(t, before, 14)
	require.Empty(t, typedEdges(t, g, runPath, time.Time{}), "no typed edge holds after the deletion")
	for _, e := range g.allEdges() {
		if slices.Contains(episodeRels, e.Relation) {
			require.Equal(t, at(1), e.ValidFrom)
			require.Equal(t, at(3), e.ValidTo, "%s -%s-> %s", e.From, e.Relation, e.To)
		}
	}
	_, es, ok := g.Node("episode-ep-0001", at(2))
	require.True(t, ok, "the episode as of c2")
	require.Len(t, find(es, "episode-ep-0001", RelUsedSkill, "go-testing"), 1)
	_, es, ok = g.Node("episode-ep-0001", time.Time{})
	require.True(t, ok, "a node is never forgotten")
	require.Empty(t, find(es, "episode-ep-0001", RelUsedSkill, "go-testing"))
	skill, _, _ := g.Node("go-testing", time.Time{})
	require.Equal(t, []string{"memory/coder/facts.md"}, skill.Refs, "facts.md still names the skill")
}

// Re-ingesting the same episode rewrites the same run file: nothing
// changes, edges keep their valid_from and evidence.
func TestRewritingTheSameRunFileChangesNothing(t *testing.T) {
	once, twice := New(), New()
	t.Cleanup(func() { _ = once.Close(); _ = twice.Close() })
	c1 := Commit{Sha: "c1", Time: at(1), Files: map[string]*string{runPath: ptr(failureRun)}}
	once.ApplyCommit(c1)
	twice.ApplyCommit(c1)
	twice.ApplyCommit(Commit{Sha: "c2", Time: at(2), Files: map[string]*string{runPath: ptr(failureRun)}})
	// Only the last-updated times may differ: a rewritten file touches
	// its nodes' refs.
	strip := func(g *Graph) string {
		var b strings.Builder
		for _, l := range strings.Split(g.Dump(), "\n") {
			if i := strings.Index(l, " updated="); i > 0 {
				l = l[:i]
			}
			b.WriteString(l + "\n")
		}
		return b.String()
	}
	require.Equal(t, strip(once), strip(twice))
}

// Outside an episode run file nothing changes: field lines in facts.md or in
// a run file without an Episode line, an Episode line after the header or
// in a run file outside an agent folder, make no typed edge (but typed
// links still set types).
func TestNoTypedEdgesOutsideEpisodeRunFiles(t *testing.T) {
	fields := "- **Skills used:** [[skill:go-testing]]\n- **Outcome:** [[outcome:failure]]\n"
	for _, tc := range []struct{ name, path, content string }{
		{"facts.md", "memory/coder/facts.md", "# Facts: coder\n\n## Run\n- **Episode:** [[episode:ep-9]]\n" + fields},
		{"run file without an Episode line", "memory/coder/runs/run_9.md", "# Run 9\n\n" + fields},
		{"Episode line after the header", "memory/coder/runs/run_9.md", "# Run 9\n\n" + fields + "\n## Notes\n\n- **Episode:** [[episode:ep-9]]\n"},
		{"Episode line without an episode link", "memory/coder/runs/run_9.md", "# Run 9\n\n- **Episode:** ep-9\n" + fields},
		{"not an agent's runs folder", "runs/run_9.md", "# Episode\n\n- **Episode:** [[episode:ep-9]]\n" + fields},
		{"timeline", "memory/coder/timeline/2026-02-17.md", "- **Episode:** [[episode:ep-9]]\n" + fields},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, m := range Extract(tc.path, tc.content) {
				require.False(t, slices.Contains(episodeRels, m.Relation), "%+v", m)
			}
			g := New()
			t.Cleanup(func() { _ = g.Close() })
			g.ApplyCommit(Commit{Sha: "c1", Time: at(1), Files: map[string]*string{tc.path: ptr(tc.content)}})
			n, _, ok := g.Node("go-testing", time.Time{})
			require.True(t, ok)
			require.Equal(t, TypeSkill, n.Type)
		})
	}
}

// Typed links anywhere set the spec's types; skill and artifact ids are
// plain slugs, the episode-only types' ids carry their type (once).
func TestTypedLinkIDs(t *testing.T) {
	for _, tc := range []struct{ link, id, typ, label string }{
		{"[[skill:Go Testing]]", "go-testing", TypeSkill, "Go Testing"},
		{"[[artifact:cmd/memctl/main.go]]", "cmd-memctl-main-go", TypeArtifact, "cmd/memctl/main.go"},
		{"[[episode:ep-1234]]", "episode-ep-1234", TypeEpisode, "ep-1234"},
		{"[[episode:episode-7]]", "episode-7", TypeEpisode, "episode-7"},
		{"[[task:task-1a2b3c4d|Fix the flaky test]]", "task-1a2b3c4d", TypeTask, "Fix the flaky test"},
		{"[[task:task-1a2b3c4d]]", "task-1a2b3c4d", TypeTask, "task-1a2b3c4d"},
		{"[[outcome:partial]]", "outcome-partial", TypeOutcome, "partial"},
		{"[[failure-mode:OOM killed]]", "failure-mode-oom-killed", TypeFailureMode, "OOM killed"},
		{"[[failure_mode:OOM killed]]", "failure-mode-oom-killed", TypeFailureMode, "OOM killed"},
		{"[[Failure-Mode:failure-mode-oom-killed]]", "failure-mode-oom-killed", TypeFailureMode, "failure-mode-oom-killed"},
		{"[[fix:raise the limit|shown]]", "fix-raise-the-limit", TypeFix, "raise the limit"},
		{"[[context:backend]]", "context-backend", TypeContext, "backend"},
		{"[[test:lint]]", "test-lint", TypeTest, "lint"},
		{"[[environment:linux-go1.24]]", "environment-linux-go1-24", TypeEnvironment, "linux-go1.24"},
	} {
		t.Run(tc.link, func(t *testing.T) {
			ms := Extract("notes/x.md", tc.link+"\n")
			require.Equal(t, Mention{EntityID: tc.id, Label: tc.label, Type: tc.typ, Relation: RelRefersTo, Line: 1}, ms[0])
			require.Equal(t, Slug(tc.id), tc.id)
			target, _, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(tc.link, "[["), "]]"), "|")
			require.Equal(t, tc.id, EntityID(target), "a lookup by the link's target")
			require.Equal(t, tc.id, EntityID(tc.id), "a lookup by the id")
		})
	}
	// An outcome "failure" is not the concept "failure".
	ms := Extract("notes/x.md", "[[failure]] [[outcome:failure]]\n")
	require.Equal(t, []string{"failure", "outcome-failure"}, []string{ms[0].EntityID, ms[1].EntityID})
}

// The field lines may come in any order, repeat, and hold links of other
// types: each edge comes from its own line, of its field's type only.
func TestEpisodeFieldsInAnyOrder(t *testing.T) {
	run := "# Episode x\n\n" +
		"- **Fix:** [[fix:retry]]\n" + // 3
		"- **Failure mode:** [[failure-mode:timeout]] see [[artifact:notes.md]]\n" + // 4
		"* **skills used:** [[skill:a]] [[skill:a]] [[b]]\n" + // 5: a bare link is no skill
		"- **Episode:** [[episode:x]] [[episode:y]]\n" + // 6: the first episode
		"- **Outcome:** [[outcome:partial]]\n" + // 7
		"- **Skills used:** [[skill:c]]\n" // 8
	g := New()
	t.Cleanup(func() { _ = g.Close() })
	p := "memory/a/runs/run_x.md"
	g.ApplyCommit(Commit{Sha: "c1", Time: at(1), Files: map[string]*string{p: ptr(run)}})
	require.ElementsMatch(t, []typedEdge{
		{"failure-mode-timeout", RelMitigatedBy, "fix-retry", 3},
		{"outcome-partial", RelHasFailureMode, "failure-mode-timeout", 4},
		{"episode-x", RelUsedSkill, "a", 5},
		{"episode-x", RelResultedIn, "outcome-partial", 7},
		{"episode-x", RelUsedSkill, "c", 8},
	}, typedEdges(t, g, p, time.Time{}))
}
