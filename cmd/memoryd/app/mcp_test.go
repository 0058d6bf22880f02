package app

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/mcpserver"
	"github.com/garden-bloom/memory/pkg/telemetry"
)

// The issue: a `mcp` target, in the `all` and `read` composites next to
// the gateway.
func TestMCPTarget(t *testing.T) {
	for _, target := range []string{"all", "read", "mcp", "gateway,mcp"} {
		names, err := (&App{}).table().Expand(target)
		require.NoError(t, err, target)
		require.Contains(t, names, string(ModuleMCP), target)
	}
	names, err := (&App{}).table().Expand("write")
	require.NoError(t, err)
	require.NotContains(t, names, string(ModuleMCP), "the write plane serves no edge")
}

// startApp runs memoryd with args (port 0 listeners) until the test ends.
func startApp(t *testing.T, args ...string) *App {
	t.Helper()
	cfg, flags, err := LoadConfig(append([]string{"--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, args...),
		func(string) (string, bool) { return "", false })
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	a, err := New(ctx, cfg, flags, telemetry.NewLogger(io.Discard, 0))
	if err != nil {
		cancel()
		require.NoError(t, err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(60 * time.Second):
			t.Error("memoryd did not stop")
		}
	})
	return a
}

// A process running only the mcp target (a split read edge) reaches every
// service at its peer address, with the caller's token, and checks tokens
// with the suite's shared secret.
func TestMCPTargetAlone(t *testing.T) {
	_, _, err := LoadConfig([]string{"--target", "mcp", "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0"},
		func(string) (string, bool) { return "", false })
	require.ErrorContains(t, err, `target "mcp" serves an HTTP edge (REST or MCP) but not proposal-apply: set --proposal-apply-addr`)

	servicesDir := t.TempDir()
	services := startApp(t, "--data-dir", servicesDir, "--target", "write,entity-graph,search-index,context-assembly")
	secret := filepath.Join(servicesDir, "auth.secret")
	peer := services.GRPCAddr()
	edge := startApp(t, "--target", "mcp", "--data-dir", t.TempDir(), "--auth-secret-file", secret,
		"--proposal-apply-addr", peer, "--entity-graph-addr", peer, "--search-index-addr", peer, "--context-assembly-addr", peer)
	require.Empty(t, edge.GRPCAddr(), "the edge serves no gRPC")

	key, err := auth.LoadSecret(secret)
	require.NoError(t, err)
	signer, err := auth.NewSigner(key)
	require.NoError(t, err)
	admin, err := signer.Mint("mcp-split-admin", []auth.Role{auth.RoleAdmin, auth.RoleReviewer, auth.RoleService}, []string{auth.AllAgents}, time.Hour)
	require.NoError(t, err)

	// An agent with memory, onboarded on the services directly.
	conn, err := grpc.NewClient(peer, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+admin)
	pa := memoryv1.NewProposalApplyServiceClient(conn)
	onboarded, err := pa.OnboardAgent(ctx, &memoryv1.OnboardAgentRequest{AgentId: "split-agent"})
	require.NoError(t, err)
	id := onboarded.GetProposal().GetProposalId()
	_, err = pa.ApproveProposal(ctx, &memoryv1.ApproveProposalRequest{ProposalId: id})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		p, err := pa.GetProposal(ctx, &memoryv1.GetProposalRequest{ProposalId: id})
		return err == nil && p.GetProposal().GetStatus() == memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED
	}, 20*time.Second, 20*time.Millisecond)

	url := "http://" + edge.HTTPAddr() + mcpserver.HTTPPath + "?agent=split-agent"
	client := mcp.NewClient(&mcp.Implementation{Name: "split-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearerTransport(admin)}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_memory", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	require.EqualValues(t, 1, res.StructuredContent.(map[string]any)["version"])

	// A token the shared secret did not sign is refused at the edge.
	other, err := auth.NewSigner([]byte("another-secret-another-secret-another-secret-another-secret-0123"))
	require.NoError(t, err)
	forged, err := other.Mint("mallory", []auth.Role{auth.RoleAdmin}, []string{auth.AllAgents}, time.Hour)
	require.NoError(t, err)
	_, err = client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearerTransport(forged)}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	require.ErrorContains(t, err, "Unauthorized")
}

type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}
