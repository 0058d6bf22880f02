// Package grpcserver builds the gRPC servers and clients used by memoryd.
//
// Every service in the binary (read plane, write plane, ...) gets its server
// from New so that they all share the same operational contract: health
// checking, reflection, OpenTelemetry traces and metrics, structured access
// logs, panic recovery, message-size limits, keepalive policy and a graceful
// shutdown sequence. Keeping this in one constructor (the Zoekt approach)
// means a new service cannot forget one of them.
package grpcserver

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc/filters"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/stats"

	"github.com/garden-bloom/memory/pkg/connlimit"
	"github.com/garden-bloom/memory/pkg/telemetry"
)

// Default message-size limits. Requests are capped lower than responses
// because writes are validated payloads, while reads may legitimately return
// batches of memories; both stay far below gRPC's 2 GiB hard ceiling so one
// bad client cannot make the process allocate unbounded buffers.
const (
	DefaultMaxRecvMsgBytes = 8 << 20
	DefaultMaxSendMsgBytes = 16 << 20
)

// Keepalive settings shared by server and client. The server's MinTime must
// be <= the client's ping interval or the server would close the connection
// with ENHANCE_YOUR_CALM ("too_many_pings"); a client pinging more often
// than that is cut so.
const (
	keepaliveMinTime       = 10 * time.Second
	serverKeepaliveTime    = 2 * time.Minute
	serverKeepaliveTimeout = 20 * time.Second
	clientKeepaliveTime    = 30 * time.Second
	clientKeepaliveTimeout = 10 * time.Second
)

// handshakeTimeout bounds a new connection's HTTP/2 preface and settings
// (grpc-go's default is 120 s), as --http-read-header-timeout bounds an
// HTTP request's headers.
const handshakeTimeout = 10 * time.Second

// instrumentationName identifies this package's own meters.
const instrumentationName = "github.com/garden-bloom/memory/pkg/grpcserver"

// Options configures New. The zero value is usable.
type Options struct {
	// Name identifies the server in logs (e.g. "read", "write"); several
	// servers can live in one process. Defaults to "grpc".
	Name string
	// Logger receives access logs and lifecycle events. Use
	// telemetry.NewLogger so lines carry trace ids. Defaults to slog.Default().
	Logger *slog.Logger
	// Telemetry supplies tracer/meter providers and the propagator. nil
	// disables tracing and metrics (no-op providers).
	Telemetry *telemetry.Telemetry
	// MaxRecvMsgBytes and MaxSendMsgBytes bound message sizes; zero means
	// DefaultMaxRecvMsgBytes / DefaultMaxSendMsgBytes.
	MaxRecvMsgBytes int
	MaxSendMsgBytes int
	// UnaryInterceptors and StreamInterceptors run after the built-in chain
	// (request-id, recovery, logging), so they see the request id, are
	// covered by panic recovery and are timed by the access log. Typical use:
	// authentication.
	UnaryInterceptors  []grpc.UnaryServerInterceptor
	StreamInterceptors []grpc.StreamServerInterceptor
	// ExtraServerOptions are appended last and may override the defaults
	// (e.g. keepalive or credentials).
	ExtraServerOptions []grpc.ServerOption
	// DrainDelay is how long Shutdown waits after reporting NOT_SERVING and
	// before stopping, so load balancers polling health stop routing new
	// work first. Zero skips the wait. It is bounded by Shutdown's ctx.
	DrainDelay time.Duration
	// Limits bound each client connection; nil means DefaultLimits().
	Limits *Limits
}

// Server is a *grpc.Server with the standard memoryd wiring. Register
// services on GRPC(), mark them ready with SetServing, then call Serve.
type Server struct {
	logger     *slog.Logger
	grpc       *grpc.Server
	health     *health.Server
	drainDelay time.Duration
	panics     metric.Int64Counter
	refused    metric.Int64Counter
	maxConns   int // per client IP; 0: none

	mu       sync.Mutex
	statuses map[string]bool // service -> serving; drives the overall "" status

	stopping     chan struct{} // closed once Shutdown has flipped health
	stoppingOnce sync.Once

	// What Local needs (local.go): the unary methods registered, the
	// stats handler, the interceptors chained, the largest answer.
	local            map[string]localMethod // guarded by mu
	stats            stats.Handler
	unary            grpc.UnaryServerInterceptor
	maxRecv, maxSend int
}

