// Package lru is a least-recently-used cache bounded by the total cost
// (approximate bytes) of its values. It is safe for concurrent use. The
// read plane caches immutable things in it — decoded git trees, reads of an
// agent folder by its tree hash — so a hit is always correct and eviction
// only costs CPU.
package lru

import (
	"container/list"
	"sync"
)

// Cache maps K to V, holding at most Max total cost.
type Cache[K comparable, V any] struct {
	mu    sync.Mutex
	max   int64
	size  int64
	order *list.List // front = most recently used; values are *entry[K, V]
	items map[K]*list.Element
	// What Stats reports: counted under mu, which every Get and Put holds.
	hits, misses, evictions int64
}

type entry[K comparable, V any] struct {
	key   K
	value V
	cost  int64
}

// New returns a cache holding values of total cost up to max.
func New[K comparable, V any](max int64) *Cache[K, V] {
	return &Cache[K, V]{max: max, order: list.New(), items: map[K]*list.Element{}}
}

// Get returns the value of k and marks it recently used.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok {
		c.misses++
		var zero V
		return zero, false
	}
	c.hits++
	c.order.MoveToFront(el)
	return el.Value.(*entry[K, V]).value, true
}

// Put stores v under k with the given cost, evicting the least recently
// used values until the total fits. A value costing more than a quarter of
// the cache is not kept: it would push out everything else.
func (c *Cache[K, V]) Put(k K, v V, cost int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cost > c.max/4 {
		return
	}
	if el, ok := c.items[k]; ok {
		e := el.Value.(*entry[K, V])
		c.size += cost - e.cost
		e.value, e.cost = v, cost
		c.order.MoveToFront(el)
	} else {
		c.items[k] = c.order.PushFront(&entry[K, V]{key: k, value: v, cost: cost})
		c.size += cost
	}
	c.evict()
}

// Delete drops k's value, if held.
func (c *Cache[K, V]) Delete(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.order.Remove(el)
		delete(c.items, k)
		c.size -= el.Value.(*entry[K, V]).cost
	}
}

// evict drops the least recently used values until the total fits.
func (c *Cache[K, V]) evict() {
	for c.size > c.max {
		last := c.order.Back()
		e := last.Value.(*entry[K, V])
		c.order.Remove(last)
		delete(c.items, e.key)
		c.size -= e.cost
		c.evictions++
	}
}

// Resize sets the bound to max, dropping the least recently used values
// until they fit (the process's memory budget sizes its caches with it).
func (c *Cache[K, V]) Resize(max int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.max = max
	c.evict()
}

// Len is the number of values held.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}

// Cost is the total cost of the values held.
func (c *Cache[K, V]) Cost() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

// Stats is what a cache holds and how it has been used since it was made.
type Stats struct {
	// Entries and Bytes are held now (Bytes is the total cost), of at most
	// MaxBytes.
	Entries         int
	Bytes, MaxBytes int64
	// Hits and Misses count Gets; Evictions counts values pushed out to
	// make room (not values replaced under their key).
	Hits, Misses, Evictions int64
}

// Stats returns the cache's figures, for metrics.
func (c *Cache[K, V]) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Entries: len(c.items), Bytes: c.size, MaxBytes: c.max, Hits: c.hits, Misses: c.misses, Evictions: c.evictions}
}
