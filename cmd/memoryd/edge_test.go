package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/garden-bloom/memory/cmd/memoryd/app"
	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
)

// mintAs is token() with a subject of the test's choosing: the rate limit
// keys on it.
func mintAs(t *testing.T, d *deployment, sub string, agents []string, roles ...auth.Role) string {
	t.Helper()
	secret, err := auth.LoadSecret(filepath.Join(d.dataDir, "auth.secret"))
	require.NoError(t, err)
	s, err := auth.NewSigner(secret)
	require.NoError(t, err)
	tok, err := s.Mint(sub, roles, agents, time.Hour)
	require.NoError(t, err)
	return tok
}

// edgeResponse is one REST answer, with the error body decoded.
type edgeResponse struct {
	status int
	header http.Header
	raw    string
	err    struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Details []struct {
			Type       string            `json:"@type"`
			Reason     string            `json:"reason"`
			Metadata   map[string]string `json:"metadata"`
			RetryDelay string            `json:"retryDelay"`
		} `json:"details"`
	}
}

func (r edgeResponse) reason() string {
	if len(r.err.Details) == 0 {
		return ""
	}
	return r.err.Details[0].Reason
}

// onlyReader hides a reader's length, so the client sends it chunked.
type onlyReader struct{ io.Reader }

func edgeCall(t *testing.T, d *deployment, method, path string, body io.Reader, tok string) edgeResponse {
	t.Helper()
	resp, raw := httpDo(t, d, method, path, body, tok)
	r := edgeResponse{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if r.status != http.StatusOK {
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"), r.raw)
		require.NoError(t, json.Unmarshal(raw, &r.err), "every error is the JSON status: %s", r.raw)
		require.NotEmpty(t, r.err.Details, r.raw)
		require.Equal(t, "type.googleapis.com/google.rpc.ErrorInfo", r.err.Details[0].Type, r.raw)
	}
	return r
}

// proposeBody is a valid proposal for agent whose fact is padded to about
// size bytes.
func proposeBody(agent string, size int) string {
	return fmt.Sprintf(`{"agentId":%q,"runId":"run_edge","updates":[{"file":"facts.md","operation":"append","section":"Edge","content":"- %s"}],"reasoning":"edge test"}`,
		agent, strings.Repeat("x", max(1, size-200)))
}

// TestRESTEdgeLimits: hostile bodies and targets are refused at the edge
// with the JSON error shape, and nothing reaches the write plane.
func TestRESTEdgeLimits(t *testing.T) {
	d := startInProcessWith(t, "--rest-max-body-bytes", "65536")
	svc := token(t, d, auth.RoleService)
	const agent = "edge-limits"

	proposals := func() int {
		t.Helper()
		r := edgeCall(t, d, "GET", "/proposals?agent="+agent, nil, svc)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		var list struct {
			Proposals []any `json:"proposals"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.raw), &list))
		return len(list.Proposals)
	}

	tests := []struct {
		name, path string
		body       io.Reader
		status     int
		reason     string
	}{
		{"body over the limit (Content-Length)", "/memory/propose", strings.NewReader(proposeBody(agent, 65536+100)), http.StatusRequestEntityTooLarge, "REQUEST_TOO_LARGE"},
		{"body over the limit (chunked)", "/memory/propose", onlyReader{strings.NewReader(proposeBody(agent, 65536+100))}, http.StatusRequestEntityTooLarge, "REQUEST_TOO_LARGE"},
		{"body far over the limit (chunked)", "/memory/propose", onlyReader{strings.NewReader(proposeBody(agent, 16<<20))}, http.StatusRequestEntityTooLarge, "REQUEST_TOO_LARGE"},
		{"deeply nested JSON", "/memory/propose", strings.NewReader(`{"agentId":"` + agent + `","reasoning":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`), http.StatusBadRequest, "INVALID_ARGUMENT"},
		{"nested objects", "/memory/propose", strings.NewReader(strings.Repeat(`{"a":`, 1000) + "1" + strings.Repeat("}", 1000)), http.StatusBadRequest, "INVALID_ARGUMENT"},
		{"invalid UTF-8", "/memory/propose", strings.NewReader(strings.Replace(proposeBody(agent, 300), "xx", "\xff\xfe", 1)), http.StatusBadRequest, "INVALID_ARGUMENT"},
		{"URL over 8 KiB", "/proposals?agent=" + agent + "&page_token=" + strings.Repeat("p", 8<<10), nil, http.StatusRequestURITooLong, "REQUEST_TOO_LARGE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := "POST"
			if tt.body == nil {
				method = "GET"
			}
			r := edgeCall(t, d, method, tt.path, tt.body, svc)
			require.Equal(t, tt.status, r.status, r.raw)
			require.Equal(t, tt.reason, r.reason(), r.raw)
			require.Equal(t, int(codes.InvalidArgument), r.err.Code, r.raw)
		})
	}
	require.Zero(t, proposals(), "no refused request stored a proposal")

	// The same request within the limits goes through.
	r := edgeCall(t, d, "POST", "/memory/propose", strings.NewReader(proposeBody(agent, 60000)), svc)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	require.Equal(t, 1, proposals())

	t.Run("openapi.json", func(t *testing.T) {
		r := edgeCall(t, d, "GET", "/openapi.json", nil, "")
		require.Equal(t, http.StatusOK, r.status)
		require.Equal(t, "application/json", r.header.Get("Content-Type"))
		var doc struct {
			OpenAPI string         `json:"openapi"`
			Paths   map[string]any `json:"paths"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.raw), &doc))
		require.Equal(t, "3.1.0", doc.OpenAPI)
		for _, p := range []string{"/memory/propose", "/memory/{agentId}/read", "/proposals/{proposalId}:approve", "/memory/search"} {
			require.Contains(t, doc.Paths, p)
		}
	})
	t.Run("unknown path", func(t *testing.T) {
		r := edgeCall(t, d, "GET", "/nope", nil, svc)
		require.Equal(t, http.StatusNotFound, r.status, r.raw)
	})
}

