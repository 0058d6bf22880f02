package grpcserver

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/garden-bloom/memory/pkg/telemetry"
)

// Client retry settings. Few, quickly backed-off attempts: enough to ride
// out a pod restart or a GOAWAY, short enough not to hide an outage.
const (
	retryMaxAttempts    = 3
	retryInitialBackoff = "0.1s"
	retryMaxBackoff     = "1s"
	retryBackoffMult    = 2
)

type scMethodName struct {
	Service string `json:"service"`
	Method  string `json:"method"`
}

type scRetryPolicy struct {
	MaxAttempts          int      `json:"maxAttempts"`
	InitialBackoff       string   `json:"initialBackoff"`
	MaxBackoff           string   `json:"maxBackoff"`
	BackoffMultiplier    float64  `json:"backoffMultiplier"`
	RetryableStatusCodes []string `json:"retryableStatusCodes"`
}

type scMethodConfig struct {
	Name        []scMethodName `json:"name"`
	RetryPolicy scRetryPolicy  `json:"retryPolicy"`
}

type scRetryThrottling struct {
	MaxTokens  int     `json:"maxTokens"`
	TokenRatio float64 `json:"tokenRatio"`
}

type serviceConfig struct {
	LoadBalancingConfig []map[string]struct{} `json:"loadBalancingConfig"`
	MethodConfig        []scMethodConfig      `json:"methodConfig,omitempty"`
	RetryThrottling     scRetryThrottling     `json:"retryThrottling"`
}

// DefaultServiceConfig returns the client service config JSON used by Dial.
//
// round_robin spreads calls over every address a (headless) DNS name
// resolves to. UNAVAILABLE is retried, but only for methods whose proto
// declares idempotency_level NO_SIDE_EFFECTS or IDEMPOTENT: a connection
// lost mid-call also surfaces as UNAVAILABLE, and replaying e.g. an
// ApproveProposal could apply it twice. The method list is read from the
// global protobuf registry, i.e. from the generated packages linked into the
// binary, so annotating the .proto is all a service needs to do. Retry
// throttling stops retries from amplifying load on a struggling server.
func DefaultServiceConfig() string {
	var names []scMethodName
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		for i := range fd.Services().Len() {
			sd := fd.Services().Get(i)
			for j := range sd.Methods().Len() {
				md := sd.Methods().Get(j)
				opts, _ := md.Options().(*descriptorpb.MethodOptions)
				switch opts.GetIdempotencyLevel() {
				case descriptorpb.MethodOptions_NO_SIDE_EFFECTS, descriptorpb.MethodOptions_IDEMPOTENT:
					names = append(names, scMethodName{Service: string(sd.FullName()), Method: string(md.Name())})
				}
			}
		}
		return true
	})
	// Deterministic output makes the config diffable in logs and tests.
	slices.SortFunc(names, func(a, b scMethodName) int {
		return cmp.Or(cmp.Compare(a.Service, b.Service), cmp.Compare(a.Method, b.Method))
	})

	cfg := serviceConfig{
		LoadBalancingConfig: []map[string]struct{}{{"round_robin": {}}},
		RetryThrottling:     scRetryThrottling{MaxTokens: 10, TokenRatio: 0.1},
	}
	if len(names) > 0 {
		cfg.MethodConfig = []scMethodConfig{{
			Name: names,
			RetryPolicy: scRetryPolicy{
				MaxAttempts:          retryMaxAttempts,
				InitialBackoff:       retryInitialBackoff,
				MaxBackoff:           retryMaxBackoff,
				BackoffMultiplier:    retryBackoffMult,
				RetryableStatusCodes: []string{"UNAVAILABLE"}, // service-config spelling, not codes.Code.String()
			},
		}}
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		panic(fmt.Sprintf("grpcserver: marshal service config: %v", err)) // static types; cannot happen
	}
	return string(b)
}

// Dial creates a client connection for service-to-service calls inside the
// deployment (plaintext: only for loopback/internal networks until mTLS is
// added). It does not connect until the first call.
//
// The connection traces and measures calls with tel (nil = no-op),
// propagates W3C trace context, forwards the current request id (see
// RequestIDFromContext) as x-request-id, accepts responses up to
// DefaultMaxSendMsgBytes to match the server default, and uses
// DefaultServiceConfig(). extra options are applied last and override these.
func Dial(target string, tel *telemetry.Telemetry, extra ...grpc.DialOption) (*grpc.ClientConn, error) {
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStatsHandler(otelgrpc.NewClientHandler(
			otelgrpc.WithTracerProvider(tel.TracerProvider()),
			otelgrpc.WithMeterProvider(tel.MeterProvider()),
			otelgrpc.WithPropagators(tel.Propagator()),
		)),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(DefaultMaxSendMsgBytes)),
		grpc.WithDefaultServiceConfig(DefaultServiceConfig()),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time:                clientKeepaliveTime,
			Timeout:             clientKeepaliveTimeout,
			PermitWithoutStream: true,
		}),
		grpc.WithChainUnaryInterceptor(unaryClientRequestID),
		grpc.WithChainStreamInterceptor(streamClientRequestID),
	}
	opts = append(opts, extra...)
	return grpc.NewClient(target, opts...)
}

// withOutgoingRequestID forwards the id of the call being served, unless
// the caller already set one explicitly, so one user request keeps one id
// across the read and write planes.
func withOutgoingRequestID(ctx context.Context) context.Context {
	id := RequestIDFromContext(ctx)
	if id == "" {
		return ctx
	}
	if md, ok := metadata.FromOutgoingContext(ctx); ok && len(md.Get(RequestIDHeader)) > 0 {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, RequestIDHeader, id)
}

func unaryClientRequestID(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return invoker(withOutgoingRequestID(ctx), method, req, reply, cc, opts...)
}

func streamClientRequestID(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return streamer(withOutgoingRequestID(ctx), desc, cc, method, opts...)
}
