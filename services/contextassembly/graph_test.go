package contextassembly

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/grpctest"
	"github.com/garden-bloom/memory/services/entitygraph"
)

// serviceGraph is an entity-graph client that calls with a service token,
// as memoryd's own client does.
type serviceGraph struct {
	memoryv1.EntityGraphServiceClient
	md metadata.MD
}

func (g serviceGraph) GetEntity(ctx context.Context, in *memoryv1.GetEntityRequest, opts ...grpc.CallOption) (*memoryv1.GetEntityResponse, error) {
	return g.EntityGraphServiceClient.GetEntity(metadata.NewOutgoingContext(ctx, g.md), in, opts...)
}

// Issue #29, point 3: "entities linked from the top hits pull in their
// other facts (seed → neighbours → rank), as an option of AssembleContext".
// The hint names the heaters; the fact about them links [[Heatwell]]; what
// Heatwell quoted is in a decision (Layer 2) that shares no word with the
// hint.
func TestGraphBringsTheLinkedEntitysOtherFacts(t *testing.T) {
	e := newHintEnv(t)
	e.commit("memory-update: cur / run_2 / proposal_2\n\nFiles: facts.md, decisions.md, timeline/2026-02-18.md\nReason: heaters\nAuto-approved: true\n", map[string]string{
		"memory/cur/facts.md": "# Facts: cur\n\n## Domain\n- fact one\n- The greenhouse heaters are serviced by [[Heatwell]]\n",
		"memory/cur/decisions.md": "# Decisions: cur\n\n## 2026-02-17 — Use MinIO\n**Status:** accepted\n\n" +
			"## 2026-02-18 — Replace the boiler\n**Status:** accepted\n**Context:** [[Heatwell]] quoted 4,200 EUR for a new boiler.\n**Decision:** Order it in March.\n",
		"memory/cur/timeline/2026-02-18.md": "# Timeline: cur / 2026-02-18\n\n- 10:00 The tomato seedlings were moved to the cold frame\n",
	})
	graph := entitygraph.New(entitygraph.Deps{RepoPath: e.repo.Path(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Poll: 20 * time.Millisecond})
	graphServer := grpctest.Serve(t, graph.Register)
	graph.Start(context.Background())
	t.Cleanup(graph.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, graph.WaitCurrent(ctx))
	md, _ := metadata.FromOutgoingContext(graphServer.As(t, "memoryd/context-assembly", []auth.Role{auth.RoleService}, "*"))
	graphClient := serviceGraph{EntityGraphServiceClient: memoryv1.NewEntityGraphServiceClient(graphServer.Conn), md: md}
	require.NoError(t, e.search.(serviceSearch).waitFor(t, "heaters"))

	assemble := func(r Retrieval, graphClient memoryv1.EntityGraphServiceClient, req *memoryv1.AssembleContextRequest) *memoryv1.AssembleContextResponse {
		svc, err := New(Deps{RepoPath: e.repo.Path(), Blobs: e.blobs, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Search: e.search, Graph: graphClient, Retrieval: &r})
		require.NoError(t, err)
		client := memoryv1.NewContextAssemblyServiceClient(grpctest.Serve(t, svc.Register).Conn)
		resp, err := client.AssembleContext(e.svc(), req)
		require.NoError(t, err)
		return resp
	}
	content := func(resp *memoryv1.AssembleContextResponse) string {
		var b strings.Builder
		for _, s := range resp.GetSections() {
			b.WriteString(s.GetFile() + "\n" + s.GetContent())
		}
		return b.String()
	}
	const quote = "[[Heatwell]] quoted 4,200 EUR"
	req := &memoryv1.AssembleContextRequest{AgentId: "cur", QueryHint: "who services the greenhouse heaters", Budget: 2000}

	// Off by default: Layer 2 only on explicit request.
	require.NotContains(t, content(assemble(DefaultRetrieval, graphClient, req)), quote)

	// graph=true on the request: the decision comes in, under its file.
	withGraph := proto.Clone(req).(*memoryv1.AssembleContextRequest)
	withGraph.Graph = proto.Bool(true)
	resp := assemble(DefaultRetrieval, graphClient, withGraph)
	require.Contains(t, content(resp), "memory/cur/decisions.md\n")
	require.Contains(t, content(resp), quote)
	require.NotContains(t, content(resp), "tomato seedlings", "a Layer 2 file that does not link the entity stays out")
	require.LessOrEqual(t, resp.GetTotalTokens(), int32(2000))

	// --context-graph turns it on for every request; graph=false on a
	// request turns it off again.
	on := DefaultRetrieval
	on.Graph = true
	require.Contains(t, content(assemble(on, graphClient, req)), quote)
	withoutGraph := proto.Clone(req).(*memoryv1.AssembleContextRequest)
	withoutGraph.Graph = proto.Bool(false)
	require.NotContains(t, content(assemble(on, graphClient, withoutGraph)), quote)

	// Asked for with no entity graph to ask: said, not silently ignored.
	noGraph := assemble(DefaultRetrieval, nil, withGraph)
	require.NotContains(t, content(noGraph), quote)
	require.Contains(t, noGraph.GetWarnings(), "entity graph is not configured: graph=true brought nothing")
}
