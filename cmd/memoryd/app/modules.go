package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/gitserve"
	"github.com/garden-bloom/memory/pkg/grpcserver"
	"github.com/garden-bloom/memory/pkg/healthcheck"
	"github.com/garden-bloom/memory/pkg/httplimit"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/modules"
	"github.com/garden-bloom/memory/pkg/ratelimit"
	"github.com/garden-bloom/memory/pkg/readstate"
	"github.com/garden-bloom/memory/pkg/telemetry"
	"github.com/garden-bloom/memory/services/contextassembly"
	"github.com/garden-bloom/memory/services/entitygraph"
	"github.com/garden-bloom/memory/services/gateway"
	"github.com/garden-bloom/memory/services/proposalapply"
	"github.com/garden-bloom/memory/services/searchindex"
)

// The internal modules: what the targets are built on.
const (
	modTelemetry   = "telemetry"    // logs, traces, metrics
	modAuth        = "auth"         // the token secret, verifier and signer
	modObjectStore = "object-store" // the guarded object store
	modServer      = "server"       // the gRPC and HTTP listeners and muxes
	modWriteRepo   = "write-repo"   // the canonical repository, under the writer lock
	modReadRepo    = "read-repo"    // the read services' repository (and its mirror)
	modServe       = "serve"        // serving both listeners, last up and first down
)

// table is the one place that says which modules memoryd has, what each
// needs, and which composite targets include it. Adding a target is
// writing its init function and adding its row here. Rows come in
// dependency order (Register refuses a dependency it does not know yet).
func (a *App) table() *modules.Manager {
	read, write := []string{"all", "read"}, []string{"all", "write"}
	m := modules.New()
	for _, d := range []modules.Def{
		{Name: modTelemetry, Init: a.initTelemetry, Internal: true, Always: true},
		{Name: modAuth, Init: a.initAuth, Internal: true, Always: true, Deps: []string{modTelemetry}},
		{Name: modObjectStore, Init: a.initObjectStore, Internal: true, Always: true, Deps: []string{modTelemetry}},
		{Name: modServer, Init: a.initServer, Internal: true, Always: true, Deps: []string{modAuth}},
		{Name: modWriteRepo, Init: a.initWriteRepo, Internal: true, Deps: []string{modTelemetry}},
		{Name: string(ModuleProposalApply), Init: a.initProposalApply, In: write, Deps: []string{modServer, modWriteRepo, modObjectStore}},
		// The read services share the writer's repository handle when
		// both run here, so the read repository comes after the writer's.
		{Name: modReadRepo, Init: a.initReadRepo, Internal: true, Deps: []string{modServer}, After: []string{modWriteRepo}},
		{Name: string(ModuleEntityGraph), Init: a.initEntityGraph, In: read, Deps: []string{modServer, modReadRepo, modObjectStore}},
		{Name: string(ModuleSearchIndex), Init: a.initSearchIndex, In: read, Deps: []string{modServer, modReadRepo, modObjectStore}},
		{Name: string(ModuleContextAssembly), Init: a.initContextAssembly, In: read, Deps: []string{modServer, modReadRepo, modObjectStore}},
		// The read replicas also serve the REST edge: it holds no
		// credentials and scales with them.
		{Name: string(ModuleGateway), Init: a.initGateway, In: read, Deps: []string{modServer}},
		{Name: string(ModuleMCP), Init: a.initMCP, In: read, Deps: []string{modServer}},
		{Name: string(ModuleConsole), Init: a.initConsole, In: read, Deps: []string{modServer}},
		{Name: modServe, Init: a.initServe, Internal: true, Always: true, Last: true, Deps: []string{modServer}},
	} {
		m.Register(d)
	}
	return m
}

