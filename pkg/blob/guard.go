package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrUnavailable is returned (wrapped, with the cause) by a Guard whose
// store is down: callers answer "retry later" at once instead of waiting
// for the store's own timeouts and retries.
var ErrUnavailable = errors.New("blob: object store unavailable")

// Prober is a store that can check it is reachable and ready (an S3
// bucket exists, a folder is there); a Guard uses it to find the store
// back. Stores without it are probed with a Stat.
type Prober interface {
	Probe(ctx context.Context) error
}

// GuardOptions tune a Guard.
type GuardOptions struct {
	// ProbeEvery is how often a down store is probed (default 1 s).
	ProbeEvery time.Duration
	// ProbeTimeout bounds one probe (default 2 s).
	ProbeTimeout time.Duration
	Logger       *slog.Logger
}

// Guard wraps a Store and tracks whether it is reachable. A failure of the
// store (not a missing key or a bad request) that a probe confirms marks
// it down; while it is
// down every call fails at once with ErrUnavailable, and a probe every
// ProbeEvery brings it back. So an outage costs callers microseconds, not
// the seconds of a network timeout, and a process can start and serve
// everything else while its object store is down.
type Guard struct {
	store Store
	opts  GuardOptions

	mu      sync.Mutex
	probing bool  // a failed call's probe is under way (suspect)
	down    error // the failure that marked it down; nil = up
	since   time.Time
	probe   chan struct{} // closed when the probe loop ends
	cancel  context.CancelFunc
	closed  bool
}

// NewGuard guards s and probes it once, within ProbeTimeout: a store that
// cannot be reached starts down (with a warning), not as an error.
func NewGuard(ctx context.Context, s Store, opts GuardOptions) *Guard {
	if opts.ProbeEvery <= 0 {
		opts.ProbeEvery = time.Second
	}
	if opts.ProbeTimeout <= 0 {
		opts.ProbeTimeout = 2 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	g := &Guard{store: s, opts: opts, since: time.Now()}
	pctx, cancel := context.WithTimeout(ctx, opts.ProbeTimeout)
	defer cancel()
	if err := g.probeOnce(pctx); err != nil {
		g.markDown(err)
	}
	return g
}

// OpenGuarded opens rawURL as Open does, but without reaching an S3
// server first: the Guard's first probe tells whether the store is up, so
// a process starts (and serves what needs no object store) during an
// outage.
func OpenGuarded(ctx context.Context, rawURL string, opts GuardOptions) (*Guard, error) {
	var s Store
	var err error
	if u, perr := url.Parse(rawURL); perr == nil && strings.EqualFold(u.Scheme, "s3") {
		s, err = newS3(rawURL, os.LookupEnv)
	} else {
		s, err = Open(ctx, rawURL)
	}
	if err != nil {
		return nil, err
	}
	return NewGuard(ctx, s, opts), nil
}

// Unwrap returns the guarded store.
func (g *Guard) Unwrap() Store { return g.store }

// Status reports whether the store is up, since when it is in that state,
// and the failure that took it down.
func (g *Guard) Status() (up bool, since time.Time, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.down == nil, g.since, g.down
}

// Close stops probing and closes the guarded store when it holds
// resources.
func (g *Guard) Close() error {
	g.mu.Lock()
	g.closed = true
	cancel, done := g.cancel, g.probe
	g.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	if c, ok := g.store.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func (g *Guard) probeOnce(ctx context.Context) error {
	if p, ok := g.store.(Prober); ok {
		return p.Probe(ctx)
	}
	_, err := g.store.Stat(ctx, "_probe")
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// markDown records a failure and starts the probe loop.
func (g *Guard) markDown(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.down != nil || g.closed {
		if g.down != nil {
			g.down = err // the latest cause is the most useful one
		}
		return
	}
	g.down, g.since = err, time.Now()
	g.opts.Logger.Warn("object store unavailable: calls fail at once until a probe reaches it", "err", err)
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel, g.probe = cancel, make(chan struct{})
	go g.probeLoop(ctx, g.probe)
}

func (g *Guard) probeLoop(ctx context.Context, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(g.opts.ProbeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, g.opts.ProbeTimeout)
		err := g.probeOnce(pctx)
		cancel()
		g.mu.Lock()
		if err != nil {
			g.down = err
			g.mu.Unlock()
			continue
		}
		was := time.Since(g.since)
		g.down, g.since, g.cancel = nil, time.Now(), nil
		g.mu.Unlock()
		g.opts.Logger.Info("object store reachable again", "down_for", was.Round(time.Millisecond))
		return
	}
}

// check fails at once while the store is down.
func (g *Guard) check() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.down != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, g.down)
	}
	return nil
}

