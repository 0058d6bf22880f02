package gateway_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/grpctest"
	"github.com/garden-bloom/memory/services/gateway"
)

// reasonSearch answers Search with the error its query names:
// "<CODE>/<REASON>", e.g. "9/INVALID_TRANSITION".
type reasonSearch struct {
	memoryv1.UnimplementedSearchIndexServiceServer
	last *memoryv1.SearchRequest
}

func (f *reasonSearch) Search(_ context.Context, req *memoryv1.SearchRequest) (*memoryv1.SearchResponse, error) {
	f.last = req
	code, reason, ok := strings.Cut(req.GetQuery(), "/")
	if !ok {
		return &memoryv1.SearchResponse{}, nil
	}
	var c codes.Code
	_ = c.UnmarshalJSON([]byte(code)) // the tests send valid names
	r := memoryv1.ErrorReason(memoryv1.ErrorReason_value["ERROR_REASON_"+reason])
	return nil, apierr.New(c, r, "from the service", nil)
}

func startReasons(t *testing.T, cfg gateway.Config) (*harness, *reasonSearch) {
	t.Helper()
	search := &reasonSearch{}
	srv := grpctest.Serve(t, func(s grpc.ServiceRegistrar) { memoryv1.RegisterSearchIndexServiceServer(s, search) })
	tok, err := srv.Signer.Mint("edge-test", []auth.Role{auth.RoleService}, []string{auth.AllAgents}, time.Hour)
	require.NoError(t, err)
	h, err := gateway.New(context.Background(), gateway.Conns{
		ContextAssembly: srv.Conn, SearchIndex: srv.Conn, EntityGraph: srv.Conn, ProposalApply: srv.Conn,
	}, cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return &harness{url: hs.URL, token: tok}, search
}

// TestStatusByReason: issue #24 — conflicts are 409 and corrupted memory
// is a server error, whatever code the service used.
func TestStatusByReason(t *testing.T) {
	h, _ := startReasons(t, gateway.Config{})
	for _, tt := range []struct {
		q    string
		want int
	}{
		{`"FAILED_PRECONDITION"/INVALID_TRANSITION`, http.StatusConflict},
		{`"ABORTED"/VERSION_CONFLICT`, http.StatusConflict},
		{`"FAILED_PRECONDITION"/VERSION_CONFLICT`, http.StatusConflict},
		{`"ALREADY_EXISTS"/ALREADY_EXISTS`, http.StatusConflict},
		{`"FAILED_PRECONDITION"/MEMORY_CORRUPTED`, http.StatusInternalServerError},
		{`"DATA_LOSS"/MEMORY_CORRUPTED`, http.StatusInternalServerError},
		{`"DATA_LOSS"/UNSPECIFIED`, http.StatusInternalServerError},
		{`"FAILED_PRECONDITION"/INVALID_ARGUMENT`, http.StatusBadRequest},
	} {
		r := h.do(t, "GET", "/memory/search?q="+strings.ReplaceAll(tt.q, `"`, "%22"), nil)
		require.Equal(t, tt.want, r.status, "%s: %s", tt.q, r.raw)
	}
}

// TestRouting: 404 NOT_FOUND, 405 with Allow, and query parameters checked
// against the route before the service is called.
func TestRouting(t *testing.T) {
	h, search := startReasons(t, gateway.Config{})
	r := h.do(t, "GET", "/no/such/path", nil)
	require.Equal(t, http.StatusNotFound, r.status, r.raw)
	require.Equal(t, "NOT_FOUND", r.reason())
	require.Equal(t, int(codes.NotFound), r.err.Code)

	r = h.do(t, "DELETE", "/memory/search", nil)
	require.Equal(t, http.StatusMethodNotAllowed, r.status, r.raw)
	require.Equal(t, "GET", r.header.Get("Allow"))
	require.Equal(t, "METHOD_NOT_ALLOWED", r.reason())

	r = h.do(t, "GET", "/v1/memory/a/search", nil)
	require.Equal(t, http.StatusMethodNotAllowed, r.status, r.raw)
	require.Equal(t, "POST", r.header.Get("Allow"))

	r = h.do(t, "DELETE", gateway.OpenAPIPath, nil)
	require.Equal(t, http.StatusMethodNotAllowed, r.status, r.raw)
	require.Equal(t, "GET, HEAD", r.header.Get("Allow"))

	r = h.do(t, "POST", "/memory/search?q=x", strings.NewReader("q=y"), "Content-Type", "application/x-www-form-urlencoded", "X-HTTP-Method-Override", "GET")
	require.Equal(t, http.StatusMethodNotAllowed, r.status, "no form-encoded stand-in for a GET: %s", r.raw)

	r = h.do(t, "GET", "/memory/search?q=x&agnet=a", nil)
	require.Equal(t, http.StatusBadRequest, r.status, r.raw)
	require.Equal(t, `unknown query parameter "agnet": did you mean "agent"?`, r.err.Message)
	require.Equal(t, map[string]string{"parameter": "agnet", "suggestion": "agent"}, r.err.Details[0].Metadata)

	r = h.do(t, "GET", "/memory/search?q=x&agent=a&kinds=facts&kinds=logic&path_prefix=memory/a/&omitExcerpts=true", nil)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	require.Equal(t, "a", search.last.GetAgentId())
	require.Equal(t, []string{"facts", "logic"}, search.last.GetKinds())
	require.Equal(t, "memory/a/", search.last.GetPathPrefix())
	require.True(t, search.last.GetOmitExcerpts())

	r = h.do(t, "POST", "/v1/memory/a/search?q=x", strings.NewReader(`{"q":"y"}`))
	require.Equal(t, http.StatusBadRequest, r.status, "body \"*\": the query would be ignored: %s", r.raw)
	require.Contains(t, r.err.Message, `query parameter "q" is not allowed on POST /v1/memory/{agent_id}/search: the body sets it`)
	r = h.do(t, "POST", "/v1/memory/a/search?debug=1", strings.NewReader(`{"q":"y"}`))
	require.Equal(t, http.StatusBadRequest, r.status, r.raw)
	require.Contains(t, r.err.Message, "takes no query parameters")
}

// TestCORSPreflightUnknownPath: a preflight is answered with the methods
// of its path; one for a path the API does not have gets no CORS answer.
func TestCORSPreflightUnknownPath(t *testing.T) {
	h, _ := startReasons(t, gateway.Config{CORS: gateway.CORSConfig{AllowedOrigins: []string{"https://a.example"}}})
	preflight := func(path, method string) *http.Response {
		req, err := http.NewRequest("OPTIONS", h.url+path, nil)
		require.NoError(t, err)
		req.Header.Set("Origin", "https://a.example")
		req.Header.Set("Access-Control-Request-Method", method)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp
	}
	resp := preflight("/no/such/path", "GET")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Methods"))
	resp = preflight("/proposals/p1:approve", "POST")
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, "POST", resp.Header.Get("Access-Control-Allow-Methods"))
	resp = preflight(gateway.OpenAPIPath, "GET")
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
}