// initTelemetry sets up logs, traces and metrics (and the memory limit
// from the cgroup) and creates the data directory.
func (a *App) initTelemetry(ctx context.Context) (modules.Module, error) {
	setMemoryLimit(a.logger, cgroupMemoryFiles)
	tel, err := telemetry.Setup(ctx, telemetry.Config{ServiceName: "memoryd", ServiceVersion: Version, Logger: a.logger})
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	a.tel = tel
	if err := os.MkdirAll(a.cfg.Storage.DataDir, 0o750); err != nil {
		_ = tel.Shutdown(ctx)
		return nil, fmt.Errorf("--data-dir: %w", err)
	}
	return modules.Funcs{StopFunc: func(ctx context.Context) error { return tel.Shutdown(ctx) }}, nil
}

// initAuth loads (on first start: creates) the token secret. With
// --auth-jwks-file, external RS256/ES256 tokens are accepted too; the
// suite's own service tokens stay HS256 and carry --auth-issuer and
// --auth-audience so they pass the same checks.
func (a *App) initAuth(context.Context) (modules.Module, error) {
	secret, err := auth.LoadOrCreateSecret(a.cfg.SecretPath())
	if err != nil {
		return nil, fmt.Errorf("auth secret: %w", err)
	}
	if a.verifier, err = auth.NewVerifier(secret, a.cfg.Auth.VerifierOptions(a.logger)...); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	if a.signer, err = auth.NewSigner(secret, a.cfg.Auth.SignerOptions()...); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	return modules.Funcs{}, nil
}

// initObjectStore opens the one object store of every module; an S3 bucket
// is created when missing. A store that cannot be reached does not stop
// the start: the guard fails its calls at once until a probe finds it
// back, and /health names it (a dependency, not a readiness: everything
// git holds is served meanwhile).
func (a *App) initObjectStore(ctx context.Context) (modules.Module, error) {
	guard, err := blob.OpenGuarded(ctx, a.cfg.Storage.Objects(), blob.GuardOptions{Logger: a.logger})
	if err != nil {
		return nil, fmt.Errorf("--objects-url: %w", err)
	}
	a.objectsGuard = guard
	a.objects = blob.Instrument(guard, a.tel.MeterProvider()) // memory.objects.*
	return modules.Funcs{StopFunc: func(context.Context) error { return guard.Close() }}, nil
}

// initServer binds the listeners — first, because services that call each
// other need this process's address — and builds the gRPC server (when a
// gRPC service runs here) and the HTTP mux with what every process serves:
// /metrics, /status/config and the profiler. Modules add their handlers
// at their own init; serve starts serving once all are registered.
func (a *App) initServer(context.Context) (modules.Module, error) {
	if a.hasGRPC() {
		// The rate limit keys on the verified token, so it runs after auth.
		limit := ratelimit.New(a.cfg.RateLimit, ratelimit.Options{MeterProvider: a.tel.MeterProvider()})
		a.grpcSrv = grpcserver.New(grpcserver.Options{
			Name:               "memoryd",
			Logger:             a.logger,
			Telemetry:          a.tel,
			MaxRecvMsgBytes:    a.cfg.Server.MaxRecvMsgBytes,
			MaxSendMsgBytes:    a.cfg.Server.MaxSendMsgBytes,
			Limits:             &a.cfg.GRPC,
			UnaryInterceptors:  []grpc.UnaryServerInterceptor{auth.UnaryServerInterceptor(a.verifier, auth.DefaultSkip), limit.Unary()},
			StreamInterceptors: []grpc.StreamServerInterceptor{auth.StreamServerInterceptor(a.verifier, auth.DefaultSkip), limit.Stream()},
		})
		lis, err := net.Listen("tcp", a.cfg.Server.GRPCAddr)
		if err != nil {
			return nil, fmt.Errorf("--grpc-addr: %w", err)
		}
		a.grpcLis = lis
	}
	lis, err := net.Listen("tcp", a.cfg.Server.HTTPAddr)
	if err != nil {
		a.closeListeners()
		return nil, fmt.Errorf("--http-addr: %w", err)
	}
	a.mux = http.NewServeMux()
	a.mux.Handle("GET /metrics", a.tel.MetricsHandler())
	a.mux.HandleFunc("GET /status/config", a.serveConfig)
	a.mux.Handle(pprofPath, httplimit.LongWrites(pprofHandler(a.verifier))) // a profile takes ?seconds=N
	// Every timeout (--http-*) and the per-address connection cap; body
	// and write deadlines are per request (pkg/httplimit), and the REST
	// edge also bounds each request by --rest-timeout.
	limits := httplimit.New(a.cfg.HTTP, httplimit.Options{MeterProvider: a.tel.MeterProvider()})
	a.httpLis = limits.Listener(lis)
	a.httpSrv = limits.Server(a.mux)
	a.httpSrv.MaxHeaderBytes = gateway.MaxHeaderBytes
	a.httpSrv.ErrorLog = slog.NewLogLogger(a.logger.Handler(), slog.LevelWarn)
	return modules.Funcs{StopFunc: func(context.Context) error {
		a.closeListeners() // when serve never started; a no-op after it stopped
		for _, c := range a.conns {
			_ = c.Close()
		}
		return nil
	}}, nil
}

