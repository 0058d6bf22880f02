package httplimit

import (
	"errors"
	"flag"
	"fmt"
	"time"
)

// Config holds the timeouts and the per-address connection cap of an HTTP
// server. Every timeout is required: a zero one would let a slow client
// hold a connection for ever.
type Config struct {
	// ReadHeaderTimeout bounds reading a request's line and headers, from
	// the connection's first byte (or the next request's on a keep-alive
	// connection).
	ReadHeaderTimeout time.Duration
	// BodyReadTimeout is the per-read deadline of a request body: each read
	// must bring bytes within it, so a body that stops is cut early.
	BodyReadTimeout time.Duration
	// BodyTimeout bounds reading a whole body, from the end of the
	// headers, however steadily it trickles in.
	BodyTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that sends no next request.
	IdleTimeout time.Duration
	// WriteTimeout bounds a response, from the end of the request's headers
	// to its last byte written; on LongWrites routes it bounds each write
	// instead. It must be longer than BodyTimeout, so a 408 can still be
	// written, and than any handler's own deadline (--rest-timeout).
	WriteTimeout time.Duration
	// MaxConnsPerIP caps open connections per client IP address (0: none).
	MaxConnsPerIP int
}

// Defaults of the flags: well above what a healthy client needs (a REST
// body of a few MiB arrives in well under a second on a LAN, a 4 MiB one in
// about 30 s at 1 Mbit/s), well below what lets a slow client pin a
// connection: the issue that asked for them saw one byte every 2 s hold a
// request open for minutes.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultBodyReadTimeout   = 10 * time.Second
	DefaultBodyTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultWriteTimeout      = 60 * time.Second
	// DefaultMaxConnsPerIP leaves room for a busy client's connection pool
	// (Go's and most HTTP clients open one connection per request in
	// flight) and stops one address from holding thousands.
	DefaultMaxConnsPerIP = 256
)

// DefaultConfig is the configuration the flags default to.
func DefaultConfig() Config {
	return Config{
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		BodyReadTimeout:   DefaultBodyReadTimeout,
		BodyTimeout:       DefaultBodyTimeout,
		IdleTimeout:       DefaultIdleTimeout,
		WriteTimeout:      DefaultWriteTimeout,
		MaxConnsPerIP:     DefaultMaxConnsPerIP,
	}
}

// RegisterFlags adds the --http-* limit flags.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	d := DefaultConfig()
	fs.DurationVar(&c.ReadHeaderTimeout, "http-read-header-timeout", d.ReadHeaderTimeout, "HTTP listener: time to read a request's line and headers; a client still sending them is cut without an answer")
	fs.DurationVar(&c.BodyReadTimeout, "http-body-read-timeout", d.BodyReadTimeout, "HTTP listener: each read of a request body must bring bytes within this, or the request gets 408 and its connection is closed")
	fs.DurationVar(&c.BodyTimeout, "http-body-timeout", d.BodyTimeout, "HTTP listener: time to read a whole request body from the end of its headers, however steadily it arrives; then 408 and the connection is closed "+
		"(REST requests are also bounded by --rest-timeout when it is sooner)")
	fs.DurationVar(&c.IdleTimeout, "http-idle-timeout", d.IdleTimeout, "HTTP listener: a keep-alive connection without a next request is closed after this")
	fs.DurationVar(&c.WriteTimeout, "http-write-timeout", d.WriteTimeout, "HTTP listener: time from the end of a request's headers to the last byte of its answer (longer than --http-body-timeout and --rest-timeout); "+
		"the git endpoint and /debug/pprof take it per write instead, so long transfers that make progress are not cut")
	fs.IntVar(&c.MaxConnsPerIP, "http-max-conns-per-ip", d.MaxConnsPerIP, "HTTP listener: open connections allowed per client IP address; more are closed at once "+
		"(0 = no limit; behind a proxy or load balancer all clients share its address)")
}

// Validate checks the flags.
func (c Config) Validate() error {
	for name, d := range map[string]time.Duration{
		"--http-read-header-timeout": c.ReadHeaderTimeout,
		"--http-body-read-timeout":   c.BodyReadTimeout,
		"--http-body-timeout":        c.BodyTimeout,
		"--http-idle-timeout":        c.IdleTimeout,
		"--http-write-timeout":       c.WriteTimeout,
	} {
		if d <= 0 {
			return fmt.Errorf("%s must be positive (every HTTP timeout is set)", name)
		}
	}
	if c.WriteTimeout <= c.BodyTimeout {
		return fmt.Errorf("--http-write-timeout %s must be longer than --http-body-timeout %s, or a slow body's 408 could not be written", c.WriteTimeout, c.BodyTimeout)
	}
	if c.MaxConnsPerIP < 0 {
		return errors.New("--http-max-conns-per-ip must not be negative (0 = no limit)")
	}
	return nil
}
