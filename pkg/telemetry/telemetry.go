// Package telemetry wires OpenTelemetry tracing and metrics for memoryd.
//
// Everything is owned by a *Telemetry value that is created once per process
// and passed down explicitly. Nothing touches the otel globals or the default
// Prometheus registry unless SetGlobal is called, so tests can build several
// independent instances and libraries cannot leak metrics into /metrics by
// accident.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// EnvOTLPEndpoint is the standard OpenTelemetry variable consulted when
// Config.OTLPEndpoint is empty.
const EnvOTLPEndpoint = "OTEL_EXPORTER_OTLP_ENDPOINT"

// metricExportInterval is how often metrics are pushed over OTLP. 30s keeps
// collector load modest while still giving usable dashboards; Prometheus
// scrapes are independent of it.
const metricExportInterval = 30 * time.Second

// Config configures Setup.
type Config struct {
	// ServiceName and ServiceVersion become the service.name and
	// service.version resource attributes. OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES override them so operators can relabel
	// deployments without a rebuild.
	ServiceName    string
	ServiceVersion string
	// OTLPEndpoint is the OTLP/gRPC collector address, either a URL
	// ("http://otel-collector:4317"; http means plaintext) or host:port
	// (TLS unless OTEL_EXPORTER_OTLP_INSECURE=true). When empty the value of
	// OTEL_EXPORTER_OTLP_ENDPOINT is used; if that is empty too, nothing is
	// exported over OTLP and only the Prometheus handler serves metrics.
	OTLPEndpoint string
	// Logger receives setup and exporter diagnostics. Defaults to slog.Default().
	Logger *slog.Logger
}

// Telemetry owns the trace and metric pipelines of one process.
//
// A nil *Telemetry is valid: its accessors return no-op providers, which lets
// tools and tests construct servers without any telemetry plumbing.
type Telemetry struct {
	tp         *sdktrace.TracerProvider
	mp         *sdkmetric.MeterProvider
	prop       propagation.TextMapPropagator
	registry   *prometheus.Registry
	logger     *slog.Logger
	otlp       string
	shutdownMu sync.Mutex
	shutdown   bool
}

