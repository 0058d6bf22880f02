package benchharness

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFitLine(t *testing.T) {
	slope, icept := fitLine([]float64{0, 1, 2, 3}, []float64{1, 3, 5, 7})
	require.InDelta(t, 2, slope, 1e-9)
	require.InDelta(t, 1, icept, 1e-9)
	slope, icept = fitLine([]float64{5, 5}, []float64{2, 4}) // no spread in x
	require.Zero(t, slope)
	require.InDelta(t, 3, icept, 1e-9)
}

// samples every 10 s for 600 s with value f(t).
func curve(f func(t float64) float64) []SoakSample {
	var out []SoakSample
	for t := 0.0; t <= 600; t += 10 {
		out = append(out, SoakSample{Seconds: t, AnonMB: f(t), HeapMB: f(t) / 2})
	}
	return out
}

func TestTrendCriterion(t *testing.T) {
	anon := func(s SoakSample) float64 { return s.AnonMB }
	tests := []struct {
		name   string
		f      func(t float64) float64
		status string
	}{
		// 100 MB flat with ±5 MB of GC sawtooth after warm-up.
		{"flat with noise", func(t float64) float64 { return 100 + 5*float64(int(t/10)%2*2-1) }, "PASS"},
		// Caches filling during warm-up only.
		{"growth during warm-up only", func(t float64) float64 { return 50 + min(t, 120)/120*50 }, "PASS"},
		// A leak of 3 MB a minute: 24 MB over the 8-minute window, 24 % of 100.
		{"leak", func(t float64) float64 { return 100 + 3*(t-120)/60 }, "FAIL"},
		// 8 MB over the window: under 10 %.
		{"slow drift under the limit", func(t float64) float64 { return 100 + 1*(t-120)/60 }, "PASS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := trend(curve(tt.f), 120, "anon", "MB", anon, 0.10, 16, allowance{})
			require.Equal(t, tt.status, tr.Status, "growth %.1f, limit %.1f", tr.Growth, tr.Limit)
			require.Equal(t, 49, tr.Samples)
			require.Equal(t, 120.0, tr.From)
			require.Equal(t, 600.0, tr.To)
		})
	}

	// The floor decides for small levels: 10 MB growth on 20 MB passes
	// under a 16 MB floor.
	tr := trend(curve(func(t float64) float64 { return 20 + 10*max(t-120, 0)/480 }), 120, "anon", "MB", anon, 0.10, 16, allowance{})
	require.Equal(t, "PASS", tr.Status)
	require.InDelta(t, 10, tr.Growth, 1e-6)
	require.InDelta(t, 16, tr.Limit, 1e-9)

	// Informational trends never fail; no samples after warm-up fails a criterion.
	require.Equal(t, "INFO", trend(curve(func(t float64) float64 { return t }), 120, "x", "", anon, 0, 0, allowance{}).Status)
	require.Equal(t, "FAIL", trend(curve(func(t float64) float64 { return t }), 1000, "x", "", anon, 0.1, 1, allowance{}).Status)
}

func TestCacheAllowance(t *testing.T) {
	var s []SoakSample
	for t := 0.0; t <= 600; t += 10 {
		// Caches of 280 MB filling at 0.5 MB/s until full.
		s = append(s, SoakSample{Seconds: t, CacheMB: min(280, t/2), CacheMaxMB: 280})
	}
	heap, anon := cacheAllowance(s, 120, false)
	require.InDelta(t, cacheOverhead*220, heap.mb, 1e-9, "unfilled at the first sample after warm-up: 280 - 60")
	require.InDelta(t, gcHeadroom*cacheOverhead*220, anon.mb, 1e-9)
	require.Contains(t, heap.why, "220.0 MB of cache budget unfilled at 120 s")

	// Full caches, no cache metrics, or --strict: no allowance.
	for _, tt := range []struct {
		warmup float64
		strict bool
		s      []SoakSample
	}{{580, false, s}, {120, true, s}, {120, false, []SoakSample{{Seconds: 200}}}} {
		heap, anon := cacheAllowance(tt.s, tt.warmup, tt.strict)
		require.Zero(t, heap.mb)
		require.Zero(t, anon.mb)
	}

	// The allowance is added to the limit: 60 MB of growth on 100 MB fails
	// alone and passes with 100 MB of caches to fill.
	grow := curve(func(t float64) float64 { return 100 + 60*max(t-120, 0)/480 })
	anonOf := func(s SoakSample) float64 { return s.AnonMB }
	require.Equal(t, "FAIL", trend(grow, 120, "anon", "MB", anonOf, 0.1, 16, allowance{}).Status)
	tr := trend(grow, 120, "anon", "MB", anonOf, 0.1, 16, allowance{100, "caches"})
	require.Equal(t, "PASS", tr.Status)
	require.InDelta(t, 116, tr.Limit, 1e-6)
	require.Equal(t, "max(10 % of 100.0, 16) + caches", tr.LimitWhy)
}

