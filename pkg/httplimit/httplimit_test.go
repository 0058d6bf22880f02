package httplimit

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// testServer is a real http.Server built by a Limiter, on a real socket.
type testServer struct {
	addr   string
	reader *sdkmetric.ManualReader
}

// bodyHandler answers like the REST edge: it reads the whole body, and a
// body that did not arrive in time gets 408.
func bodyHandler(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		http.Error(w, "the request body did not arrive in time", http.StatusRequestTimeout)
	case err != nil:
		http.Error(w, "bad body", http.StatusBadRequest)
	default:
		_, _ = fmt.Fprintf(w, "read %d bytes", len(body))
	}
}

// slowWriter writes one line every 200 ms for 1.5 s: a long transfer that
// keeps making progress (a git fetch of a big pack).
func slowWriter(w http.ResponseWriter, _ *http.Request) {
	for i := range 8 {
		if _, err := fmt.Fprintf(w, "line %d\n", i); err != nil {
			return
		}
		_ = http.NewResponseController(w).Flush()
		time.Sleep(200 * time.Millisecond)
	}
}

func startServer(t *testing.T, cfg Config) *testServer {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	l := New(cfg, Options{MeterProvider: mp})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /body", bodyHandler)
	mux.HandleFunc("POST /ignore", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "not reading it") })
	mux.HandleFunc("GET /ok", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("GET /big", func(w http.ResponseWriter, _ *http.Request) {
		chunk := []byte(strings.Repeat("b", 1<<20))
		for range 256 { // far more than socket buffers hold
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("GET /slow", slowWriter)
	mux.Handle("GET /long/slow", LongWrites(http.HandlerFunc(slowWriter)))
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	lis := l.Listener(inner)
	srv := l.Server(mux)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			_ = srv.Close()
		}
	})
	return &testServer{addr: lis.Addr().String(), reader: reader}
}

// cuts reads memory.http.slow_client_cuts by kind.
func (s *testServer) cuts(t *testing.T) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, s.reader.Collect(context.Background(), &rm))
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != MetricSlowClientCuts {
				continue
			}
			sum, ok := m.Data.(metricdata.Sum[int64])
			require.True(t, ok, "%s is an int64 counter", m.Name)
			require.True(t, sum.IsMonotonic)
			for _, dp := range sum.DataPoints {
				kind, _ := dp.Attributes.Value(attribute.Key("kind"))
				out[kind.AsString()] += dp.Value
			}
		}
	}
	return out
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	return dialFrom(t, "127.0.0.1", addr)
}

func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil && src != "127.0.0.1" {
		t.Skipf("cannot dial from %s (loopback aliases unavailable): %v", src, err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// cutResult is what a client saw of a connection the server should cut.
type cutResult struct {
	after    time.Duration // from the end of the headers to the close
	response string        // what the server wrote before closing
	err      error         // a client-side failure, or the server never closed
}

// readUntilClosed reads c until the server closes it (EOF or reset) or
// limit passes, and reports what it got.
func readUntilClosed(c net.Conn, start time.Time, limit time.Duration) cutResult {
	_ = c.SetReadDeadline(start.Add(limit))
	var got strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return cutResult{after: time.Since(start), response: got.String(), err: fmt.Errorf("still open after %s", limit)}
			}
			return cutResult{after: time.Since(start), response: got.String()} // EOF or reset: closed by the server
		}
	}
}

// requireCutWith checks a cut: within want+margin (and not much before
// want), answered 408 or closed without an answer.
func requireCutWith(t *testing.T, r cutResult, want, margin time.Duration) {
	t.Helper()
	require.NoError(t, r.err)
	require.GreaterOrEqual(t, r.after, want-100*time.Millisecond, "cut before the timeout: %q", r.response)
	require.LessOrEqual(t, r.after, want+margin, "cut too late: %q", r.response)
	if r.response != "" {
		require.True(t, strings.HasPrefix(r.response, "HTTP/1.1 408 "), "a response that can still be written is 408: %q", r.response)
		require.Contains(t, r.response, "Connection: close")
	}
}