// hasGRPC reports whether a gRPC service runs here (a gateway-only process
// serves no gRPC).
func (a *App) hasGRPC() bool {
	for _, m := range ServiceModules {
		if a.mods.Has(m) {
			return true
		}
	}
	return false
}

func (a *App) closeListeners() {
	for _, l := range []net.Listener{a.grpcLis, a.httpLis} {
		if l != nil {
			_ = l.Close()
		}
	}
}

// initWriteRepo takes the writer lock and opens (on first start: creates)
// the canonical repository.
func (a *App) initWriteRepo(ctx context.Context) (modules.Module, error) {
	cfg := a.cfg
	lock, err := lockWriter(filepath.Join(cfg.Storage.DataDir, "proposal-apply.lock"))
	if err != nil {
		return nil, err
	}
	release := modules.Funcs{StopFunc: func(context.Context) error { return lock.Close() }}
	repo, err := memrepo.Init(ctx, cfg.Storage.RepoPath(), memrepo.InitOptions{})
	if err == nil {
		// This process is the single writer (it holds the writer lock), so
		// a ref lock left behind is from its own predecessor killed
		// mid-commit.
		var removed bool
		if removed, err = repo.RecoverStaleLock(0); removed {
			a.logger.Warn("removed a ref lock left by a previous writer", "repo", cfg.Storage.RepoPath())
		}
	}
	if err == nil {
		err = a.logHead(ctx, repo)
	}
	if err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("memory repo: %w", err)
	}
	a.writeRepo = repo
	return release, nil
}

func (a *App) logHead(ctx context.Context, repo *memrepo.Repo) error {
	head, err := repo.Head(ctx)
	if err == nil {
		a.logger.Info("memory repo ready", "path", a.cfg.Storage.RepoPath(), "head", head.String())
	}
	return err
}

