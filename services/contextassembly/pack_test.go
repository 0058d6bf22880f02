package contextassembly

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/grpctest"
	"github.com/garden-bloom/memory/pkg/tokens"
)

// longSession puts a 60-turn source in whose turn 31 asks about a zeppelin
// and turn 32 answers it, without the word.
func longSession(t *testing.T, e *hintEnv) string {
	var b strings.Builder
	b.WriteString("# Long session — 3 May 2026\n\n")
	for i := 1; i <= 60; i++ {
		switch i {
		case 31:
			b.WriteString("- [T31] Ana: did you ever fly in the zeppelin over the lake?\n")
		case 32:
			b.WriteString("- [T32] Ben: yes, on my birthday, it was windy\n")
		default:
			fmt.Fprintf(&b, "- [T%d] Ana: we talked about the garden and the weather, part %d of a long day\n", i, i)
		}
	}
	const key = "agents/cur/sources/long.md"
	_, err := blob.PutBytes(context.Background(), e.blobs, key, []byte(b.String()), blob.PutOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		r, err := e.search.Search(context.Background(), &memoryv1.SearchRequest{Query: "zeppelin", AgentId: "cur"})
		return err == nil && len(r.GetResults()) == 1
	}, 10*time.Second, 20*time.Millisecond, "the source is indexed")
	return key
}

// count is the tokens of s, as context assembly counts them.
func count(t *testing.T, s string) int {
	c, err := tokens.New("")
	require.NoError(t, err)
	return c.Count(s)
}

// Issue #29, point 1: "Pack what answers, not whole files … give each hit
// a little surrounding context … include a whole source only when its score
// share justifies its token share".
func TestPackingTakesTheHitWithItsContextNotTheWholeSource(t *testing.T) {
	e := newHintEnv(t)
	key := longSession(t, e)

	resp, err := e.client.AssembleContext(e.svc(), &memoryv1.AssembleContextRequest{AgentId: "cur", QueryHint: "did anyone fly in the zeppelin?", Budget: 400})
	require.NoError(t, err)
	require.LessOrEqual(t, resp.GetTotalTokens(), int32(400))
	var sec *memoryv1.ContextSection
	for _, s := range resp.GetSections() {
		if s.GetFile() == key {
			sec = s
		}
	}
	require.NotNil(t, sec, "the hit's file is in: %v", resp.GetSections())
	require.Equal(t, "search_hit", sec.GetKind(), "an excerpt, not the 60 turns")
	require.Contains(t, sec.GetContent(), "[T31] Ana: did you ever fly in the zeppelin")
	require.Contains(t, sec.GetContent(), "[T32] Ben: yes, on my birthday", "the answer next to the hit, though it shares no word with the hint")
	require.True(t, strings.HasPrefix(sec.GetContent(), "# Long session — 3 May 2026\n"), "under its heading (the session's date):\n%s", sec.GetContent())
	require.NotContains(t, sec.GetContent(), "part 10 of a long day")
	require.Equal(t, int32(count(t, sec.GetContent())), sec.GetTokens())

	// With room for everything, every source goes in whole.
	all, err := e.client.AssembleContext(e.svc(), &memoryv1.AssembleContextRequest{AgentId: "cur", QueryHint: "zeppelin", Budget: 100_000})
	require.NoError(t, err)
	kinds := map[string]string{}
	for _, s := range all.GetSections() {
		kinds[s.GetFile()] = s.GetKind()
	}
	for _, f := range []string{key, "agents/cur/sources/session-1.md", "agents/cur/sources/session-2.md", "agents/cur/sources/session-3.md"} {
		require.Equal(t, "source", kinds[f], f)
	}
}

// Whatever the budget, the context keeps to it, and every section's tokens
// are its content's.
func TestPackingKeepsToEveryBudget(t *testing.T) {
	e := newHintEnv(t)
	longSession(t, e)
	for budget := 50; budget <= 3000; budget += 37 {
		resp, err := e.client.AssembleContext(e.svc(), &memoryv1.AssembleContextRequest{AgentId: "cur", QueryHint: "zeppelin garden weather move", Budget: int32(budget)})
		require.NoError(t, err)
		require.LessOrEqual(t, resp.GetTotalTokens(), int32(budget), "budget %d", budget)
		sum := int32(0)
		for _, s := range resp.GetSections() {
			if s.GetKind() != "layer1" {
				require.Equal(t, int32(count(t, s.GetContent())), s.GetTokens(), "budget %d: %s", budget, s.GetFile())
			}
			sum += int32(count(t, s.GetFile())) + s.GetTokens()
		}
		for _, w := range resp.GetWarnings() {
			sum += int32(count(t, w))
		}
		require.Equal(t, resp.GetTotalTokens(), sum, "budget %d: sections and warnings are the total", budget)
	}
}

