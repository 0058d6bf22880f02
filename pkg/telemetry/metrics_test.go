package telemetry

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"

	"github.com/garden-bloom/memory/pkg/lru"
	"github.com/garden-bloom/memory/pkg/membudget"
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
	b := lru.New[string, int](50)
	for i := range 5 {
		b.Put(fmt.Sprint(i), i, 12) // the fifth evicts one, then four fit
	}
	_, err := ObserveCaches(tel.MeterProvider(), func() []membudget.Named {
		return []membudget.Named{{Name: "test.a", Cache: a}, {Name: "test.b", Cache: b}}
	})
	require.NoError(t, err)
	body := scrape(t, tel.MetricsHandler())
	assert.Regexp(t, `memory_cache_size_bytes\{cache="test.a"[^}]*\} 100\n`, body)
	assert.Regexp(t, `memory_cache_max_size_bytes\{cache="test.a"[^}]*\} 1000\n`, body)
	assert.Regexp(t, `memory_cache_entries\{cache="test.a"[^}]*\} 1\n`, body)
	assert.Regexp(t, `memory_cache_hits_total\{cache="test.a"[^}]*\} 1\n`, body)
	assert.Regexp(t, `memory_cache_misses_total\{cache="test.a"[^}]*\} 1\n`, body)
	assert.Regexp(t, `memory_cache_evictions_total\{cache="test.b"[^}]*\} 1\n`, body)
	assert.Regexp(t, `memory_cache_max_size_bytes\{cache="test.b"[^}]*\} 50\n`, body)
	require.NoError(t, ObserveBudget(tel.MeterProvider(), 256<<20))
	assert.Regexp(t, `memory_cache_budget_bytes\{[^}]*\} 2.68435456e\+08\n`, scrape(t, tel.MetricsHandler()))
	_, err = ObserveCaches(nil, func() []membudget.Named { return nil })
	require.NoError(t, err, "no meter provider: nothing to do")
}
