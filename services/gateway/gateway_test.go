package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/garden-bloom/memory/gen"
	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/grpctest"
	"github.com/garden-bloom/memory/services/gateway"
)

// fakeSearch answers Search according to the query, so one service can
// produce every kind of error the edge has to map.
type fakeSearch struct {
	memoryv1.UnimplementedSearchIndexServiceServer
	calls atomic.Int32
}

func (f *fakeSearch) Search(ctx context.Context, req *memoryv1.SearchRequest) (*memoryv1.SearchResponse, error) {
	f.calls.Add(1)
	q := req.GetQuery()
	switch {
	case q == "slow":
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	case q == "repo-down":
		return nil, apierr.Retryable(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_REPOSITORY_UNAVAILABLE, "the repository is unavailable", 2500*time.Millisecond)
	case q == "limited":
		return nil, apierr.Retryable(codes.ResourceExhausted, memoryv1.ErrorReason_ERROR_REASON_RATE_LIMITED, "slow down", 1200*time.Millisecond)
	case q == "field-too-large":
		return nil, apierr.New(codes.InvalidArgument, memoryv1.ErrorReason_ERROR_REASON_REQUEST_TOO_LARGE, "q is too long", nil)
	case q == "big":
		resp := &memoryv1.SearchResponse{IndexCommit: "abc"}
		for i := range 200 {
			resp.Results = append(resp.Results, &memoryv1.SearchResult{File: fmt.Sprintf("memory/a/facts-%d.md", i), Excerpt: strings.Repeat("an excerpt ", 10)})
		}
		return resp, nil
	case strings.HasPrefix(q, "code-"):
		n, _ := strconv.Atoi(strings.TrimPrefix(q, "code-"))
		return nil, status.Error(codes.Code(n), "plain status")
	}
	return &memoryv1.SearchResponse{IndexCommit: "abc", TotalHits: int32(len(q))}, nil
}

type harness struct {
	url    string
	token  string
	search *fakeSearch
}

func start(t *testing.T, cfg gateway.Config) *harness {
	t.Helper()
	search := &fakeSearch{}
	srv := grpctest.Serve(t, func(s grpc.ServiceRegistrar) { memoryv1.RegisterSearchIndexServiceServer(s, search) })
	tok, err := srv.Signer.Mint("edge-test", []auth.Role{auth.RoleService}, []string{auth.AllAgents}, time.Hour)
	require.NoError(t, err)
	h, err := gateway.New(context.Background(), gateway.Conns{
		ContextAssembly: srv.Conn, SearchIndex: srv.Conn, EntityGraph: srv.Conn, ProposalApply: srv.Conn,
	}, cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return &harness{url: hs.URL, token: tok, search: search}
}

// apiError is the JSON error body.
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Details []struct {
		Type       string            `json:"@type"`
		Reason     string            `json:"reason"`
		Domain     string            `json:"domain"`
		Metadata   map[string]string `json:"metadata"`
		RetryDelay string            `json:"retryDelay"`
	} `json:"details"`
}

type response struct {
	status int
	header http.Header
	raw    string
	err    apiError
}

func (h *harness) do(t *testing.T, method, target string, body io.Reader, header ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, h.url+target, body)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+h.token)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	r := response{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if resp.StatusCode != http.StatusOK {
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"), r.raw)
		require.NoError(t, json.Unmarshal(raw, &r.err), r.raw)
		require.NotEmpty(t, r.err.Details, "every error has an ErrorInfo: %s", r.raw)
		require.Equal(t, "type.googleapis.com/google.rpc.ErrorInfo", r.err.Details[0].Type, r.raw)
		require.Equal(t, apierr.Domain, r.err.Details[0].Domain, r.raw)
	}
	return r
}

func (r response) reason() string { return r.err.Details[0].Reason }

