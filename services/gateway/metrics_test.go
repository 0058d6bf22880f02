package gateway_test

import (
	"context"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/grpctest"
	"github.com/garden-bloom/memory/services/gateway"
)

// edgeRequests reads http.server.request.duration's counts by
// "METHOD route status" and http.server.active_requests' sum.
func edgeRequests(t *testing.T, r *sdkmetric.ManualReader) (map[string]uint64, int64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	counts := map[string]uint64{}
	var active int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch m.Name {
			case "http.server.request.duration":
				require.Equal(t, "s", m.Unit)
				for _, p := range m.Data.(metricdata.Histogram[float64]).DataPoints {
					method, _ := p.Attributes.Value("http.request.method")
					route, ok := p.Attributes.Value("http.route")
					if !ok {
						route = attribute.StringValue("-")
					}
					code, _ := p.Attributes.Value("http.response.status_code")
					scheme, _ := p.Attributes.Value("url.scheme")
					require.Equal(t, "http", scheme.AsString())
					counts[method.AsString()+" "+route.AsString()+" "+code.String()] += p.Count
				}
			case "http.server.active_requests":
				for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
					active += p.Value
				}
			}
		}
	}
	return counts, active
}

// REST edge request metrics (issue #25): by method, route template (never
// the raw path) and status, whoever answers — the service, or the edge
// itself (404, 405, 400).
func TestEdgeRecordsRequestsByRouteTemplate(t *testing.T) {
	search := &fakeSearch{}
	srv := grpctest.Serve(t, func(s grpc.ServiceRegistrar) { memoryv1.RegisterSearchIndexServiceServer(s, search) })
	tok, err := srv.Signer.Mint("edge-test", []auth.Role{auth.RoleService}, []string{auth.AllAgents}, time.Hour)
	require.NoError(t, err)
	reader := sdkmetric.NewManualReader()
	h, err := gateway.New(context.Background(), gateway.Conns{
		ContextAssembly: srv.Conn, SearchIndex: srv.Conn, EntityGraph: srv.Conn, ProposalApply: srv.Conn,
	}, gateway.Config{}, slog.New(slog.DiscardHandler), gateway.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	require.NoError(t, err)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	do := func(method, target string) int {
		req, err := http.NewRequest(method, hs.URL+target, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, do("GET", "/memory/search?q=ok"))
	require.Equal(t, http.StatusOK, do("GET", "/memory/search?q=also"))
	require.Equal(t, http.StatusServiceUnavailable, do("GET", "/memory/search?q=repo-down"))
	require.Equal(t, http.StatusBadRequest, do("GET", "/memory/search?q=x&nope=1"))
	require.Equal(t, http.StatusNotImplemented, do("GET", "/memory/agent-7/read")) // the fake has no context assembly
	require.Equal(t, http.StatusNotFound, do("GET", "/agent-7/nowhere"))
	require.Equal(t, http.StatusMethodNotAllowed, do("DELETE", "/memory/search"))
	require.Equal(t, http.StatusOK, do("GET", gateway.OpenAPIPath))

	want := map[string]uint64{
		"GET /memory/search 200":          2,
		"GET /memory/search 503":          1,
		"GET /memory/search 400":          1,
		"GET /memory/{agent_id}/read 501": 1,
		"GET - 404":                       1,
		"DELETE - 405":                    1,
		"GET /openapi.json 200":           1,
	}
	// A request is recorded when its handler returns, which may be just
	// after the client has read the answer.
	var counts map[string]uint64
	var active int64
	require.Eventually(t, func() bool {
		counts, active = edgeRequests(t, reader)
		return maps.Equal(counts, want) && active == 0
	}, 5*time.Second, 5*time.Millisecond)
	require.Equal(t, want, counts)
	for k := range counts {
		require.NotContains(t, k, "agent-7", "templates, not paths")
	}
	require.Zero(t, active, "nothing in flight once answered")
}