// initProposalApply builds the write plane: the proposals, the engine, the
// commit stream and, on the HTTP listener, the read-only git endpoint.
func (a *App) initProposalApply(ctx context.Context) (modules.Module, error) {
	deps := proposalapply.Deps{Repo: a.writeRepo, Blobs: a.objects, ProposalIndex: a.cfg.Storage.ProposalIndexPath(),
		Logger: a.logger, MeterProvider: a.tel.MeterProvider(), LookupEnv: os.LookupEnv}
	if addr := a.serviceAddr(ModuleEntityGraph); addr != "" {
		conn, err := a.serviceConn("proposal-apply", addr)
		if err != nil {
			return nil, err
		}
		deps.Guard = memoryv1.NewEntityGraphServiceClient(conn)
	}
	svc, err := proposalapply.New(ctx, a.cfg.ProposalApply, deps)
	if err != nil {
		return nil, err
	}
	// Read planes that may not reach the git remote follow the canonical
	// repository here (--repo-mirror-url).
	gh, err := gitserve.New(a.cfg.Storage.RepoPath(), GitHTTPPath, gitserve.Options{Logger: a.logger.With("component", "git-http")})
	if err != nil {
		svc.Stop()
		return nil, fmt.Errorf("git endpoint: %w", err)
	}
	// A clone of a large repository may stream for longer than
	// --http-write-timeout: each write has it instead.
	a.mux.Handle(path.Dir(GitHTTPPath)+"/", httplimit.LongWrites(auth.RequireHTTP(a.verifier, gitReaderRoles, gh)))
	svc.Register(a.grpcSrv)
	a.proposalApply = svc
	// Followers in other processes resume elsewhere: their streams must
	// not hold the drain until its deadline.
	a.beforeDrain(svc.CloseStreams)
	// Ready once Start has recovered the proposals a predecessor left
	// unfinished. The object store is a dependency, not a readiness: while
	// it is down, reads and the proposal list are served (see /health's
	// "degraded").
	var started atomic.Bool
	return modules.Funcs{
		StartFunc: func(ctx context.Context) error {
			err := svc.Start(ctx)
			started.Store(err == nil)
			if err == nil {
				svc.StartTTL(a.cfg.FactTTL.Interval) // stops with svc.Stop
			}
			return err
		},
		// Finishes the apply under way: no half commit.
		StopFunc: func(context.Context) error { svc.Stop(); return nil },
		ReadyFunc: func() error {
			if !started.Load() {
				return errors.New("recovering unfinished proposals")
			}
			return nil
		},
	}, nil
}

// initReadRepo prepares the read services' one repository handle — each
// handle has its own object, tree and commit caches and pack indexes, so
// three would hold three copies — and, with --repo-mirror-url, the mirror
// that fetches it. In the all-in-one it is the writer's own.
func (a *App) initReadRepo(context.Context) (modules.Module, error) {
	if a.writeRepo != nil && a.cfg.Storage.ReadRepoPath() == a.cfg.Storage.RepoPath() {
		a.sharedRepo = memrepo.Opened(a.writeRepo)
	} else {
		a.sharedRepo = memrepo.NewLazy(a.cfg.Storage.ReadRepoPath())
	}
	if a.cfg.Storage.MirrorURL == "" {
		return modules.Funcs{ReadyFunc: a.readRepoReady}, nil
	}
	var opts []memrepo.MirrorOption
	if isGitEndpoint(a.cfg.Storage.MirrorURL) {
		opts = append(opts, memrepo.WithBearerToken(a.mirrorToken))
	}
	a.mirror = memrepo.NewMirror(a.cfg.Storage.MirrorURL, a.cfg.Storage.ReadRepoPath(), opts...)
	if addr := a.serviceAddr(ModuleProposalApply); addr != "" {
		conn, err := a.serviceConn("mirror", addr)
		if err != nil {
			return nil, err
		}
		a.mirrorFeed = memoryv1.NewProposalApplyServiceClient(conn)
	}
	a.fetchErrors = telemetry.GitErrors(a.tel.MeterProvider(), gitOpFetch)
	var cancel context.CancelFunc
	var done sync.WaitGroup
	return modules.Funcs{
		StartFunc: func(ctx context.Context) error {
			ctx, cancel = context.WithCancel(context.WithoutCancel(ctx))
			done.Go(func() { a.followMirror(ctx) })
			return nil
		},
		StopFunc: func(context.Context) error {
			if cancel != nil {
				cancel()
			}
			done.Wait()
			return nil
		},
		ReadyFunc: a.readRepoReady,
	}, nil
}

