package contextassembly

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
)

// ListAgents lists the folders of memory/ with their meta.json, in id
// order, page by page, only the agents the token may see.
func TestListAgents(t *testing.T) {
	e := newEnv(t)
	first := e.commit("seed alpha", map[string]string{
		"memory/alpha/meta.json": `{"agentId":"alpha","version":3,"schemaVersion":"1.0","snapshotTokenCount":120,"factsTokenCount":900,"openLoopsTokenCount":40,"openLoopsCount":2}`,
		"memory/alpha/facts.md":  "# Facts: alpha\n",
	})
	files := map[string]string{"memory/Not_An_Agent/x.md": "not an agent id", "memory/README.md": "a file, not a folder"}
	for i := range 5 {
		id := fmt.Sprintf("team-%d", i)
		files["memory/"+id+"/meta.json"] = fmt.Sprintf(`{"agentId":%q,"version":%d,"schemaVersion":"1.0"}`, id, i+1)
	}
	files["memory/no-meta/facts.md"] = "# Facts: no-meta\n"
	e.commit("seed the team", files)

	all, err := e.client.ListAgents(e.svc(), &memoryv1.ListAgentsRequest{})
	require.NoError(t, err)
	var ids []string
	for _, a := range all.GetAgents() {
		ids = append(ids, a.GetAgentId())
	}
	require.Equal(t, []string{"alpha", "no-meta", "team-0", "team-1", "team-2", "team-3", "team-4"}, ids, "agent folders only, in id order")
	require.EqualValues(t, 7, all.GetTotalSize())
	require.Empty(t, all.GetNextPageToken())
	alpha := all.GetAgents()[0]
	require.EqualValues(t, 3, alpha.GetMeta().GetVersion())
	require.EqualValues(t, 2, alpha.GetMeta().GetOpenLoopsCount())
	require.Equal(t, []*memoryv1.LayerUsage{
		{File: "snapshot.md", Tokens: 120, Limit: 2000}, {File: "facts.md", Tokens: 900, Limit: 8000}, {File: "open_loops.md", Tokens: 40, Limit: 2000},
	}, alpha.GetLayer1())
	require.Zero(t, all.GetAgents()[1].GetMeta().GetVersion(), "a folder without meta.json lists with zeros")

	// Pages of two cover the list once, in order.
	var paged []string
	token := ""
	for {
		page, err := e.client.ListAgents(e.svc(), &memoryv1.ListAgentsRequest{PageSize: 2, PageToken: token})
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.GetAgents()), 2)
		for _, a := range page.GetAgents() {
			paged = append(paged, a.GetAgentId())
		}
		if token = page.GetNextPageToken(); token == "" {
			break
		}
	}
	require.Equal(t, ids, paged)

	q, err := e.client.ListAgents(e.svc(), &memoryv1.ListAgentsRequest{Query: " TEAM-3 "})
	require.NoError(t, err)
	require.Len(t, q.GetAgents(), 1)
	require.Equal(t, "team-3", q.GetAgents()[0].GetAgentId())
	require.EqualValues(t, 1, q.GetTotalSize())

	old, err := e.client.ListAgents(e.svc(), &memoryv1.ListAgentsRequest{At: first.String()})
	require.NoError(t, err)
	require.Len(t, old.GetAgents(), 1, "as of the first commit only alpha had memory")
	require.Equal(t, first.String(), old.GetCommit())

	// An agent token lists only its agents; a reviewer every agent.
	own, err := e.client.ListAgents(e.ctx([]auth.Role{auth.RoleAgent}, "team-1", "ghost"), &memoryv1.ListAgentsRequest{})
	require.NoError(t, err)
	require.Len(t, own.GetAgents(), 1)
	require.Equal(t, "team-1", own.GetAgents()[0].GetAgentId())
	rev, err := e.client.ListAgents(e.ctx([]auth.Role{auth.RoleReviewer}), &memoryv1.ListAgentsRequest{})
	require.NoError(t, err)
	require.Len(t, rev.GetAgents(), 7)

	for _, c := range []struct {
		req    *memoryv1.ListAgentsRequest
		field  string
		reason string
	}{
		{&memoryv1.ListAgentsRequest{PageSize: -1}, "pageSize", "INVALID_ARGUMENT"},
		{&memoryv1.ListAgentsRequest{PageSize: 1001}, "pageSize", "INVALID_ARGUMENT"},
		{&memoryv1.ListAgentsRequest{PageToken: "../x"}, "pageToken", "INVALID_ARGUMENT"},
		{&memoryv1.ListAgentsRequest{At: "0123456789abcdef0123456789abcdef01234567"}, "at", "REVISION_NOT_FOUND"},
	} {
		_, err := e.client.ListAgents(e.svc(), c.req)
		require.Error(t, err, "%v", c.req)
		info := apierr.Info(err)
		require.Equal(t, c.reason, info.GetReason(), "%v: %v", c.req, err)
		if c.reason == "INVALID_ARGUMENT" {
			require.Equal(t, codes.InvalidArgument, status.Code(err))
			require.Equal(t, c.field, info.GetMetadata()["field"])
		}
	}
}