// Setup builds the tracer and meter providers described by cfg.
//
// A TracerProvider is always created, even without an exporter, because the
// SDK is what mints trace ids; without it the request logs could not be
// correlated. Call Shutdown before exit to flush buffered spans and metrics.
func Setup(ctx context.Context, cfg Config) (*Telemetry, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	endpoint := strings.TrimSpace(cfg.OTLPEndpoint)
	if endpoint == "" {
		endpoint = strings.TrimSpace(os.Getenv(EnvOTLPEndpoint))
	}

	res, err := newResource(ctx, cfg)
	if err != nil {
		return nil, err
	}

	t := &Telemetry{
		prop: propagation.NewCompositeTextMapPropagator(
			propagation.TraceContext{}, propagation.Baggage{},
		),
		registry: prometheus.NewRegistry(),
		logger:   logger,
		otlp:     endpoint,
	}

	// Process-level collectors go on our registry because it replaces the
	// default one; without them /metrics would lack the usual go_* and
	// process_* series that dashboards and alerts expect.
	// Plus go_gc_heap_live_bytes (runtime/metrics /gc/heap/live:bytes):
	// the heap the last collection found live, which a leak grows, without
	// the garbage that go_memstats_heap_alloc_bytes rises and falls with.
	liveHeap := collectors.WithGoCollectorRuntimeMetrics(collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/gc/heap/live:bytes$`)})
	if err := t.registry.Register(collectors.NewGoCollector(liveHeap)); err != nil {
		return nil, fmt.Errorf("telemetry: register go collector: %w", err)
	}
	if err := t.registry.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("telemetry: register process collector: %w", err)
	}

	// ParentBased keeps the caller's sampling decision so a trace is either
	// complete across read and write planes or absent. Without an exporter
	// nothing would receive this process's spans, so the traces it starts
	// are not sampled: the spans still carry trace ids for the logs, but
	// record nothing (recording would cost every call, the cheapest cached
	// read included, for spans that are dropped), and the services it calls
	// do not record the rest of a trace whose root is lost.
	root := sdktrace.NeverSample()
	if endpoint != "" {
		root = sdktrace.AlwaysSample()
	}
	tpOpts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(root)),
	}
	promExp, err := otelprom.New(otelprom.WithRegisterer(t.registry))
	if err != nil {
		return nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
	}
	mpOpts := []sdkmetric.Option{
		sdkmetric.WithResource(res),
		sdkmetric.WithReader(promExp),
		// Every duration histogram, ours and the instrumentation
		// libraries' (otelgrpc), gets buckets that resolve both a cached
		// read and a slow apply (see DurationBuckets).
		sdkmetric.WithView(sdkmetric.NewView(
			sdkmetric.Instrument{Kind: sdkmetric.InstrumentKindHistogram, Unit: "s"},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: DurationBuckets}},
		)),
	}

	if endpoint != "" {
		traceExp, err := otlptracegrpc.New(ctx, traceEndpointOption(endpoint))
		if err != nil {
			return nil, fmt.Errorf("telemetry: otlp trace exporter: %w", err)
		}
		tpOpts = append(tpOpts, sdktrace.WithBatcher(traceExp))

		metricExp, err := otlpmetricgrpc.New(ctx, metricEndpointOption(endpoint))
		if err != nil {
			_ = traceExp.Shutdown(ctx)
			return nil, fmt.Errorf("telemetry: otlp metric exporter: %w", err)
		}
		mpOpts = append(mpOpts, sdkmetric.WithReader(
			sdkmetric.NewPeriodicReader(metricExp, sdkmetric.WithInterval(metricExportInterval)),
		))
	}

	t.tp = sdktrace.NewTracerProvider(tpOpts...)
	t.mp = sdkmetric.NewMeterProvider(mpOpts...)

	logger.LogAttrs(ctx, slog.LevelInfo, "telemetry configured",
		slog.String("service", cfg.ServiceName),
		slog.String("version", cfg.ServiceVersion),
		slog.Bool("otlp", endpoint != ""),
		slog.String("otlp_endpoint", endpoint),
	)
	return t, nil
}

func newResource(ctx context.Context, cfg Config) (*resource.Resource, error) {
	var attrs []resource.Option
	if cfg.ServiceName != "" {
		attrs = append(attrs, resource.WithAttributes(semconv.ServiceName(cfg.ServiceName)))
	}
	if cfg.ServiceVersion != "" {
		attrs = append(attrs, resource.WithAttributes(semconv.ServiceVersion(cfg.ServiceVersion)))
	}
	opts := append([]resource.Option{
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithTelemetrySDK(),
		resource.WithHost(),
		resource.WithProcessPID(),
	}, attrs...)
	// Env detector last: later detectors win, and operators must be able to
	// override what the code says.
	opts = append(opts, resource.WithFromEnv())
	res, err := resource.New(ctx, opts...)
	if err != nil {
		// Partial resources are still useful (e.g. a host detector failing in
		// a sandbox); only give up when nothing was produced.
		if res == nil {
			return nil, fmt.Errorf("telemetry: resource: %w", err)
		}
	}
	return res, nil
}

// hasScheme reports whether endpoint is a URL rather than host:port; the
// exporters need different options for the two forms.
func hasScheme(endpoint string) bool { return strings.Contains(endpoint, "://") }

func traceEndpointOption(endpoint string) otlptracegrpc.Option {
	if hasScheme(endpoint) {
		return otlptracegrpc.WithEndpointURL(endpoint)
	}
	return otlptracegrpc.WithEndpoint(endpoint)
}

func metricEndpointOption(endpoint string) otlpmetricgrpc.Option {
	if hasScheme(endpoint) {
		return otlpmetricgrpc.WithEndpointURL(endpoint)
	}
	return otlpmetricgrpc.WithEndpoint(endpoint)
}

// TracerProvider returns the SDK tracer provider (a no-op one for a nil receiver).
func (t *Telemetry) TracerProvider() trace.TracerProvider {
	if t == nil {
		return tracenoop.NewTracerProvider()
	}
	return t.tp
}

// MeterProvider returns the SDK meter provider (a no-op one for a nil receiver).
func (t *Telemetry) MeterProvider() metric.MeterProvider {
	if t == nil {
		return metricnoop.NewMeterProvider()
	}
	return t.mp
}

// Propagator returns the W3C tracecontext + baggage propagator. A nil
// receiver returns the same propagator so trace context still flows through
// processes that run without telemetry.
func (t *Telemetry) Propagator() propagation.TextMapPropagator {
	if t == nil {
		return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	return t.prop
}

// PrometheusRegistry returns the registry behind MetricsHandler, for code that
// has native Prometheus collectors and must not use the global registry.
// It is nil for a nil receiver.
func (t *Telemetry) PrometheusRegistry() *prometheus.Registry {
	if t == nil {
		return nil
	}
	return t.registry
}

// MetricsHandler serves this instance's registry in the Prometheus exposition
// format; mount it at /metrics on the HTTP port. A nil receiver yields 404s.
func (t *Telemetry) MetricsHandler() http.Handler {
	if t == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(t.registry, promhttp.HandlerOpts{
		// Registry makes promhttp count its own scrape errors on our registry
		// rather than on the global one.
		Registry:          t.registry,
		ErrorHandling:     promhttp.ContinueOnError,
		ErrorLog:          promErrorLogger{t.logger},
		EnableOpenMetrics: true,
	})
}

type promErrorLogger struct{ l *slog.Logger }

func (p promErrorLogger) Println(v ...any) {
	p.l.Error("prometheus scrape error", slog.String("error", fmt.Sprint(v...)))
}

// SetGlobal installs the providers and propagator as the otel globals and
// routes otel's internal errors to the logger. It is opt-in because globals
// make tests interfere with each other; call it once from main if
// third-party libraries that only read the globals must be instrumented.
func (t *Telemetry) SetGlobal() {
	if t == nil {
		return
	}
	otel.SetTracerProvider(t.tp)
	otel.SetMeterProvider(t.mp)
	otel.SetTextMapPropagator(t.prop)
	logger := t.logger
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("opentelemetry error", slog.String("error", err.Error()))
	}))
}

// Shutdown flushes pending spans and metrics and stops the exporters. It is
// safe to call more than once; later calls are no-ops. ctx bounds how long
// the flush may take.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	t.shutdownMu.Lock()
	defer t.shutdownMu.Unlock()
	if t.shutdown {
		return nil
	}
	t.shutdown = true
	// Both providers are shut down even if the first fails so one broken
	// exporter cannot make the other lose its buffered data.
	err := errors.Join(t.tp.Shutdown(ctx), t.mp.Shutdown(ctx))
	if err != nil {
		return fmt.Errorf("telemetry: shutdown: %w", err)
	}
	return nil
}
