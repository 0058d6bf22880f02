// Package app wires memoryd's modules (the four gRPC services and the REST
// edge) into one process according to --target, and runs their lifecycle:
// start after dependencies, stop in reverse, drain on SIGTERM.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/commitfeed"
	"github.com/garden-bloom/memory/pkg/gitserve"
	"github.com/garden-bloom/memory/pkg/grpcserver"
	"github.com/garden-bloom/memory/pkg/healthcheck"
	"github.com/garden-bloom/memory/pkg/httplimit"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/ratelimit"
	"github.com/garden-bloom/memory/pkg/readstate"
	"github.com/garden-bloom/memory/pkg/telemetry"
	"github.com/garden-bloom/memory/services/contextassembly"
	"github.com/garden-bloom/memory/services/entitygraph"
	"github.com/garden-bloom/memory/services/gateway"
	"github.com/garden-bloom/memory/services/proposalapply"
	"github.com/garden-bloom/memory/services/searchindex"
)

// Version is set at build time with -ldflags.
var Version = "dev"

// healthServiceNames maps each service module to its gRPC health name.
var healthServiceNames = map[Module]string{
	ModuleContextAssembly: contextassembly.Name,
	ModuleSearchIndex:     searchindex.Name,
	ModuleEntityGraph:     entitygraph.Name,
	ModuleProposalApply:   proposalapply.Name,
}

// App is one memoryd process.
type App struct {
	cfg    *Config
	flags  *flag.FlagSet
	mods   Modules
	logger *slog.Logger
	tel    *telemetry.Telemetry

	proposalApply   *proposalapply.Service
	searchIndex     *searchindex.Service
	contextAssembly *contextassembly.Service
	entityGraph     *entitygraph.Service
	writerLock      *os.File
	mirror          *memrepo.Mirror
	writeRepo       *memrepo.Repo // proposal-apply's, when this process runs it
	sharedRepo      *memrepo.Lazy // the read services' (readRepo)
	objects         blob.Store
	objectsGuard    *blob.Guard
	mirrorFeed      memoryv1.ProposalApplyServiceClient
	signer          *auth.Signer

	grpcSrv *grpcserver.Server
	grpcLis net.Listener
	httpSrv *http.Server
	httpLis net.Listener
	conns   map[string]*grpc.ClientConn
	// fetchErrors counts failed mirror fetches (metrics.go).
	fetchErrors metric.Int64Counter
}

// New prepares every module of cfg's target and binds the listeners, so the
// caller knows the real addresses (port 0 in tests) before Run.
func New(ctx context.Context, cfg *Config, flags *flag.FlagSet, logger *slog.Logger) (_ *App, err error) {
	mods, err := ParseTarget(cfg.Target)
	if err != nil {
		return nil, err
	}
	a := &App{cfg: cfg, flags: flags, mods: mods, logger: logger, conns: map[string]*grpc.ClientConn{}}
	setMemoryLimit(logger, cgroupMemoryFiles)
	defer func() {
		if err != nil {
			a.closeResources(context.Background())
		}
	}()

	if a.tel, err = telemetry.Setup(ctx, telemetry.Config{
		ServiceName: "memoryd", ServiceVersion: Version, Logger: logger,
	}); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	if err := os.MkdirAll(cfg.Storage.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("--data-dir: %w", err)
	}
	secret, err := auth.LoadOrCreateSecret(cfg.SecretPath())
	if err != nil {
		return nil, fmt.Errorf("auth secret: %w", err)
	}
	// With --auth-jwks-file, external RS256/ES256 tokens are accepted too;
	// the suite's own service tokens stay HS256 and carry --auth-issuer and
	// --auth-audience so they pass the same checks.
	verifier, err := auth.NewVerifier(secret, cfg.Auth.VerifierOptions(logger)...)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	if a.signer, err = auth.NewSigner(secret, cfg.Auth.SignerOptions()...); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}

	// One object store for every module; an S3 bucket is created when
	// missing. A store that cannot be reached does not stop the start:
	// the guard fails its calls at once until a probe finds it back, and
	// /health names it.
	if a.objectsGuard, err = blob.OpenGuarded(ctx, cfg.Storage.Objects(), blob.GuardOptions{Logger: a.logger}); err != nil {
		return nil, fmt.Errorf("--objects-url: %w", err)
	}
	a.objects = blob.Instrument(a.objectsGuard, a.tel.MeterProvider()) // memory.objects.*
	if mods.Has(ModuleProposalApply) {
		if err := a.setupWritePlane(ctx); err != nil {
			return nil, err
		}
	}

	if err := a.setupGRPC(verifier); err != nil {
		return nil, err
	}
	if a.proposalApply != nil {
		if addr := a.serviceAddr(ModuleEntityGraph); addr != "" {
			conn, err := a.serviceConn("proposal-apply", addr)
			if err != nil {
				return nil, err
			}
			a.proposalApply.SetGuard(memoryv1.NewEntityGraphServiceClient(conn))
		}
	}
	if cfg.Storage.MirrorURL != "" {
		var opts []memrepo.MirrorOption
		if isGitEndpoint(cfg.Storage.MirrorURL) {
			opts = append(opts, memrepo.WithBearerToken(a.mirrorToken))
		}
		a.mirror = memrepo.NewMirror(cfg.Storage.MirrorURL, cfg.Storage.ReadRepoPath(), opts...)
		if addr := a.serviceAddr(ModuleProposalApply); addr != "" {
			conn, err := a.serviceConn("mirror", addr) // dialled now: a.conns is not touched once serving
			if err != nil {
				return nil, err
			}
			a.mirrorFeed = memoryv1.NewProposalApplyServiceClient(conn)
		}
	}
	if mods.Has(ModuleSearchIndex) {
		if err := a.setupSearchIndex(); err != nil {
			return nil, err
		}
	}
	if err := a.setupHTTP(ctx, verifier); err != nil {
		return nil, err
	}
	if err := a.instrument(verifier); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return a, nil
}

