package restjson_test

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/reflect/protoreflect"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/restjson"
)

func memoryRoutes(t *testing.T) *restjson.Routes {
	t.Helper()
	var svcs []protoreflect.ServiceDescriptor
	for _, f := range []protoreflect.FileDescriptor{
		memoryv1.File_gardenbloom_memory_v1_context_assembly_proto,
		memoryv1.File_gardenbloom_memory_v1_search_index_proto,
		memoryv1.File_gardenbloom_memory_v1_entity_graph_proto,
		memoryv1.File_gardenbloom_memory_v1_proposal_apply_proto,
	} {
		for i := 0; i < f.Services().Len(); i++ {
			svcs = append(svcs, f.Services().Get(i))
		}
	}
	rt, err := restjson.NewRoutes(svcs, restjson.QueryAliases{{Field: "agent_id", Names: []string{"agent", "agentId", "agent_id"}}})
	require.NoError(t, err)
	return rt
}

func TestRoutesMatch(t *testing.T) {
	rt := memoryRoutes(t)
	tests := []struct {
		method, path string
		rpc          string // "" = no route
		allowed      []string
	}{
		{"GET", "/memory/search", "SearchIndexService.Search", nil},
		{"POST", "/v1/memory/a/search", "SearchIndexService.Search", nil},
		{"PUT", "/memory/search", "", []string{"GET"}},
		{"GET", "/proposals/p1", "ProposalApplyService.GetProposal", nil},
		{"POST", "/proposals/p1:approve", "ProposalApplyService.ApproveProposal", nil},
		{"GET", "/proposals/p1:approve", "", []string{"POST"}}, // the verb wins over {proposal_id}
		{"POST", "/proposals/:approve", "", nil},
		{"POST", "/memory/runs:rotate", "ProposalApplyService.RotateRuns", nil},
		{"GET", "/memory/a/b/c/d", "", nil},
		{"GET", "/nope", "", nil},
		{"GET", "nope", "", nil},
		{"POST", "/memory/a/snapshots/s1:restore", "ProposalApplyService.RestoreSnapshot", nil},
	}
	for _, tt := range tests {
		r, allowed := rt.Match(tt.method, tt.path)
		if tt.rpc == "" {
			require.Nil(t, r, "%s %s", tt.method, tt.path)
			require.Equal(t, tt.allowed, allowed, "%s %s", tt.method, tt.path)
			continue
		}
		require.NotNil(t, r, "%s %s", tt.method, tt.path)
		require.Equal(t, "gardenbloom.memory.v1."+tt.rpc, string(r.RPC))
	}
}

func TestRouteQuery(t *testing.T) {
	rt := memoryRoutes(t)
	search, _ := rt.Match("GET", "/memory/search")
	read, _ := rt.Match("GET", "/memory/a/read")
	list, _ := rt.Match("GET", "/proposals")
	snap, _ := rt.Match("POST", "/memory/a/snapshot")

	q := func(s string) url.Values { v, err := url.ParseQuery(s); require.NoError(t, err); return v }

	got, err := search.Query(q("q=x&topK=3&agent=a&kinds=facts&kinds=logic&path_prefix=p"))
	require.NoError(t, err)
	require.Equal(t, url.Values{"query": {"x"}, "top_k": {"3"}, "agent_id": {"a"}, "kinds": {"facts", "logic"}, "path_prefix": {"p"}}, got)

	got, err = list.Query(q("agentId=a&status=pending"))
	require.NoError(t, err)
	require.Equal(t, url.Values{"agent_id": {"a"}, "status": {"pending"}}, got)

	got, err = search.Query(q("agent=a&agent_id=a&kinds=x&kinds=y"))
	require.NoError(t, err, "two spellings with one value")
	require.Equal(t, url.Values{"agent_id": {"a"}, "kinds": {"x", "y"}}, got)

	for _, tt := range []struct {
		route *restjson.Route
		query string
		want  string
	}{
		{read, "maxTokns=1", `unknown query parameter "maxTokns": did you mean "maxTokens"?`},
		{read, "MAX_TOKENS=1", `unknown query parameter "MAX_TOKENS": did you mean "maxTokens"?`},
		{read, "layer=2", `unknown query parameter "layer": GET /memory/{agent_id}/read takes `},
		{read, "agent=b", `query parameter "agent" is not allowed on GET /memory/{agent_id}/read: the path sets it`},
		{search, "x=1", `unknown query parameter "x": GET /memory/search takes `},
		{search, "agnt=a", `did you mean "agent"?`},
		{search, "agent=a&agentId=b", `query parameters "agent" and "agentId" set the same field to different values`},
		{snap, "label=x", `query parameter "label" is not allowed on POST /memory/{agent_id}/snapshot: the body sets it`},
		{snap, "zzz=x", `unknown query parameter "zzz": POST /memory/{agent_id}/snapshot takes no query parameters`},
	} {
		_, err := tt.route.Query(q(tt.query))
		require.Error(t, err, tt.query)
		require.Contains(t, err.Error(), tt.want, tt.query)
		var qe *restjson.QueryParamError
		require.ErrorAs(t, err, &qe)
	}
	if read.Request.Fields().ByName("options") != nil { // nested: each segment a proto or JSON name
		got, err = read.Query(q("options.maxTokens=5&options.max_tokens=5&mode=wide"))
		require.NoError(t, err)
		require.Equal(t, url.Values{"options.max_tokens": {"5"}, "mode": {"wide"}}, got)
		_, err = read.Query(q("options.maxTokns=5"))
		require.ErrorContains(t, err, `did you mean "options.maxTokens"?`)
	}
	require.Contains(t, read.Params(), "mode")
	require.Contains(t, search.Params(), "agent")
	require.Contains(t, search.Params(), "q")
}