// TestRateLimit: an agent token is limited per subject on REST and on
// direct gRPC alike; service and admin tokens are not.
func TestRateLimit(t *testing.T) {
	// One call per 10 s after a burst of 3: nothing refills during the test.
	d := startInProcessWith(t, "--rate-limit", "0.1", "--rate-limit-burst", "3")
	const agent = "edge-rl"
	agentTok := mintAs(t, d, "edge-rl-run", []string{agent}, auth.RoleAgent)

	for i := range 3 {
		r := edgeCall(t, d, "GET", "/memory/"+agent+"/read?mode=basic", nil, agentTok)
		require.Equal(t, http.StatusNotFound, r.status, "call %d is within the burst and reaches the service: %s", i, r.raw)
	}
	r := edgeCall(t, d, "GET", "/memory/"+agent+"/read?mode=basic", nil, agentTok)
	require.Equal(t, http.StatusTooManyRequests, r.status, r.raw)
	require.Equal(t, "RATE_LIMITED", r.reason())
	require.Equal(t, int(codes.ResourceExhausted), r.err.Code)
	after, err := strconv.Atoi(r.header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After is whole seconds: %q", r.header.Get("Retry-After"))
	require.True(t, after >= 1 && after <= 10, "about when the next token is due: %d", after)
	require.Len(t, r.err.Details, 2, r.raw)
	require.Equal(t, "type.googleapis.com/google.rpc.RetryInfo", r.err.Details[1].Type)

	// Direct gRPC with the same token: same bucket, same answer.
	ca := memoryv1.NewContextAssemblyServiceClient(dial(t, d.grpcAddr[memoryv1.ContextAssemblyService_ServiceDesc.ServiceName]))
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+agentTok)
	_, err = ca.ReadMemory(ctx, &memoryv1.ReadMemoryRequest{AgentId: agent, Mode: memoryv1.ReadMode_READ_MODE_BASIC})
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	require.Equal(t, "RATE_LIMITED", apierr.Info(err).GetReason())
	var retry *errdetails.RetryInfo
	for _, det := range status.Convert(err).Details() {
		if ri, ok := det.(*errdetails.RetryInfo); ok {
			retry = ri
		}
	}
	require.NotNil(t, retry)
	require.Positive(t, retry.GetRetryDelay().AsDuration())
	// Streams too: the limit runs after authentication on every service.
	pa := memoryv1.NewProposalApplyServiceClient(dial(t, d.grpcAddr[memoryv1.ProposalApplyService_ServiceDesc.ServiceName]))
	stream, err := pa.WatchCommits(ctx, &memoryv1.WatchCommitsRequest{})
	require.NoError(t, err)
	_, err = stream.Recv()
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)

	resp, err := http.Get("http://" + d.httpAddr + "/metrics")
	require.NoError(t, err)
	metrics, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Regexp(t, `rpc_server_rate_limited_total\{[^}]*class="token"[^}]*rpc_method="ReadMemory"[^}]*\} 2\b`, string(metrics))

	// Another subject has its own bucket.
	other := mintAs(t, d, "edge-rl-other", []string{agent}, auth.RoleAgent)
	r = edgeCall(t, d, "GET", "/memory/"+agent+"/read?mode=basic", nil, other)
	require.Equal(t, http.StatusNotFound, r.status, r.raw)

	// Service tokens (the orchestration layer, memoryd's own calls) and
	// admin tokens are not limited by --rate-limit.
	for _, tok := range []string{
		mintAs(t, d, "orchestrator", []string{auth.AllAgents}, auth.RoleService),
		mintAs(t, d, "operator", []string{auth.AllAgents}, auth.RoleAdmin),
	} {
		for i := range 30 {
			r := edgeCall(t, d, "GET", "/proposals?agent="+agent, nil, tok)
			require.Equal(t, http.StatusOK, r.status, "call %d: %s", i, r.raw)
		}
		// Context assembly calls search-index with memoryd's own service
		// token on each request; it is not limited either.
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
		for range 10 {
			_, err := ca.ReadMemory(ctx, &memoryv1.ReadMemoryRequest{AgentId: agent, Mode: memoryv1.ReadMode_READ_MODE_BASIC})
			require.NotEqual(t, codes.ResourceExhausted, status.Code(err), "%v", err)
		}
	}
}

