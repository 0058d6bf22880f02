// Package app puts memoryd's modules together into one process according to
// --target: the table in modules.go says which modules exist, what each
// needs and which composites (all, read, write) include it; New
// initialises the modules a target needs in dependency order, Run starts
// them in that order and stops them in reverse, draining on SIGTERM.
package app

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/commitfeed"
	"github.com/garden-bloom/memory/pkg/grpcserver"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/modules"
	"github.com/garden-bloom/memory/pkg/telemetry"
	"github.com/garden-bloom/memory/services/contextassembly"
	"github.com/garden-bloom/memory/services/entitygraph"
	"github.com/garden-bloom/memory/services/proposalapply"
	"github.com/garden-bloom/memory/services/searchindex"
)

// App is one memoryd process. The module init functions (modules.go) fill
// its fields in dependency order; a module reads only the fields of the
// modules it depends on.
type App struct {
	cfg    *Config
	flags  *flag.FlagSet
	mods   Modules // the targets this process runs
	logger *slog.Logger

	running *modules.Running
	failed  chan error // a server that stopped by itself

	// telemetry, auth, object-store
	tel          *telemetry.Telemetry
	verifier     *auth.Verifier
	signer       *auth.Signer
	objects      blob.Store
	objectsGuard *blob.Guard
	// server
	grpcSrv    *grpcserver.Server
	grpcLis    net.Listener
	httpSrv    *http.Server
	httpLis    net.Listener
	mux        *http.ServeMux
	conns      map[string]*grpc.ClientConn
	drainHooks []func()
	// write-repo, read-repo
	writeRepo   *memrepo.Repo
	sharedRepo  *memrepo.Lazy
	mirror      *memrepo.Mirror
	mirrorFeed  memoryv1.ProposalApplyServiceClient
	fetchErrors metric.Int64Counter // failed mirror fetches (metrics.go)
	// the services
	proposalApply   *proposalapply.Service
	searchIndex     *searchindex.Service
	contextAssembly *contextassembly.Service
	entityGraph     *entitygraph.Service
}

// New initialises every module of cfg's target and binds the listeners, so
// the caller knows the real addresses (port 0 in tests) before Run.
func New(ctx context.Context, cfg *Config, flags *flag.FlagSet, logger *slog.Logger) (*App, error) {
	a := &App{cfg: cfg, flags: flags, logger: logger, conns: map[string]*grpc.ClientConn{}, failed: make(chan error, 2)}
	table := a.table()
	names, err := table.Expand(cfg.Target)
	if err != nil {
		return nil, fmt.Errorf("--target: %w", err)
	}
	a.mods = targetsOf(names)
	if a.running, err = table.Init(ctx, names); err != nil {
		return nil, err
	}
	return a, nil
}

// followMirror fetches the remote into the mirror until ctx ends: at once,
// for every commit on proposal-apply's stream (when this process knows where
// it is) that the mirror does not have yet, and every --repo-mirror-poll.
// The read services see each fetch on their next read of main.
func (a *App) followMirror(ctx context.Context) {
	var wake commitfeed.Signal
	if a.mirrorFeed != nil {
		go wake.Follow(ctx, a.mirrorFeed)
	}
	remote := redact(a.cfg.Storage.MirrorURL)
	failing := false // only Run's goroutine uses it
	wake.Run(ctx, commitfeed.Loop{
		Poll: a.cfg.Storage.MirrorPoll,
		CatchUp: func(ctx context.Context, wanted string) error {
			// A fetch since that commit brought it, and newer ones wake us
			// again: no fetch. Not while fetches fail, so a skip never
			// reads as the remote working again.
			if wanted != "" && !failing && a.mirror.Has(ctx, wanted) {
				return nil
			}
			return a.mirror.Sync(ctx)
		},
		Failed: func(err error, again bool) {
			failing = true
			a.fetchFailed(ctx)
			if !again {
				a.logger.Warn("mirror fetch failed; reads serve the last fetched state", "remote", remote, "err", err)
			}
		},
		Recovered: func() {
			failing = false
			a.logger.Info("mirror fetch works again", "remote", remote)
		},
	})
}