// New builds a Server. Health (grpc.health.v1) and server reflection are
// registered already; the overall health status "" starts NOT_SERVING so a
// process is not reported ready before its services are.
func New(opts Options) *Server {
	if opts.Name == "" {
		opts.Name = "grpc"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxRecvMsgBytes <= 0 {
		opts.MaxRecvMsgBytes = DefaultMaxRecvMsgBytes
	}
	if opts.MaxSendMsgBytes <= 0 {
		opts.MaxSendMsgBytes = DefaultMaxSendMsgBytes
	}
	limits := DefaultLimits()
	if opts.Limits != nil {
		limits = *opts.Limits
	}
	tel := opts.Telemetry

	s := &Server{
		logger:     opts.Logger.With(slog.String("server", opts.Name)),
		health:     health.NewServer(),
		drainDelay: opts.DrainDelay,
		statuses:   map[string]bool{},
		stopping:   make(chan struct{}),
		maxConns:   limits.MaxConnsPerIP,
	}
	// An instrument error only happens for invalid names, which are
	// constants here; the returned counter is still a usable no-op.
	s.panics, _ = tel.MeterProvider().Meter(instrumentationName).Int64Counter(
		"rpc.server.panics",
		metric.WithDescription("gRPC handler panics recovered and turned into Internal errors."),
		metric.WithUnit("{panic}"),
	)
	s.refused, _ = tel.MeterProvider().Meter(instrumentationName).Int64Counter(
		"rpc.server.connections_refused",
		metric.WithDescription("gRPC connections closed when accepted, by reason (conn_limit: over --grpc-max-conns-per-ip)."),
		metric.WithUnit("{connection}"),
	)

	unary := append([]grpc.UnaryServerInterceptor{
		unaryRequestID,
		unaryErrorInfo, // outside recovery: a panic's Internal gets one too
		s.unaryRecovery,
		s.unaryLogging,
	}, opts.UnaryInterceptors...)
	stream := append([]grpc.StreamServerInterceptor{
		streamRequestID,
		streamErrorInfo,
		openStreams(tel.MeterProvider()),
		s.streamRecovery,
		s.streamLogging,
	}, opts.StreamInterceptors...)

	// A stats handler rather than an interceptor: it wraps the whole RPC
	// (including the interceptors above), so the span exists before
	// logging runs and its status reflects recovered panics.
	s.stats = otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(tel.TracerProvider()),
		otelgrpc.WithMeterProvider(tel.MeterProvider()),
		otelgrpc.WithPropagators(tel.Propagator()),
		// Probes fire every few seconds; tracing them buries real traffic.
		otelgrpc.WithFilter(filters.Not(filters.HealthCheck())),
	)
	s.unary, s.maxRecv, s.maxSend = chainUnary(unary), opts.MaxRecvMsgBytes, opts.MaxSendMsgBytes
	serverOpts := []grpc.ServerOption{
		grpc.StatsHandler(s.stats),
		grpc.ChainUnaryInterceptor(unary...),
		grpc.ChainStreamInterceptor(stream...),
		// Reused goroutines keep the stacks they grew: a new goroutine per
		// RPC grew its stack through the interceptors and the JSON log on
		// every call, a cost the cheapest cached read paid too. When every worker is
		// busy (long WatchCommits streams hold one each), grpc-go starts a
		// goroutine as before.
		grpc.NumStreamWorkers(streamWorkers()),
		grpc.MaxRecvMsgSize(opts.MaxRecvMsgBytes),
		grpc.MaxSendMsgSize(opts.MaxSendMsgBytes),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
			MinTime:             keepaliveMinTime,
			PermitWithoutStream: true,
		}),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			// Detect dead peers (e.g. a vanished NAT entry) so their
			// streams do not pin resources forever.
			Time:                  serverKeepaliveTime,
			Timeout:               serverKeepaliveTimeout,
			MaxConnectionAge:      limits.MaxConnectionAge,
			MaxConnectionAgeGrace: limits.MaxConnectionAgeGrace,
			MaxConnectionIdle:     limits.MaxConnectionIdle,
		}),
		grpc.MaxConcurrentStreams(limits.MaxConcurrentStreams),
		grpc.ConnectionTimeout(handshakeTimeout),
	}
	serverOpts = append(serverOpts, opts.ExtraServerOptions...)

	s.grpc = grpc.NewServer(serverOpts...)
	s.health.SetServingStatus("", healthgrpc.HealthCheckResponse_NOT_SERVING)
	healthgrpc.RegisterHealthServer(s.grpc, &drainingHealth{Server: s.health, stopping: s.stopping})
	// Reflection lets grpcurl and similar tools work without proto files,
	// and shows the protos' comments (reflection.go).
	if err := registerReflection(s.grpc); err != nil {
		s.logger.Error("server reflection serves descriptors without comments", slog.String("err", err.Error()))
	}
	return s
}

// GRPC returns the underlying server for registering services.
func (s *Server) GRPC() *grpc.Server { return s.grpc }

