package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/garden-bloom/memory/cmd/memctl/internal/hybrid"
	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/enumname"
)

type searchOptions struct {
	agent, at    string
	top          int32
	layer        int32
	kinds        []string
	expand       bool
	depth        int32
	expandTop    int
	contextTexts []string
}

// rankFormula is printed with expanded results so a reader knows what the
// score means (package hybrid has the reasoning).
const rankFormula = "spreading activation: each seed entity starts with the BM25 score of the hit that names it; " +
	"each hop passes half of a node's activation, split evenly among its graph neighbours; " +
	"score = everything that reaches the entity within --depth hops"

func (c *cli) searchCommand() *cobra.Command {
	o := &searchOptions{}
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "BM25 search; --expand adds the entity-graph step of hybrid retrieval",
		Long: `Search memory with BM25 (Search; query syntax in docs/search.md: words rank,
"quoted phrases" are required). Without --layer, Layer 1, logic and sources.

--expand is the hybrid retrieval of the AI Skills Memory Protocol (§5.3, §10):
the hits are the seeds; the entities their lines link to (and, for an episode's
run file, the episode) are looked up in the entity graph; their neighbours
within --depth hops (GetNeighbors) are ranked by spreading activation — each
seed starts with its hit's BM25 score, each hop passes half of a node's score
split evenly among its neighbours, and an entity's score is what reaches it.
With --expand and no --layer, Layer 2 (episode run files, decisions) is
searched too.

--context-text (repeatable, implies --expand) scopes retrieval (§4.2.1,
§10): the agent's context nodes whose last path level occurs in the text are
selected with their descendants; only episodes IN_CONTEXT of them, and the
entities those episodes link to, are seeded and ranked.`,
		Example: `  memctl search "minio versioning" --agent my-agent
  memctl search "flaky test" --agent my-agent --expand --depth 2
  memctl search timeout --agent my-agent --context-text "we are debugging the Go backend" -o json
  memctl search '"open loop"' --layer 2 --top 5`,
		Args: exactArgs(1, "QUERY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.agent = c.agentFlag(cmd, o.agent)
			return c.search(cmd.Context(), o, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.agent, "agent", "", `only this agent's files (default: $MEMCTL_AGENT or the config's agent; --agent "" = every agent)`)
	f.Int32Var(&o.top, "top", 10, "hits to return (at most 100)")
	f.Int32Var(&o.layer, "layer", 0, "1 or 2 (default: Layer 1, logic and sources; with --expand also Layer 2)")
	f.StringArrayVar(&o.kinds, "kind", nil, "only these file kinds: facts, snapshot, open_loops, decisions, run, source, logic (repeatable)")
	f.StringVar(&o.at, "at", "", "search memory as of a commit or RFC 3339 time (needs --agent)")
	f.BoolVar(&o.expand, "expand", false, "add entity-graph neighbours of the hits, ranked")
	f.Int32Var(&o.depth, "depth", 2, "with --expand: graph hops from the seeds (1 to 3)")
	f.IntVar(&o.expandTop, "expand-top", 20, "with --expand: entities to return")
	f.StringArrayVar(&o.contextTexts, "context-text", nil, "scope to the contexts this text names (repeatable; implies --expand)")
	return cmd
}

// expandedSearch is the result of search --expand (-o json).
type expandedSearch struct {
	Query       string            `json:"query"`
	IndexCommit string            `json:"indexCommit"`
	Hits        []json.RawMessage `json:"hits"`
	// ContextScope are the context paths --context-text selected.
	ContextScope []string       `json:"contextScope,omitempty"`
	Seeds        []string       `json:"seeds"`
	Entities     []rankedEntity `json:"entities"`
	Formula      string         `json:"formula"`
	Warnings     []string       `json:"warnings,omitempty"`
}

type rankedEntity struct {
	EntityID string   `json:"entityId"`
	Type     string   `json:"type"`
	Label    string   `json:"label"`
	Score    float64  `json:"score"`
	Distance int      `json:"distance"`
	Via      []string `json:"via"`
	Refs     []string `json:"refs"`
}

func (c *cli) search(ctx context.Context, o *searchOptions, query string) error {
	if len(o.contextTexts) > 0 {
		o.expand = true
	}
	if o.depth < 1 || o.depth > 3 {
		return usagef("--depth must be 1 to 3")
	}
	if o.layer < 0 || o.layer > 2 {
		return usagef("--layer must be 1 or 2")
	}
	cl, err := c.clients(ctx)
	if err != nil {
		return err
	}
	req := &memoryv1.SearchRequest{Query: query, TopK: o.top, AgentId: o.agent, Layer: o.layer, Kinds: o.kinds, At: o.at}
	resp, err := cl.search.Search(ctx, req)
	if err != nil {
		return err
	}
	if !o.expand {
		return c.printer.message(resp, func(t *table) {
			t.header("score", "file", "lines", "layer", "excerpt")
			for _, r := range resp.GetResults() {
				t.row(r.GetScore(), r.GetFile(), spanText(r.GetSpan()), r.GetLayer(), r.GetExcerpt())
			}
			t.text(fmt.Sprintf("%d hits (%d total)%s\n", len(resp.GetResults()), resp.GetTotalHits(), staleNote(resp.GetStale())))
		})
	}
	hits := resp.GetResults()
	if o.layer == 0 {
		// Episodes live in run files (Layer 2): search them as well.
		l2 := proto2(req)
		l2.Layer = 2
		resp2, err := cl.search.Search(ctx, l2)
		if err != nil {
			return err
		}
		hits = append(hits, resp2.GetResults()...)
		slices.SortStableFunc(hits, func(a, b *memoryv1.SearchResult) int {
			switch {
			case a.GetScore() > b.GetScore():
				return -1
			case a.GetScore() < b.GetScore():
				return 1
			}
			return 0
		})
		if len(hits) > int(max(o.top, 10)) {
			hits = hits[:max(o.top, 10)]
		}
	}
	x := &expander{c: c, cl: cl, ctx: ctx, entities: map[string]*memoryv1.Entity{}, resolved: map[string]string{},
		readers: map[string]func(string) (string, bool, error){}}
	res, err := x.run(o, query, hits)
	if err != nil {
		return err
	}
	res.IndexCommit = resp.GetIndexCommit()
	return c.printer.value(res, func(t *table) {
		t.header("score", "file", "lines", "excerpt")
		for _, h := range x.keptHits {
			t.row(h.GetScore(), h.GetFile(), spanText(h.GetSpan()), h.GetExcerpt())
		}
		if len(res.ContextScope) > 0 {
			t.text("\ncontext scope: " + strings.Join(res.ContextScope, ", ") + "\n")
		}
		t.text("\n")
		t.header("rank", "score", "type", "entity", "label", "hops", "via")
		for i, e := range res.Entities {
			via := e.Via
			if len(via) > 3 {
				via = append(slices.Clip(via[:3]), fmt.Sprintf("+%d", len(e.Via)-3))
			}
			t.row(i+1, e.Score, e.Type, e.EntityID, e.Label, e.Distance, via)
		}
		for _, w := range res.Warnings {
			t.text("warning: " + w + "\n")
		}
	})
}

func staleNote(stale bool) string {
	if stale {
		return "; the index is behind HEAD"
	}
	return ""
}

// proto2 copies a search request (a shallow copy is enough: only Layer changes).
func proto2(r *memoryv1.SearchRequest) *memoryv1.SearchRequest {
	return &memoryv1.SearchRequest{Query: r.GetQuery(), TopK: r.GetTopK(), AgentId: r.GetAgentId(), Kinds: r.GetKinds(), At: r.GetAt()}
}

// expander runs the graph step of search --expand.
type expander struct {
	c        *cli
	cl       *clients
	ctx      context.Context
	entities map[string]*memoryv1.Entity
	resolved map[string]string // agent|type|label -> entity id ("" = none)
	readers  map[string]func(string) (string, bool, error)
	keptHits []*memoryv1.SearchResult
	// subgraph is the union of the neighbourhoods fetched so far.
	subgraph *hybrid.Graph
	// scopeContexts are the context entities --context-text selected.
	scopeContexts map[string]bool
}

// inScope is the context subgraph of --context-text: the selected
// contexts, the episodes IN_CONTEXT of them, and the entities those
// episodes link to (other episodes stay out).
func (x *expander) inScope(id string, episodes map[string]bool) bool {
	if x.scopeContexts[id] || episodes[id] {
		return true
	}
	if e := x.entities[id]; e == nil || e.GetType() == memoryv1.EntityType_ENTITY_TYPE_EPISODE {
		return false
	}
	if x.subgraph == nil {
		return false
	}
	for _, n := range x.subgraph.Neighbors(id) {
		if episodes[n] {
			return true
		}
	}
	return false
}

func (x *expander) run(o *searchOptions, query string, hits []*memoryv1.SearchResult) (*expandedSearch, error) {
	res := &expandedSearch{Query: query, Formula: rankFormula, Hits: []json.RawMessage{}, Seeds: []string{}, Entities: []rankedEntity{}}
	// 1. Seeds: the entities each hit names.
	type hitSeeds struct {
		hit   *memoryv1.SearchResult
		seeds []string
	}
	var per []hitSeeds
	for _, h := range hits {
		ids, err := x.seedsOf(h)
		if err != nil {
			return nil, err
		}
		per = append(per, hitSeeds{hit: h, seeds: ids})
	}
	// 2. The context scope, if any.
	var allowed func(string) bool
	if len(o.contextTexts) > 0 {
		scope, allowedEpisodes, err := x.contextScope(o.agent, o.contextTexts)
		if err != nil {
			return nil, err
		}
		res.ContextScope = scope
		if len(scope) == 0 {
			res.Warnings = append(res.Warnings, "no context of the agent matches --context-text: nothing is in scope")
		}
		allowed = func(id string) bool { return x.inScope(id, allowedEpisodes) }
	}
	// 3. The seeds' neighbourhoods.
	var seeds []hybrid.Seed
	var edges []*memoryv1.Edge
	fetched := map[string]bool{}
	for _, hs := range per {
		kept := false
		for _, id := range hs.seeds {
			if !fetched[id] {
				fetched[id] = true
				nb, err := x.cl.graph.GetNeighbors(x.ctx, &memoryv1.GetNeighborsRequest{EntityId: id, Depth: o.depth})
				if err != nil {
					return nil, err
				}
				for _, e := range nb.GetEntities() {
					x.entities[e.GetEntityId()] = e
				}
				edges = append(edges, nb.GetEdges()...)
				x.subgraph = hybrid.NewGraph(edges)
			}
		}
		for _, id := range hs.seeds {
			if allowed == nil || allowed(id) {
				seeds = append(seeds, hybrid.Seed{EntityID: id, Score: hs.hit.GetScore()})
				if !slices.Contains(res.Seeds, id) {
					res.Seeds = append(res.Seeds, id)
				}
				kept = true
			}
		}
		if allowed == nil || kept {
			x.keptHits = append(x.keptHits, hs.hit)
			b, err := restJSON.Marshal(hs.hit)
			if err != nil {
				return nil, err
			}
			res.Hits = append(res.Hits, b)
		}
	}
	g := hybrid.NewGraph(edges)
	x.subgraph = g
	ranked := hybrid.Rank(g, seeds, int(o.depth), allowed)
	for _, r := range ranked {
		if len(res.Entities) >= o.expandTop {
			break
		}
		e := x.entities[r.EntityID]
		re := rankedEntity{EntityID: r.EntityID, Score: r.Score, Distance: r.Distance, Via: r.Via, Refs: e.GetRefs()}
		if e != nil {
			re.Type, re.Label = enumname.Short(e.GetType().Descriptor(), e.GetType().Number()), e.GetLabel()
		}
		res.Entities = append(res.Entities, re)
	}
	return res, nil
}

// seedsOf returns the entity ids a hit names: the wiki links on its lines
// and, for an episode's run file, the episode.
func (x *expander) seedsOf(h *memoryv1.SearchResult) ([]string, error) {
	agent := h.GetAgentId()
	rel, ok := strings.CutPrefix(h.GetFile(), "memory/"+agent+"/")
	if agent == "" || !ok {
		return nil, nil // sources and logic carry no links we can resolve per agent
	}
	read, ok := x.readers[agent]
	if !ok {
		read = x.c.agentFiles(x.ctx, x.cl, agent)
		x.readers[agent] = read
	}
	content, found, err := read(rel)
	if err != nil || !found {
		return nil, err
	}
	lines := strings.Split(content, "\n")
	var links []hybrid.Link
	if strings.HasPrefix(rel, "runs/") {
		for _, l := range hybrid.Links(headerOf(lines)) {
			if l.Type == "episode" {
				links = append(links, l)
				break
			}
		}
	}
	from, to := int(h.GetSpan().GetStartLine()), int(h.GetSpan().GetEndLine())
	if from >= 1 && to >= from && to <= len(lines) {
		links = append(links, hybrid.Links(strings.Join(lines[from-1:to], "\n"))...)
	}
	var ids []string
	for _, l := range links {
		id, err := x.resolve(agent, l, h.GetFile())
		if err != nil {
			return nil, err
		}
		if id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// headerOf is a run file's header: the lines before the first "## ".
func headerOf(lines []string) string {
	for i, l := range lines {
		if strings.HasPrefix(l, "## ") {
			return strings.Join(lines[:i], "\n")
		}
	}
	return strings.Join(lines, "\n")
}

// resolve finds the graph's entity of a link: ListEntities by label (and
// type, when the link has one), preferring an exact label that file
// refers to. The graph owns the id scheme; memctl only asks.
func (x *expander) resolve(agent string, l hybrid.Link, file string) (string, error) {
	label := l.Label()
	key := agent + "|" + l.Type + "|" + strings.ToLower(label)
	if id, ok := x.resolved[key]; ok {
		return id, nil
	}
	req := &memoryv1.ListEntitiesRequest{AgentId: agent, Query: label, PageSize: 50}
	if l.Type != "" {
		if n, ok := enumname.Parse(memoryv1.EntityType(0).Descriptor(), l.Type); ok {
			req.Type = memoryv1.EntityType(n)
		}
	}
	resp, err := x.cl.graph.ListEntities(x.ctx, req)
	if err != nil {
		return "", err
	}
	best, bestRank := "", 0
	for _, e := range resp.GetEntities() {
		rank := 0
		if strings.EqualFold(e.GetLabel(), label) {
			rank += 2
		}
		if slices.Contains(e.GetRefs(), file) {
			rank++
		}
		if rank > bestRank {
			best, bestRank = e.GetEntityId(), rank
			x.entities[e.GetEntityId()] = e
		}
	}
	if bestRank < 2 {
		best = "" // not this link's entity; a label prefix alone is too weak
	}
	x.resolved[key] = best
	return best, nil
}

// contextScope lists the agent's contexts, selects those the texts name
// (with their descendants) and returns their paths and the episodes IN
// them.
func (x *expander) contextScope(agent string, texts []string) ([]string, map[string]bool, error) {
	var contexts []*memoryv1.Entity
	token := ""
	for {
		resp, err := x.cl.graph.ListEntities(x.ctx, &memoryv1.ListEntitiesRequest{AgentId: agent, Type: memoryv1.EntityType_ENTITY_TYPE_CONTEXT,
			PageSize: 500, PageToken: token})
		if err != nil {
			return nil, nil, err
		}
		contexts = append(contexts, resp.GetEntities()...)
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
	}
	var paths []string
	for _, e := range contexts {
		paths = append(paths, e.GetLabel())
	}
	scope := hybrid.MatchContexts(texts, paths)
	episodes := map[string]bool{}
	x.scopeContexts = map[string]bool{}
	for _, e := range contexts {
		if !slices.Contains(scope, hybrid.ContextPath(e.GetLabel())) {
			continue
		}
		x.scopeContexts[e.GetEntityId()] = true
		x.entities[e.GetEntityId()] = e
		nb, err := x.cl.graph.GetNeighbors(x.ctx, &memoryv1.GetNeighborsRequest{EntityId: e.GetEntityId(), Depth: 1,
			Relations: []memoryv1.Relation{memoryv1.Relation_RELATION_IN_CONTEXT}})
		if err != nil {
			return nil, nil, err
		}
		for _, ed := range nb.GetEdges() {
			if ed.GetToEntityId() == e.GetEntityId() && ed.GetRelation() == memoryv1.Relation_RELATION_IN_CONTEXT && ed.GetValidTo() == nil {
				episodes[ed.GetFromEntityId()] = true
			}
		}
	}
	return scope, episodes, nil
}
