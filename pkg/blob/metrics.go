package blob

import (
	"context"
	"errors"
	"io"
	"iter"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Operation names, the attribute op of the object-store metrics.
const (
	OpPut    = "put"
	OpGet    = "get"
	OpStat   = "stat"
	OpDelete = "delete"
	OpList   = "list"
)

// Instrumented is a Store whose every call is timed and whose failures
// are counted, by operation: memory.objects.duration (seconds) and
// memory.objects.errors. A missing object (ErrNotFound), a refused key
// (ErrInvalidKey) and a caller's cancellation are answers, not failures
// of the store, and are not counted as errors. It keeps the wrapped
// store's Location and Close.
type Instrumented struct {
	Store
	duration metric.Float64Histogram
	errs     metric.Int64Counter
	ops      map[string]metric.MeasurementOption
}

// Instrument wraps s with the object-store metrics of mp (a nil mp: no-op).
func Instrument(s Store, mp metric.MeterProvider) *Instrumented {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := mp.Meter("github.com/garden-bloom/memory/pkg/blob")
	duration, _ := m.Float64Histogram("memory.objects.duration", metric.WithUnit("s"),
		metric.WithDescription("Object-store calls, from the call to the end of its answer (a Get's body closed, a List's last item), by op."))
	errs, _ := m.Int64Counter("memory.objects.errors", metric.WithUnit("{error}"),
		metric.WithDescription("Object-store calls that failed (not counting missing objects), by op."))
	in := &Instrumented{Store: s, duration: duration, errs: errs, ops: map[string]metric.MeasurementOption{}}
	for _, op := range []string{OpPut, OpGet, OpStat, OpDelete, OpList} {
		in.ops[op] = metric.WithAttributeSet(attribute.NewSet(attribute.String("op", op)))
		// From zero, so rate() and alerts work before the first error.
		errs.Add(context.Background(), 0, in.ops[op])
	}
	return in
}

// Unwrap returns the wrapped store.
func (s *Instrumented) Unwrap() Store { return s.Store }

func (s *Instrumented) done(ctx context.Context, op string, start time.Time, err error) {
	s.duration.Record(ctx, time.Since(start).Seconds(), s.ops[op])
	if failed(ctx, err) {
		s.errs.Add(ctx, 1, s.ops[op])
	}
}

// failed reports whether err is the store's failure rather than an answer
// about the request (a missing object, a bad or conflicting key, the
// caller's own reader failing) or the caller giving up. Guard and the
// metrics share it.
func failed(ctx context.Context, err error) bool {
	switch {
	case err == nil, errors.Is(err, ErrNotFound), errors.Is(err, ErrInvalidKey), errors.Is(err, ErrKeyConflict),
		errors.Is(err, errCallerReader):
		return false
	case ctx.Err() != nil:
		return false // the caller cancelled or ran out of time
	}
	return true
}

// Put implements Store.
func (s *Instrumented) Put(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (Info, error) {
	start := time.Now()
	info, err := s.Store.Put(ctx, key, r, size, opts)
	s.done(ctx, OpPut, start, err)
	return info, err
}

// Get implements Store; the call ends when the body is closed.
func (s *Instrumented) Get(ctx context.Context, key string) (io.ReadCloser, Info, error) {
	start := time.Now()
	rc, info, err := s.Store.Get(ctx, key)
	if err != nil {
		s.done(ctx, OpGet, start, err)
		return nil, info, err
	}
	return &timedBody{ReadCloser: rc, ctx: ctx, s: s, start: start}, info, nil
}

// Stat implements Store.
func (s *Instrumented) Stat(ctx context.Context, key string) (Info, error) {
	start := time.Now()
	info, err := s.Store.Stat(ctx, key)
	s.done(ctx, OpStat, start, err)
	return info, err
}

// Delete implements Store.
func (s *Instrumented) Delete(ctx context.Context, key string) error {
	start := time.Now()
	err := s.Store.Delete(ctx, key)
	s.done(ctx, OpDelete, start, err)
	return err
}

// List implements Store; the call ends with the iteration.
func (s *Instrumented) List(ctx context.Context, prefix string) iter.Seq2[Info, error] {
	return func(yield func(Info, error) bool) {
		start := time.Now()
		var err error
		defer func() { s.done(ctx, OpList, start, err) }()
		for info, e := range s.Store.List(ctx, prefix) {
			if e != nil {
				err = e
			}
			if !yield(info, e) {
				return
			}
		}
	}
}

// Location implements Locator when the wrapped store does.
func (s *Instrumented) Location(key string) string { return Location(s.Store, key) }

// Close closes the wrapped store when it holds resources.
func (s *Instrumented) Close() error {
	if c, ok := s.Store.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// timedBody records a Get once its body is closed, failed if a read failed.
type timedBody struct {
	io.ReadCloser
	ctx   context.Context
	s     *Instrumented
	start time.Time
	err   error
	once  bool
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}

func (b *timedBody) Close() error {
	err := b.ReadCloser.Close()
	if !b.once {
		b.once = true
		b.s.done(b.ctx, OpGet, b.start, b.err)
	}
	return err
}