// setupWritePlane opens (on first start: creates) the canonical repository
// and the object store, and prepares proposal-apply, the only writer.
func (a *App) setupWritePlane(ctx context.Context) error {
	cfg := a.cfg
	lock, err := lockWriter(filepath.Join(cfg.Storage.DataDir, "proposal-apply.lock"))
	if err != nil {
		return err
	}
	a.writerLock = lock
	repo, err := memrepo.Init(ctx, cfg.Storage.RepoPath(), memrepo.InitOptions{})
	if err != nil {
		return fmt.Errorf("memory repo: %w", err)
	}
	// This process is the single writer (it holds the writer lock), so a
	// ref lock left behind is from its own predecessor killed mid-commit.
	if removed, err := repo.RecoverStaleLock(0); err != nil {
		return fmt.Errorf("memory repo: %w", err)
	} else if removed {
		a.logger.Warn("removed a ref lock left by a previous writer", "repo", cfg.Storage.RepoPath())
	}
	head, err := repo.Head(ctx)
	if err != nil {
		return fmt.Errorf("memory repo: %w", err)
	}
	a.logger.Info("memory repo ready", "path", cfg.Storage.RepoPath(), "head", head.String())
	a.writeRepo = repo
	a.proposalApply, err = proposalapply.New(ctx, cfg.ProposalApply, proposalapply.Deps{
		Repo: repo, Blobs: a.objects, ProposalIndex: cfg.Storage.ProposalIndexPath(),
		Logger: a.logger, MeterProvider: a.tel.MeterProvider(), LookupEnv: os.LookupEnv,
	})
	return err
}

