package restjson_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/stretchr/testify/require"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/restjson"
)

// TestServeMuxWritesEveryField checks issue #24 point 2: the REST edge's
// marshaler writes every response field, zero values and empty lists
// included, as the specs' examples show them.
func TestServeMuxWritesEveryField(t *testing.T) {
	t.Cleanup(func() { runtime.SetQueryParameterParser(&runtime.DefaultQueryParser{})(nil) })
	mux := runtime.NewServeMux(restjson.ServeMuxOptions()...)
	_, m := runtime.MarshalerForRequest(mux, httptest.NewRequest(http.MethodGet, "/", nil))
	decode := func(v any) map[string]any {
		t.Helper()
		b, err := m.Marshal(v)
		require.NoError(t, err)
		var out map[string]any
		require.NoError(t, json.Unmarshal(b, &out), string(b))
		return out
	}

	search := decode(&memoryv1.SearchResponse{})
	require.Equal(t, []any{}, search["results"], "no hits is results: []")
	require.Equal(t, float64(0), search["totalHits"])
	require.Equal(t, false, search["stale"])
	require.Nil(t, search["took"])
	require.Contains(t, search, "took", "an unset message is null, not absent")

	meta := decode(&memoryv1.MemoryMeta{AgentId: "a"})
	require.Equal(t, float64(0), meta["decisionsCount"], "decisionsCount at 0 is written")
	require.Contains(t, meta, "lastUpdate")

	p := decode(&memoryv1.Proposal{ProposalId: "p", Status: memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING})
	require.Equal(t, false, p["autoApproved"], "autoApproved is written when false")
	require.Equal(t, "pending", p["status"])
	require.Equal(t, "unspecified", p["reason"], "an enum's zero value is its short form")
	require.Equal(t, []any{}, p["updates"])
	require.NotContains(t, p, "expectedVersion", "an unset proto3 optional field stays out (protojson treats it as a oneof)")

	read := decode(&memoryv1.ReadMemoryResponse{})
	require.Equal(t, map[string]any{}, read["content"], "an empty map is {}")

	// Non-message values grpc-gateway passes (response_body fields) follow suit.
	b, err := m.Marshal([]*memoryv1.Snapshot(nil))
	require.NoError(t, err)
	require.JSONEq(t, `[]`, string(b))
}
