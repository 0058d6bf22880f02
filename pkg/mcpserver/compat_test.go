package mcpserver_test

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/grpctest"
	"github.com/garden-bloom/memory/pkg/mcpserver"
)

// olderServer is a memoryd from before issue #27: no IngestEpisode,
// SetFactTTL or GetStaleFacts (gRPC answers Unimplemented). Its ReadMemory
// says whose token reached it.
type olderServer struct {
	memoryv1.UnimplementedContextAssemblyServiceServer
	memoryv1.UnimplementedProposalApplyServiceServer
}

func (olderServer) ReadMemory(ctx context.Context, req *memoryv1.ReadMemoryRequest) (*memoryv1.ReadMemoryResponse, error) {
	c, _ := auth.ClaimsFromContext(ctx)
	return &memoryv1.ReadMemoryResponse{AgentId: req.GetAgentId(), Mode: req.GetMode(), Warnings: []string{"caller " + c.Subject}}, nil
}

// stdio connects the Go SDK's client to RunStdio on conn with token.
func stdio(t *testing.T, conn grpc.ClientConnInterface, token, agent string) *mcp.ClientSession {
	t.Helper()
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- mcpserver.RunStdio(ctx, conn, token, serverIn, serverOut, mcpserver.Options{Agent: agent, CallTimeout: 2 * time.Second})
		_ = serverOut.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "compat-test", Version: "1"}, nil).
		Connect(context.Background(), &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.Close()
		cancel()
		require.NoError(t, <-done)
	})
	return cs
}

// The tools of a capability the server does not have yet are tool errors
// naming NOT_IMPLEMENTED; the others work. Each call carries the token
// given at start.
func TestOlderServer(t *testing.T) {
	srv := grpctest.Serve(t, func(s grpc.ServiceRegistrar) {
		memoryv1.RegisterContextAssemblyServiceServer(s, olderServer{})
		memoryv1.RegisterProposalApplyServiceServer(s, olderServer{})
	})
	token, err := srv.Signer.Mint("compat-agent", []auth.Role{auth.RoleAgent}, []string{"alpha"}, time.Hour)
	require.NoError(t, err)
	cs := stdio(t, srv.Conn, token, "alpha")

	out := call[mcpserver.ReadMemoryOutput](t, cs, "read_memory", map[string]any{"mode": "wide"})
	require.Equal(t, "alpha", out.AgentID)
	require.Equal(t, []string{"caller compat-agent"}, out.Warnings, "the call carried the caller's token")

	for tool, args := range map[string]map[string]any{
		"ingest_episode":  {"episode": map[string]any{"task_text": "t"}},
		"set_ttl":         {"fact": "f", "ttl_seconds": 60},
		"get_stale_facts": {},
		"route_context":   {"query": "q"},
	} {
		msg := callError(t, cs, tool, args)
		require.True(t, strings.HasPrefix(msg, "NOT_IMPLEMENTED (Unimplemented): "), "%s: %s", tool, msg)
	}
}

// A service that cannot be reached is a tool error that says so without
// naming internal addresses, within the call timeout.
func TestUnreachableService(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close())
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	cs := stdio(t, conn, "token", "alpha")
	msg := callError(t, cs, "read_memory", map[string]any{})
	require.True(t, strings.HasPrefix(msg, "UNSPECIFIED (Unavailable): the service is unavailable; retry later"), msg)
	require.NotContains(t, msg, addr)
}

func TestRunStdioRefusesABadAgent(t *testing.T) {
	err := mcpserver.RunStdio(context.Background(), nil, "", strings.NewReader(""), io.Discard, mcpserver.Options{Agent: "Not An Agent"})
	require.ErrorContains(t, err, `agent "Not An Agent" is not an agent id`)
}
