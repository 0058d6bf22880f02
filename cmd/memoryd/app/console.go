package app

import (
	"context"
	"fmt"

	"google.golang.org/grpc"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/modules"
	"github.com/garden-bloom/memory/services/console"
)

// initConsole mounts the review console at /ui/ on the HTTP mux. Like the
// REST and MCP edges it holds no credentials: it calls each service here or
// at its peer address (--<service>-addr) with the signed-in person's own
// token. Its session cookies are sealed with a key derived from the auth
// secret, which every replica of the edge has, so any replica serves any
// session. --console=false leaves /ui/ unserved.
func (a *App) initConsole(context.Context) (modules.Module, error) {
	logger := a.logger.With("component", "console")
	if !a.cfg.Console.Enabled {
		logger.Info("console off (--console=false)")
		return modules.Funcs{}, nil
	}
	conns := map[Module]*grpc.ClientConn{}
	for _, m := range ServiceModules {
		addr := a.serviceAddr(m)
		if addr == "" {
			return nil, fmt.Errorf("target %q serves the console but not %s: set --%s-addr", a.cfg.Target, m, m)
		}
		c, err := a.conn(addr)
		if err != nil {
			return nil, err
		}
		conns[m] = c
	}
	// The verifier holds the secret but does not hand it out: read it
	// again (initAuth made sure it exists).
	secret, err := auth.LoadSecret(a.cfg.SecretPath())
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	srv, err := console.New(console.Clients{
		ContextAssembly: memoryv1.NewContextAssemblyServiceClient(conns[ModuleContextAssembly]),
		SearchIndex:     memoryv1.NewSearchIndexServiceClient(conns[ModuleSearchIndex]),
		EntityGraph:     memoryv1.NewEntityGraphServiceClient(conns[ModuleEntityGraph]),
		ProposalApply:   memoryv1.NewProposalApplyServiceClient(conns[ModuleProposalApply]),
	}, a.cfg.Console, console.Options{
		Verifier:    a.verifier,
		Secret:      secret,
		CallTimeout: a.cfg.Gateway.Timeout,
		Version:     Version,
		Logger:      logger,
	})
	if err != nil {
		return nil, err
	}
	a.mux.Handle(console.Path, srv)
	logger.Info("console ready", "url", "http://"+a.HTTPAddr()+console.Path)
	return modules.Funcs{}, nil
}
