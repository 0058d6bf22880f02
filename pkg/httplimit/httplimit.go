// Package httplimit bounds what a slow or greedy client can hold of an HTTP
// server: every timeout set (headers, body per read and in total, idle,
// write), a cap on open connections per client address, and a metric of
// every connection cut.
//
// net/http offers ReadTimeout and WriteTimeout only per connection and
// measured from the headers, which would cut long git fetches and, for
// ReadTimeout, cancel a request's context once it passes even when the body
// was read long before. So the body and write deadlines here are set per
// request, through http.ResponseController:
//
//   - the body: before the handler runs, the connection's read deadline is
//     the body's total deadline (BodyTimeout), which also bounds the read
//     net/http makes of a body the handler left unread; then each read of
//     the body moves it to BodyReadTimeout ahead, never past the total;
//   - the answer: the write deadline is WriteTimeout ahead when the handler
//     starts; LongWrites routes take it per write instead.
//
// A connection whose read or write deadline passed is cut: every further
// read fails at once, so net/http answers what it still can (a handler's
// 408) with Connection: close and closes the connection, rather than
// waiting on the client again (before this, it went on reading a timed-out
// body to its end, for as long as the client kept trickling).
package httplimit

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/garden-bloom/memory/pkg/connlimit"
)

// MetricSlowClientCuts counts connections cut by a limit, by kind: header,
// body, idle, write, conn_limit. Prometheus: memory_http_slow_client_cuts_total.
const MetricSlowClientCuts = "memory.http.slow_client_cuts"

// Kinds of cut (the metric's "kind" attribute).
const (
	KindHeader    = "header"     // headers not read within ReadHeaderTimeout
	KindBody      = "body"       // a body read passed its deadline
	KindIdle      = "idle"       // a keep-alive connection idle past IdleTimeout (routine for pooled clients)
	KindWrite     = "write"      // an answer not taken by the client within its write deadline
	KindConnLimit = "conn_limit" // a connection over MaxConnsPerIP, closed when accepted
)

// Options are a Limiter's dependencies.
type Options struct {
	// MeterProvider receives MetricSlowClientCuts; nil: no metric.
	MeterProvider metric.MeterProvider
}

// Limiter applies a Config to an http.Server and its listener. Use
// Listener and Server together: the cut of a connection is classified
// from the server's connection states.
type Limiter struct {
	cfg  Config
	cuts metric.Int64Counter
	// attrs are the metric's attribute sets, built once.
	attrs map[string]metric.AddOption
}

// New returns a Limiter of cfg (taken as valid: see Config.Validate).
func New(cfg Config, opts Options) *Limiter {
	mp := opts.MeterProvider
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	l := &Limiter{cfg: cfg, attrs: map[string]metric.AddOption{}}
	// An instrument error only happens for invalid names, which are
	// constants here; the returned counter is still a usable no-op.
	l.cuts, _ = mp.Meter("github.com/garden-bloom/memory/pkg/httplimit").Int64Counter(MetricSlowClientCuts,
		metric.WithDescription("HTTP connections cut by a limit: header, body, idle or write timeout, or the per-address connection cap."),
		metric.WithUnit("{connection}"))
	for _, k := range []string{KindHeader, KindBody, KindIdle, KindWrite, KindConnLimit} {
		l.attrs[k] = metric.WithAttributeSet(attribute.NewSet(attribute.String("kind", k)))
	}
	return l
}

func (l *Limiter) cut(kind string) { l.cuts.Add(context.Background(), 1, l.attrs[kind]) }

// Listener wraps inner: at most MaxConnsPerIP open connections per client
// address, and connections that notice when a deadline cuts them.
func (l *Limiter) Listener(inner net.Listener) net.Listener {
	lis := inner
	if l.cfg.MaxConnsPerIP > 0 {
		lis = connlimit.NewListener(inner, l.cfg.MaxConnsPerIP, func(net.Addr) { l.cut(KindConnLimit) })
	}
	return &listener{Listener: lis, l: l}
}

