package app

import (
	"context"
	"fmt"

	"google.golang.org/grpc"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/mcpserver"
	"github.com/garden-bloom/memory/pkg/modules"
)

// initMCP mounts the MCP server on the HTTP mux. Like the REST edge it
// holds no credentials: it calls each service here or at its peer address
// (--<service>-addr) with the caller's own token, and shares the REST
// edge's body limit and per-request deadline (--rest-max-body-bytes,
// --rest-timeout). It checks the token's signature and expiry itself, so
// a client with a bad token gets the 401 it re-authenticates on.
func (a *App) initMCP(context.Context) (modules.Module, error) {
	conns := map[Module]*grpc.ClientConn{}
	for _, m := range ServiceModules {
		addr := a.serviceAddr(m)
		if addr == "" {
			return nil, fmt.Errorf("target %q serves MCP but not %s: set --%s-addr", a.cfg.Target, m, m)
		}
		c, err := a.conn(addr)
		if err != nil {
			return nil, err
		}
		conns[m] = c
	}
	clients := mcpserver.Clients{
		ContextAssembly: memoryv1.NewContextAssemblyServiceClient(conns[ModuleContextAssembly]),
		SearchIndex:     memoryv1.NewSearchIndexServiceClient(conns[ModuleSearchIndex]),
		EntityGraph:     memoryv1.NewEntityGraphServiceClient(conns[ModuleEntityGraph]),
		ProposalApply:   memoryv1.NewProposalApplyServiceClient(conns[ModuleProposalApply]),
	}
	logger := a.logger.With("component", "mcp")
	a.mux.Handle(mcpserver.HTTPPath, mcpserver.NewHTTPHandler(clients, mcpserver.HTTPOptions{
		Options:      mcpserver.Options{Version: Version, CallTimeout: a.cfg.Gateway.Timeout, Logger: logger},
		Verifier:     a.verifier,
		MaxBodyBytes: a.cfg.Gateway.MaxBodyBytes,
	}))
	logger.Info("MCP edge ready", "path", mcpserver.HTTPPath, "tools", len(mcpserver.ToolNames))
	return modules.Funcs{}, nil
}
