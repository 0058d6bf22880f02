package temporalgraph

import (
	"unsafe"

	"github.com/garden-bloom/memory/pkg/lru"
)

// pageCache keeps NodePage's pages of now, each valid for the graph
// version it was built at: a commit changes the version, so no page
// survives a change it may not show, and nothing has to know which pages
// a commit touched. Between commits — a read plane serving reads, or a
// write plane that commits a few times a second — the same shared entity
// asked for again (its thousands of edges ordered, each page's evidence
// picked out of maps) costs a lookup. A process's memory budget sizes it
// (HotSet, "entity_graph.pages").
type pageCache struct {
	*lru.Cache[pageKey, *cachedPage]
}

type pageKey struct {
	id                       string
	skip, limit, maxEvidence int
}

type cachedPage struct {
	version uint64
	node    Node
	edges   []Edge
	total   int
	ok      bool
}

// pageCacheSize bounds the cache until the memory budget sizes it.
const pageCacheSize = 16 << 20

func newPageCache() pageCache {
	return pageCache{lru.New[pageKey, *cachedPage](pageCacheSize)}
}

// get returns the page of key built at version.
func (c pageCache) get(key pageKey, version uint64) (*cachedPage, bool) {
	p, ok := c.Get(key)
	return p, ok && p.version == version
}

// put keeps p, at about what it holds: its strings are the graph's own
// (shared), so headers and the evidence, not text.
func (c pageCache) put(key pageKey, p *cachedPage) {
	const header = int64(unsafe.Sizeof(""))
	cost := int64(unsafe.Sizeof(*p)) + int64(len(key.id)) + header*int64(len(p.node.Refs)+len(p.node.Aliases))
	for _, e := range p.edges {
		cost += int64(unsafe.Sizeof(e)) + int64(len(e.Evidence))*int64(unsafe.Sizeof(Evidence{}))
	}
	c.Put(key, p, cost)
}
