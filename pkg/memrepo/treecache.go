package memrepo

import (
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/garden-bloom/memory/pkg/lru"
	"github.com/garden-bloom/memory/pkg/membudget"
	"github.com/garden-bloom/memory/pkg/memrepo/internal/odb"
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

// all returns the entries; none for the empty (nil) tree.
func (t *decodedTree) all() []object.TreeEntry {
	if t == nil {
		return nil
	}
	return t.entries
}

// find returns the entry called name; never found in the empty (nil) tree.
func (t *decodedTree) find(name string) (object.TreeEntry, bool) {
	if t == nil {
		return object.TreeEntry{}, false
	}
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

// treeCacheSize bounds the decoded-tree cache (approximate bytes): the hot
// path trees of thousands of agents (root, memory/, each agent folder) fit.
// Without it every path lookup decodes the big trees on its way again
// (memory/ has an entry per agent), and that decoding and its garbage were
// what a read spent its CPU on (issue #9; docs/performance.md).
const treeCacheSize = 32 << 20

// commitCacheSize bounds the decoded-commit cache: every read resolves the
// head commit, several times.
const commitCacheSize = 8 << 20

// caches are a repository's caches. A Lazy makes them before the
// repository opens, so the process's memory budget (membudget) sizes them
// at start whenever the repository appears.
type caches struct {
	trees   *lru.Cache[plumbing.Hash, *decodedTree]
	commits *lru.Cache[plumbing.Hash, *object.Commit]
	objects *lru.Cache[plumbing.Hash, plumbing.EncodedObject]
}

func newCaches() *caches {
	return &caches{trees: lru.New[plumbing.Hash, *decodedTree](treeCacheSize),
		commits: lru.New[plumbing.Hash, *object.Commit](commitCacheSize),
		objects: odb.NewCache()}
}

// named are the caches by their metric names.
func (c *caches) named() []membudget.Named {
	return []membudget.Named{{Name: "git.trees", Cache: c.trees}, {Name: "git.commits", Cache: c.commits},
		{Name: "git.objects", Cache: c.objects}}
}

// Caches are the repository's caches, for the memory budget and metrics.
func (r *Repo) Caches() []membudget.Named { return r.named() }

// tree returns tree h decoded, from the cache when it was seen (nil for the
// zero hash). The result is shared: callers must not modify it.
func (r *Repo) tree(h plumbing.Hash) (*decodedTree, error) {
	if h.IsZero() {
		return nil, nil
	}
	if t, ok := r.trees.Get(h); ok {
		return t, nil
	}
	o, err := r.objs.Get(plumbing.TreeObject, h)
	if err != nil {
		return nil, fmt.Errorf("memrepo: read tree %s: %w", h, err)
	}
	raw, err := odb.SharedContent(o)
	if err != nil {
		return nil, fmt.Errorf("memrepo: read tree %s: %w", h, err)
	}
	entries, err := decodeTree(raw)
	if err != nil {
		return nil, fmt.Errorf("memrepo: decode tree %s: %w", h, err)
	}
	dt := newDecodedTree(entries)
	r.trees.Put(h, dt, dt.cost)
	return dt, nil
}

// decodeTree parses a raw tree object as object.Tree.Decode does, with one
// allocation besides the entries: every name is a substring of one copy
// of the object. memory/ (an entry per agent) is new in every commit, and
// go-git's decoder allocates a read and a string per field of every entry
// (issue #9).
func decodeTree(raw []byte) ([]object.TreeEntry, error) {
	text := string(raw)
	var entries []object.TreeEntry
	for it, off := (rawEntries{b: raw}), 0; ; {
		e, ok, err := it.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return entries, nil
		}
		mode, err := parseMode(e.mode)
		if err != nil {
			return nil, err
		}
		// e.name points into raw at its offset; take the same span of text.
		start := off + len(e.mode) + 1
		name := text[start : start+len(e.name)]
		off = start + len(e.name) + 1 + len(e.hash)
		entries = append(entries, object.TreeEntry{Name: name, Mode: mode, Hash: e.hash})
	}
}

// parseMode parses a tree entry's octal mode; the modes git writes are
// matched without parsing.
func parseMode(b []byte) (filemode.FileMode, error) {
	switch string(b) {
	case "100644":
		return filemode.Regular, nil
	case "40000":
		return filemode.Dir, nil
	case "100755":
		return filemode.Executable, nil
	case "120000":
		return filemode.Symlink, nil
	case "160000":
		return filemode.Submodule, nil
	}
	return filemode.New(string(b))
}
