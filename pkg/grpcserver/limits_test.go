package grpcserver

import (
	"context"
	"flag"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"google.golang.org/grpc/codes"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// h2conn is a raw HTTP/2 client connection: it says exactly what a
// misbehaving client says, which grpc-go's own client refuses to.
type h2conn struct {
	net.Conn
	fr *http2.Framer
}

func dialH2From(t *testing.T, src, addr string) *h2conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil && src != "127.0.0.1" {
		t.Skipf("cannot dial from %s (loopback aliases unavailable): %v", src, err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return &h2conn{Conn: c, fr: http2.NewFramer(c, c)}
}

// handshake sends the client preface and SETTINGS, and returns the
// server's SETTINGS (acknowledged), or an error when the server does not
// speak (e.g. it closed the connection).
func (h *h2conn) handshake() (*http2.SettingsFrame, error) {
	_ = h.SetDeadline(time.Now().Add(5 * time.Second))
	defer func() { _ = h.SetDeadline(time.Time{}) }()
	if _, err := io.WriteString(h, http2.ClientPreface); err != nil {
		return nil, err
	}
	if err := h.fr.WriteSettings(); err != nil {
		return nil, err
	}
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			return nil, err
		}
		if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
			return sf, h.fr.WriteSettingsAck()
		}
	}
}

// waitGoAway reads frames until a GOAWAY (returned) or the connection
// ends (nil) or d passes (nil).
func (h *h2conn) waitGoAway(d time.Duration) *http2.GoAwayFrame {
	_ = h.SetReadDeadline(time.Now().Add(d))
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			return nil
		}
		if ga, ok := f.(*http2.GoAwayFrame); ok {
			return ga
		}
	}
}

// TestKeepaliveEnforcement: "keepalive enforcement": a client pinging far
// more often than the policy's MinTime is told GOAWAY ENHANCE_YOUR_CALM
// "too_many_pings" and cut off.
func TestKeepaliveEnforcement(t *testing.T) {
	h := start(t, nil)
	c := dialH2From(t, "127.0.0.1", h.addr)
	_, err := c.handshake()
	require.NoError(t, err)

	done := make(chan struct{})
	defer close(done)
	go func() {
		for i := uint64(0); ; i++ {
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			var data [8]byte
			data[7] = byte(i)
			if c.fr.WritePing(false, data) != nil {
				return
			}
		}
	}()
	ga := c.waitGoAway(10 * time.Second)
	require.NotNil(t, ga, "the server sends GOAWAY")
	require.Equal(t, http2.ErrCodeEnhanceYourCalm, ga.ErrCode)
	require.Equal(t, "too_many_pings", string(ga.DebugData()))
}

// TestMaxConcurrentStreams: "max concurrent streams": the server
// advertises its limit in SETTINGS, so one connection cannot open
// unbounded streams (the default, and a configured one).
func TestMaxConcurrentStreams(t *testing.T) {
	for _, tt := range []struct {
		name   string
		limits *Limits
		want   uint32
	}{
		{"default", nil, DefaultLimits().MaxConcurrentStreams},
		{"configured", &Limits{MaxConcurrentStreams: 7, MaxConnectionAge: time.Hour, MaxConnectionAgeGrace: time.Minute, MaxConnectionIdle: time.Hour}, 7},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, func(o *Options) { o.Limits = tt.limits })
			sf, err := dialH2From(t, "127.0.0.1", h.addr).handshake()
			require.NoError(t, err)
			v, ok := sf.Value(http2.SettingMaxConcurrentStreams)
			require.True(t, ok, "SETTINGS_MAX_CONCURRENT_STREAMS is sent")
			require.Equal(t, tt.want, v)
		})
	}
	require.Equal(t, uint32(1000), DefaultLimits().MaxConcurrentStreams)
}

