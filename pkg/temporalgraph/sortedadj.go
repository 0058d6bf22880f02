package temporalgraph

import (
	"slices"
	"sync"
)

// sortedAdj keeps the adjacency lists of the nodes with the most edges
// sorted by key, for NodePage: a shared entity has thousands of edges, and
// sorting them for every page cost more than building the page. A list
// leaves the cache whenever its node gains or loses an edge (indexEdge,
// unindex); the cache holds at most sortedAdjMaxKeys keys.
type sortedAdj struct {
	mu    sync.Mutex // NodePage runs under its caller's read lock, concurrently
	lists map[string][]edgeKey
	keys  int
}

const (
	// sortedAdjMinKeys is the shortest list worth keeping: a short one
	// sorts in microseconds.
	sortedAdjMinKeys = 256
	// sortedAdjMaxKeys bounds the cache: 48 bytes a key, 6 MiB.
	sortedAdjMaxKeys = 1 << 17
)

// get returns id's adjacency list adj sorted by key: the kept copy, or a
// sorted copy (kept if the list is long and there is room). The caller
// must not change it.
func (c *sortedAdj) get(id string, adj []edgeKey) []edgeKey {
	if len(adj) >= sortedAdjMinKeys {
		c.mu.Lock()
		keys, ok := c.lists[id]
		c.mu.Unlock()
		if ok {
			return keys
		}
	}
	keys := slices.Clone(adj)
	slices.SortFunc(keys, compareKeys)
	if len(keys) < sortedAdjMinKeys || len(keys) > sortedAdjMaxKeys {
		return keys
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for other, l := range c.lists {
		if c.keys+len(keys) <= sortedAdjMaxKeys {
			break
		}
		c.keys -= len(l)
		delete(c.lists, other)
	}
	if c.lists == nil {
		c.lists = map[string][]edgeKey{}
	}
	if _, ok := c.lists[id]; !ok {
		c.lists[id] = keys
		c.keys += len(keys)
	}
	return keys
}

// drop forgets the sorted lists of ids, whose edges changed.
func (c *sortedAdj) drop(ids ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if l, ok := c.lists[id]; ok {
			c.keys -= len(l)
			delete(c.lists, id)
		}
	}
}
