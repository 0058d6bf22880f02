package entitygraph

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
)

// Issue #30, point 5: "GetEntity pages its edges and evidence instead of
// answering 78 KB". A shared entity with 291 edges, one of them with 40
// pieces of evidence (40 agents state the same relation).
func TestGetEntityPagesEdgesAndEvidence(t *testing.T) {
	e := newEnv(t)
	svc := e.as([]auth.Role{auth.RoleService}, "*")
	files := map[string]string{}
	var b strings.Builder
	b.WriteString("# Facts: hub\n\n## D\n")
	for i := range 249 {
		fmt.Fprintf(&b, "- [[Kafka]] feeds [[Consumer %03d]]\n", i)
	}
	files["memory/hub/facts.md"] = b.String()
	for i := range 40 {
		files[fmt.Sprintf("memory/agent-%02d/facts.md", i)] = fmt.Sprintf("# Facts: agent-%02d\n\n## D\n- [[Kafka]] replicates to [[Mirror]]\n", i)
	}
	e.commit(files)

	all, err := e.client.GetEntity(svc, &memoryv1.GetEntityRequest{EntityId: "kafka", PageSize: 500, EvidencePerEdge: 1000})
	require.NoError(t, err)
	// 249 consumers, the mirror, and 41 agents that mention Kafka.
	n := len(all.GetEdges())
	require.Equal(t, 291, n)
	require.Empty(t, all.GetNextPageToken(), "everything fits one page of 500")
	require.Equal(t, int32(n), all.GetTotalEdges())
	require.Len(t, all.GetRefs(), 41, "the files that mention it")
	require.Equal(t, all.GetRefs(), all.GetEntity().GetRefs(), "the node carries its refs, as the spec's node does")

	// The default: a page of 100 edges, each with at most 20 pieces of
	// evidence; the token brings the rest, each edge once, in order.
	var paged []*memoryv1.Edge
	token := ""
	pages := 0
	for {
		resp, err := e.client.GetEntity(svc, &memoryv1.GetEntityRequest{EntityId: "kafka", PageToken: token})
		require.NoError(t, err)
		require.LessOrEqual(t, len(resp.GetEdges()), 100)
		require.Equal(t, int32(n), resp.GetTotalEdges())
		require.Equal(t, "kafka", resp.GetEntity().GetEntityId(), "every page names the entity")
		paged = append(paged, resp.GetEdges()...)
		pages++
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
	}
	require.Equal(t, 3, pages)
	require.Equal(t, n, len(paged))
	for i, ed := range paged {
		want := all.GetEdges()[i]
		require.Equal(t, want.GetToEntityId(), ed.GetToEntityId(), "edge %d", i)
		require.Equal(t, want.GetEvidenceCount(), ed.GetEvidenceCount())
		require.Equal(t, want.GetWeight(), ed.GetWeight(), "the weight counts all the evidence")
		require.Equal(t, min(20, len(want.GetEvidence())), len(ed.GetEvidence()))
		for k, ev := range ed.GetEvidence() {
			require.True(t, proto.Equal(want.GetEvidence()[k], ev), "edge %d: the first of its evidence, in order", i)
		}
	}
	mirror := func(es []*memoryv1.Edge) *memoryv1.Edge {
		for _, ed := range es {
			if ed.GetToEntityId() == "mirror" {
				return ed
			}
		}
		return nil
	}
	require.Equal(t, int32(40), mirror(paged).GetEvidenceCount())
	require.Equal(t, 20, len(mirror(paged).GetEvidence()))
	require.Equal(t, 40, len(mirror(all.GetEdges()).GetEvidence()))
	require.Less(t, proto.Size(&memoryv1.GetEntityResponse{Edges: paged[:100]}), proto.Size(all)/2)

	// An agent's token pages only what it may see.
	mine, err := e.client.GetEntity(e.as([]auth.Role{auth.RoleAgent}, "agent-07"), &memoryv1.GetEntityRequest{EntityId: "kafka"})
	require.NoError(t, err)
	require.Equal(t, 2, len(mine.GetEdges()), "its mention and its mirror")
	require.Equal(t, int32(2), mine.GetTotalEdges())
	for _, ed := range mine.GetEdges() {
		require.Equal(t, int32(1), ed.GetEvidenceCount())
	}

	for _, bad := range []*memoryv1.GetEntityRequest{
		{EntityId: "kafka", PageToken: "x"},
		{EntityId: "kafka", PageToken: "-5"},
		{EntityId: "kafka", PageSize: 501},
		{EntityId: "kafka", PageSize: -1},
		{EntityId: "kafka", EvidencePerEdge: -1},
		{EntityId: "kafka", EvidencePerEdge: 1001},
	} {
		_, err := e.client.GetEntity(svc, bad)
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", bad)
	}
}