// GitHTTPPath is where a process running proposal-apply serves its
// repository read-only over git's smart HTTP protocol, on --http-addr: the
// clone URL is http://<http-addr>/git/memory.git.
const GitHTTPPath = "/git/memory.git"

// gitReaderRoles may fetch from GitHTTPPath: read planes (service tokens)
// and operators.
var gitReaderRoles = []auth.Role{auth.RoleService, auth.RoleAdmin}

// isGitEndpoint reports whether a --repo-mirror-url is a memoryd git
// endpoint (http(s), path ending in GitHTTPPath, no credentials of its own):
// only such a remote is sent this process's service tokens, never an
// arbitrary git host.
func isGitEndpoint(remote string) bool {
	u, err := url.Parse(remote)
	if err != nil || u.User != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), GitHTTPPath)
}

// mirrorToken mints the short-lived service token of one mirror fetch from
// the write plane's git endpoint.
func (a *App) mirrorToken() (string, error) {
	return a.signer.Mint("memoryd/mirror", []auth.Role{auth.RoleService}, []string{auth.AllAgents}, auth.ServiceTokenTTL)
}

// serviceConn dials a peer with a service token minted for caller, kept apart
// from the edge's connections, which carry the end user's token.
func (a *App) serviceConn(caller, addr string) (*grpc.ClientConn, error) {
	key := caller + "->" + addr
	if c, ok := a.conns[key]; ok {
		return c, nil
	}
	conn, err := grpcserver.Dial(addr, a.tel, grpc.WithPerRPCCredentials(auth.NewServiceCredentials(a.signer, "memoryd/"+caller)))
	if err != nil {
		return nil, err
	}
	a.conns[key] = conn
	return conn, nil
}

// serviceAddr is where module m is reached over gRPC: this process's own
// listener when it runs m (the services call each other over gRPC even in
// the all-in-one; only the REST edge calls its own process in the process,
// grpcserver.Local), else its peer.
func (a *App) serviceAddr(m Module) string {
	if a.mods.Has(m) {
		return a.grpcLis.Addr().String()
	}
	return a.cfg.Peers.Addr(m)
}

// conn returns one shared client connection per address.
func (a *App) conn(addr string) (*grpc.ClientConn, error) {
	if c, ok := a.conns[addr]; ok {
		return c, nil
	}
	c, err := grpcserver.Dial(addr, a.tel)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	a.conns[addr] = c
	return c, nil
}

// serveConfig shows the effective configuration, secrets redacted.
func (a *App) serveConfig(w http.ResponseWriter, _ *http.Request) {
	var lines []string
	a.flags.VisitAll(func(f *flag.Flag) {
		lines = append(lines, fmt.Sprintf("%s: %q", f.Name, redact(f.Value.String())))
	})
	sort.Strings(lines)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = fmt.Fprintln(w, strings.Join(lines, "\n")) // the status is sent: a failed write has no one to tell
}

// GRPCAddr is the bound gRPC address ("" when the process serves no gRPC).
func (a *App) GRPCAddr() string {
	if a.grpcLis == nil {
		return ""
	}
	return a.grpcLis.Addr().String()
}

// HTTPAddr is the bound HTTP address.
func (a *App) HTTPAddr() string { return a.httpLis.Addr().String() }

// Run starts every module in dependency order and serves until ctx is
// cancelled (SIGTERM in main) or a server fails, then stops the modules in
// reverse by --shutdown-timeout: health NOT_SERVING, drain HTTP and gRPC,
// finish the apply under way, close.
func (a *App) Run(ctx context.Context) error {
	if err := a.running.Start(ctx); err != nil {
		return err
	}
	var runErr error
	select {
	case <-ctx.Done():
		a.logger.Info("shutting down", "deadline", a.cfg.Server.ShutdownTimeout.String())
	case runErr = <-a.failed:
		a.logger.Error("server failed, shutting down", "err", runErr)
	}
	sctx, cancel := context.WithTimeout(context.Background(), a.cfg.Server.ShutdownTimeout)
	defer cancel()
	if err := a.running.Stop(sctx); err != nil {
		a.logger.Warn("stopping", "err", err)
	}
	a.logger.Info("memoryd stopped")
	return runErr
}