// A unary answer is sent with its length, not chunked: one write of the
// whole body instead of a chunk at a time (issue #30: the REST edge's
// writes were 12 % of a REST read's CPU).
func TestAnswersCarryTheirLength(t *testing.T) {
	h := start(t, gateway.Config{})
	req, err := http.NewRequest(http.MethodGet, h.url+"/memory/search?q=big", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+h.token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	require.Greater(t, len(raw), 8<<10, "larger than net/http's buffers")
	require.Empty(t, resp.TransferEncoding, "not chunked")
	require.Equal(t, int64(len(raw)), resp.ContentLength)
}

func TestErrorMapping(t *testing.T) {
	h := start(t, gateway.Config{})
	tests := []struct {
		code       codes.Code
		httpStatus int
		reason     string
	}{
		{codes.InvalidArgument, 400, "INVALID_ARGUMENT"},
		{codes.FailedPrecondition, 400, "INVALID_ARGUMENT"},
		{codes.OutOfRange, 400, "INVALID_ARGUMENT"},
		{codes.Unauthenticated, 401, "UNAUTHENTICATED"},
		{codes.PermissionDenied, 403, "PERMISSION_DENIED"},
		{codes.NotFound, 404, "UNSPECIFIED"},
		{codes.AlreadyExists, 409, "ALREADY_EXISTS"},
		{codes.Aborted, 409, "UNSPECIFIED"},
		{codes.ResourceExhausted, 429, "UNSPECIFIED"},
		{codes.Unimplemented, 501, "NOT_IMPLEMENTED"},
		{codes.Internal, 500, "UNSPECIFIED"},
		{codes.DeadlineExceeded, 504, "UNSPECIFIED"},
	}
	for _, tt := range tests {
		t.Run(tt.code.String(), func(t *testing.T) {
			r := h.do(t, "GET", "/memory/search?q=code-"+strconv.Itoa(int(tt.code)), nil)
			require.Equal(t, tt.httpStatus, r.status, r.raw)
			require.Equal(t, int(tt.code), r.err.Code)
			require.Equal(t, "plain status", r.err.Message)
			require.Equal(t, tt.reason, r.reason(), "a status without ErrorInfo gets one: %s", r.raw)
			require.Empty(t, r.header.Get("Retry-After"))
		})
	}
	t.Run("503 with RetryInfo has Retry-After, rounded up", func(t *testing.T) {
		r := h.do(t, "GET", "/memory/search?q=repo-down", nil)
		require.Equal(t, http.StatusServiceUnavailable, r.status, r.raw)
		require.Equal(t, "REPOSITORY_UNAVAILABLE", r.reason())
		require.Equal(t, "3", r.header.Get("Retry-After"))
		require.Len(t, r.err.Details, 2, "the service's details are kept: %s", r.raw)
		require.Equal(t, "2.500s", r.err.Details[1].RetryDelay)
	})
	t.Run("429 with RetryInfo has Retry-After", func(t *testing.T) {
		r := h.do(t, "GET", "/memory/search?q=limited", nil)
		require.Equal(t, http.StatusTooManyRequests, r.status, r.raw)
		require.Equal(t, "RATE_LIMITED", r.reason())
		require.Equal(t, "2", r.header.Get("Retry-After"))
	})
	t.Run("REQUEST_TOO_LARGE from a service is 413", func(t *testing.T) {
		r := h.do(t, "GET", "/memory/search?q=field-too-large", nil)
		require.Equal(t, http.StatusRequestEntityTooLarge, r.status, r.raw)
		require.Equal(t, int(codes.InvalidArgument), r.err.Code)
	})
	t.Run("grpc-gateway's own errors get an ErrorInfo too", func(t *testing.T) {
		r := h.do(t, "GET", "/no/such/path", nil)
		require.Equal(t, http.StatusNotFound, r.status, r.raw)
		r = h.do(t, "POST", "/v1/memory/a/search", strings.NewReader(`{"q":`))
		require.Equal(t, http.StatusBadRequest, r.status, r.raw)
		require.Equal(t, "INVALID_ARGUMENT", r.reason())
		r = h.do(t, "POST", "/v1/memory/a/search", strings.NewReader(`{"nope":1}`))
		require.Equal(t, http.StatusBadRequest, r.status, r.raw)
		r = h.do(t, "GET", "/memory/search?top_k=many", nil)
		require.Equal(t, http.StatusBadRequest, r.status, r.raw)
	})
	t.Run("success is untouched", func(t *testing.T) {
		r := h.do(t, "GET", "/memory/search?q=hello", nil)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		// Every field, zero values included (issue #24).
		require.JSONEq(t, `{"indexCommit":"abc","totalHits":5,"results":[],"stale":false,"took":null}`, r.raw)
	})
}

func TestServiceUnreachable(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close())
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	gw, err := gateway.New(context.Background(), gateway.Conns{ContextAssembly: conn, SearchIndex: conn, EntityGraph: conn, ProposalApply: conn},
		gateway.Config{}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	hs := httptest.NewServer(gw)
	t.Cleanup(hs.Close)

	h := &harness{url: hs.URL, token: "x"}
	r := h.do(t, "GET", "/memory/search?q=x", nil)
	require.Equal(t, http.StatusServiceUnavailable, r.status, r.raw)
	require.Equal(t, "the service is unavailable; retry later", r.err.Message, "no internal address leaks")
	require.NotContains(t, r.raw, addr)
	require.Equal(t, "1", r.header.Get("Retry-After"))
}

func TestTimeout(t *testing.T) {
	h := start(t, gateway.Config{Timeout: 200 * time.Millisecond})
	// A longer Grpc-Timeout from the client cannot extend the edge's deadline.
	r := h.do(t, "GET", "/memory/search?q=slow", nil, "Grpc-Timeout", "60S")
	require.Equal(t, http.StatusGatewayTimeout, r.status, r.raw)
	require.Equal(t, int(codes.DeadlineExceeded), r.err.Code)
	require.Equal(t, "the request did not complete within 200ms", r.err.Message)

	r = h.do(t, "GET", "/memory/search?q=fast", nil)
	require.Equal(t, http.StatusOK, r.status, "the deadline is per request: %s", r.raw)
}

// chunked hides the length of r, so the client sends it chunked.
type chunked struct{ r io.Reader }

func (c chunked) Read(p []byte) (int, error) { return c.r.Read(p) }

func TestBodyLimits(t *testing.T) {
	const limit = 1 << 10
	h := start(t, gateway.Config{MaxBodyBytes: limit})
	body := func(n int) string { // a valid search body of exactly n bytes
		prefix := `{"q":"`
		return prefix + strings.Repeat("x", n-len(prefix)-2) + `"}`
	}

	r := h.do(t, "POST", "/v1/memory/a/search", strings.NewReader(body(limit)))
	require.Equal(t, http.StatusOK, r.status, "a body of exactly the limit is fine: %s", r.raw)
	r = h.do(t, "POST", "/v1/memory/a/search", chunked{strings.NewReader(body(limit))})
	require.Equal(t, http.StatusOK, r.status, "also chunked: %s", r.raw)
	require.EqualValues(t, 2, h.search.calls.Load())

	tests := []struct {
		name   string
		body   io.Reader
		status int
		reason string
	}{
		{"Content-Length over the limit", strings.NewReader(body(limit + 1)), http.StatusRequestEntityTooLarge, "REQUEST_TOO_LARGE"},
		{"far over the limit", bytes.NewReader(make([]byte, 8<<20)), http.StatusRequestEntityTooLarge, "REQUEST_TOO_LARGE"},
		{"chunked over the limit", chunked{strings.NewReader(body(limit + 1))}, http.StatusRequestEntityTooLarge, "REQUEST_TOO_LARGE"},
		{"chunked far over the limit", chunked{io.LimitReader(neverEnding('x'), 64<<20)}, http.StatusRequestEntityTooLarge, "REQUEST_TOO_LARGE"},
		{"invalid UTF-8", strings.NewReader("{\"q\":\"caf\xe9\"}"), http.StatusBadRequest, "INVALID_ARGUMENT"},
		{"nested too deep", strings.NewReader(`{"q":"x","kinds":` + strings.Repeat("[", 65) + strings.Repeat("]", 65) + `}`), http.StatusBadRequest, "INVALID_ARGUMENT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do(t, "POST", "/v1/memory/a/search", tt.body)
			require.Equal(t, tt.status, r.status, r.raw)
			require.Equal(t, tt.reason, r.reason(), r.raw)
			require.Equal(t, int(codes.InvalidArgument), r.err.Code)
			if tt.status == http.StatusRequestEntityTooLarge {
				require.Equal(t, strconv.Itoa(limit), r.err.Details[0].Metadata["limit"])
			}
		})
	}
	require.EqualValues(t, 2, h.search.calls.Load(), "no refused body reached the service")
}