// Server returns an http.Server serving h with the Config's timeouts; serve
// it on a Listener of the same Limiter. Callers may set its other fields
// (MaxHeaderBytes, ErrorLog).
func (l *Limiter) Server(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           l.Handler(h),
		ReadHeaderTimeout: l.cfg.ReadHeaderTimeout,
		IdleTimeout:       l.cfg.IdleTimeout,
		ConnState:         connState,
	}
}

// limiterKey carries the Limiter in a request's context, for LongWrites.
type limiterKey struct{}

// Handler sets each request's body and write deadlines around h.
func (l *Limiter) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		now := time.Now()
		_ = rc.SetWriteDeadline(now.Add(l.cfg.WriteTimeout))
		r = r.WithContext(context.WithValue(r.Context(), limiterKey{}, l))
		if r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		b := &body{src: r.Body, rc: rc, perRead: l.cfg.BodyReadTimeout, total: now.Add(l.cfg.BodyTimeout)}
		// Set now, not at the first read: a handler that answers without
		// reading makes net/http read the body (to keep the connection)
		// under this deadline.
		_ = rc.SetReadDeadline(b.total)
		r.Body = b
		h.ServeHTTP(w, r)
		b.handlerDone()
	})
}

// body moves the connection's read deadline ahead of each read of a
// request body. A handler may read it from another goroutine (net/http/cgi
// copies it to the child's stdin), so it keeps no lock while reading.
type body struct {
	src     io.ReadCloser
	rc      *http.ResponseController
	perRead time.Duration

	mu    sync.Mutex
	total time.Time
	done  bool // EOF or an error: the deadline is no longer this body's
}

// deadline is the next read's deadline: perRead ahead, within the total.
// b.mu is held.
func (b *body) deadline() time.Time {
	d := time.Now().Add(b.perRead)
	if b.total.Before(d) {
		return b.total
	}
	return d
}

// arm sets the connection's read deadline for the next read, unless the
// body is done. After EOF net/http reads the connection in the background
// (to notice a client going away) without a deadline: that is left so.
func (b *body) arm() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.done {
		_ = b.rc.SetReadDeadline(b.deadline())
	}
}

// Read reads with a fresh per-read deadline. When one passes, the
// connection is cut (conn counts it): net/http then cannot read the rest of
// the body, so it answers with Connection: close and closes.
func (b *body) Read(p []byte) (int, error) {
	b.arm()
	n, err := b.src.Read(p)
	if err != nil {
		b.mu.Lock()
		b.done = true
		b.mu.Unlock()
	}
	return n, err
}

func (b *body) Close() error { return b.src.Close() }

// LimitDeadline brings the body's total deadline forward to t, when t is
// sooner: a handler with its own deadline (the REST edge's --rest-timeout)
// uses it instead of setting the connection's read deadline itself, which
// the body would move on its next read.
func (b *body) LimitDeadline(t time.Time) {
	b.mu.Lock()
	sooner := t.Before(b.total)
	if sooner {
		b.total = t
	}
	b.mu.Unlock()
	if sooner {
		b.arm()
	}
}

// handlerDone bounds what net/http still reads of a body the handler left
// unread (it reads up to 256 KiB of it to reuse the connection).
func (b *body) handlerDone() { b.arm() }

// LongWrites is for routes whose answers may rightly take longer than the
// write timeout (a git fetch of a large repository, a CPU profile): there,
// the timeout bounds each write, so a transfer that keeps making progress
// goes on and a client that stops reading is still cut. Outside a Limiter's
// Handler it changes nothing.
func LongWrites(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l, ok := r.Context().Value(limiterKey{}).(*Limiter)
		if !ok {
			h.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.SetWriteDeadline(time.Time{})
		h.ServeHTTP(&progressWriter{ResponseWriter: w, rc: rc, timeout: l.cfg.WriteTimeout}, r)
		// net/http flushes what is buffered after the handler returns.
		_ = rc.SetWriteDeadline(time.Now().Add(l.cfg.WriteTimeout))
	})
}

