package ratelimit

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// clock is a settable fake time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Unix(1_700_000_000, 0)} }

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func TestLimiterBurstThenRate(t *testing.T) {
	clk := newClock()
	l := NewLimiter(10, 3, 0, clk.now) // a token every 100ms
	for i := range 3 {
		ok, _ := l.Allow("a")
		require.True(t, ok, "call %d is within the burst", i)
	}
	ok, wait := l.Allow("a")
	require.False(t, ok)
	require.Equal(t, 100*time.Millisecond, wait, "a full token is missing")

	clk.advance(40 * time.Millisecond)
	ok, wait = l.Allow("a")
	require.False(t, ok)
	require.Equal(t, 60*time.Millisecond, wait, "the wait shrinks as the bucket refills")

	clk.advance(60 * time.Millisecond)
	ok, _ = l.Allow("a")
	require.True(t, ok, "after the announced wait a token is there")
	ok, _ = l.Allow("a")
	require.False(t, ok)

	ok, _ = l.Allow("b")
	require.True(t, ok, "keys have their own buckets")

	clk.advance(time.Hour)
	for range 3 {
		ok, _ = l.Allow("a")
		require.True(t, ok)
	}
	ok, _ = l.Allow("a")
	require.False(t, ok, "a bucket never holds more than the burst")
}

func TestLimiterFractionalRate(t *testing.T) {
	clk := newClock()
	l := NewLimiter(0.5, 1, 0, clk.now)
	ok, _ := l.Allow("a")
	require.True(t, ok)
	ok, wait := l.Allow("a")
	require.False(t, ok)
	require.Equal(t, 2*time.Second, wait)
}

func TestLimiterDisabled(t *testing.T) {
	for _, rate := range []float64{0, -1} {
		l := NewLimiter(rate, 10, 0, nil)
		require.Nil(t, l)
		for range 1000 {
			ok, wait := l.Allow("a")
			require.True(t, ok)
			require.Zero(t, wait)
		}
		require.Zero(t, l.Len())
	}
}

func TestLimiterForgetsIdleBuckets(t *testing.T) {
	clk := newClock()
	l := NewLimiter(10, 5, 0, clk.now) // empty to full in 500ms
	for i := range 100 {
		l.Allow(fmt.Sprint("idle-", i))
	}
	require.Equal(t, 100, l.Len())

	clk.advance(499 * time.Millisecond)
	l.Allow("busy")
	require.Equal(t, 101, l.Len(), "not yet full: kept")

	clk.advance(time.Millisecond)
	l.Allow("busy")
	require.Equal(t, 1, l.Len(), "full buckets are dropped, the one in use stays")

	// Dropping a full bucket loses nothing: the key starts full again.
	for range 5 {
		ok, _ := l.Allow("idle-1")
		require.True(t, ok)
	}
	ok, _ := l.Allow("idle-1")
	require.False(t, ok)
}

func TestLimiterMaxKeys(t *testing.T) {
	clk := newClock()
	l := NewLimiter(1, 2, 10, clk.now)
	for i := range 1000 {
		l.Allow(fmt.Sprint("k", i))
		require.LessOrEqual(t, l.Len(), 10)
	}
	// The most recently used keys are the ones kept.
	ok, _ := l.Allow("k999")
	require.True(t, ok, "second call of k999: still within its burst of 2")
	ok, _ = l.Allow("k999")
	require.False(t, ok, "k999's bucket was kept, so its burst is spent")
}

func TestLimiterConcurrent(t *testing.T) {
	clk := newClock()
	l := NewLimiter(1, 50, 0, clk.now)
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if ok, _ := l.Allow("shared"); ok {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	require.Equal(t, 50, allowed, "exactly the burst passes while the clock stands still")
}
