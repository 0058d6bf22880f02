package gateway

import (
	"context"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Option configures New.
type Option func(*edge)

// WithMeterProvider records the REST edge's requests in mp (default: not
// recorded).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(e *edge) { e.metrics = newEdgeMetrics(mp) }
}

// edgeMetrics are the OpenTelemetry HTTP server metrics (semantic
// conventions v1.26+, stable) of the REST edge:
//
//   - http.server.request.duration (s): http.request.method,
//     http.route (the route template, e.g. /memory/{agent_id}/read;
//     absent for a path no route takes), http.response.status_code,
//     url.scheme;
//   - http.server.active_requests: http.request.method, url.scheme.
//
// Prometheus sees them as http_server_request_duration_seconds and
// http_server_active_requests. Written here rather than with otelhttp:
// the route is known only once the edge's own route table matched, and
// otelhttp adds spans and body-size histograms a sub-millisecond read
// does not need.
type edgeMetrics struct {
	duration metric.Float64Histogram
	active   metric.Int64UpDownCounter
	// sets caches the attribute sets by label values: building one per
	// request was an allocation on every read.
	sets sync.Map // labelKey -> metric.MeasurementOption
}

type labelKey struct {
	method, route, scheme string
	status                int
}

func newEdgeMetrics(mp metric.MeterProvider) *edgeMetrics {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := mp.Meter("github.com/garden-bloom/memory/services/gateway")
	duration, _ := m.Float64Histogram("http.server.request.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of HTTP server requests at the REST edge."))
	active, _ := m.Int64UpDownCounter("http.server.active_requests", metric.WithUnit("{request}"),
		metric.WithDescription("Number of active HTTP server requests at the REST edge."))
	return &edgeMetrics{duration: duration, active: active}
}

// knownMethods are the methods that are their own http.request.method;
// any other is _OTHER, so a client cannot mint label values.
var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true, http.MethodPatch: true,
	http.MethodDelete: true, http.MethodOptions: true, http.MethodConnect: true, http.MethodTrace: true,
}

func (m *edgeMetrics) attrs(k labelKey) metric.MeasurementOption {
	if o, ok := m.sets.Load(k); ok {
		return o.(metric.MeasurementOption)
	}
	kv := []attribute.KeyValue{attribute.String("http.request.method", k.method), attribute.String("url.scheme", k.scheme)}
	if k.route != "" {
		kv = append(kv, attribute.String("http.route", k.route))
	}
	if k.status != 0 {
		kv = append(kv, attribute.Int("http.response.status_code", k.status))
	}
	o := metric.WithAttributeSet(attribute.NewSet(kv...))
	m.sets.Store(k, o)
	return o
}

// serve runs next (which returns the route template it took) and records
// the request.
func (m *edgeMetrics) serve(w http.ResponseWriter, r *http.Request, next func(http.ResponseWriter, *http.Request) string) {
	if m == nil {
		next(w, r)
		return
	}
	start := time.Now()
	k := labelKey{method: r.Method, scheme: "http"}
	if !knownMethods[k.method] {
		k.method = "_OTHER"
	}
	if r.TLS != nil {
		k.scheme = "https"
	}
	// The request's context ends with a cancelled call; the counts must
	// still be recorded.
	ctx := context.WithoutCancel(r.Context())
	inFlight := m.attrs(k)
	m.active.Add(ctx, 1, inFlight)
	rec := &statusRecorder{ResponseWriter: w}
	defer func() {
		m.active.Add(ctx, -1, inFlight)
		k.route, k.status = rec.route, rec.code()
		m.duration.Record(ctx, time.Since(start).Seconds(), m.attrs(k))
	}()
	rec.route = next(rec, r)
}

// statusRecorder remembers the status code a handler answered with. It
// unwraps for http.ResponseController (read deadlines, flushes).
type statusRecorder struct {
	http.ResponseWriter
	status int
	route  string
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 && code >= 200 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// code is the status answered, 200 for a handler that wrote nothing.
func (s *statusRecorder) code() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush implements http.Flusher (grpc-gateway flushes streamed answers).
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		if s.status == 0 {
			s.status = http.StatusOK
		}
		f.Flush()
	}
}
