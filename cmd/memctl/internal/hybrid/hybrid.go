// Package hybrid ranks entities for `memctl search --expand`, the graph step
// of the hybrid retrieval of ai-skills-memory-protocol §5.3 and §10 (seed
// hits → graph neighbours → ranked): BM25 hits give seed entities, the
// entity graph gives their neighbourhood, and a score spreads from the
// seeds through it.
//
// The score is spreading activation (a depth-limited personalised
// PageRank without restarts): each seed entity starts with the BM25 score
// of the hit(s) that named it; at each hop every node passes Decay (½) of
// the activation it received on the previous hop, split evenly among its
// neighbours in the subgraph; an entity's score is everything that reached
// it within the depth. Splitting by degree keeps hubs (the outcome
// "success" every good episode links to) from flooding the ranking with
// everything that touches them, while an entity many seeds reach through
// specific links (a skill three matching episodes used) rises. It is
// deterministic: ties break by distance, then entity id.
package hybrid

import (
	"cmp"
	"slices"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// Decay is the share of its activation a node passes on at each hop.
const Decay = 0.5

// Seed is an entity a search hit named, with the hit's score.
type Seed struct {
	EntityID string
	Score    float64
}

// Ranked is an entity of the result.
type Ranked struct {
	EntityID string
	Score    float64
	// Distance is the fewest hops from any seed (0 for a seed).
	Distance int
	// Via are the seeds whose activation reached it, best first.
	Via []string
}

// Graph is the union of the subgraphs the graph service returned.
type Graph struct {
	adj map[string][]string
}

// NewGraph builds the undirected adjacency of edges (edges that ended,
// valid_to set, are left out; parallel edges count once).
func NewGraph(edges []*memoryv1.Edge) *Graph {
	g := &Graph{adj: map[string][]string{}}
	seen := map[[2]string]bool{}
	for _, e := range edges {
		if e.GetValidTo() != nil {
			continue
		}
		a, b := e.GetFromEntityId(), e.GetToEntityId()
		if a == b || a == "" || b == "" {
			continue
		}
		if a > b {
			a, b = b, a
		}
		if seen[[2]string{a, b}] {
			continue
		}
		seen[[2]string{a, b}] = true
		g.adj[a] = append(g.adj[a], b)
		g.adj[b] = append(g.adj[b], a)
	}
	for k := range g.adj {
		slices.Sort(g.adj[k])
	}
	return g
}

// Neighbors are id's neighbours, sorted.
func (g *Graph) Neighbors(id string) []string { return g.adj[id] }

// Degree is the number of neighbours of id.
func (g *Graph) Degree(id string) int { return len(g.adj[id]) }

// Rank spreads the seeds' scores through g for depth hops. allowed, when
// not nil, keeps the walk inside a subgraph (context scoping): activation
// never enters an entity it refuses, and such entities are not ranked.
func Rank(g *Graph, seeds []Seed, depth int, allowed func(id string) bool) []Ranked {
	ok := func(id string) bool { return allowed == nil || allowed(id) }
	score := map[string]float64{}
	dist := map[string]int{}
	via := map[string]map[string]float64{}
	add := func(id, seed string, v float64, d int) {
		score[id] += v
		if old, seen := dist[id]; !seen || d < old {
			dist[id] = d
		}
		if via[id] == nil {
			via[id] = map[string]float64{}
		}
		via[id][seed] += v
	}
	// Seeds named by several hits add up.
	start := map[string]float64{}
	var order []string
	for _, s := range seeds {
		if !ok(s.EntityID) || s.Score <= 0 {
			continue
		}
		if _, seen := start[s.EntityID]; !seen {
			order = append(order, s.EntityID)
		}
		start[s.EntityID] += s.Score
	}
	for _, seed := range order {
		frontier := map[string]float64{seed: start[seed]}
		add(seed, seed, start[seed], 0)
		for hop := 1; hop <= depth; hop++ {
			next := map[string]float64{}
			for _, n := range sortedKeys(frontier) {
				var nbrs []string
				for _, m := range g.adj[n] {
					if ok(m) {
						nbrs = append(nbrs, m)
					}
				}
				if len(nbrs) == 0 {
					continue
				}
				share := frontier[n] * Decay / float64(len(nbrs))
				for _, m := range nbrs {
					next[m] += share
				}
			}
			for _, m := range sortedKeys(next) {
				add(m, seed, next[m], hop)
			}
			frontier = next
		}
	}
	out := make([]Ranked, 0, len(score))
	for id, s := range score {
		r := Ranked{EntityID: id, Score: s, Distance: dist[id], Via: sortedKeys(via[id])}
		slices.SortStableFunc(r.Via, func(a, b string) int { return cmp.Compare(via[id][b], via[id][a]) })
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Ranked) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Distance, b.Distance); c != 0 {
			return c
		}
		return cmp.Compare(a.EntityID, b.EntityID)
	})
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
