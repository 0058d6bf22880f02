// Package ratelimit limits how many calls each bearer token may make: a
// token bucket per token subject, enforced by gRPC server interceptors that
// run after authentication, so direct gRPC callers and the REST edge (which
// forwards the caller's token) are limited alike.
package ratelimit

import (
	"container/list"
	"math"
	"sync"
	"time"
)

// DefaultMaxKeys bounds how many buckets a Limiter keeps. Keys are token
// subjects, which only holders of the signing secret can create, so the
// bound is a safety net rather than the main defence; idle buckets are
// dropped long before it is reached.
const DefaultMaxKeys = 100_000

// Limiter is a set of token buckets keyed by string: each key may make
// Burst calls at once and Rate calls per second on average. It is safe for
// concurrent use.
//
// Memory stays bounded without a background goroutine: buckets are kept in
// least-recently-used order, and every call drops the buckets at the cold
// end that have been idle long enough to be full again (forgetting a full
// bucket changes nothing, since a new one starts full), and, beyond
// maxKeys, the least recently used ones.
type Limiter struct {
	rate     float64       // tokens per second
	burst    float64       // bucket size
	fullIdle time.Duration // idle time after which any bucket is full
	maxKeys  int
	now      func() time.Time

	mu      sync.Mutex
	buckets map[string]*list.Element // of *bucket
	lru     list.List                // front: most recently used
}

type bucket struct {
	key    string
	tokens float64
	last   time.Time
}

// NewLimiter returns a limiter with rate tokens per second and a bucket of
// burst tokens per key. maxKeys <= 0 means DefaultMaxKeys; now nil means
// time.Now. It returns nil, which allows everything, when rate <= 0.
func NewLimiter(rate float64, burst int, maxKeys int, now func() time.Time) *Limiter {
	if rate <= 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return nil
	}
	if burst < 1 {
		burst = 1
	}
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	if now == nil {
		now = time.Now
	}
	return &Limiter{
		rate:     rate,
		burst:    float64(burst),
		fullIdle: durationOf(float64(burst) / rate),
		maxKeys:  maxKeys,
		now:      now,
		buckets:  map[string]*list.Element{},
	}
}

// Allow takes one token from key's bucket. When the bucket is empty it
// returns false and how long until a token will be available. A nil
// Limiter allows everything.
func (l *Limiter) Allow(key string) (ok bool, retryAfter time.Duration) {
	if l == nil {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()

	var b *bucket
	if e, found := l.buckets[key]; found {
		b = e.Value.(*bucket)
		if elapsed := now.Sub(b.last); elapsed > 0 {
			b.tokens = math.Min(l.burst, b.tokens+elapsed.Seconds()*l.rate)
		}
		l.lru.MoveToFront(e)
	} else {
		b = &bucket{key: key, tokens: l.burst}
		l.buckets[key] = l.lru.PushFront(b)
	}
	if now.After(b.last) {
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		ok = true
	} else {
		retryAfter = durationOf((1 - b.tokens) / l.rate)
	}
	l.evict(now)
	return ok, retryAfter
}

// evict drops idle buckets from the cold end, then enforces maxKeys.
func (l *Limiter) evict(now time.Time) {
	for e := l.lru.Back(); e != nil; e = l.lru.Back() {
		b := e.Value.(*bucket)
		if len(l.buckets) <= l.maxKeys && now.Sub(b.last) < l.fullIdle {
			return
		}
		l.lru.Remove(e)
		delete(l.buckets, b.key)
	}
}

// Len is the number of buckets kept.
func (l *Limiter) Len() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// durationOf converts seconds to a Duration, rounded up to the next
// nanosecond so a caller that waits that long finds a token.
func durationOf(seconds float64) time.Duration {
	return time.Duration(math.Ceil(seconds * float64(time.Second)))
}