// readRepoReady is the readiness of the read repository and of what
// serves straight from it: nil once it is open (on a mirror: fetched once).
func (a *App) readRepoReady() error {
	if _, err := a.sharedRepo.Get(); err != nil {
		return fmt.Errorf("repository not open: %w", err)
	}
	return nil
}

// commitsClient is proposal-apply's client for caller's commit stream (or
// usage reports), with a service token of its own; nil when no
// proposal-apply is known (the service then polls).
func (a *App) commitsClient(caller string) (memoryv1.ProposalApplyServiceClient, error) {
	addr := a.serviceAddr(ModuleProposalApply)
	if addr == "" {
		return nil, nil // no stream: the service polls
	}
	conn, err := a.serviceConn(caller, addr)
	if err != nil {
		return nil, err
	}
	return memoryv1.NewProposalApplyServiceClient(conn), nil
}

// initEntityGraph builds entity-graph, following the write plane's commit
// stream with a service token of its own.
func (a *App) initEntityGraph(context.Context) (modules.Module, error) {
	commits, err := a.commitsClient("entity-graph")
	if err != nil {
		return nil, err
	}
	svc := entitygraph.New(entitygraph.Deps{RepoPath: a.cfg.Storage.ReadRepoPath(), Repo: a.sharedRepo, Logger: a.logger,
		MeterProvider: a.tel.MeterProvider(), Commits: commits,
		StateDir: filepath.Join(a.cfg.Storage.DataDir, "entity-graph"),
		Shared: readstate.New(a.objects, "entity-graph.snapshot", a.cfg.Storage.ReadStateEvery, a.cfg.Storage.ReadStatePublishTimeout,
			a.cfg.Storage.DataDir, a.logger)})
	svc.Register(a.grpcSrv)
	a.entityGraph = svc
	a.beforeDrain(svc.Stop) // its stream is a call into proposal-apply
	return modules.Funcs{
		StartFunc: func(ctx context.Context) error { svc.Start(ctx); return nil },
		StopFunc:  func(context.Context) error { svc.Stop(); return nil },
		ReadyFunc: svc.Ready,
	}, nil
}

// initSearchIndex opens the index and connects it to the write plane's
// commit stream with a service token of its own.
func (a *App) initSearchIndex(context.Context) (modules.Module, error) {
	cfg := a.cfg
	commits, err := a.commitsClient("search-index")
	if err != nil {
		return nil, err
	}
	svc, err := searchindex.New(cfg.SearchIndex, searchindex.Deps{RepoPath: cfg.Storage.ReadRepoPath(), Repo: a.sharedRepo,
		Blobs: a.objects, Logger: a.logger, MeterProvider: a.tel.MeterProvider(), Commits: commits,
		Shared: readstate.New(a.objects, "search-index.tar.gz", cfg.Storage.ReadStateEvery, cfg.Storage.ReadStatePublishTimeout,
			cfg.Storage.DataDir, a.logger)})
	if err != nil {
		return nil, fmt.Errorf("search index: %w", err)
	}
	svc.Register(a.grpcSrv)
	a.searchIndex = svc
	// Its commit stream is a call into proposal-apply: end it before the
	// drain, or the server would wait for it until the deadline.
	a.beforeDrain(svc.StopFollowing)
	return modules.Funcs{
		StartFunc: func(ctx context.Context) error { svc.Start(ctx); return nil },
		StopFunc:  func(context.Context) error { svc.Stop(); return nil },
		ReadyFunc: svc.Ready,
	}, nil
}