// trickle writes one byte of body every interval until the connection
// breaks or stop closes.
func trickle(c net.Conn, interval time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if _, err := c.Write([]byte("x")); err != nil {
				return
			}
		}
	}
}

func testConfig() Config {
	c := DefaultConfig()
	c.MaxConnsPerIP = 0
	return c
}

// TestSlowBodyClientsAreCut: from the issue, "a slow-body client is cut
// within the configured time and counted in a metric": hundreds of
// connections each send a POST's headers with a Content-Length and then
// one body byte every second; each is answered 408 (or closed) and closed
// within --http-body-timeout (plus a margin for a shared machine), and
// every cut is counted as kind=body. A request on another connection is
// served meanwhile.
func TestSlowBodyClientsAreCut(t *testing.T) {
	const conns = 300
	cfg := testConfig()
	cfg.BodyTimeout = 3 * time.Second
	cfg.BodyReadTimeout = 5 * time.Second // a byte a second keeps this one happy
	s := startServer(t, cfg)

	stop := make(chan struct{})
	defer close(stop)
	results := make([]cutResult, conns)
	var wg sync.WaitGroup
	for i := range conns {
		c := dial(t, s.addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := io.WriteString(c, "POST /body HTTP/1.1\r\nHost: memoryd\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"); err != nil {
				results[i] = cutResult{err: err}
				return
			}
			start := time.Now()
			go trickle(c, time.Second, stop)
			results[i] = readUntilClosed(c, start, cfg.BodyTimeout+10*time.Second)
		}()
	}

	// Served while the slow clients are held.
	resp, err := http.Get("http://" + s.addr + "/ok")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_ = resp.Body.Close()

	wg.Wait()
	answered := 0
	for i, r := range results {
		t.Run(fmt.Sprint("conn ", i), func(t *testing.T) { requireCutWith(t, r, cfg.BodyTimeout, 2*time.Second) })
		if r.response != "" {
			answered++
		}
	}
	t.Logf("%d of %d slow clients got the 408 before the close", answered, conns)
	require.Positive(t, answered, "the server could write its 408 to the clients")
	require.Equal(t, int64(conns), s.cuts(t)["body"])
}

// TestBodyPerReadDeadline: "per-read deadline": a body that stops making
// progress is cut after --http-body-read-timeout, long before the total
// body deadline.
func TestBodyPerReadDeadline(t *testing.T) {
	cfg := testConfig()
	cfg.BodyTimeout = 20 * time.Second
	cfg.BodyReadTimeout = time.Second
	s := startServer(t, cfg)

	c := dial(t, s.addr)
	_, err := io.WriteString(c, "POST /body HTTP/1.1\r\nHost: memoryd\r\nContent-Length: 100\r\n\r\nx")
	require.NoError(t, err)
	r := readUntilClosed(c, time.Now(), 10*time.Second)
	requireCutWith(t, r, cfg.BodyReadTimeout, 2*time.Second)
	require.True(t, strings.HasPrefix(r.response, "HTTP/1.1 408 "), r.response)
	require.Equal(t, int64(1), s.cuts(t)["body"])
}

// TestBodyThatMakesProgressIsRead: a body arriving in pieces within both
// deadlines is read whole, and the connection stays usable.
func TestBodyThatMakesProgressIsRead(t *testing.T) {
	cfg := testConfig()
	cfg.BodyTimeout = 5 * time.Second
	cfg.BodyReadTimeout = time.Second
	s := startServer(t, cfg)

	c := dial(t, s.addr)
	_, err := io.WriteString(c, "POST /body HTTP/1.1\r\nHost: memoryd\r\nContent-Length: 4\r\n\r\n")
	require.NoError(t, err)
	for range 4 {
		time.Sleep(300 * time.Millisecond)
		_, err := io.WriteString(c, "y")
		require.NoError(t, err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "read 4 bytes", string(body))

	// Keep-alive: the same connection serves the next request, whose read
	// deadlines start afresh.
	_, err = io.WriteString(c, "GET /ok HTTP/1.1\r\nHost: memoryd\r\n\r\n")
	require.NoError(t, err)
	resp, err = http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, s.cuts(t))
}