// chainUnary is interceptors as one, the first outermost (as
// grpc.ChainUnaryInterceptor chains them).
func chainUnary(interceptors []grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		next := handler
		for i := len(interceptors) - 1; i >= 0; i-- {
			inner, ic := next, interceptors[i]
			next = func(ctx context.Context, req any) (any, error) { return ic(ctx, req, info, inner) }
		}
		return next(ctx, req)
	}
}

// Health returns the health service, for callers that need finer control
// than SetServing/SetNotServing.
func (s *Server) Health() *health.Server { return s.health }

// SetServing marks service as SERVING. The overall status "" is SERVING
// only while every service passed to SetServing/SetNotServing is serving,
// so one unready service makes the whole process unready. Passing ""
// acts as a process-wide switch that takes part in the same rule. Calls
// after Shutdown are ignored.
func (s *Server) SetServing(service string) { s.setStatus(service, true) }

// SetNotServing marks service as NOT_SERVING, which also makes "" NOT_SERVING.
func (s *Server) SetNotServing(service string) { s.setStatus(service, false) }

func (s *Server) setStatus(service string, serving bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statuses[service] = serving
	if service != "" {
		s.health.SetServingStatus(service, servingStatus(serving))
	}
	all := true
	for _, ok := range s.statuses {
		all = all && ok
	}
	s.health.SetServingStatus("", servingStatus(all))
}

func servingStatus(ok bool) healthgrpc.HealthCheckResponse_ServingStatus {
	if ok {
		return healthgrpc.HealthCheckResponse_SERVING
	}
	return healthgrpc.HealthCheckResponse_NOT_SERVING
}

// Serve accepts connections on lis until Shutdown. It returns nil after a
// Shutdown (even one that happened before Serve was called), so callers can
// treat any error as a real failure.
func (s *Server) Serve(lis net.Listener) error {
	s.logger.Info("grpc server serving", slog.String("addr", lis.Addr().String()))
	if s.maxConns > 0 {
		refused := metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", "conn_limit")))
		lis = connlimit.NewListener(lis, s.maxConns, func(net.Addr) { s.refused.Add(context.Background(), 1, refused) })
	}
	err := s.grpc.Serve(lis)
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// Shutdown stops the server in the order that loses the least work:
//  1. every health status goes NOT_SERVING and Watch streams are ended, so
//     load balancers and probes stop sending new work;
//  2. optionally wait Options.DrainDelay for them to notice;
//  3. GracefulStop: close listeners, send GOAWAY, wait for in-flight RPCs;
//  4. if ctx ends first, Stop, which closes all connections and cancels
//     the contexts of whatever is still running.
//
// It returns once all connections are closed; after a forced stop, handlers
// that ignore their ctx may still be running. Calling it again is safe and
// skips the drain delay, so a second call with an expired ctx forces a
// graceful stop that is taking too long.
func (s *Server) Shutdown(ctx context.Context) {
	start := time.Now()
	s.logger.InfoContext(ctx, "grpc shutdown: health set to NOT_SERVING")
	s.mu.Lock()
	s.health.Shutdown()
	s.mu.Unlock()
	first := false
	// Must follow health.Shutdown: drainingHealth relies on the
	// NOT_SERVING update being queued before it sees stopping closed.
	s.stoppingOnce.Do(func() {
		close(s.stopping)
		first = true
	})

	// Drain only once: a repeated call (e.g. a second SIGTERM with a short
	// deadline) is a request to get on with stopping.
	if first && s.drainDelay > 0 {
		s.logger.InfoContext(ctx, "grpc shutdown: waiting for load balancers to drain",
			slog.Duration("drain_delay", s.drainDelay))
		t := time.NewTimer(s.drainDelay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}

	s.logger.InfoContext(ctx, "grpc shutdown: graceful stop, waiting for in-flight RPCs")
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
		s.logger.InfoContext(ctx, "grpc shutdown: stopped gracefully", durationAttr(start))
	case <-ctx.Done():
		s.logger.WarnContext(ctx, "grpc shutdown: deadline reached, forcing stop",
			slog.String("reason", context.Cause(ctx).Error()))
		// Stop closes every connection and cancels handler contexts but,
		// unlike GracefulStop, does not wait for handlers to return; one that
		// ignores its ctx would otherwise block shutdown forever. The
		// GracefulStop goroutine ends when such handlers finally return.
		s.grpc.Stop()
		s.logger.WarnContext(ctx, "grpc shutdown: stopped forcibly; in-flight RPCs were cancelled", durationAttr(start))
	}
}

func durationAttr(start time.Time) slog.Attr {
	return slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000)
}

// streamWorkers is how many goroutines serve RPCs: enough for every core to
// have a few calls in flight while others wait on I/O.
func streamWorkers() uint32 { return uint32(max(8, 4*runtime.GOMAXPROCS(0))) }
