package grpcserver

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
)

// activeStreams reads rpc.server.active_streams by rpc.method.
func activeStreams(t *testing.T, r *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "rpc.server.active_streams" {
				continue
			}
			sum := m.Data.(metricdata.Sum[int64])
			require.False(t, sum.IsMonotonic)
			for _, p := range sum.DataPoints {
				method, _ := p.Attributes.Value(attribute.Key("rpc.method"))
				out[method.AsString()] += p.Value
			}
		}
	}
	return out
}

// Open streams (issue #25): counted while their handler runs, by method,
// and counted down however the handler ends.
func TestOpenStreamsCountsStreamsInFlight(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	count := openStreams(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	const watch = "/gardenbloom.memory.v1.ProposalApplyService/WatchCommits"
	release := make(chan struct{})
	running := make(chan struct{}, 2)
	done := make(chan error, 2)
	for range 2 {
		go func() {
			done <- count(nil, nil, &grpc.StreamServerInfo{FullMethod: watch, IsServerStream: true}, func(any, grpc.ServerStream) error {
				running <- struct{}{}
				<-release
				return errors.New("client went away")
			})
		}()
	}
	<-running
	<-running
	require.Equal(t, map[string]int64{"gardenbloom.memory.v1.ProposalApplyService/WatchCommits": 2}, activeStreams(t, reader))
	close(release)
	require.Error(t, <-done)
	require.Error(t, <-done)
	require.Equal(t, map[string]int64{"gardenbloom.memory.v1.ProposalApplyService/WatchCommits": 0}, activeStreams(t, reader))
}
