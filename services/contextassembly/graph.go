package contextassembly

import (
	"context"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/temporalgraph"
)

// Graph-aware retrieval (Retrieval.Graph, AssembleContextRequest.graph;
// spec ai-skills-memory-protocol §5.3: seed → neighbours → rank). The best
// search hits are the seeds; the entities their chunks link to ([[…]]) are
// the neighbours; each chunk of the agent's memory files outside Layer 1
// (which is in whole already) that links one of them becomes a hit with a
// share of its seed's score, and the packer ranks it with the rest. The
// entity graph says which files mention an entity (its refs); the lines
// are read at the assembled commit, so what comes in is what that commit
// holds.
const (
	// graphSeeds is how many of the best hits have their links followed.
	graphSeeds = 5
	// graphEntities bounds the entities followed, in the seeds' order.
	graphEntities = 8
	// graphChunksPerEntity bounds the chunks one entity brings, newest
	// (last in its file) first.
	graphChunksPerEntity = 8
	// graphWeight is the share of its seed's score a graph hit competes
	// with: below the seed's own neighbouring lines (neighborWeight).
	graphWeight = 0.5
)

// graphNotConfigured is the warning of graph=true without an entity graph.
const graphNotConfigured = "entity graph is not configured: graph=true brought nothing"

// graphHits returns the hits the entities linked from the best of results
// bring, and a warning when the graph could not be asked. texts gives a
// file's text (fileTexts).
func (s *Service) graphHits(ctx context.Context, files agentFiles, at string, results []*memoryv1.SearchResult,
	texts func(path string) (string, bool), inLayer1 map[string]bool) ([]*memoryv1.SearchResult, string) {
	// Neighbours: the entities the seeds link to, each with its best
	// seed's score.
	var entities []string
	seedScore := map[string]float64{}
	for _, r := range results[:min(graphSeeds, len(results))] {
		text, ok := texts(r.GetFile())
		if !ok {
			continue
		}
		for _, id := range temporalgraph.LinkedIDs(spanText(text, r.GetSpan())) {
			if _, seen := seedScore[id]; !seen {
				entities = append(entities, id)
			}
			seedScore[id] = max(seedScore[id], r.GetScore())
		}
	}
	dir := memlayout.AgentDir(files.agent)
	split := map[string]*packFile{} // each file cut into chunks once, however many entities it links
	var out []*memoryv1.SearchResult
	for _, id := range entities[:min(graphEntities, len(entities))] {
		ent, err := s.deps.Graph.GetEntity(ctx, &memoryv1.GetEntityRequest{EntityId: id, AgentId: files.agent, At: at})
		if status.Code(err) == codes.NotFound {
			continue // linked, but not in the graph (yet)
		}
		if err != nil {
			s.logger.Warn("entity graph for context assembly failed", "entity", id, "err", err)
			return out, "entity graph unavailable: graph=true brought only part of what it links"
		}
		taken := 0
		for _, ref := range ent.GetRefs() {
			rel, ok := strings.CutPrefix(ref, dir)
			if !ok || inLayer1[ref] {
				continue
			}
			lf, err := memlayout.Resolve(files.agent, rel)
			if err != nil || lf.Layer == 0 {
				continue
			}
			f := split[ref]
			if f == nil {
				text, ok := texts(ref)
				if !ok {
					continue
				}
				f = newPackFile(ref, "", text, int32(lf.Layer))
				f.split()
				split[ref] = f
			}
			for _, c := range slices.Backward(f.chunks) {
				if taken == graphChunksPerEntity {
					break
				}
				if slices.Contains(temporalgraph.LinkedIDs(c.Text), id) {
					out = append(out, &memoryv1.SearchResult{File: ref, Layer: f.layer, Score: seedScore[id] * graphWeight,
						Span: &memoryv1.Span{StartLine: int32(c.StartLine), EndLine: int32(c.EndLine)}})
					taken++
				}
			}
		}
	}
	return out, ""
}

// spanText is the lines of text in span (1-based, inclusive).
func spanText(text string, span *memoryv1.Span) string {
	lines := strings.Split(text, "\n")
	from, to := max(int(span.GetStartLine()), 1), min(int(span.GetEndLine()), len(lines))
	if from > to {
		return ""
	}
	return strings.Join(lines[from-1:to], "\n")
}

// fileTexts gives a file's text by path: a source's from srcs, a git
// file's as of the assembled commit, read once for graphHits and packHits
// together.
func fileTexts(ctx context.Context, files agentFiles, srcs []*memoryv1.ContextSection) func(path string) (string, bool) {
	var read map[string]string // made on the first call: most assemblies read no git file
	return func(path string) (string, bool) {
		if read == nil {
			read = make(map[string]string, len(srcs))
			for _, src := range srcs {
				read[src.GetFile()] = src.GetContent()
			}
		}
		if text, ok := read[path]; ok {
			return text, true
		}
		text, _, err := files.repo.ReadTextBlob(ctx, files.commit, path)
		if err != nil {
			return "", false
		}
		read[path] = text
		return text, true
	}
}