func TestCurveRows(t *testing.T) {
	s := make([]SoakSample, 121)
	rows := curveRows(s)
	require.Len(t, rows[0], 1, "the first sample is a row of its own")
	require.LessOrEqual(t, len(rows), maxCurveRows+1)
	n := 0
	for _, r := range rows {
		n += len(r)
	}
	require.Equal(t, len(s), n)
	require.Len(t, curveRows(s[:13]), 13)
	require.Nil(t, curveRows(nil))
}

func TestMetrics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			_, _ = fmt.Fprint(w, "# HELP go_goroutines x\ngo_goroutines 87\ngo_threads 15\ngo_gc_heap_live_bytes 4.194304e+07\ngo_info{version=\"go1\"} 1\n"+
				`memory_cache_size_bytes{cache="git.trees",otel_scope_name="x"} 1.048576e+06`+"\n"+
				`memory_cache_size_bytes{cache="a.b",otel_scope_name="x"} 2048`+"\n")
		}
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()

	m, err := scrapeMetrics(ctx, srv.Client(), addr)
	require.NoError(t, err)
	g, err := m.gauges("go_goroutines", "go_threads", liveHeapMetric)
	require.NoError(t, err)
	require.Equal(t, map[string]float64{"go_goroutines": 87, "go_threads": 15, liveHeapMetric: 40 << 20}, g)
	_, err = m.gauges("go_missing")
	require.ErrorContains(t, err, "no go_missing")
	require.Equal(t, map[string]float64{"git.trees": 1 << 20, "a.b": 2048}, m.byCache["memory_cache_size_bytes"])
}

func TestPaceCountsMissedTicks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	ticks := make(chan struct{}, 1)
	var missed atomic.Int64
	done := make(chan struct{})
	go func() { pace(ctx, 100, ticks, &missed); close(done) }()
	<-done // nobody takes the ticks: one is buffered, the rest missed
	_, open := <-ticks
	require.True(t, open, "the buffered tick")
	_, open = <-ticks
	require.False(t, open, "closed at the end")
	require.Greater(t, missed.Load(), int64(10))
}

func TestSoakReportMarkdown(t *testing.T) {
	r := &SoakReport{Options: DefaultSoakOptions().withDefaults(), WarmupSeconds: 20, LoadSeconds: 60, Proposals: 2400, Reads: 3600, Pass: true}
	for sec := 0.0; sec <= 60; sec += 5 {
		r.Samples = append(r.Samples, SoakSample{Seconds: sec, AnonMB: 100, HeapMB: 40, CacheMB: 10, CacheMaxMB: 280,
			Caches: map[string]float64{"git.trees": 8, "a.b": 2},
			lat:    map[string][]time.Duration{skPropose: {time.Millisecond, 3 * time.Millisecond}}})
	}
	// After the requests in flight ended: no latencies.
	r.Samples = append(r.Samples, SoakSample{Seconds: 61, AnonMB: 100, HeapMB: 40, CacheMB: 10, CacheMaxMB: 280, Caches: map[string]float64{"git.trees": 8, "a.b": 2}})
	r.Trends = []Trend{trend(r.Samples, 20, "anonymous RSS (RssAnon)", "MB", func(s SoakSample) float64 { return s.AnonMB }, 0.1, 16, allowance{})}
	r.Requests = []SoakRequests{{Kind: skPropose, Requests: 26, Latency: Latency{P50: 1, P95: 3}}}
	md := r.Markdown()
	for _, want := range []string{"**PASS**", "## Trend after warm-up", "| anonymous RSS (RssAnon) MB | 10 | 20–61 |", "## Curve",
		"| 0 (warm-up) |", "a.b 2.0, git.trees 8.0; 10.0 in all of at most 280.0", "| t s | propose |", "| 60 | 2.00/2.90 |", "soak PASS: 1m0s of load"} {
		require.Contains(t, md, want)
	}
	require.NotContains(t, md, "| 61 | —", "the drained sample has no latency row")
	require.Contains(t, md, "| 61 | 0 | 0 | 0.0 | 100.0 |", "but a curve row")
}
