package proposalapply

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/mdops"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

// Issue #23, DiffMem §11.3 and integration §2.3, written from the spec's
// words: when facts.md is full, appending keeps the new facts and evicts the
// oldest — oldest by the commit that added them, not by calendar day (every
// commit here is on one day, minutes apart) and not by position (batches go
// to sections in an order that puts newer facts above older ones).
func TestFullFactsKeepNewestOnOneDay(t *testing.T) {
	e := newEnv(t, autoApprove)
	sections := []string{"Zeta", "Alpha", "Mu", "Alpha", "Zeta", "Beta"}
	var added [][]string // facts per commit, in commit order
	var evictedSoFar []string
	// The agent starts with a snapshot, so its memory predates every fact.
	e.waitApplied(e.propose(&memoryv1.ProposeRequest{AgentId: "day", RunId: "run_start",
		Updates: []*memoryv1.FileUpdate{{File: "snapshot.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "# Snapshot: day\n"}}}).GetProposalId())
	for b := range 14 {
		e.clock.Advance(3 * time.Minute)
		batch := factBatch(fmt.Sprintf("c%02d", b), 25)
		resp := e.propose(&memoryv1.ProposeRequest{AgentId: "day", RunId: fmt.Sprintf("run_%02d", b),
			Updates: []*memoryv1.FileUpdate{appendFact(sections[b%len(sections)], batch)}})
		p := e.waitApplied(resp.GetProposalId())
		added = append(added, mdopsTexts(batch))

		facts := e.file("day", "facts.md")
		require.LessOrEqual(t, e.counter.Count(facts), memlayout.FactsLimit, "commit %d", b)
		for _, f := range added[b] {
			require.Contains(t, facts, f, "commit %d: a fact this proposal appended was evicted by its own apply", b)
		}
		// The evicted facts are exactly those no longer in facts.md, and
		// they are the oldest: every fact of an older commit went before any
		// fact of a newer one.
		var gone []string
		for _, batch := range added {
			for _, f := range batch {
				if !strings.Contains(facts, f) {
					gone = append(gone, f)
				}
			}
		}
		newly := slices.DeleteFunc(slices.Clone(gone), func(f string) bool { return slices.Contains(evictedSoFar, f) })
		require.ElementsMatch(t, newly, p.GetEvictedFacts(), "commit %d: the proposal lists exactly the facts its commit evicted", b)
		require.True(t, slices.Equal(flatten(added)[:len(gone)], gone), "commit %d: evicted facts are not the oldest by commit: %q", b, gone)
		evictedSoFar = gone

		if len(newly) > 0 {
			msg := e.git("log", "-1", "--format=%B", p.GetCommitSha())
			for _, f := range newly {
				require.Contains(t, msg, f, "the commit message lists each evicted fact")
			}
		}
	}
	require.NotEmpty(t, evictedSoFar, "the test must fill facts.md past its limit")
	decisions := e.file("day", "decisions.md")
	for _, f := range evictedSoFar {
		require.Contains(t, decisions, "- "+f+" — added 2026-02-17, evicted 2026-02-17", "evicted facts stay in decisions.md, verbatim, with their dates")
	}
}

// A proposal whose own appended facts alone are over the facts budget can
// never apply: it is refused at propose with the counts, and nothing is
// stored.
func TestAppendsAloneOverFactsLimitRefused(t *testing.T) {
	e := newEnv(t, autoApprove)
	before := e.commitCount()
	_, err := e.client.Propose(e.service(), &memoryv1.ProposeRequest{AgentId: "huge", RunId: "run_1",
		Updates: []*memoryv1.FileUpdate{appendFact("Domain", factBatch("huge", 400))}})
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	info := apierr.Info(err)
	require.Equal(t, "TOKEN_LIMIT_EXCEEDED", info.GetReason())
	require.NotEmpty(t, info.GetMetadata()["tokens"])
	require.Equal(t, fmt.Sprint(memlayout.FactsLimit), info.GetMetadata()["limit"])
	require.Equal(t, before, e.commitCount())
	list, err := e.client.ListProposals(e.service(), &memoryv1.ListProposalsRequest{AgentId: "huge"})
	require.NoError(t, err)
	require.Empty(t, list.GetProposals(), "nothing is stored")
}

// A fact appended by the proposal being applied is never evicted, even when
// the older facts are all fresh and the new one sits above them in the file.
func TestOwnAppendsNeverEvicted(t *testing.T) {
	e := newEnv(t, autoApprove)
	for b := range 12 {
		section := "Later"
		if b == 0 {
			section = "Top"
		}
		resp := e.propose(&memoryv1.ProposeRequest{AgentId: "own", RunId: fmt.Sprintf("run_%d", b),
			Updates: []*memoryv1.FileUpdate{appendFact(section, factBatch(fmt.Sprintf("b%02d", b), 25))}})
		e.waitApplied(resp.GetProposalId())
	}
	// The new facts go to the first section, above every fact but the
	// oldest batch's: by position they would be the next to go.
	resp := e.propose(&memoryv1.ProposeRequest{AgentId: "own", RunId: "run_new",
		Updates: []*memoryv1.FileUpdate{appendFact("Top", factBatch("newest", 30))}})
	p := e.waitApplied(resp.GetProposalId())
	facts := e.file("own", "facts.md")
	for _, f := range mdopsTexts(factBatch("newest", 30)) {
		require.Contains(t, facts, f)
	}
	require.NotEmpty(t, p.GetEvictedFacts())
	// Every fact it evicted is older (by its batch, that is, its commit)
	// than every older fact it kept.
	newestEvicted := ""
	for _, f := range p.GetEvictedFacts() {
		newestEvicted = max(newestEvicted, f[:3])
	}
	for _, f := range mdops.ParseFacts(facts) {
		if !strings.HasPrefix(f.Text, "newest") {
			require.GreaterOrEqual(t, f.Text[:3], newestEvicted, "kept %q while evicting a newer fact", f.Text)
		}
	}
}

func mdopsTexts(batch string) []string {
	var out []string
	for _, f := range mdops.ParseFacts(batch) {
		out = append(out, f.Text)
	}
	return out
}

func flatten(xs [][]string) []string {
	var out []string
	for _, x := range xs {
		out = append(out, x...)
	}
	return out
}
