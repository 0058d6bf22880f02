// Package gateway is the gateway target: the REST edge. It translates the
// documented REST paths into gRPC calls on the four services (grpc-gateway),
// forwarding the caller's Authorization header so every service authenticates
// and authorizes (and rate-limits) the real caller. It holds no credentials
// of its own.
//
// The edge bounds what it accepts before calling anything (URL length;
// path segments and query parameters valid UTF-8 without control characters,
// at most MaxParamBytes each, and of their field's type; body size, UTF-8,
// JSON nesting), gives every request a deadline, answers every
// error as grpc-gateway's JSON status with an ErrorInfo (and Retry-After
// when the status says when to retry), and serves the OpenAPI document at
// OpenAPIPath. It refuses what it would otherwise ignore: unknown paths
// (404), wrong methods (405 with Allow) and query parameters a route does
// not take (400, with a "did you mean"). CORS is off unless origins are
// listed.
package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"

	"github.com/garden-bloom/memory/gen"
	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/restjson"
)

// Conns are the gRPC connections to the services behind the edge: client
// connections, or grpcserver's Local where the service runs in the process.
type Conns struct {
	ContextAssembly grpc.ClientConnInterface
	SearchIndex     grpc.ClientConnInterface
	EntityGraph     grpc.ClientConnInterface
	ProposalApply   grpc.ClientConnInterface
}

// New returns the REST handler for every documented path and OpenAPIPath.
// Zero fields of cfg take their defaults.
func New(ctx context.Context, conns Conns, cfg Config, logger *slog.Logger, opts ...Option) (_ http.Handler, err error) {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	e := &edge{cfg: cfg, logger: logger, openAPI: apiDocsHandler(gen.OpenAPI)}
	for _, o := range opts {
		o(e)
	}
	if e.routes, err = restjson.NewRoutes(apiServices(), queryAliases); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	e.mux = runtime.NewServeMux(append(restjson.ServeMuxOptions(),
		runtime.WithErrorHandler(e.writeError), runtime.WithRoutingErrorHandler(e.routingError),
		// A form-encoded POST standing in for a GET would carry its
		// parameters past the edge's query check (edge.route).
		runtime.WithDisablePathLengthFallback(),
		// Unary answers are written whole with their length, not chunked
		// through net/http's 4 KB buffers (a system call a chunk).
		runtime.WithWriteContentLength(),
		runtime.WithIncomingHeaderMatcher(incomingHeader))...)
	mux := e.mux
	for name, register := range map[string]func() error{
		"context-assembly": func() error {
			return memoryv1.RegisterContextAssemblyServiceHandlerClient(ctx, mux, memoryv1.NewContextAssemblyServiceClient(conns.ContextAssembly))
		},
		"search-index": func() error {
			return memoryv1.RegisterSearchIndexServiceHandlerClient(ctx, mux, memoryv1.NewSearchIndexServiceClient(conns.SearchIndex))
		},
		"entity-graph": func() error {
			return memoryv1.RegisterEntityGraphServiceHandlerClient(ctx, mux, memoryv1.NewEntityGraphServiceClient(conns.EntityGraph))
		},
		"proposal-apply": func() error {
			return memoryv1.RegisterProposalApplyServiceHandlerClient(ctx, mux, memoryv1.NewProposalApplyServiceClient(conns.ProposalApply))
		},
	} {
		if err := register(); err != nil {
			return nil, fmt.Errorf("gateway: register %s: %w", name, err)
		}
	}
	logger.Info("REST edge ready", "service", "gateway",
		"max_body_bytes", cfg.MaxBodyBytes, "timeout", cfg.Timeout.String())
	return e, nil
}

// incomingHeader forwards the HTTP headers grpc-gateway forwards by
// default except Grpc-Metadata-*: a REST client must not set gRPC
// metadata by hand — "Grpc-Metadata-Authorization" would be a second
// token beside (or instead of) the Authorization header docs/security.md
// documents.
func incomingHeader(key string) (string, bool) {
	if strings.HasPrefix(strings.ToLower(key), strings.ToLower(runtime.MetadataHeaderPrefix)) {
		return "", false
	}
	return runtime.DefaultHeaderMatcher(key)
}