type neverEnding byte

func (b neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

func TestURLLimit(t *testing.T) {
	h := start(t, gateway.Config{})
	// Each value is at most MaxParamBytes: two of them fill the target.
	q := strings.Repeat("a", gateway.MaxParamBytes)
	prefix := strings.Repeat("p", gateway.MaxURLBytes-len("/memory/search?q=&pathPrefix=")-len(q))
	target := "/memory/search?q=" + q + "&pathPrefix=" + prefix
	require.Len(t, target, gateway.MaxURLBytes)
	r := h.do(t, "GET", target, nil)
	require.Equal(t, http.StatusOK, r.status, "a target of exactly the limit is fine")
	r = h.do(t, "GET", target+"p", nil)
	require.Equal(t, http.StatusRequestURITooLong, r.status, r.raw)
	require.Equal(t, "REQUEST_TOO_LARGE", r.reason())
	require.EqualValues(t, 1, h.search.calls.Load())

	// One value over MaxParamBytes is a 400 naming it.
	r = h.do(t, "GET", "/memory/search?q="+q+"a", nil)
	require.Equal(t, http.StatusBadRequest, r.status, r.raw)
	require.Equal(t, "INVALID_ARGUMENT", r.reason())
	require.EqualValues(t, 1, h.search.calls.Load())
}

func TestOpenAPI(t *testing.T) {
	h := start(t, gateway.Config{})
	resp, err := http.Get(h.url + gateway.OpenAPIPath) // no token needed
	require.NoError(t, err)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	require.Equal(t, gen.OpenAPI, raw, "the generated document, byte for byte")
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.Equal(t, "3.1.0", doc.OpenAPI)
	require.Contains(t, doc.Paths, "/memory/propose")
	require.Contains(t, doc.Paths, "/memory/search")

	req, err := http.NewRequest("GET", h.url+gateway.OpenAPIPath, nil)
	require.NoError(t, err)
	req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusNotModified, resp.StatusCode, "revalidation is cheap")
}
