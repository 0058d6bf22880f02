package odb

import (
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ObjectSet collects the new objects of a chain, in order and once each.
// Later commits of the chain read the trees of earlier ones from it, since
// nothing is on disk before the whole chain is written (WriteNew).
type ObjectSet struct {
	list   []plumbing.EncodedObject
	byHash map[plumbing.Hash]plumbing.EncodedObject
	// trees holds the entries of the trees built so far (read-only), so the
	// next commit of the chain need not decode them again.
	trees map[plumbing.Hash][]object.TreeEntry
	// treeContent holds the encoded trees built so far, and deltaBases
	// names for a tree the earlier version of the chain it replaced: the
	// pack stores it as a delta against that version (see WriteNew).
	treeContent map[plumbing.Hash][]byte
	deltaBases  map[plumbing.Hash]deltaBase
}

// deltaBase is the tree a new tree may be stored as a delta against, and
// how long the chain of deltas to it would then be.
type deltaBase struct {
	hash  plumbing.Hash
	depth int
}

// MaxTreeDeltaDepth bounds the delta chains a chain's trees form (git's own
// default is 50). A reader resolving the last tree of a long chain cold
// patches each version once, keeping each as the next one's base.
const MaxTreeDeltaDepth = 10

// NewObjectSet returns an empty set.
func NewObjectSet() *ObjectSet {
	return &ObjectSet{
		byHash:      map[plumbing.Hash]plumbing.EncodedObject{},
		trees:       map[plumbing.Hash][]object.TreeEntry{},
		treeContent: map[plumbing.Hash][]byte{},
		deltaBases:  map[plumbing.Hash]deltaBase{},
	}
}

// AddTree records tree h (just added), which replaced orig on its path.
// When orig was built earlier in the chain, h may be stored as a delta
// against it: a commit's memory/ tree differs from the previous commit's
// by the one agent's entry, yet whole it is the largest object a commit
// writes (1,000 agents: 38 KB, ~24 KB compressed).
func (s *ObjectSet) AddTree(h, orig plumbing.Hash, entries []object.TreeEntry, content []byte) {
	if _, seen := s.treeContent[h]; seen {
		return // built before in the chain (a revert): stored as first built
	}
	s.trees[h] = entries
	s.treeContent[h] = content
	if _, built := s.treeContent[orig]; !built {
		return
	}
	if depth := s.deltaBases[orig].depth + 1; depth <= MaxTreeDeltaDepth {
		s.deltaBases[h] = deltaBase{hash: orig, depth: depth}
	}
}

// Tree returns the entries of tree h if it was built earlier in the chain
// (AddTree); they are shared: copy before modifying.
func (s *ObjectSet) Tree(h plumbing.Hash) ([]object.TreeEntry, bool) {
	entries, ok := s.trees[h]
	return entries, ok
}

// Add queues a new object (once per hash) and returns its hash.
func (s *ObjectSet) Add(o plumbing.EncodedObject) plumbing.Hash {
	h := o.Hash()
	if _, ok := s.byHash[h]; !ok {
		s.byHash[h] = o
		s.list = append(s.list, o)
	}
	return h
}

// NewObject returns the object of type t holding content, which it keeps:
// the caller must not modify content afterwards. Such an object hands out
// its content without a copy (SharedContent, TextContent), as a cached
// packed object does, where a plumbing.MemoryObject only hands out copies.
func NewObject(t plumbing.ObjectType, content []byte) plumbing.EncodedObject {
	return &packedObject{h: plumbing.ComputeHash(t, content), t: t, cont: content}
}

// Warm puts the objects of set, once WriteNew has made them durable, into
// the object cache: the next commit reads these trees back as its parent,
// and the followers and the next plan read the files just written, so keep
// them hot.
func (s *Store) Warm(set *ObjectSet) {
	for _, o := range set.list {
		s.cache.put(o)
	}
}
