package grpcserver

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"
)

// openStreams counts the server streams in flight (WatchCommits
// followers, health watches, reflection sessions) in the up-down counter
// rpc.server.active_streams, by rpc.method as otelgrpc names it
// ("gardenbloom.memory.v1.ProposalApplyService/WatchCommits").
func openStreams(mp metric.MeterProvider) grpc.StreamServerInterceptor {
	active, _ := mp.Meter(instrumentationName).Int64UpDownCounter("rpc.server.active_streams",
		metric.WithUnit("{stream}"),
		metric.WithDescription("gRPC server streams open now, by method."))
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		attrs := metric.WithAttributeSet(attribute.NewSet(attribute.String("rpc.method", strings.TrimPrefix(info.FullMethod, "/"))))
		// Not the stream's context: it ends before the decrement when the
		// client goes away, and the count must still come down.
		active.Add(context.Background(), 1, attrs)
		defer active.Add(context.Background(), -1, attrs)
		return handler(srv, ss)
	}
}
