package modules

import (
	"errors"
	"sync/atomic"
)

// CaughtUp is the readiness of a module that follows the repository: not
// ready until its first catch-up with main succeeded after start, ready
// from then on. It latches on purpose: under a steady stream of commits a
// follower is always a few milliseconds behind, and a readiness that
// flapped with that lag would take healthy replicas out of load balancers.
type CaughtUp struct {
	done    atomic.Bool
	lastErr atomic.Pointer[error]
}

// Observe records the outcome of one catch-up.
func (c *CaughtUp) Observe(err error) {
	if err == nil {
		c.done.Store(true)
		return
	}
	c.lastErr.Store(&err)
}

// Ready is nil once a catch-up succeeded; else why not (the last failure,
// or that the first catch-up is still running).
func (c *CaughtUp) Ready() error {
	if c.done.Load() {
		return nil
	}
	if p := c.lastErr.Load(); p != nil {
		return errors.Join(errNotCaughtUp, *p)
	}
	return errNotCaughtUp
}

var errNotCaughtUp = errors.New("catching up with the repository")