// TestUnreadBodyIsBounded: a handler that answers without reading the body
// does not leave the connection to a slow client while the server
// discards the rest: the body deadline still cuts it.
func TestUnreadBodyIsBounded(t *testing.T) {
	cfg := testConfig()
	cfg.BodyTimeout = 2 * time.Second
	cfg.BodyReadTimeout = 5 * time.Second
	s := startServer(t, cfg)

	c := dial(t, s.addr)
	_, err := io.WriteString(c, "POST /ignore HTTP/1.1\r\nHost: memoryd\r\nContent-Length: 1000\r\n\r\n")
	require.NoError(t, err)
	start := time.Now()
	stop := make(chan struct{})
	defer close(stop)
	go trickle(c, 500*time.Millisecond, stop)
	r := readUntilClosed(c, start, 15*time.Second)
	require.NoError(t, r.err)
	require.True(t, strings.HasPrefix(r.response, "HTTP/1.1 200 "), "the handler's answer arrives: %q", r.response)
	require.LessOrEqual(t, r.after, cfg.BodyTimeout+2*time.Second, "closed within the body deadline")
	require.Equal(t, int64(1), s.cuts(t)["body"])
}

// TestSlowHeadersAreCut: a client trickling its headers is cut by
// --http-read-header-timeout without an answer, counted as kind=header.
func TestSlowHeadersAreCut(t *testing.T) {
	cfg := testConfig()
	cfg.ReadHeaderTimeout = time.Second
	s := startServer(t, cfg)

	const conns = 50
	var wg sync.WaitGroup
	results := make([]cutResult, conns)
	stop := make(chan struct{})
	defer close(stop)
	for i := range conns {
		c := dial(t, s.addr)
		start := time.Now()
		_, err := io.WriteString(c, "GET /ok HTTP/1.1\r\nHost: memoryd\r\nX-Slow: ")
		require.NoError(t, err)
		go trickle(c, 200*time.Millisecond, stop)
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = readUntilClosed(c, start, 10*time.Second)
		}()
	}
	wg.Wait()
	for _, r := range results {
		require.NoError(t, r.err)
		require.LessOrEqual(t, r.after, cfg.ReadHeaderTimeout+2*time.Second)
		require.False(t, strings.HasPrefix(r.response, "HTTP/1.1 200"), "never served: %q", r.response)
	}
	require.Equal(t, int64(conns), s.cuts(t)["header"])
}

