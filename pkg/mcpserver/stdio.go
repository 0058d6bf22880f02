package mcpserver

import (
	"context"
	"errors"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"

	"github.com/garden-bloom/memory/pkg/memlayout"
)

// RunStdio serves one MCP client over in and out (newline-delimited
// JSON-RPC, MCP's stdio transport) until the client closes in or ctx ends:
// memctl mcp, which Claude Desktop, Claude Code or Cursor start as a
// subprocess. Every call goes over conn (one memoryd serving all four
// services) with token (no "Bearer " prefix; "" = none); opts.Agent is the
// default agent of calls that name none (an INVALID_AGENT_ID error when it
// is not an agent id). A client that closes the connection is a normal end
// (nil).
func RunStdio(ctx context.Context, conn grpc.ClientConnInterface, token string, in io.Reader, out io.Writer, opts Options) error {
	if opts.Agent != "" && !memlayout.ValidAgentID(opts.Agent) {
		return invalidAgent("agent", opts.Agent)
	}
	srv := New(ClientsOf(conn), StaticCaller(token, opts.Agent), opts)
	err := srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}})
	if errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// nopWriteCloser leaves closing out (os.Stdout) to its owner.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
