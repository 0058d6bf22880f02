package connlimit

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// dialFrom opens a TCP connection to addr from the loopback address src
// (127.0.0.0/8 is all loopback on Linux), so one test can be several
// clients.
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

// closedByServer reports whether the server closed c (EOF or reset) within d
// without sending anything.
func closedByServer(t *testing.T, c net.Conn, d time.Duration) bool {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(d)))
	n, err := c.Read(make([]byte, 1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	require.Zero(t, n, "a refused connection gets no bytes")
	return err != nil
}

// echoServer accepts on l and echoes every connection, like a server that
// serves what it accepts.
func echoServer(t *testing.T, l net.Listener) {
	t.Helper()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
}

func echoes(t *testing.T, c net.Conn) bool {
	t.Helper()
	if _, err := c.Write([]byte("x")); err != nil {
		return false
	}
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	b := make([]byte, 1)
	n, err := c.Read(b)
	return err == nil && n == 1 && b[0] == 'x'
}

// TestPerAddressLimit: a client that opens more connections than the
// per-address limit gets the extra ones closed at once, while its first
// ones and other addresses are served; a closed connection frees its slot;
// every refusal is reported.
func TestPerAddressLimit(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var refused atomic.Int64
	l := NewListener(inner, 3, func(net.Addr) { refused.Add(1) })
	t.Cleanup(func() { _ = l.Close() })
	echoServer(t, l)
	addr := l.Addr().String()

	var held []net.Conn
	for range 3 {
		c := dialFrom(t, "127.0.0.1", addr)
		require.True(t, echoes(t, c), "within the limit: served")
		held = append(held, c)
	}
	extra := dialFrom(t, "127.0.0.1", addr)
	require.True(t, closedByServer(t, extra, 5*time.Second), "beyond the limit: closed at once")
	require.EqualValues(t, 1, refused.Load())

	other := dialFrom(t, "127.0.0.2", addr)
	require.True(t, echoes(t, other), "another address has its own limit")

	for _, c := range held {
		require.True(t, echoes(t, c), "the first connections are still served")
	}
	require.NoError(t, held[0].Close())
	require.Eventually(t, func() bool {
		return echoes(t, dialFrom(t, "127.0.0.1", addr)) // kept open when served
	}, 5*time.Second, 20*time.Millisecond, "a closed connection frees its slot")
	require.Equal(t, 3, l.Open("127.0.0.1"), "the served probe and the two held connections")
}

// TestNoLimit: a limit of 0 or less lets every connection through.
func TestNoLimit(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := NewListener(inner, 0, func(net.Addr) { t.Error("nothing is refused without a limit") })
	t.Cleanup(func() { _ = l.Close() })
	echoServer(t, l)
	for range 20 {
		require.True(t, echoes(t, dialFrom(t, "127.0.0.1", l.Addr().String())))
	}
}

// TestCloseTwiceCountsOnce: closing a connection twice (net/http does so on
// some paths) frees one slot, not two.
func TestCloseTwiceCountsOnce(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := NewListener(inner, 2, nil)
	t.Cleanup(func() { _ = l.Close() })
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dialFrom(t, "127.0.0.1", l.Addr().String())
	dialFrom(t, "127.0.0.1", l.Addr().String())
	a, b := <-accepted, <-accepted
	require.Equal(t, 2, l.Open("127.0.0.1"))
	require.NoError(t, a.Close())
	_ = a.Close()
	require.Equal(t, 1, l.Open("127.0.0.1"))
	require.NoError(t, b.Close())
	require.Equal(t, 0, l.Open("127.0.0.1"))
}
