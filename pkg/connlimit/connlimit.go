// Package connlimit caps the connections a listener keeps open per client
// address, so that one client (a flood, or many slow requests) cannot take
// every file descriptor and goroutine of a server while others wait.
//
// A connection beyond the cap is closed as soon as it is accepted, before
// the server reads a byte of it: the server never spends a goroutine on it,
// and the client sees the connection close (or reset) without an answer.
// The count is by IP address, not by port: a client opening many
// connections uses many ports. Behind a proxy or load balancer every client
// shares the proxy's address, so the cap must then be raised or turned off.
package connlimit

import (
	"net"
	"sync"
)

// Listener is a net.Listener that refuses connections beyond a cap per
// remote IP address.
type Listener struct {
	net.Listener
	max       int
	onRefused func(net.Addr)

	mu   sync.Mutex
	open map[string]int
}

// NewListener wraps inner so that at most max connections per remote IP
// address are open at once; max <= 0 means no cap. onRefused (may be nil)
// is called for each connection closed for being over the cap, before it
// is closed.
func NewListener(inner net.Listener, max int, onRefused func(net.Addr)) *Listener {
	return &Listener{Listener: inner, max: max, onRefused: onRefused, open: map[string]int{}}
}

// Accept returns the next connection within its address's cap, closing
// those over it.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.max <= 0 {
			return c, nil
		}
		key := addrKey(c.RemoteAddr())
		l.mu.Lock()
		ok := l.open[key] < l.max
		if ok {
			l.open[key]++
		}
		l.mu.Unlock()
		if ok {
			return &conn{Conn: c, l: l, key: key}, nil
		}
		if l.onRefused != nil {
			l.onRefused(c.RemoteAddr())
		}
		_ = c.Close()
	}
}

// Open is how many connections from ip are open (counted by the cap).
func (l *Listener) Open(ip string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open[ip]
}

func (l *Listener) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[key]--; l.open[key] <= 0 {
		delete(l.open, key) // the map holds only addresses with open connections
	}
}

// addrKey is the IP address of a remote address ("host" of host:port).
func addrKey(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// conn gives its slot back when closed, once however often it is closed.
type conn struct {
	net.Conn
	l    *Listener
	key  string
	once sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.key) })
	return err
}

// CloseWrite half-closes TCP connections, which net/http uses to flush an
// answer before closing a connection whose request it did not read whole.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
