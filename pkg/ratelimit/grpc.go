package ratelimit

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
)

// Defaults of the flags. 50 calls/s with bursts of 100 is far more than an
// agent run needs (a run reads its memory, searches a few times and
// proposes once) but stops a runaway loop from starving everyone else.
const (
	DefaultRate  = 50
	DefaultBurst = 100
)

// privilegedBurstSeconds sizes the privileged buckets: two seconds' worth
// of calls, the same ratio as the defaults of the per-token class.
const privilegedBurstSeconds = 2

// Config is the rate limit of the gRPC services (and so of the REST edge,
// which forwards the caller's token).
type Config struct {
	// Rate is calls per second per token subject for agent and reviewer
	// tokens; 0 disables the limit.
	Rate float64
	// Burst is how many calls such a token may make at once.
	Burst int
	// PrivilegedRate is calls per second per subject for tokens with the
	// service or admin role: memoryd's own service-to-service calls, the
	// orchestration layer and operators' tools; 0 means unlimited.
	PrivilegedRate float64
}

// RegisterFlags adds the rate-limit flags.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.Float64Var(&c.Rate, "rate-limit", DefaultRate, "calls per second each agent or reviewer token (by subject) may make to each memoryd process, REST and gRPC alike; over it calls fail with ResourceExhausted/429 RATE_LIMITED and a retry delay (0 = unlimited)")
	fs.IntVar(&c.Burst, "rate-limit-burst", DefaultBurst, "calls such a token may make at once before --rate-limit applies")
	fs.Float64Var(&c.PrivilegedRate, "rate-limit-service", 0, "calls per second per subject for tokens with the service or admin role (memoryd's internal calls, the orchestration layer, operators), with bursts of two seconds' worth (0 = unlimited)")
}

// Validate checks the rate-limit flags.
func (c *Config) Validate() error {
	for name, v := range map[string]float64{"--rate-limit": c.Rate, "--rate-limit-service": c.PrivilegedRate} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s must be a finite number >= 0", name)
		}
	}
	if c.Rate > 0 && c.Burst < 1 {
		return errors.New("--rate-limit-burst must be at least 1 when --rate-limit is set")
	}
	return nil
}

// Options are the optional dependencies of New.
type Options struct {
	// MeterProvider receives the rpc.server.rate_limited counter; nil = no-op.
	MeterProvider metric.MeterProvider
	// Now is the clock; nil = time.Now.
	Now func() time.Time
	// MaxKeys bounds each class's buckets; <= 0 = DefaultMaxKeys.
	MaxKeys int
}

// Interceptors enforce a Config on a gRPC server. Install them after the
// authentication interceptors: they key on the verified claims and let
// calls without claims (methods auth exempts, such as health checks)
// through.
type Interceptors struct {
	cfg        Config
	tokens     *Limiter // agent and reviewer tokens
	privileged *Limiter // service and admin tokens
	rejected   metric.Int64Counter
}

// New returns the interceptors of cfg.
func New(cfg Config, opts Options) *Interceptors {
	mp := opts.MeterProvider
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	i := &Interceptors{
		cfg:    cfg,
		tokens: NewLimiter(cfg.Rate, cfg.Burst, opts.MaxKeys, opts.Now),
		privileged: NewLimiter(cfg.PrivilegedRate, int(math.Ceil(cfg.PrivilegedRate*privilegedBurstSeconds)),
			opts.MaxKeys, opts.Now),
	}
	// An instrument error only happens for invalid names, which are
	// constants here; the returned counter is still a usable no-op.
	i.rejected, _ = mp.Meter("github.com/garden-bloom/memory/pkg/ratelimit").Int64Counter(
		"rpc.server.rate_limited",
		metric.WithDescription("Calls refused because their token exceeded its rate limit."),
		metric.WithUnit("{call}"),
	)
	return i
}

// Unary returns the unary server interceptor.
func (i *Interceptors) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if err := i.check(ctx, info.FullMethod); err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// Stream returns the stream server interceptor; opening a stream costs one
// call, whatever it carries afterwards.
func (i *Interceptors) Stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if err := i.check(ss.Context(), info.FullMethod); err != nil {
			return err
		}
		return handler(srv, ss)
	}
}

// privileged reports whether c belongs to the privileged class. Every token
// memoryd mints for itself (auth.NewServiceCredentials, the mirror's fetch
// token) has the service role, so the role alone decides: a subject name
// such as "memoryd/..." lifts no limit by itself.
func privileged(c *auth.Claims) bool {
	return c.HasRole(auth.RoleService) || c.HasRole(auth.RoleAdmin)
}

func (i *Interceptors) check(ctx context.Context, fullMethod string) error {
	claims, ok := auth.ClaimsFromContext(ctx)
	if !ok {
		return nil
	}
	lim, class, rate := i.tokens, "token", i.cfg.Rate
	if privileged(claims) {
		lim, class, rate = i.privileged, "privileged", i.cfg.PrivilegedRate
	}
	allowed, wait := lim.Allow(claims.Subject)
	if allowed {
		return nil
	}
	service, method := splitMethod(fullMethod)
	i.rejected.Add(ctx, 1, metric.WithAttributes(
		attribute.String("class", class),
		attribute.String("rpc.service", service),
		attribute.String("rpc.method", method),
	))
	return apierr.Retryable(codes.ResourceExhausted, memoryv1.ErrorReason_ERROR_REASON_RATE_LIMITED,
		fmt.Sprintf("too many calls for this token (limit %s per second); retry in %s",
			strconv.FormatFloat(rate, 'g', -1, 64), roundUp(wait, time.Millisecond)),
		wait)
}

// roundUp rounds d up to a multiple of unit, for messages.
func roundUp(d, unit time.Duration) time.Duration {
	if r := d % unit; r != 0 {
		d += unit - r
	}
	return d
}

// splitMethod turns "/pkg.Service/Method" into ("pkg.Service", "Method").
func splitMethod(full string) (service, method string) {
	full = strings.TrimPrefix(full, "/")
	if i := strings.LastIndexByte(full, '/'); i >= 0 {
		return full[:i], full[i+1:]
	}
	return "", full
}
