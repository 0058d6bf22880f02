package entitygraph

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/revision"
	"github.com/garden-bloom/memory/pkg/temporalgraph"
)

// Answers when the repository cannot be read.
const (
	unavailable = codes.Unavailable
	retryAfter  = 5 * time.Second
)

// timeZero asks the graph for "now".
var timeZero time.Time

// point turns a revision into a point in commit order (zero = now). A time
// is the graph's own (the newest commit at or before it), so it needs no
// repository. A commit is exact: the state right after it, even when
// commits before or after it share its second (git times have one-second
// precision), so its point also counts the commits of the same second
// before it on main's first-parent line — the order the graph applies
// them in.
func (s *Service) point(ctx context.Context, at string) (temporalgraph.Point, error) {
	if at == "" {
		return temporalgraph.Point{}, nil
	}
	if t, ok := revision.Time(at); ok {
		return temporalgraph.AtTime(t), nil
	}
	repo, err := s.repo.Get()
	if err != nil {
		return temporalgraph.Point{}, apierr.Retryable(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_REPOSITORY_UNAVAILABLE, "the memory repository is unavailable", 5*time.Second)
	}
	c, err := revision.Commit(ctx, repo, at)
	if err == nil {
		var when time.Time
		var ord uint32
		err = repo.Walk(ctx, c.Hash, func(wc *object.Commit) error {
			switch {
			case wc.Hash == c.Hash:
				when = wc.Committer.When
			case wc.Committer.When.Equal(when):
				ord++
			default:
				return memrepo.ErrStopWalk
			}
			return nil
		})
		if err == nil {
			return temporalgraph.AtCommit(when.UTC(), ord), nil
		}
		if ctx.Err() != nil {
			return temporalgraph.Point{}, status.FromContextError(ctx.Err()).Err()
		}
	}
	// Whatever failed, the answer is the revision's: an entity read never
	// says "unavailable" for a revision it could not place.
	return temporalgraph.Point{}, apierr.NotFound(memoryv1.ErrorReason_ERROR_REASON_REVISION_NOT_FOUND,
		fmt.Sprintf("at %q is neither an RFC 3339 time nor a commit of main", at), map[string]string{"at": at})
}