// observe classifies a call's error: a failure of the store marks it down
// and is returned wrapping ErrUnavailable; the caller's mistakes and
// cancellations pass through unchanged.
func (g *Guard) observe(ctx context.Context, err error) error {
	if !failed(ctx, err) || errors.Is(err, ErrUnavailable) {
		return err
	}
	g.suspect()
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// suspect probes the store after a failed call and marks it down only when
// the probe fails too: one failed call (a server restarting, a dropped
// connection) must not fail every call for a probe interval.
func (g *Guard) suspect() {
	g.mu.Lock()
	if g.down != nil || g.closed || g.probing {
		g.mu.Unlock()
		return
	}
	g.probing = true
	g.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), g.opts.ProbeTimeout)
		err := g.probeOnce(ctx)
		cancel()
		g.mu.Lock()
		g.probing = false
		g.mu.Unlock()
		if err != nil {
			g.markDown(err)
		}
	}()
}

// DiskFull reports whether err is a full disk (or quota) under the store.
func DiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// errCallerReader marks a Put that failed because the caller's reader did.
var errCallerReader = errors.New("blob: the content reader failed")

// callerReader remembers whether the caller's reader failed, so that a Put
// aborted by its own input does not count against the store.
type callerReader struct {
	r      io.Reader
	failed error
}

func (c *callerReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		c.failed = err
	}
	return n, err
}

// Put implements Store.
func (g *Guard) Put(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (Info, error) {
	if err := g.check(); err != nil {
		return Info{}, err
	}
	cr := &callerReader{r: r}
	info, err := g.store.Put(ctx, key, cr, size, opts)
	if err != nil && cr.failed != nil {
		return info, fmt.Errorf("%w: %w", errCallerReader, err)
	}
	return info, g.observe(ctx, err)
}

// Get implements Store.
func (g *Guard) Get(ctx context.Context, key string) (io.ReadCloser, Info, error) {
	if err := g.check(); err != nil {
		return nil, Info{}, err
	}
	rc, info, err := g.store.Get(ctx, key)
	return rc, info, g.observe(ctx, err)
}

// Stat implements Store.
func (g *Guard) Stat(ctx context.Context, key string) (Info, error) {
	if err := g.check(); err != nil {
		return Info{}, err
	}
	info, err := g.store.Stat(ctx, key)
	return info, g.observe(ctx, err)
}

// Delete implements Store.
func (g *Guard) Delete(ctx context.Context, key string) error {
	if err := g.check(); err != nil {
		return err
	}
	return g.observe(ctx, g.store.Delete(ctx, key))
}

// List implements Store.
func (g *Guard) List(ctx context.Context, prefix string) iter.Seq2[Info, error] {
	return func(yield func(Info, error) bool) {
		if err := g.check(); err != nil {
			yield(Info{}, err)
			return
		}
		for info, err := range g.store.List(ctx, prefix) {
			if err != nil {
				yield(Info{}, g.observe(ctx, err))
				return
			}
			if !yield(info, nil) {
				return
			}
		}
	}
}

// Location implements Locator: the guarded store's name for key.
func (g *Guard) Location(key string) string { return Location(g.store, key) }
