package telemetry

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// countingWriter counts the writes that reach it (each one a system call
// on stderr).
type countingWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	return w.buf.Write(p)
}

func (w *countingWriter) snapshot() (string, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String(), w.writes
}

// Issue #30, point 5: the access log wrote each call's line with a system
// call of its own (6.5 % of a cached gRPC read). Lines now reach stderr in
// batches — every LogFlushEvery, or sooner when a batch is large — while a
// warning or an error is written at once, with everything before it, and
// Close writes what is left: no line is lost on a clean exit, and none is
// reordered.
func TestLogLinesAreBatchedButWarningsAreNot(t *testing.T) {
	out := &countingWriter{}
	logger, closeLog := NewBufferedLogger(out, slog.LevelInfo)
	for i := range 100 {
		logger.Info("grpc call", "n", i)
	}
	text, writes := out.snapshot()
	require.Zero(t, writes, "info lines wait for the batch: %q", text)
	require.Eventually(t, func() bool {
		text, writes = out.snapshot()
		return strings.Count(text, "\n") == 100
	}, 2*time.Second, 5*time.Millisecond, "the batch is written within LogFlushEvery")
	require.LessOrEqual(t, writes, 3, "in a few writes, not a hundred")

	logger.Info("before the warning")
	logger.Warn("disk almost full")
	text, _ = out.snapshot()
	require.Contains(t, text, "before the warning", "a warning writes what came before it")
	require.Contains(t, text, "disk almost full", "and itself, at once")
	require.Less(t, strings.Index(text, "before the warning"), strings.Index(text, "disk almost full"))

	logger.Info("memoryd stopped")
	require.NoError(t, closeLog())
	text, _ = out.snapshot()
	require.True(t, strings.HasSuffix(strings.TrimSpace(text), `"msg":"memoryd stopped"}`), "close writes the rest: %q", text)

	// A batch larger than logBatchBytes is written without waiting.
	out = &countingWriter{}
	logger, closeLog = NewBufferedLogger(out, slog.LevelInfo)
	defer func() { require.NoError(t, closeLog()) }()
	big := strings.Repeat("x", 1024)
	for range (logBatchBytes / 1024) + 8 {
		logger.Info("big", "v", big)
	}
	_, writes = out.snapshot()
	require.Positive(t, writes, "a full batch does not wait for the timer")
}