// A chunk of a source that answers much of the hint outranks the same
// chunk in a source that answers little (Retrieval.SourcePrior): of two
// identical turns, the one from the day about the boat comes first.
func TestPackingPrefersTheSourceThatAnswersMore(t *testing.T) {
	e := newHintEnv(t)
	sources := map[string]string{
		// "a-" sorts first: without the prior, the tie goes to it.
		"agents/cur/sources/a-day.md": "# Day\n\n- Ben: we rented a boat\n- Ana: then the shop was closed and we went home\n",
		"agents/cur/sources/z-day.md": "# Day\n\n- Ben: we rented a boat\n" +
			"- Ben: the boat, which we had talked about for a long while over dinner the week before, was slow\n" +
			"- Ben: the boat had a sail that the wind tore on the second morning of the long trip\n" +
			"- Ben: nobody wanted to row the boat back against the wind and the rain that evening\n" +
			strings.Repeat("- Ben: and then we walked along the shore and talked about the garden\n", 40),
	}
	for key, text := range sources {
		_, err := blob.PutBytes(context.Background(), e.blobs, key, []byte(text), blob.PutOptions{})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		r, err := e.search.Search(context.Background(), &memoryv1.SearchRequest{Query: "rented boat", AgentId: "cur"})
		return err == nil && len(r.GetResults()) == 5
	}, 10*time.Second, 20*time.Millisecond, "the sources are indexed")

	// The boat day is too long to go in whole at these budgets.
	// The smallest budget that takes a source's excerpt: which one is it?
	first := func(r Retrieval) string {
		svc, err := New(Deps{RepoPath: e.repo.Path(), Blobs: e.blobs, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Search: e.search, Retrieval: &r})
		require.NoError(t, err)
		client := memoryv1.NewContextAssemblyServiceClient(grpctest.Serve(t, svc.Register).Conn)
		for budget := int32(60); budget <= 400; budget += 2 {
			resp, err := client.AssembleContext(e.svc(), &memoryv1.AssembleContextRequest{AgentId: "cur", QueryHint: "rented a boat", Budget: budget})
			require.NoError(t, err)
			for _, s := range resp.GetSections() {
				if _, ok := sources[s.GetFile()]; ok {
					return s.GetFile()
				}
			}
		}
		t.Fatal("no source at any budget")
		return ""
	}
	require.Equal(t, "agents/cur/sources/z-day.md", first(DefaultRetrieval))
	off := DefaultRetrieval
	off.SourcePrior = false
	require.Equal(t, "agents/cur/sources/a-day.md", first(off), "switched off, the tie goes by path")
}

// Issue #29, point 2 (query expansion, RM3): a budget larger than search's
// most hits can fill (100 × --context-topk-tokens) and smaller than the
// agent's sources is spent on the hint's expansion too; a smaller one keeps
// to the hint's own words, where the expansion would displace better
// first-pass hits, and one every source fits in has nothing to choose. A
// line that shares no word with the hint, only with the lines the hint
// finds, comes in at 7,000 tokens and not at 2,000; at 200,000 search is
// not asked to expand; --context-expand-wide=false keeps it out.
func TestALargeBudgetReadsTheHintsExpansion(t *testing.T) {
	e := newHintEnv(t)
	var log strings.Builder
	log.WriteString("# Hangar log\n\n")
	for i := 1; i <= 600; i++ {
		if i == 300 {
			log.WriteString("- The airship hangar at Friedrichshafen holds three hulls\n")
			continue
		}
		fmt.Fprintf(&log, "- Entry %d: the garden beds were weeded and the paths swept before noon\n", i)
	}
	sources := map[string]string{
		"agents/cur/sources/flights.md":    "# Flights\n\n- The zeppelin flight left from the airship hangar at dawn\n- Our zeppelin flight was delayed: the airship hangar doors jammed\n",
		"agents/cur/sources/hangar-log.md": log.String(),
	}
	for key, text := range sources {
		_, err := blob.PutBytes(context.Background(), e.blobs, key, []byte(text), blob.PutOptions{})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		r, err := e.search.Search(context.Background(), &memoryv1.SearchRequest{Query: "Friedrichshafen hulls", AgentId: "cur"})
		return err == nil && len(r.GetResults()) == 1
	}, 10*time.Second, 20*time.Millisecond, "the sources are indexed")
	require.Greater(t, count(t, log.String()), 7000, "the log cannot go in whole")

	reads := func(client memoryv1.ContextAssemblyServiceClient, budget int32) bool {
		resp, err := client.AssembleContext(e.svc(), &memoryv1.AssembleContextRequest{AgentId: "cur", QueryHint: "zeppelin flight", Budget: budget})
		require.NoError(t, err)
		require.LessOrEqual(t, resp.GetTotalTokens(), budget)
		for _, s := range resp.GetSections() {
			if strings.Contains(s.GetContent(), "Friedrichshafen") {
				return true
			}
		}
		return false
	}
	require.False(t, reads(e.client, 2000), "2,000 tokens keep to the hint's own words")
	require.True(t, reads(e.client, 7000), "7,000 tokens read the expansion too")

	with := func(r Retrieval) (memoryv1.ContextAssemblyServiceClient, *expandSpy) {
		spy := &expandSpy{SearchIndexServiceClient: e.search}
		svc, err := New(Deps{RepoPath: e.repo.Path(), Blobs: e.blobs, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Search: spy, Retrieval: &r})
		require.NoError(t, err)
		return memoryv1.NewContextAssemblyServiceClient(grpctest.Serve(t, svc.Register).Conn), spy
	}
	client, spy := with(DefaultRetrieval)
	require.True(t, reads(client, 7000))
	require.True(t, reads(client, 200_000), "every source fits: the log is in whole")
	require.Equal(t, []bool{true, false}, spy.expand, "7,000 tokens expand; 200,000 hold every source and do not")

	off := DefaultRetrieval
	off.ExpandWide = false
	client, _ = with(off)
	require.False(t, reads(client, 7000), "switched off, not even a large budget expands")
}

// expandSpy records whether each search context assembly asks for expands.
type expandSpy struct {
	memoryv1.SearchIndexServiceClient
	expand []bool
}

func (s *expandSpy) Search(ctx context.Context, in *memoryv1.SearchRequest, opts ...grpc.CallOption) (*memoryv1.SearchResponse, error) {
	s.expand = append(s.expand, in.GetExpand())
	return s.SearchIndexServiceClient.Search(ctx, in, opts...)
}
