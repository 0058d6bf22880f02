package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func decodeLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		m := map[string]any{}
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		out = append(out, m)
	}
	return out
}

func TestLoggerAddsTraceIDFromSpanContext(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("test").Start(context.Background(), "op")
	defer span.End()

	var buf bytes.Buffer
	log := NewLogger(&buf, slog.LevelInfo)
	log.InfoContext(ctx, "with span", "k", "v")

	lines := decodeLines(t, &buf)
	require.Len(t, lines, 1)
	assert.Equal(t, span.SpanContext().TraceID().String(), lines[0][TraceIDKey])
	assert.Equal(t, span.SpanContext().SpanID().String(), lines[0][SpanIDKey])
	assert.Equal(t, "v", lines[0]["k"])
	assert.Equal(t, "with span", lines[0]["msg"])
}

func TestLoggerNoTraceIDWithoutSpan(t *testing.T) {
	var buf bytes.Buffer
	log := NewLogger(&buf, slog.LevelInfo)
	log.InfoContext(context.Background(), "no span")
	log.Info("no ctx")

	lines := decodeLines(t, &buf)
	require.Len(t, lines, 2)
	for _, l := range lines {
		assert.NotContains(t, l, TraceIDKey)
		assert.NotContains(t, l, SpanIDKey)
	}
}

func TestLoggerTraceIDStaysTopLevelUnderGroups(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("test").Start(context.Background(), "op")
	defer span.End()

	var buf bytes.Buffer
	log := NewLogger(&buf, slog.LevelInfo).
		With("top", 1).
		WithGroup("req").With("a", 2).
		WithGroup("inner")
	log.InfoContext(ctx, "grouped", "b", 3)

	lines := decodeLines(t, &buf)
	require.Len(t, lines, 1)
	l := lines[0]
	assert.Equal(t, span.SpanContext().TraceID().String(), l[TraceIDKey])
	assert.EqualValues(t, 1, l["top"])
	req, ok := l["req"].(map[string]any)
	require.True(t, ok, "req group missing: %v", l)
	assert.EqualValues(t, 2, req["a"])
	inner, ok := req["inner"].(map[string]any)
	require.True(t, ok, "inner group missing: %v", l)
	assert.EqualValues(t, 3, inner["b"])
}

func TestLoggerLevel(t *testing.T) {
	var buf bytes.Buffer
	log := NewLogger(&buf, slog.LevelWarn)
	log.Info("dropped")
	log.Warn("kept")
	lines := decodeLines(t, &buf)
	require.Len(t, lines, 1)
	assert.Equal(t, "kept", lines[0]["msg"])
}

func TestParseLevel(t *testing.T) {
	for in, want := range map[string]slog.Level{
		"":        slog.LevelInfo,
		"debug":   slog.LevelDebug,
		"INFO":    slog.LevelInfo,
		" warn ":  slog.LevelWarn, //nolint:gocritic // the blanks are the case: ParseLevel trims them
		"warning": slog.LevelWarn,
		"error":   slog.LevelError,
		"debug-2": slog.LevelDebug - 2,
	} {
		got, err := ParseLevel(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := ParseLevel("loud")
	require.Error(t, err)
}
