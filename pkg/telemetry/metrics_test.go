package telemetry

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"

	"github.com/garden-bloom/memory/pkg/lru"
)

// Reads are sub-millisecond and applies take seconds: a duration histogram
// of any instrumentation scope resolves both, whatever its own advice.
func TestDurationHistogramsGetDurationBuckets(t *testing.T) {
	tel := setupNoOTLP(t)
	h, err := tel.MeterProvider().Meter("some-library").Float64Histogram("test.read.duration", metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0, 5, 10))
	require.NoError(t, err)
	h.Record(context.Background(), 0.0002)
	h.Record(context.Background(), 7)
	ms, err := tel.MeterProvider().Meter("some-library").Float64Histogram("test.size", metric.WithUnit("By"))
	require.NoError(t, err)
	ms.Record(context.Background(), 3)

	body := scrape(t, tel.MetricsHandler())
	assert.Regexp(t, `test_read_duration_seconds_bucket\{[^}]*le="5e-05"\} 0\n`, body)
	assert.Regexp(t, `test_read_duration_seconds_bucket\{[^}]*le="0.0001"\} 0\n`, body)
	assert.Regexp(t, `test_read_duration_seconds_bucket\{[^}]*le="0.00025"\} 1\n`, body)
	assert.Regexp(t, `test_read_duration_seconds_bucket\{[^}]*le="5"\} 1\n`, body)
	assert.Regexp(t, `test_read_duration_seconds_bucket\{[^}]*le="10"\} 2\n`, body)
	assert.Regexp(t, `test_read_duration_seconds_bucket\{[^}]*le="120"\} 2\n`, body)
	assert.NotRegexp(t, `test_size_bytes_bucket\{[^}]*le="5e-05"`, body, "only durations")
}

func TestObserveCachesExportsEachCache(t *testing.T) {
	tel := setupNoOTLP(t)
	a := lru.New[string, int](1000)
	a.Put("x", 1, 100)
	a.Get("x")
	a.Get("y")
	_, err := ObserveCaches(tel.MeterProvider(), func() []NamedCache {
		return []NamedCache{{Name: "test.a", Stats: a.Stats()}, {Name: "test.b", Stats: lru.Stats{MaxBytes: 50, Evictions: 4}}}
	})
	require.NoError(t, err)
	body := scrape(t, tel.MetricsHandler())
	assert.Regexp(t, `memory_cache_size_bytes\{cache="test.a"[^}]*\} 100\n`, body)
	assert.Regexp(t, `memory_cache_max_size_bytes\{cache="test.a"[^}]*\} 1000\n`, body)
	assert.Regexp(t, `memory_cache_entries\{cache="test.a"[^}]*\} 1\n`, body)
	assert.Regexp(t, `memory_cache_hits_total\{cache="test.a"[^}]*\} 1\n`, body)
	assert.Regexp(t, `memory_cache_misses_total\{cache="test.a"[^}]*\} 1\n`, body)
	assert.Regexp(t, `memory_cache_evictions_total\{cache="test.b"[^}]*\} 4\n`, body)
	_, err = ObserveCaches(nil, func() []NamedCache { return nil })
	require.NoError(t, err, "no meter provider: nothing to do")
}