// entityPage is an entity with one page of the edges visible accepts
// (nil: all), each with at most maxEvidence pieces of evidence when visible
// is nil (temporalgraph.Graph.NodePage), and how many edges it accepts in
// all.
func (s *Service) entityPage(ctx context.Context, id, at string, skip, size, maxEvidence int, visible func(temporalgraph.Edge) bool) (temporalgraph.Node, []temporalgraph.Edge, int, bool, error) {
	p, err := s.point(ctx, at)
	if err != nil {
		return temporalgraph.Node{}, nil, 0, false, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	n, edges, total, ok := s.graph.NodePage(temporalgraph.EntityID(id), p, skip, size, maxEvidence, visible)
	return n, edges, total, ok, nil
}

// entityQuery is a validated ListEntities request.
type entityQuery struct {
	query, typ string // typ "" = any
	agent      string // "" = any
	at         string
	size       int
	pageToken  string // the last id of the previous page
}

// listEntities lists the nodes q matches that v may see, by id, one page.
func (s *Service) listEntities(ctx context.Context, v viewer, q entityQuery) (*memoryv1.ListEntitiesResponse, error) {
	p, err := s.point(ctx, q.at)
	if err != nil {
		return nil, err
	}
	keep := func(n temporalgraph.Node) bool {
		e := v.node(n)
		return (v.agents == nil || len(e.Refs) > 0) && (q.agent == "" || refersToAgent(e.Refs, q.agent))
	}
	s.mu.RLock()
	nodes, more := s.graph.NodesPage(temporalgraph.NodeFilter{Query: q.query, Point: p, Type: q.typ}, q.pageToken, q.size, keep)
	s.mu.RUnlock()
	resp := &memoryv1.ListEntitiesResponse{}
	for _, n := range nodes {
		resp.Entities = append(resp.Entities, v.node(n))
	}
	if more {
		resp.NextPageToken = nodes[len(nodes)-1].ID
	}
	return resp, nil
}

func refersToAgent(refs []string, agent string) bool {
	for _, r := range refs {
		if strings.HasPrefix(r, "memory/"+agent+"/") || strings.HasPrefix(r, "logic/"+agent+"/") {
			return true
		}
	}
	return false
}

// neighbors returns what v may see within depth of entity id by relations
// (nil: any) at revision at.
func (s *Service) neighbors(ctx context.Context, v viewer, entityID string, depth int, rels []string, at string) (*memoryv1.GetNeighborsResponse, error) {
	p, err := s.point(ctx, at)
	if err != nil {
		return nil, err
	}
	id := temporalgraph.EntityID(entityID)
	s.mu.RLock()
	start, _, ok := s.graph.NodeAt(id, p)
	nodes, edges := s.graph.NeighborsAt(id, depth, rels, p)
	s.mu.RUnlock()
	if !ok || !v.visible(start) {
		return nil, apierr.EntityNotFound(entityID)
	}
	resp := &memoryv1.GetNeighborsResponse{Edges: v.edges(edges)}
	if v.agents != nil {
		// Walk again over the edges the viewer may see only: a neighbour
		// reached through another agent's evidence would reveal that
		// agent's links even when the neighbour itself is visible.
		reached := reachable(id, resp.Edges, depth)
		resp.Edges = slices.DeleteFunc(resp.Edges, func(e *memoryv1.Edge) bool {
			return !reached[e.GetFromEntityId()] || !reached[e.GetToEntityId()]
		})
		nodes = slices.DeleteFunc(nodes, func(n temporalgraph.Node) bool { return !reached[n.ID] })
	}
	for _, n := range nodes {
		if v.visible(n) {
			resp.Entities = append(resp.Entities, v.node(n))
		}
	}
	return resp, nil
}

// reachable returns the ids within depth of start over edges, either way.
func reachable(start string, edges []*memoryv1.Edge, depth int) map[string]bool {
	seen := map[string]bool{start: true}
	frontier := []string{start}
	for d := 0; d < max(1, depth) && len(frontier) > 0; d++ {
		var next []string
		for _, e := range edges {
			for _, pair := range [][2]string{{e.GetFromEntityId(), e.GetToEntityId()}, {e.GetToEntityId(), e.GetFromEntityId()}} {
				if slices.Contains(frontier, pair[0]) && !seen[pair[1]] {
					seen[pair[1]] = true
					next = append(next, pair[1])
				}
			}
		}
		frontier = next
	}
	return seen
}

// entityHistory pages the fact changes about entity id that v may see,
// oldest first, skipping the first skip.
func (s *Service) entityHistory(v viewer, entityID string, skip, size int) (*memoryv1.GetEntityHistoryResponse, error) {
	s.mu.RLock()
	changes := s.graph.History(temporalgraph.EntityID(entityID))
	node, _, known := s.graph.Node(temporalgraph.EntityID(entityID), timeZero)
	s.mu.RUnlock()
	knows := func() bool {
		return known && v.visible(node) || slices.ContainsFunc(changes, func(c temporalgraph.FactChange) bool { return v.sees(c.File) })
	}
	if v.agents != nil && !knows() {
		// For an agent token an entity only other agents know reads like
		// an unknown one, as GetEntity answers.
		return nil, apierr.EntityNotFound(entityID)
	}
	resp := &memoryv1.GetEntityHistoryResponse{}
	seen := 0
	for _, c := range changes {
		if !v.sees(c.File) {
			continue
		}
		if seen++; seen <= skip {
			continue
		}
		if len(resp.Changes) == size {
			resp.NextPageToken = fmt.Sprint(skip + size)
			break
		}
		resp.Changes = append(resp.Changes, factChange(c))
	}
	return resp, nil
}