// TestMaxConnectionAge: "connection age": a connection older than
// MaxConnectionAge is sent GOAWAY, and a stream still open on it (a
// WatchCommits-like health Watch) ends with Unavailable once the grace
// has passed, so the client reconnects (commitfeed does).
func TestMaxConnectionAge(t *testing.T) {
	h := start(t, func(o *Options) {
		o.Limits = &Limits{MaxConcurrentStreams: 100, MaxConnectionAge: 500 * time.Millisecond,
			MaxConnectionAgeGrace: 500 * time.Millisecond, MaxConnectionIdle: time.Hour}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	w, err := healthgrpc.NewHealthClient(h.conn).Watch(ctx, &healthgrpc.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = w.Recv()
	require.NoError(t, err, "the first status")
	_, err = w.Recv()
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	require.Less(t, time.Since(start), 5*time.Second, "ended by age + grace, not by the client's deadline")

	// The client reconnects and is served.
	require.Equal(t, healthgrpc.HealthCheckResponse_NOT_SERVING, healthStatus(t, h.conn, ""))

	// A raw connection is told GOAWAY when it reaches the age.
	c := dialH2From(t, "127.0.0.1", h.addr)
	_, err = c.handshake()
	require.NoError(t, err)
	require.NotNil(t, c.waitGoAway(5*time.Second))
}

// TestMaxConnectionIdle: a connection without calls is sent GOAWAY after
// MaxConnectionIdle.
func TestMaxConnectionIdle(t *testing.T) {
	h := start(t, func(o *Options) {
		o.Limits = &Limits{MaxConcurrentStreams: 100, MaxConnectionAge: time.Hour,
			MaxConnectionAgeGrace: time.Minute, MaxConnectionIdle: 300 * time.Millisecond}
	})
	c := dialH2From(t, "127.0.0.1", h.addr)
	_, err := c.handshake()
	require.NoError(t, err)
	require.NotNil(t, c.waitGoAway(5*time.Second))
}

// TestConnectionsPerAddress: beyond MaxConnsPerIP open connections from one
// address, the server closes new ones at once and counts them; other
// addresses are served.
func TestConnectionsPerAddress(t *testing.T) {
	h := start(t, func(o *Options) {
		l := DefaultLimits()
		l.MaxConnsPerIP = 2
		o.Limits = &l
	})
	for range 2 {
		_, err := dialH2From(t, "127.0.0.1", h.addr).handshake()
		require.NoError(t, err, "within the limit")
	}
	_, err := dialH2From(t, "127.0.0.1", h.addr).handshake()
	require.Error(t, err, "beyond the limit: closed")
	_, err = dialH2From(t, "127.0.0.2", h.addr).handshake()
	require.NoError(t, err, "another address is served")
	require.Regexp(t, `rpc_server_connections_refused_total\{[^}]*reason="conn_limit"[^}]*\} 1\b`, scrape(t, h.tel))
}

func TestLimitsFlags(t *testing.T) {
	var l Limits
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	l.RegisterFlags(fs)
	require.NoError(t, fs.Parse(nil))
	require.Equal(t, DefaultLimits(), l)
	require.NoError(t, l.Validate())
	d := DefaultLimits()
	require.Equal(t, 30*time.Minute, d.MaxConnectionAge)
	require.Equal(t, 5*time.Minute, d.MaxConnectionAgeGrace)
	require.Equal(t, 15*time.Minute, d.MaxConnectionIdle)
	require.Equal(t, 128, d.MaxConnsPerIP)
	for _, name := range []string{"grpc-max-concurrent-streams", "grpc-max-connection-age", "grpc-max-connection-age-grace", "grpc-max-connection-idle", "grpc-max-conns-per-ip"} {
		require.NotNil(t, fs.Lookup(name), name)
	}
	for name, mutate := range map[string]func(*Limits){
		"streams 0":      func(l *Limits) { l.MaxConcurrentStreams = 0 },
		"age 0":          func(l *Limits) { l.MaxConnectionAge = 0 },
		"grace negative": func(l *Limits) { l.MaxConnectionAgeGrace = -time.Second },
		"idle 0":         func(l *Limits) { l.MaxConnectionIdle = 0 },
		"conns negative": func(l *Limits) { l.MaxConnsPerIP = -1 },
	} {
		l := DefaultLimits()
		mutate(&l)
		require.Error(t, l.Validate(), name)
	}
}
