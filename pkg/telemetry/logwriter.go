package telemetry

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// The access log writes a line per call. Written straight to stderr that
// was a system call per call: 6.5 % of a cached gRPC ReadMemory (issue
// #30). A buffered logger collects lines and writes them in batches, so a
// busy process makes a few writes a second instead of thousands. What is
// worth reading at once is not held back: a record at WARN or above is
// written immediately, with every line before it, and Close writes the
// rest. A process killed outright loses at most LogFlushEvery of INFO
// lines; its warnings and errors are already out.

// LogFlushEvery is how long a log line may wait in the batch.
const LogFlushEvery = 100 * time.Millisecond

// logBatchBytes is a batch written without waiting for the timer.
const logBatchBytes = 64 << 10

// logBuffer batches writes to w.
type logBuffer struct {
	w    io.Writer
	mu   sync.Mutex
	buf  []byte
	err  error // the last write's, reported by Close
	stop chan struct{}
	done sync.WaitGroup
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) >= logBatchBytes {
		b.flushLocked()
	}
	return len(p), nil
}

func (b *logBuffer) flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
}

func (b *logBuffer) flushLocked() {
	if len(b.buf) == 0 {
		return
	}
	if _, err := b.w.Write(b.buf); err != nil {
		b.err = err
	}
	b.buf = b.buf[:0]
}

func (b *logBuffer) run() {
	defer b.done.Done()
	t := time.NewTicker(LogFlushEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			b.flush()
		case <-b.stop:
			return
		}
	}
}

func (b *logBuffer) close() error {
	close(b.stop)
	b.done.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
	return b.err
}

// flushingHandler writes the batch out after every record at or above
// level.
type flushingHandler struct {
	slog.Handler
	buf   *logBuffer
	level slog.Level
}

func (h flushingHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= h.level {
		h.buf.flush()
	}
	return err
}

func (h flushingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flushingHandler{Handler: h.Handler.WithAttrs(attrs), buf: h.buf, level: h.level}
}

func (h flushingHandler) WithGroup(name string) slog.Handler {
	return flushingHandler{Handler: h.Handler.WithGroup(name), buf: h.buf, level: h.level}
}

// NewBufferedLogger is NewLogger writing to w in batches (see above);
// close writes what is left and stops the timer.
func NewBufferedLogger(w io.Writer, level slog.Level) (logger *slog.Logger, close func() error) {
	b := &logBuffer{w: w, stop: make(chan struct{})}
	b.done.Add(1)
	go b.run()
	h := flushingHandler{Handler: NewLogger(b, level).Handler(), buf: b, level: slog.LevelWarn}
	return slog.New(h), b.close
}