// TestRESTTimeout: a request that outlives --rest-timeout is answered 504
// in the JSON shape. (A tiny timeout makes it deterministic; the gateway's
// own tests cover a service that is merely slow.)
func TestRESTTimeout(t *testing.T) {
	d := startInProcessWith(t, "--rest-timeout", "1ns")
	r := edgeCall(t, d, "GET", "/proposals?agent=edge-timeout", nil, token(t, d, auth.RoleService))
	require.Equal(t, http.StatusGatewayTimeout, r.status, r.raw)
	require.Equal(t, int(codes.DeadlineExceeded), r.err.Code, r.raw)
	require.Equal(t, "the request did not complete within 1ns", r.err.Message)
}

func TestRESTEdgeFlags(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	cfg, _, err := app.LoadConfig([]string{"--data-dir", t.TempDir()}, noEnv)
	require.NoError(t, err)
	require.EqualValues(t, 4<<20, cfg.Gateway.MaxBodyBytes)
	require.Equal(t, 30*time.Second, cfg.Gateway.Timeout)
	require.InDelta(t, 50, cfg.RateLimit.Rate, 0)
	require.Equal(t, 100, cfg.RateLimit.Burst)
	require.Zero(t, cfg.RateLimit.PrivilegedRate)

	for _, args := range [][]string{
		{"--rest-max-body-bytes", "16777216"}, // over --grpc-max-recv-bytes (8 MiB)
		{"--rest-max-body-bytes", "0"},
		{"--rest-timeout", "0s"},
		{"--rate-limit", "-1"},
		{"--rate-limit", "5", "--rate-limit-burst", "0"},
	} {
		_, _, err := app.LoadConfig(append([]string{"--data-dir", t.TempDir()}, args...), noEnv)
		require.Error(t, err, "%v", args)
	}
	_, _, err = app.LoadConfig([]string{"--data-dir", t.TempDir(), "--rest-max-body-bytes", "16777216", "--grpc-max-recv-bytes", "16777216"}, noEnv)
	require.NoError(t, err)
}