// followMirror fetches the remote into the mirror until ctx ends: at once
// for every commit on proposal-apply's stream (when this process knows where
// it is), and every --repo-mirror-poll. The read services see each fetch on
// their next read of main.
func (a *App) followMirror(ctx context.Context) {
	kick := make(chan struct{}, 1)
	if a.mirrorFeed != nil {
		go commitfeed.Follow(ctx, a.mirrorFeed, func() {
			select {
			case kick <- struct{}{}:
			default:
			}
		})
	}
	t := time.NewTicker(a.cfg.Storage.MirrorPoll)
	defer t.Stop()
	failing := false
	for {
		if err := a.mirror.Sync(ctx); err != nil && ctx.Err() == nil {
			a.fetchFailed(ctx)
			if !failing {
				a.logger.Warn("mirror fetch failed; reads serve the last fetched state", "remote", redact(a.cfg.Storage.MirrorURL), "err", err)
			}
			failing = true
		} else if failing {
			a.logger.Info("mirror fetch works again", "remote", redact(a.cfg.Storage.MirrorURL))
			failing = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
		}
	}
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

// readRepo is the one repository handle of the read services: each handle
// has its own object, tree and commit caches and pack indexes, so three
// would hold three copies. In the all-in-one it is the writer's own.
func (a *App) readRepo() *memrepo.Lazy {
	if a.sharedRepo == nil {
		if a.writeRepo != nil && a.cfg.Storage.ReadRepoPath() == a.cfg.Storage.RepoPath() {
			a.sharedRepo = memrepo.Opened(a.writeRepo)
		} else {
			a.sharedRepo = memrepo.NewLazy(a.cfg.Storage.ReadRepoPath())
		}
	}
	return a.sharedRepo
}

// setupContextAssembly builds context-assembly with its own service-token
// client of search-index (query hints) and the object store (sources).
func (a *App) setupContextAssembly(g *grpc.Server) error {
	deps := contextassembly.Deps{RepoPath: a.cfg.Storage.ReadRepoPath(), Repo: a.readRepo(), Logger: a.logger, TokenEncoding: a.cfg.ProposalApply.TokenEncoding,
		MeterProvider: a.tel.MeterProvider()}
	deps.Blobs = a.objects
	if addr := a.serviceAddr(ModuleSearchIndex); addr != "" {
		conn, err := a.serviceConn("context-assembly", addr)
		if err != nil {
			return err
		}
		deps.Search = memoryv1.NewSearchIndexServiceClient(conn)
	}
	if addr := a.serviceAddr(ModuleProposalApply); addr != "" {
		conn, err := a.serviceConn("context-assembly", addr)
		if err != nil {
			return err
		}
		deps.Usage = memoryv1.NewProposalApplyServiceClient(conn)
	}
	var err error
	if a.contextAssembly, err = contextassembly.New(deps); err != nil {
		return err
	}
	a.contextAssembly.Register(g)
	return nil
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

// setupSearchIndex opens the index and connects it to the write plane's
// commit stream with a service token of its own.
func (a *App) setupSearchIndex() error {
	cfg := a.cfg
	deps := searchindex.Deps{RepoPath: cfg.Storage.ReadRepoPath(), Repo: a.readRepo(), Blobs: a.objects, Logger: a.logger, MeterProvider: a.tel.MeterProvider(),
		Shared: readstate.New(a.objects, "search-index.tar.gz", cfg.Storage.ReadStateEvery, cfg.Storage.DataDir, a.logger)}
	if addr := a.serviceAddr(ModuleProposalApply); addr != "" {
		conn, err := a.serviceConn("search-index", addr)
		if err != nil {
			return err
		}
		deps.Commits = memoryv1.NewProposalApplyServiceClient(conn)
	}
	var err error
	if a.searchIndex, err = searchindex.New(cfg.SearchIndex, deps); err != nil {
		return fmt.Errorf("search index: %w", err)
	}
	a.searchIndex.Register(a.grpcSrv.GRPC())
	return nil
}

// setupGRPC builds this process's gRPC server with the services it runs.
func (a *App) setupGRPC(verifier *auth.Verifier) error {
	var local []Module
	for _, m := range ServiceModules {
		if a.mods.Has(m) {
			local = append(local, m)
		}
	}
	if len(local) == 0 {
		return nil // a gateway-only process serves no gRPC
	}
	// The rate limit keys on the verified token, so it runs after auth.
	limit := ratelimit.New(a.cfg.RateLimit, ratelimit.Options{MeterProvider: a.tel.MeterProvider()})
	a.grpcSrv = grpcserver.New(grpcserver.Options{
		Name:               "memoryd",
		Logger:             a.logger,
		Telemetry:          a.tel,
		MaxRecvMsgBytes:    a.cfg.Server.MaxRecvMsgBytes,
		MaxSendMsgBytes:    a.cfg.Server.MaxSendMsgBytes,
		Limits:             &a.cfg.GRPC,
		UnaryInterceptors:  []grpc.UnaryServerInterceptor{auth.UnaryServerInterceptor(verifier, auth.DefaultSkip), limit.Unary()},
		StreamInterceptors: []grpc.StreamServerInterceptor{auth.StreamServerInterceptor(verifier, auth.DefaultSkip), limit.Stream()},
	})
	// Listen first: services that call each other need this process's address.
	lis, err := net.Listen("tcp", a.cfg.Server.GRPCAddr)
	if err != nil {
		return fmt.Errorf("--grpc-addr: %w", err)
	}
	a.grpcLis = lis
	g := a.grpcSrv.GRPC()
	for _, m := range local {
		switch m {
		case ModuleContextAssembly:
			if err := a.setupContextAssembly(g); err != nil {
				return err
			}
		case ModuleSearchIndex:
			// registered by setupSearchIndex, which needs the listener
		case ModuleEntityGraph:
			deps := entitygraph.Deps{RepoPath: a.cfg.Storage.ReadRepoPath(), Repo: a.readRepo(), Logger: a.logger, MeterProvider: a.tel.MeterProvider(),
				StateDir: filepath.Join(a.cfg.Storage.DataDir, "entity-graph"),
				Shared:   readstate.New(a.objects, "entity-graph.snapshot", a.cfg.Storage.ReadStateEvery, a.cfg.Storage.DataDir, a.logger)}
			if addr := a.serviceAddr(ModuleProposalApply); addr != "" {
				conn, err := a.serviceConn("entity-graph", addr)
				if err != nil {
					return err
				}
				deps.Commits = memoryv1.NewProposalApplyServiceClient(conn)
			}
			a.entityGraph = entitygraph.New(deps)
			a.entityGraph.Register(g)
		case ModuleProposalApply:
			a.proposalApply.Register(g)
		}
		a.grpcSrv.SetServing(healthServiceNames[m])
	}
	return nil
}

// serviceAddr is where module m is reached over gRPC: this process's own
// listener when it runs m (the all-in-one still talks gRPC), else its peer.
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

// setupHTTP builds the HTTP listener: /health, /metrics, /status/config,
// for proposal-apply the read-only git endpoint (GitHTTPPath) and, for the
// gateway target, the REST edge.
func (a *App) setupHTTP(ctx context.Context, verifier *auth.Verifier) error {
	// /health reports every service this process runs or routes to.
	var targets []healthcheck.Target
	conns := map[Module]*grpc.ClientConn{}
	for _, m := range ServiceModules {
		if !a.mods.Has(m) && !a.mods.Has(ModuleGateway) {
			continue
		}
		addr := a.serviceAddr(m)
		c, err := a.conn(addr)
		if err != nil {
			return err
		}
		conns[m] = c
		targets = append(targets, healthcheck.Target{Name: string(m), Service: healthServiceNames[m], Address: addr, Conn: c})
	}

	mux := http.NewServeMux()
	deps := []healthcheck.Dependency{{Name: "object-store", State: a.objectsGuard.Status}}
	mux.Handle("GET /health", healthcheck.Handler(targets, deps, 2*time.Second))
	mux.Handle("GET /metrics", a.tel.MetricsHandler())
	mux.HandleFunc("GET /status/config", a.serveConfig)
	mux.Handle(pprofPath, httplimit.LongWrites(pprofHandler(verifier))) // a profile takes ?seconds=N
	if a.proposalApply != nil {
		// Read planes that may not reach the git remote follow the
		// canonical repository here (--repo-mirror-url).
		gh, err := gitserve.New(a.cfg.Storage.RepoPath(), GitHTTPPath, gitserve.Options{Logger: a.logger.With("component", "git-http")})
		if err != nil {
			return fmt.Errorf("git endpoint: %w", err)
		}
		// A clone of a large repository may stream for longer than
		// --http-write-timeout: each write has it instead.
		mux.Handle(path.Dir(GitHTTPPath)+"/", httplimit.LongWrites(auth.RequireHTTP(verifier, gitReaderRoles, gh)))
	}
	if a.mods.Has(ModuleGateway) {
		gw, err := gateway.New(ctx, gateway.Conns{
			ContextAssembly: conns[ModuleContextAssembly],
			SearchIndex:     conns[ModuleSearchIndex],
			EntityGraph:     conns[ModuleEntityGraph],
			ProposalApply:   conns[ModuleProposalApply],
		}, a.cfg.Gateway, a.logger, gateway.WithMeterProvider(a.tel.MeterProvider()))
		if err != nil {
			return err
		}
		mux.Handle("/", gw)
	}
	lis, err := net.Listen("tcp", a.cfg.Server.HTTPAddr)
	if err != nil {
		return fmt.Errorf("--http-addr: %w", err)
	}
	// Every timeout (--http-*) and the per-address connection cap; body
	// and write deadlines are per request (pkg/httplimit), and the REST
	// edge also bounds each request by --rest-timeout.
	limits := httplimit.New(a.cfg.HTTP, httplimit.Options{MeterProvider: a.tel.MeterProvider()})
	a.httpLis = limits.Listener(lis)
	a.httpSrv = limits.Server(mux)
	a.httpSrv.MaxHeaderBytes = gateway.MaxHeaderBytes
	a.httpSrv.ErrorLog = slog.NewLogLogger(a.logger.Handler(), slog.LevelWarn)
	return nil
}

// serveConfig shows the effective configuration, secrets redacted.
func (a *App) serveConfig(w http.ResponseWriter, _ *http.Request) {
	var lines []string
	a.flags.VisitAll(func(f *flag.Flag) {
		lines = append(lines, fmt.Sprintf("%s: %q", f.Name, redact(f.Value.String())))
	})
	sort.Strings(lines)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, strings.Join(lines, "\n"))
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

// Run serves until ctx is cancelled (SIGTERM in main), then shuts down
// gracefully: health NOT_SERVING, drain HTTP and gRPC, stop by the deadline.
func (a *App) Run(ctx context.Context) error {
	if a.proposalApply != nil {
		if err := a.proposalApply.Start(ctx); err != nil {
			a.closeResources(context.Background())
			return err
		}
	}
	if a.mirror != nil {
		go a.followMirror(ctx)
	}
	if a.searchIndex != nil {
		a.searchIndex.Start(ctx)
	}
	if a.contextAssembly != nil {
		a.contextAssembly.Start(ctx)
	}
	if a.entityGraph != nil {
		a.entityGraph.Start(ctx)
	}
	errc := make(chan error, 2)
	if a.grpcSrv != nil {
		go func() { errc <- a.grpcSrv.Serve(a.grpcLis) }()
	}
	go func() {
		if err := a.httpSrv.Serve(a.httpLis); !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}()
	a.logger.Info("memoryd serving", "target", a.cfg.Target, "modules", fmt.Sprint(a.mods),
		"grpc_addr", a.GRPCAddr(), "http_addr", a.HTTPAddr(), "version", Version)

	var runErr error
	select {
	case <-ctx.Done():
		a.logger.Info("shutting down", "deadline", a.cfg.Server.ShutdownTimeout.String())
	case runErr = <-errc:
		a.logger.Error("server failed, shutting down", "err", runErr)
	}
	sctx, cancel := context.WithTimeout(context.Background(), a.cfg.Server.ShutdownTimeout)
	defer cancel()
	a.closeResources(sctx)
	a.logger.Info("memoryd stopped")
	return runErr
}

// closeResources stops servers (gRPC health flips first so balancers stop
// sending), then closes client connections and flushes telemetry.
func (a *App) closeResources(ctx context.Context) {
	if a.searchIndex != nil {
		// Its commit stream is a call into proposal-apply: end it first, or
		// the server would wait for it until the deadline.
		a.searchIndex.StopFollowing()
	}
	if a.contextAssembly != nil {
		a.contextAssembly.Stop() // last usage report while proposal-apply still serves
	}
	if a.entityGraph != nil {
		a.entityGraph.Stop()
	}
	if a.proposalApply != nil {
		a.proposalApply.CloseStreams() // followers in other processes resume elsewhere
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if a.grpcSrv != nil {
			a.grpcSrv.Shutdown(ctx)
		} else if a.grpcLis != nil {
			_ = a.grpcLis.Close()
		}
	}()
	if a.httpSrv != nil {
		if err := a.httpSrv.Shutdown(ctx); err != nil {
			_ = a.httpSrv.Close()
		}
	} else if a.httpLis != nil {
		_ = a.httpLis.Close()
	}
	<-done
	if a.searchIndex != nil {
		a.searchIndex.Stop()
	}
	if a.proposalApply != nil {
		a.proposalApply.Stop() // finishes the apply under way: no half commit
	}
	if a.writerLock != nil {
		_ = a.writerLock.Close()
	}
	if a.objectsGuard != nil {
		_ = a.objectsGuard.Close()
	}
	for _, c := range a.conns {
		_ = c.Close()
	}
	if a.tel != nil {
		_ = a.tel.Shutdown(ctx)
	}
}