// initContextAssembly builds context-assembly with its own service-token
// clients of search-index (query hints), entity-graph (graph-aware
// retrieval) and proposal-apply (usage).
func (a *App) initContextAssembly(context.Context) (modules.Module, error) {
	deps := contextassembly.Deps{RepoPath: a.cfg.Storage.ReadRepoPath(), Repo: a.sharedRepo, Logger: a.logger,
		TokenEncoding: a.cfg.ProposalApply.TokenEncoding, MeterProvider: a.tel.MeterProvider(), Blobs: a.objects,
		Retrieval: &a.cfg.Retrieval}
	if addr := a.serviceAddr(ModuleSearchIndex); addr != "" {
		conn, err := a.serviceConn("context-assembly", addr)
		if err != nil {
			return nil, err
		}
		deps.Search = memoryv1.NewSearchIndexServiceClient(conn)
	}
	if addr := a.serviceAddr(ModuleEntityGraph); addr != "" {
		conn, err := a.serviceConn("context-assembly", addr)
		if err != nil {
			return nil, err
		}
		deps.Graph = memoryv1.NewEntityGraphServiceClient(conn)
	}
	usage, err := a.commitsClient("context-assembly")
	if err != nil {
		return nil, err
	}
	deps.Usage = usage
	svc, err := contextassembly.New(deps)
	if err != nil {
		return nil, err
	}
	svc.Register(a.grpcSrv)
	a.contextAssembly = svc
	a.beforeDrain(svc.Stop) // the last usage report, while proposal-apply still serves
	return modules.Funcs{
		StartFunc: func(ctx context.Context) error { svc.Start(ctx); return nil },
		StopFunc:  func(context.Context) error { svc.Stop(); return nil },
		ReadyFunc: a.readRepoReady, // it serves once the repository opens
	}, nil
}

// initGateway mounts the REST edge on the HTTP mux, calling each service
// here or at its peer address with the end user's token.
func (a *App) initGateway(ctx context.Context) (modules.Module, error) {
	conns := map[Module]grpc.ClientConnInterface{}
	for _, m := range ServiceModules {
		c, err := a.conn(a.serviceAddr(m))
		if err != nil {
			return nil, err
		}
		conns[m] = c
		if a.mods.Has(m) {
			// Served here: called in the process, through the same
			// interceptors (grpcserver.Local).
			conns[m] = a.grpcSrv.Local(c)
		}
	}
	gw, err := gateway.New(ctx, gateway.Conns{
		ContextAssembly: conns[ModuleContextAssembly],
		SearchIndex:     conns[ModuleSearchIndex],
		EntityGraph:     conns[ModuleEntityGraph],
		ProposalApply:   conns[ModuleProposalApply],
	}, a.cfg.Gateway, a.logger, gateway.WithMeterProvider(a.tel.MeterProvider()))
	if err != nil {
		return nil, err
	}
	a.mux.Handle("/", gw)
	return modules.Funcs{}, nil
}

// healthServiceNames maps each service module to its gRPC health name.
var healthServiceNames = map[Module]string{
	ModuleContextAssembly: contextassembly.Name,
	ModuleSearchIndex:     searchindex.Name,
	ModuleEntityGraph:     entitygraph.Name,
	ModuleProposalApply:   proposalapply.Name,
}

// readinessPoll is how often each gRPC service's health status follows its
// module's readiness.
const readinessPoll = 200 * time.Millisecond

