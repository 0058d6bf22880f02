package blob

import (
	"context"
	"errors"
	"io"
	"iter"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// failingStore fails every call as an unreachable S3 would.
type failingStore struct{}

var errDown = errors.New("dial tcp: connection refused")

func (failingStore) Put(context.Context, string, io.Reader, int64, PutOptions) (Info, error) {
	return Info{}, errDown
}
func (failingStore) Get(context.Context, string) (io.ReadCloser, Info, error) {
	return nil, Info{}, errDown
}
func (failingStore) Stat(context.Context, string) (Info, error) { return Info{}, errDown }
func (failingStore) Delete(context.Context, string) error       { return errDown }
func (failingStore) List(context.Context, string) iter.Seq2[Info, error] {
	return func(yield func(Info, error) bool) { yield(Info{}, errDown) }
}

// objectMetrics collects the counts of memory.objects.duration and
// memory.objects.errors by op.
func objectMetrics(t *testing.T, r *sdkmetric.ManualReader) (calls, errs map[string]int64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	calls, errs = map[string]int64{}, map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					op, _ := p.Attributes.Value(attribute.Key("op"))
					calls[op.AsString()] += int64(p.Count)
				}
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					op, _ := p.Attributes.Value(attribute.Key("op"))
					errs[op.AsString()] += p.Value
				}
			}
		}
	}
	return calls, errs
}

func TestInstrumentedCountsCallsAndFailures(t *testing.T) {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	fs, err := NewFS(t.TempDir())
	require.NoError(t, err)
	s := Instrument(fs, mp)

	_, errs := objectMetrics(t, reader)
	require.Equal(t, map[string]int64{"put": 0, "get": 0, "stat": 0, "delete": 0, "list": 0}, errs, "every op from zero")

	_, err = PutBytes(ctx, s, "a/b.txt", []byte("hello"), PutOptions{})
	require.NoError(t, err)
	data, _, err := GetBytes(ctx, s, "a/b.txt")
	require.NoError(t, err)
	require.Equal(t, "hello", string(data))
	_, _, err = s.Get(ctx, "a/missing")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = s.Stat(ctx, "../bad")
	require.ErrorIs(t, err, ErrInvalidKey)
	for _, err := range s.List(ctx, "a/") {
		require.NoError(t, err)
	}
	require.NoError(t, s.Delete(ctx, "a/b.txt"))
	require.True(t, strings.HasPrefix(Location(s, "a/b.txt"), "file://"), "the folder's Location is kept")

	calls, errs := objectMetrics(t, reader)
	require.Equal(t, map[string]int64{"put": 1, "get": 2, "stat": 1, "delete": 1, "list": 1}, calls)
	require.Equal(t, map[string]int64{"put": 0, "get": 0, "stat": 0, "delete": 0, "list": 0}, errs,
		"a missing object and a refused key are answers, not failures")

	down := Instrument(failingStore{}, mp)
	_, err = PutBytes(ctx, down, "k", []byte("x"), PutOptions{})
	require.ErrorIs(t, err, errDown)
	_, _, err = down.Get(ctx, "k")
	require.ErrorIs(t, err, errDown)
	for _, err := range down.List(ctx, "") {
		require.ErrorIs(t, err, errDown)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Stat(cancelled, "a/b.txt")
	require.Error(t, err)
	_, errs = objectMetrics(t, reader)
	require.Equal(t, map[string]int64{"put": 1, "get": 1, "stat": 0, "delete": 0, "list": 1}, errs)
}
