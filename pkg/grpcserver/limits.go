package grpcserver

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"
)

// Limits bound what one client connection may hold of a server. The
// keepalive enforcement (keepaliveMinTime, pings allowed without streams)
// is not among them: it must match this package's own clients' ping
// interval, or the server would cut them (too_many_pings).
type Limits struct {
	// MaxConcurrentStreams caps the calls in flight on one connection;
	// further ones wait on the client for a free stream. The REST edge
	// multiplexes all its calls to a service over one connection, so this
	// is high.
	MaxConcurrentStreams uint32
	// MaxConnectionAge sends GOAWAY to a connection this old (± 10 %
	// jitter), so clients spread over new replicas and no connection
	// lives for ever; clients reconnect without failing a call.
	MaxConnectionAge time.Duration
	// MaxConnectionAgeGrace is how long calls on an aged connection may
	// still run before it is closed. Streams outlive any grace:
	// WatchCommits followers (commitfeed) are cut every age + grace and
	// reconnect at once (100 ms), catching up from the commit they
	// missed, since their callers also poll.
	MaxConnectionAgeGrace time.Duration
	// MaxConnectionIdle sends GOAWAY to a connection without calls for
	// this long (clients redial on their next call).
	MaxConnectionIdle time.Duration
	// MaxConnsPerIP caps open connections per client IP address (0: none).
	// gRPC clients keep one connection per server, so a handful per
	// address is normal; all of one host's memoryd processes and tools
	// share its address.
	MaxConnsPerIP int
}

// DefaultLimits are the flags' defaults.
func DefaultLimits() Limits {
	return Limits{
		MaxConcurrentStreams:  1000,
		MaxConnectionAge:      30 * time.Minute,
		MaxConnectionAgeGrace: 5 * time.Minute,
		MaxConnectionIdle:     15 * time.Minute,
		MaxConnsPerIP:         128,
	}
}

// RegisterFlags adds the --grpc-max-* connection flags.
func (l *Limits) RegisterFlags(fs *flag.FlagSet) {
	d := DefaultLimits()
	l.MaxConcurrentStreams = d.MaxConcurrentStreams
	fs.Var((*uint32Value)(&l.MaxConcurrentStreams), "grpc-max-concurrent-streams", "gRPC listener: calls (`streams`) in flight per connection; more wait on the client")
	fs.DurationVar(&l.MaxConnectionAge, "grpc-max-connection-age", d.MaxConnectionAge, "gRPC listener: connections this old (± 10%) are told GOAWAY and clients reconnect, so load spreads over new replicas")
	fs.DurationVar(&l.MaxConnectionAgeGrace, "grpc-max-connection-age-grace", d.MaxConnectionAgeGrace, "gRPC listener: how long calls on an aged connection may still run before it is closed; "+
		"WatchCommits streams are then cut and their followers reconnect at once")
	fs.DurationVar(&l.MaxConnectionIdle, "grpc-max-connection-idle", d.MaxConnectionIdle, "gRPC listener: connections without calls this long are told GOAWAY")
	fs.IntVar(&l.MaxConnsPerIP, "grpc-max-conns-per-ip", d.MaxConnsPerIP, "gRPC listener: open connections allowed per client IP address; more are closed at once (0 = no limit)")
}

// Validate checks the flags.
func (l Limits) Validate() error {
	if l.MaxConcurrentStreams == 0 {
		return errors.New("--grpc-max-concurrent-streams must be positive")
	}
	for name, d := range map[string]time.Duration{
		"--grpc-max-connection-age":  l.MaxConnectionAge,
		"--grpc-max-connection-idle": l.MaxConnectionIdle,
	} {
		if d <= 0 {
			return fmt.Errorf("%s must be positive", name)
		}
	}
	if l.MaxConnectionAgeGrace < 0 {
		return errors.New("--grpc-max-connection-age-grace must not be negative")
	}
	if l.MaxConnsPerIP < 0 {
		return errors.New("--grpc-max-conns-per-ip must not be negative (0 = no limit)")
	}
	return nil
}

// uint32Value is a flag.Value of a uint32 (grpc's stream count type).
type uint32Value uint32

func (v *uint32Value) String() string { return strconv.FormatUint(uint64(*v), 10) }

func (v *uint32Value) Set(s string) error {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return errors.New("not a number from 0 to 4294967295")
	}
	*v = uint32Value(n)
	return nil
}
