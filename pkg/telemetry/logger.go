package telemetry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// Log attribute keys for trace correlation. They match the names most log
// backends (Loki derived fields, Grafana, Datadog remapping) look for.
const (
	TraceIDKey = "trace_id"
	SpanIDKey  = "span_id"
)

// NewLogger returns a JSON logger writing to w at the given minimum level.
//
// Records logged with a context carrying a valid span (the *Context methods,
// e.g. InfoContext, or LogAttrs) get top-level trace_id and span_id
// attributes, which is what links a log line to its trace. The ids stay
// top-level even under WithGroup so log pipelines find them in one place.
func NewLogger(w io.Writer, level slog.Level) *slog.Logger {
	base := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})
	return slog.New(NewTraceHandler(base))
}

// NewTraceHandler wraps h so that records get trace_id and span_id
// attributes from the span in the logging context. Exposed so callers can
// use a different base handler (e.g. text for local development).
func NewTraceHandler(h slog.Handler) slog.Handler {
	return &traceHandler{base: h}
}

// traceHandler injects trace ids at the top level of each record.
//
// Groups are tracked here instead of being delegated to base because a
// grouped slog.Handler puts every record attribute inside the group, which
// would bury trace_id under e.g. "request.trace_id".
type traceHandler struct {
	base   slog.Handler // carries only top-level WithAttrs
	groups []logGroup   // open groups, outermost first
}

type logGroup struct {
	name  string
	attrs []slog.Attr
}

func (h *traceHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.base.Enabled(ctx, l)
}

func (h *traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	if len(h.groups) == 0 {
		// Fast path: let the base handler pre-format top-level attributes.
		return &traceHandler{base: h.base.WithAttrs(attrs)}
	}
	groups := slices.Clone(h.groups)
	last := &groups[len(groups)-1]
	last.attrs = append(slices.Clip(last.attrs), attrs...)
	return &traceHandler{base: h.base, groups: groups}
}

func (h *traceHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &traceHandler{base: h.base, groups: append(slices.Clip(h.groups), logGroup{name: name})}
}

func (h *traceHandler) Handle(ctx context.Context, r slog.Record) error {
	sc := trace.SpanContextFromContext(ctx)
	if len(h.groups) == 0 {
		if sc.IsValid() {
			// Clone: the record's attribute storage may be shared with the
			// caller, and slog forbids appending to a shared copy.
			r = r.Clone()
			r.AddAttrs(traceAttrs(sc)...)
		}
		return h.base.Handle(ctx, r)
	}

	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	if sc.IsValid() {
		out.AddAttrs(traceAttrs(sc)...)
	}
	n := len(h.groups)
	inner := make([]slog.Attr, 0, len(h.groups[n-1].attrs)+r.NumAttrs())
	inner = append(inner, h.groups[n-1].attrs...)
	r.Attrs(func(a slog.Attr) bool {
		inner = append(inner, a)
		return true
	})
	for i := n - 1; i >= 0; i-- {
		g := slog.Attr{Key: h.groups[i].name, Value: slog.GroupValue(inner...)}
		if i == 0 {
			out.AddAttrs(g)
			break
		}
		inner = append(slices.Clone(h.groups[i-1].attrs), g)
	}
	return h.base.Handle(ctx, out)
}

func traceAttrs(sc trace.SpanContext) []slog.Attr {
	return []slog.Attr{
		slog.String(TraceIDKey, sc.TraceID().String()),
		slog.String(SpanIDKey, sc.SpanID().String()),
	}
}

// ParseLevel parses a log level name as used in flags and env vars:
// debug, info, warn/warning, error (any case), optionally with an offset
// such as "debug-2" as slog allows. An empty string means info so an unset
// variable yields the default.
func ParseLevel(s string) (slog.Level, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return slog.LevelInfo, nil
	}
	if rest, ok := strings.CutPrefix(s, "warning"); ok {
		s = "warn" + rest
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("telemetry: invalid log level %q: want debug, info, warn or error", s)
	}
	return l, nil
}
