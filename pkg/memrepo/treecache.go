package memrepo

import (
	"container/list"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// decodedTree is a tree object decoded once and shared by every reader
// (trees are immutable, so caching by hash is always correct). Readers must
// not modify entries.
type decodedTree struct {
	entries []object.TreeEntry
	// index finds an entry by name in big trees (memory/ holds one entry
	// per agent); small trees are scanned.
	index map[string]int
	cost  int64 // approximate bytes held
}

// indexedTreeMin is the size from which a tree gets a name index.
const indexedTreeMin = 16

func newDecodedTree(entries []object.TreeEntry) *decodedTree {
	t := &decodedTree{entries: entries, cost: 64}
	for _, e := range entries {
		t.cost += int64(len(e.Name)) + 48 // name + hash + mode + slice slot
	}
	if len(entries) >= indexedTreeMin {
		t.index = make(map[string]int, len(entries))
		for i, e := range entries {
			t.index[e.Name] = i
		}
		t.cost += int64(len(entries)) * 48 // map buckets
	}
	return t
}

// find returns the entry called name.
func (t *decodedTree) find(name string) (object.TreeEntry, bool) {
	if t.index != nil {
		i, ok := t.index[name]
		if !ok {
			return object.TreeEntry{}, false
		}
		return t.entries[i], true
	}
	for _, e := range t.entries {
		if e.Name == name {
			return e, true
		}
	}
	return object.TreeEntry{}, false
}

// treeCache is an LRU of decoded trees bounded by approximate bytes.
// Decoding big trees on every path lookup was over half the CPU of a read
// (issue #9 profile: object.(*Tree).Decode 56 %, most of the rest GC).
type treeCache struct {
	mu    sync.Mutex
	max   int64
	size  int64
	order *list.List // front = most recently used; values are *treeCacheItem
	items map[plumbing.Hash]*list.Element
}

type treeCacheItem struct {
	hash plumbing.Hash
	tree *decodedTree
}

// treeCacheSize bounds the decoded-tree cache: the hot path trees of
// thousands of agents (root, memory/, each agent folder) fit easily.
const treeCacheSize = 32 << 20

func newTreeCache(max int64) *treeCache {
	return &treeCache{max: max, order: list.New(), items: map[plumbing.Hash]*list.Element{}}
}

func (c *treeCache) get(h plumbing.Hash) (*decodedTree, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[h]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*treeCacheItem).tree, true
}

func (c *treeCache) put(h plumbing.Hash, t *decodedTree) {
	if t.cost > c.max/4 {
		return // a giant tree would evict everything else
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[h]; ok {
		return
	}
	c.items[h] = c.order.PushFront(&treeCacheItem{hash: h, tree: t})
	c.size += t.cost
	for c.size > c.max {
		last := c.order.Back()
		item := last.Value.(*treeCacheItem)
		c.order.Remove(last)
		delete(c.items, item.hash)
		c.size -= item.tree.cost
	}
}