// progressWriter gives each write of an answer its own deadline.
type progressWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (p *progressWriter) Write(b []byte) (int, error) {
	_ = p.rc.SetWriteDeadline(time.Now().Add(p.timeout))
	return p.ResponseWriter.Write(b)
}

func (p *progressWriter) Flush() {
	_ = p.rc.SetWriteDeadline(time.Now().Add(p.timeout))
	_ = p.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (p *progressWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }

// listener hands out conns.
type listener struct {
	net.Listener
	l *Limiter
}

func (ln *listener) Accept() (net.Conn, error) {
	c, err := ln.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c, l: ln.l, accepted: time.Now().UnixNano()}, nil
}

// conn notices when one of its deadlines cuts it, counts the cut by what
// the connection was doing (from the server's ConnState), and from then on
// fails every read at once (and every write, after a write cut), so
// net/http can still answer but no longer waits on the client.
type conn struct {
	net.Conn
	l        *Limiter
	accepted int64 // unix ns

	state     atomic.Int32 // http.ConnState
	readSince atomic.Bool  // bytes read since the last state change
	readDL    atomic.Int64 // unix ns of the read deadline in force, 0: none
	writeDL   atomic.Int64
	cutOnce   sync.Once
	readCut   atomic.Bool
	writeCut  atomic.Bool
}

// errCut is what reads and writes of a cut connection return: a timeout,
// like the read that cut it.
var errCut = os.ErrDeadlineExceeded

func connState(nc net.Conn, s http.ConnState) {
	if c, ok := nc.(*conn); ok {
		c.state.Store(int32(s))
		c.readSince.Store(false)
	}
}

func (c *conn) Read(p []byte) (int, error) {
	if c.readCut.Load() {
		return 0, errCut
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.readSince.Store(true)
	}
	if err != nil && c.timedOut(err, c.readDL.Load()) {
		c.readCut.Store(true)
		c.count(c.readKind())
	}
	return n, err
}

func (c *conn) Write(p []byte) (int, error) {
	if c.writeCut.Load() {
		return 0, errCut
	}
	n, err := c.Conn.Write(p)
	if err != nil && c.timedOut(err, c.writeDL.Load()) {
		c.writeCut.Store(true)
		c.readCut.Store(true)
		c.count(KindWrite)
	}
	return n, err
}

// timedOut reports whether err is a deadline that a limit set: net/http
// also aborts its own background read with a deadline in the past (1970),
// which cuts nothing.
func (c *conn) timedOut(err error, deadline int64) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() && deadline > c.accepted
}

// readKind says which limit a read deadline that passed was.
func (c *conn) readKind() string {
	switch http.ConnState(c.state.Load()) {
	case http.StateActive:
		return KindBody // headers were read: the handler's body, or net/http discarding it
	case http.StateIdle:
		if c.readSince.Load() {
			return KindHeader // the next request started and stalled
		}
		return KindIdle
	default:
		return KindHeader // StateNew: the first request's headers
	}
}

// count counts the connection's first cut.
func (c *conn) count(kind string) { c.cutOnce.Do(func() { c.l.cut(kind) }) }

func (c *conn) SetReadDeadline(t time.Time) error {
	c.readDL.Store(unixNano(t))
	return c.Conn.SetReadDeadline(t)
}

func (c *conn) SetWriteDeadline(t time.Time) error {
	c.writeDL.Store(unixNano(t))
	return c.Conn.SetWriteDeadline(t)
}

func (c *conn) SetDeadline(t time.Time) error {
	c.readDL.Store(unixNano(t))
	c.writeDL.Store(unixNano(t))
	return c.Conn.SetDeadline(t)
}

// CloseWrite half-closes the connection (net/http uses it to flush an
// answer before closing).
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
