package entitygraph

import (
	"context"
	"fmt"
	"slices"
	"strings"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/mdops"
	"github.com/garden-bloom/memory/pkg/temporalgraph"
)

// maxWhyDepth bounds how far back a decision chain is followed.
const maxWhyDepth = 10

// decisionEntry finds a decision's fields in its decisions.md at main,
// reading only the files the viewer may see: two agents' entries with the
// same date and title are one node, and one agent must not get the other's.
func (s *Service) decisionEntry(ctx context.Context, v viewer, n temporalgraph.Node) (*memoryv1.Decision, error) {
	repo, err := s.repo.Get()
	if err != nil {
		return nil, err
	}
	head, err := repo.Head(ctx)
	if err != nil {
		return nil, err
	}
	for _, ref := range n.Refs {
		if !strings.HasSuffix(ref, "/decisions.md") || !v.sees(ref) {
			continue
		}
		data, err := repo.ReadFile(ctx, head, ref)
		if err != nil {
			continue
		}
		for _, d := range mdops.ParseDecisions(string(data)) {
			if "decision-"+temporalgraph.Slug(d.Date.Format("2006-01-02")+" "+d.Title) == n.ID {
				return decisionMessage(n.ID, d), nil
			}
		}
	}
	return &memoryv1.Decision{Id: n.ID, Title: n.Label}, nil
}

// explainDecision follows decision decisionID (or the newest one v may
// see that query matches) back up to depth decisions, with the entities
// each links.
func (s *Service) explainDecision(ctx context.Context, v viewer, decisionID, query string, depth int) (*memoryv1.ExplainDecisionResponse, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	id := temporalgraph.Slug(decisionID)
	if id == "" {
		found := s.graph.Nodes(temporalgraph.NodeFilter{Type: temporalgraph.TypeDecision, Query: query})
		for _, n := range found {
			if len(v.node(n).Refs) > 0 {
				id = n.ID // newest id sorts last: dates lead the ids
			}
		}
		if id == "" {
			return nil, apierr.EntityNotFound(query)
		}
	}
	resp := &memoryv1.ExplainDecisionResponse{}
	seen := map[string]bool{}
	queue := []string{id}
	for level := 0; len(queue) > 0 && level < depth; level++ {
		var next []string
		for _, cur := range queue {
			if seen[cur] {
				continue
			}
			seen[cur] = true
			n, edges, ok := s.graph.Node(cur, timeZero)
			if !ok || len(v.node(n).Refs) == 0 {
				if cur == id {
					return nil, apierr.EntityNotFound(decisionID)
				}
				continue
			}
			if n.Type != temporalgraph.TypeDecision {
				continue
			}
			d, err := s.decisionEntry(ctx, v, n)
			if err != nil {
				return nil, apierr.Retryable(unavailable, memoryv1.ErrorReason_ERROR_REASON_REPOSITORY_UNAVAILABLE, "the memory repository is unavailable", retryAfter)
			}
			resp.Chain = append(resp.Chain, d)
			for _, e := range v.edges(edges) {
				if e.GetFromEntityId() != cur || e.GetRelation() != memoryv1.Relation_RELATION_REFERS_TO {
					continue
				}
				resp.Edges = append(resp.Edges, e)
				to, _, _ := s.graph.Node(e.GetToEntityId(), timeZero)
				if !slices.ContainsFunc(resp.Entities, func(x *memoryv1.Entity) bool { return x.GetEntityId() == to.ID }) {
					resp.Entities = append(resp.Entities, v.node(to))
				}
				next = append(next, e.GetToEntityId())
			}
		}
		queue = next
	}
	resp.Mermaid = mermaid(resp)
	return resp, nil
}

// mermaid draws the chain as a flowchart: decisions as rounded boxes,
// entities as plain ones, arrows for "builds on / refers to".
func mermaid(r *memoryv1.ExplainDecisionResponse) string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	label := func(s string) string { return strings.NewReplacer(`"`, "'", "\n", " ").Replace(s) }
	node := func(id string) string { return "n_" + strings.NewReplacer("-", "_").Replace(id) }
	for _, d := range r.GetChain() {
		fmt.Fprintf(&b, "  %s([\"%s\"])\n", node(d.GetId()), label(d.GetTitle()))
	}
	for _, e := range r.GetEntities() {
		if !slices.ContainsFunc(r.GetChain(), func(d *memoryv1.Decision) bool { return d.GetId() == e.GetEntityId() }) {
			fmt.Fprintf(&b, "  %s[\"%s\"]\n", node(e.GetEntityId()), label(e.GetLabel()))
		}
	}
	for _, e := range r.GetEdges() {
		fmt.Fprintf(&b, "  %s --> %s\n", node(e.GetFromEntityId()), node(e.GetToEntityId()))
	}
	return b.String()
}