// TestIdleKeepAliveIsClosed: a keep-alive connection left idle is closed
// after --http-idle-timeout, counted as kind=idle.
func TestIdleKeepAliveIsClosed(t *testing.T) {
	cfg := testConfig()
	cfg.IdleTimeout = time.Second
	s := startServer(t, cfg)

	c := dial(t, s.addr)
	_, err := io.WriteString(c, "GET /ok HTTP/1.1\r\nHost: memoryd\r\n\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	_, _ = io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	idleFrom := time.Now()

	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = br.ReadByte()
	require.ErrorIs(t, err, io.EOF, "closed by the server")
	require.LessOrEqual(t, time.Since(idleFrom), cfg.IdleTimeout+2*time.Second)
	require.GreaterOrEqual(t, time.Since(idleFrom), cfg.IdleTimeout-100*time.Millisecond)
	require.Eventually(t, func() bool { return s.cuts(t)["idle"] == 1 }, 2*time.Second, 20*time.Millisecond)
	require.Zero(t, s.cuts(t)["header"])
}

// TestConnectionsPerAddress: a client that opens more connections than
// --http-max-conns-per-ip gets the extra ones closed at once (kind=
// conn_limit), while its other connections and other clients are served.
func TestConnectionsPerAddress(t *testing.T) {
	cfg := testConfig()
	cfg.MaxConnsPerIP = 4
	s := startServer(t, cfg)

	get := func(c net.Conn) (int, error) {
		if _, err := io.WriteString(c, "GET /ok HTTP/1.1\r\nHost: memoryd\r\n\r\n"); err != nil {
			return 0, err
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}
	held := make([]net.Conn, 4)
	for i := range held {
		held[i] = dial(t, s.addr)
	}
	for range 3 {
		extra := dial(t, s.addr)
		_, err := get(extra)
		require.Error(t, err, "beyond the limit: closed without an answer")
	}
	code, err := get(dialFrom(t, "127.0.0.2", s.addr))
	require.NoError(t, err, "another address is served")
	require.Equal(t, http.StatusOK, code)
	for _, c := range held {
		code, err := get(c)
		require.NoError(t, err, "connections within the limit are served")
		require.Equal(t, http.StatusOK, code)
	}
	require.Equal(t, int64(3), s.cuts(t)["conn_limit"])

	require.NoError(t, held[0].Close())
	require.Eventually(t, func() bool {
		code, err := get(dial(t, s.addr))
		return err == nil && code == http.StatusOK
	}, 5*time.Second, 50*time.Millisecond, "a closed connection frees its slot")
}

// TestWriteTimeout: a client that does not read its response is cut after
// --http-write-timeout (kind=write); a response that takes longer than the
// write timeout is cut too, unless its route takes LongWrites, where each
// write only has to make progress within the timeout.
func TestWriteTimeout(t *testing.T) {
	cfg := testConfig()
	cfg.WriteTimeout = time.Second
	cfg.BodyTimeout = 500 * time.Millisecond
	s := startServer(t, cfg)

	c := dial(t, s.addr)
	// A small receive buffer, so the server's writes block.
	require.NoError(t, c.(*net.TCPConn).SetReadBuffer(4096))
	_, err := io.WriteString(c, "GET /big HTTP/1.1\r\nHost: memoryd\r\n\r\n")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.cuts(t)["write"] == 1 }, cfg.WriteTimeout+3*time.Second, 50*time.Millisecond)

	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + s.addr + "/slow")
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
	}
	require.Error(t, err, "a 1.5 s response is cut by a 1 s write timeout")

	resp, err = client.Get("http://" + s.addr + "/long/slow")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err, "LongWrites: a long transfer making progress is not cut")
	require.Equal(t, 8, strings.Count(string(body), "line "))
}

func TestConfigFlagsAndValidation(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	c.RegisterFlags(fs)
	require.NoError(t, fs.Parse(nil))
	require.Equal(t, DefaultConfig(), c)
	require.NoError(t, c.Validate())
	d := DefaultConfig()
	require.Equal(t, 10*time.Second, d.ReadHeaderTimeout)
	require.Equal(t, 10*time.Second, d.BodyReadTimeout)
	require.Equal(t, 30*time.Second, d.BodyTimeout)
	require.Equal(t, 2*time.Minute, d.IdleTimeout)
	require.Equal(t, 60*time.Second, d.WriteTimeout)
	require.Equal(t, 256, d.MaxConnsPerIP)
	for _, name := range []string{"http-read-header-timeout", "http-body-read-timeout", "http-body-timeout", "http-idle-timeout", "http-write-timeout", "http-max-conns-per-ip"} {
		require.NotNil(t, fs.Lookup(name), name)
		require.NotEmpty(t, fs.Lookup(name).Usage, name)
	}

	for name, mutate := range map[string]func(*Config){
		"header 0":                 func(c *Config) { c.ReadHeaderTimeout = 0 },
		"body read 0":              func(c *Config) { c.BodyReadTimeout = 0 },
		"body 0":                   func(c *Config) { c.BodyTimeout = 0 },
		"idle negative":            func(c *Config) { c.IdleTimeout = -time.Second },
		"write 0":                  func(c *Config) { c.WriteTimeout = 0 },
		"write not after the body": func(c *Config) { c.WriteTimeout = c.BodyTimeout },
		"conns negative":           func(c *Config) { c.MaxConnsPerIP = -1 },
	} {
		c := DefaultConfig()
		mutate(&c)
		require.Error(t, c.Validate(), name)
	}
	c = DefaultConfig()
	c.MaxConnsPerIP = 0
	require.NoError(t, c.Validate(), "0 = no per-address limit (behind a proxy)")
}
