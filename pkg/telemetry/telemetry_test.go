package telemetry

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func setupNoOTLP(t *testing.T) *Telemetry {
	t.Helper()
	// The env var would otherwise turn OTLP on when set in the developer's shell.
	t.Setenv(EnvOTLPEndpoint, "")
	tel, err := Setup(context.Background(), Config{
		ServiceName:    "telemetry-test",
		ServiceVersion: "v0.0.0-test",
		Logger:         discardLogger(),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel
}

func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

func TestMetricsHandlerServesMeterProviderCounter(t *testing.T) {
	tel := setupNoOTLP(t)

	counter, err := tel.MeterProvider().Meter("telemetry-test").Int64Counter("memory.test.writes")
	require.NoError(t, err)
	counter.Add(context.Background(), 3)

	body := scrape(t, tel.MetricsHandler())
	assert.Contains(t, body, "memory_test_writes_total")
	assert.Regexp(t, `memory_test_writes_total\{[^}]*\} 3\b`, body)
	// Go/process collectors are registered on the private registry.
	assert.Contains(t, body, "go_goroutines")
	// The live heap as of the last GC, what the soak watches for leaks.
	assert.Regexp(t, `(?m)^go_gc_heap_live_bytes [0-9.e+]+$`, body)

	// Nothing leaked into the process-global registry.
	mfs, err := prometheus.DefaultGatherer.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		assert.NotEqual(t, "memory_test_writes_total", mf.GetName())
	}
}

func TestSetupDoesNotTouchGlobals(t *testing.T) {
	before := otel.GetTracerProvider()
	tel := setupNoOTLP(t)
	assert.Same(t, before, otel.GetTracerProvider())
	assert.NotSame(t, tel.TracerProvider(), otel.GetTracerProvider())
}

func TestSetupWithoutOTLPStillMintsTraceIDs(t *testing.T) {
	tel := setupNoOTLP(t)
	_, span := tel.TracerProvider().Tracer("t").Start(context.Background(), "op")
	defer span.End()
	assert.True(t, span.SpanContext().IsValid())
	// Nothing would receive it: not sampled, so it records nothing and
	// services called with it do not record a trace without its root.
	assert.False(t, span.SpanContext().IsSampled())
	assert.False(t, span.IsRecording())

	// The propagator round-trips the span through W3C headers.
	carrier := http.Header{}
	tel.Propagator().Inject(trace.ContextWithSpan(context.Background(), span), propagation.HeaderCarrier(carrier))
	assert.NotEmpty(t, carrier.Get("traceparent"))
}

func TestShutdownIsIdempotent(t *testing.T) {
	t.Setenv(EnvOTLPEndpoint, "")
	tel, err := Setup(context.Background(), Config{ServiceName: "t", Logger: discardLogger()})
	require.NoError(t, err)
	require.NoError(t, tel.Shutdown(context.Background()))
	require.NoError(t, tel.Shutdown(context.Background()))
}

func TestSetupWithUnreachableOTLPDoesNotBlock(t *testing.T) {
	// Exporters connect lazily, so a missing collector must not stop the
	// process from starting; Shutdown is bounded by its ctx.
	tel, err := Setup(context.Background(), Config{
		ServiceName:  "t",
		OTLPEndpoint: "http://127.0.0.1:1",
		Logger:       discardLogger(),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_ = tel.Shutdown(ctx) // the flush fails: nothing listens there
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestNilTelemetryIsUsable(t *testing.T) {
	var tel *Telemetry
	_, span := tel.TracerProvider().Tracer("t").Start(context.Background(), "op")
	span.End()
	assert.NotNil(t, tel.MeterProvider())
	assert.NotNil(t, tel.Propagator())
	require.NoError(t, tel.Shutdown(context.Background()))
}
