package entitygraph

import (
	"sync"

	"github.com/garden-bloom/memory/pkg/lru"
	"github.com/garden-bloom/memory/pkg/membudget"
)

// hotSet is one of the graph's caches (temporalgraph.Graph.HotSet), as
// the process's memory budget and metrics see it: whichever graph is
// current, since a rebuild or a loaded snapshot makes a new one, which
// gets the size the budget gave (setGraph).
type hotSet struct {
	s    *Service
	i    int // the cache's position in HotSet
	name string

	mu  sync.Mutex
	max int64 // 0: the graph's own default
}

func (h *hotSet) cache() membudget.Cache {
	h.s.mu.RLock()
	defer h.s.mu.RUnlock()
	return h.s.graph.HotSet()[h.i].Cache
}

func (h *hotSet) Stats() lru.Stats { return h.cache().Stats() }

func (h *hotSet) Resize(maxBytes int64) {
	h.mu.Lock()
	h.max = maxBytes
	h.mu.Unlock()
	h.cache().Resize(maxBytes)
}

// size applies the budget's size, if any, to the cache of a new graph.
func (h *hotSet) size(c membudget.Cache) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.max > 0 {
		c.Resize(h.max)
	}
}

// Caches are the service's caches: the graph's hot set, for memory.cache.*
// (attribute cache) and the process's memory budget.
func (s *Service) Caches() []membudget.Named {
	out := make([]membudget.Named, len(s.hot))
	for i, h := range s.hot {
		out[i] = membudget.Named{Name: h.name, Cache: h}
	}
	return out
}
