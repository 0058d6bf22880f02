package temporalgraph

import (
	"slices"
	"sync"
)

// sortedLists keeps, for the nodes with the most of something (edges,
// refs), that list sorted, for NodePage: a shared entity has thousands of
// edges and refs, and sorting them for every page cost more than building
// the page. A node's list leaves the cache whenever the list changes
// (drop); the cache holds at most sortedMaxItems items. Callers must not
// change a list they get.
type sortedLists[T any] struct {
	mu    sync.Mutex // NodePage runs under its caller's read lock, concurrently
	lists map[string][]T
	items int
}

const (
	// sortedMinItems is the shortest list worth keeping: a short one
	// sorts in microseconds.
	sortedMinItems = 256
	// sortedMaxItems bounds each cache: 6 MiB of edge keys (48 bytes
	// each), 4 MiB of refs' string headers.
	sortedMaxItems = 1 << 17
)

// get returns id's list sorted by cmp: the kept one, or build's sorted in
// place (kept if it is long and there is room). n is the list's length,
// known before it is built.
func (c *sortedLists[T]) get(id string, n int, build func() []T, cmp func(a, b T) int) []T {
	if n >= sortedMinItems {
		c.mu.Lock()
		list, ok := c.lists[id]
		c.mu.Unlock()
		if ok {
			return list
		}
	}
	list := build()
	slices.SortFunc(list, cmp)
	if len(list) < sortedMinItems || len(list) > sortedMaxItems {
		return list
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for other, l := range c.lists {
		if c.items+len(list) <= sortedMaxItems {
			break
		}
		c.items -= len(l)
		delete(c.lists, other)
	}
	if c.lists == nil {
		c.lists = map[string][]T{}
	}
	if _, ok := c.lists[id]; !ok {
		c.lists[id] = list
		c.items += len(list)
	}
	return list
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