// initServe prepares /health — every local module's readiness, every
// service this process runs or routes to over gRPC, the object store —
// and the process's own metrics.
func (a *App) initServe(context.Context) (modules.Module, error) {
	var targets []healthcheck.Target
	for _, m := range ServiceModules {
		if !a.mods.Has(m) && !a.mods.Edge() {
			continue
		}
		addr := a.serviceAddr(m)
		c, err := a.conn(addr)
		if err != nil {
			return nil, err
		}
		targets = append(targets, healthcheck.Target{Name: string(m), Service: healthServiceNames[m], Address: addr, Conn: c})
	}
	a.mux.Handle("GET /health", healthcheck.Handler(healthcheck.Sources{
		Targets:      targets,
		Dependencies: []healthcheck.Dependency{{Name: "object-store", State: a.objectsGuard.Status}},
		Modules:      a.moduleStates,
	}, 2*time.Second))
	if err := a.sizeCaches(); err != nil {
		return nil, err
	}
	if err := a.instrument(); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	var cancel context.CancelFunc
	var readiness sync.WaitGroup
	return modules.Funcs{
		StartFunc: func(ctx context.Context) error {
			if a.grpcSrv != nil {
				go func() { a.fail(a.grpcSrv.Serve(a.grpcLis)) }()
			}
			ctx, cancel = context.WithCancel(context.WithoutCancel(ctx))
			readiness.Go(func() { a.followReadiness(ctx) })
			go func() {
				if err := a.httpSrv.Serve(a.httpLis); !errors.Is(err, http.ErrServerClosed) {
					a.fail(err)
				}
			}()
			a.logger.Info("memoryd serving", "target", a.cfg.Target, "modules", fmt.Sprint(a.mods),
				"grpc_addr", a.GRPCAddr(), "http_addr", a.HTTPAddr(), "version", Version)
			return nil
		},
		StopFunc: func(ctx context.Context) error {
			if cancel != nil {
				cancel()
				readiness.Wait()
			}
			a.drain(ctx)
			return nil
		},
	}, nil
}

// moduleStates is the readiness of every module this process runs. It
// also brings each local gRPC service's health status up to date, so the
// report /health gives (modules and services) agrees with itself rather
// than with the last readiness poll.
func (a *App) moduleStates() []healthcheck.ModuleState {
	var out []healthcheck.ModuleState
	for _, st := range a.running.States() {
		a.setServing(st)
		out = append(out, healthcheck.ModuleState{Name: st.Name, Err: st.Err})
	}
	return out
}

// setServing sets the gRPC health status of st's service, if it is one.
func (a *App) setServing(st modules.State) {
	svc, ok := healthServiceNames[Module(st.Name)]
	if !ok || a.grpcSrv == nil {
		return
	}
	if st.Err == nil {
		a.grpcSrv.SetServing(svc)
	} else {
		a.grpcSrv.SetNotServing(svc)
	}
}

// followReadiness keeps each local gRPC service's health status equal to
// its module's readiness, so a balancer or a client's health check sends
// nothing to a replica still catching up, and logs when the whole process
// becomes ready (and how long that took) or stops being ready.
func (a *App) followReadiness(ctx context.Context) {
	t := time.NewTicker(readinessPoll)
	defer t.Stop()
	start, wasReady := time.Now(), false
	for {
		var notReady []any
		for _, st := range a.running.States() {
			if st.Err != nil {
				notReady = append(notReady, st.Name, st.Err.Error())
			}
			a.setServing(st)
		}
		switch ready := len(notReady) == 0; {
		case ready && !wasReady:
			a.logger.Info("memoryd ready", "after", time.Since(start).Round(time.Millisecond).String())
		case !ready && wasReady:
			a.logger.Warn("memoryd not ready", notReady...)
		}
		wasReady = len(notReady) == 0
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// beforeDrain adds fn to what runs before the servers drain (in reverse
// order of adding): the streams and reports that would otherwise hold a
// graceful stop until its deadline, or miss the services they call.
func (a *App) beforeDrain(fn func()) { a.drainHooks = append(a.drainHooks, fn) }

// drain runs the hooks, then stops both servers gracefully (gRPC health
// flips first so balancers stop sending) by ctx's deadline.
func (a *App) drain(ctx context.Context) {
	for i := len(a.drainHooks) - 1; i >= 0; i-- {
		a.drainHooks[i]()
	}
	var done sync.WaitGroup
	if a.grpcSrv != nil {
		done.Go(func() { a.grpcSrv.Shutdown(ctx) })
	}
	if err := a.httpSrv.Shutdown(ctx); err != nil {
		_ = a.httpSrv.Close()
	}
	done.Wait()
}

// fail reports a server that stopped by itself; Run then shuts down.
func (a *App) fail(err error) {
	if err == nil {
		return
	}
	select {
	case a.failed <- err:
	default:
	}
}
