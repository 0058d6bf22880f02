package temporalgraph

import (
	"slices"
	"sync"

	"github.com/garden-bloom/memory/pkg/lru"
)

// sortedLists keeps, for the nodes with the most of something (edges,
// refs), that list sorted, for NodePage: a shared entity has thousands of
// edges and refs, and sorting them for every page cost more than building
// the page. A node's list leaves the cache whenever the list changes
// (drop); the cache holds at most max items (sortedMaxItems until the
// process's memory budget resizes it: it is the graph's hot set there).
// Callers must not change a list they get.
type sortedLists[T any] struct {
	mu        sync.Mutex // NodePage runs under its caller's read lock, concurrently
	lists     map[string][]T
	items     int
	max       int
	itemBytes int64 // what one item costs
	// What Stats reports.
	hits, misses, evictions int64
}

func newSortedLists[T any](itemBytes int64) sortedLists[T] {
	return sortedLists[T]{max: sortedMaxItems, itemBytes: itemBytes}
}

const (
	// sortedMinItems is the shortest list worth keeping: a short one
	// sorts in microseconds.
	sortedMinItems = 256
	// sortedMaxItems bounds each cache until the memory budget sizes it:
	// 6 MiB of edge keys (48 bytes each), 2 MiB of refs' string headers.
	sortedMaxItems = 1 << 17
)

// get returns id's list sorted by cmp: the kept one, or build's sorted in
// place (kept if it is long and there is room). n is the list's length,
// known before it is built.
func (c *sortedLists[T]) get(id string, n int, build func() []T, cmp func(a, b T) int) []T {
	if n >= sortedMinItems {
		c.mu.Lock()
		list, ok := c.lists[id]
		if ok {
			c.hits++
		} else {
			c.misses++
		}
		c.mu.Unlock()
		if ok {
			return list
		}
	}
	list := build()
	slices.SortFunc(list, cmp)
	if len(list) < sortedMinItems {
		return list
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(list) > c.max {
		return list
	}
	c.evict(c.max - len(list))

	if c.lists == nil {
		c.lists = map[string][]T{}
	}
	if _, ok := c.lists[id]; !ok {
		c.lists[id] = list
		c.items += len(list)
	}
	return list
}

// evict drops lists (any) until at most items are kept.
func (c *sortedLists[T]) evict(items int) {
	for other, l := range c.lists {
		if c.items <= items {
			break
		}
		c.items -= len(l)
		delete(c.lists, other)
		c.evictions++
	}
}

// Stats are the cache's figures, in bytes (membudget.Cache).
func (c *sortedLists[T]) Stats() lru.Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return lru.Stats{Entries: len(c.lists), Bytes: int64(c.items) * c.itemBytes, MaxBytes: int64(c.max) * c.itemBytes,
		Hits: c.hits, Misses: c.misses, Evictions: c.evictions}
}

// Resize bounds the cache to maxBytes (membudget.Cache).
func (c *sortedLists[T]) Resize(maxBytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.max = int(maxBytes / c.itemBytes)
	c.evict(c.max)
}

// drop forgets the lists of ids, which changed.
func (c *sortedLists[T]) drop(ids ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if l, ok := c.lists[id]; ok {
			c.items -= len(l)
			delete(c.lists, id)
		}
	}
}
