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
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/authz"
	"github.com/garden-bloom/memory/pkg/temporalgraph"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/restjson"
)

// handler implements the gRPC methods; it stays thin and delegates to the Service.
type handler struct {
	memoryv1.UnimplementedEntityGraphServiceServer
	svc *Service
}

const maxPageSize = 500

// Answers when the repository cannot be read.
const (
	unavailable = codes.Unavailable
	retryAfter  = 5 * time.Second
)

// timeZero asks the graph for "now".
var timeZero time.Time

func invalid(field, msg string) error {
	return apierr.New(codes.InvalidArgument, memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, msg, map[string]string{"field": field})
}

// viewer decides which files a caller may see: every file for service and
// admin tokens, only its own agents' folders for an agent token, so entity
// refs never reveal another agent's files.
type viewer struct{ agents []string }

// viewRoles may read the graph; only they count when deciding which files a
// token sees (a reviewer role on an agent token widens nothing here).
var viewRoles = []auth.Role{auth.RoleAgent, auth.RoleService, auth.RoleAdmin}

func (h *handler) viewer(ctx context.Context) (viewer, error) {
	c, err := authz.RequireRole(ctx, viewRoles...)
	if err != nil {
		return viewer{}, err
	}
	return viewer{agents: authz.VisibleAgents(c, viewRoles...)}, nil
}

// visible reports whether the viewer may know of node n at all: some ref
// of it is in the viewer's files.
func (v viewer) visible(n temporalgraph.Node) bool {
	return v.agents == nil || len(v.node(n).Refs) > 0
}

func (v viewer) sees(file string) bool {
	if v.agents == nil {
		return true
	}
	for _, a := range v.agents {
		if strings.HasPrefix(file, "memory/"+a+"/") || strings.HasPrefix(file, "logic/"+a+"/") {
			return true
		}
	}
	return false
}

// at turns a commit sha (or other commit-ish) or an RFC 3339 time into a
// point in commit order (zero = now). A commit is exact: the state right
// after it, even when commits before or after it share its second (git
// times have one-second precision), so its point also counts the commits
// of the same second before it on main's first-parent line — the order the
// graph applies them in. A time is the newest commit at or before it.
func (h *handler) at(ctx context.Context, at string) (temporalgraph.Point, error) {
	if at == "" {
		return temporalgraph.Point{}, nil
	}
	if t, err := time.Parse(time.RFC3339, at); err == nil {
		return temporalgraph.AtTime(t), nil
	}
	repo, err := h.svc.repo.Get()
	if err != nil {
		return temporalgraph.Point{}, apierr.Retryable(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_REPOSITORY_UNAVAILABLE, "the memory repository is unavailable", 5*time.Second)
	}
	hash, err := repo.ResolveRevision(ctx, at)
	if err == nil {
		var when time.Time
		var ord uint32
		err = repo.Walk(ctx, hash, func(c *object.Commit) error {
			switch {
			case c.Hash == hash:
				when = c.Committer.When
			case c.Committer.When.Equal(when):
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
	return temporalgraph.Point{}, apierr.New(codes.NotFound, memoryv1.ErrorReason_ERROR_REASON_REVISION_NOT_FOUND,
		fmt.Sprintf("at %q is neither an RFC 3339 time nor a commit of main", at), map[string]string{"at": at})
}

func entityType(t string) memoryv1.EntityType {
	v, ok := restjson.EnumValueFromREST(memoryv1.EntityType(0).Descriptor(), t)
	if !ok {
		return memoryv1.EntityType_ENTITY_TYPE_CONCEPT
	}
	return memoryv1.EntityType(v)
}

func relation(r string) memoryv1.Relation {
	v, ok := restjson.EnumValueFromREST(memoryv1.Relation(0).Descriptor(), r)
	if !ok {
		return memoryv1.Relation_RELATION_UNSPECIFIED
	}
	return memoryv1.Relation(v)
}

func (v viewer) node(n temporalgraph.Node) *memoryv1.Entity {
	e := &memoryv1.Entity{EntityId: n.ID, Type: entityType(n.Type), Label: n.Label, Aliases: n.Aliases}
	for _, r := range n.Refs {
		if v.sees(r) {
			e.Refs = append(e.Refs, r)
		}
	}
	if !n.LastUpdated.IsZero() {
		e.LastUpdated = timestamppb.New(n.LastUpdated)
	}
	return e
}

// edges converts edges, keeping only evidence the viewer may see and edges
// left with some.
func (v viewer) edges(es []temporalgraph.Edge) []*memoryv1.Edge {
	var out []*memoryv1.Edge
	for _, e := range es {
		pe := &memoryv1.Edge{FromEntityId: e.From, ToEntityId: e.To, Relation: relation(e.Relation), ValidFrom: timestamppb.New(e.ValidFrom)}
		if !e.ValidTo.IsZero() {
			pe.ValidTo = timestamppb.New(e.ValidTo)
		}
		for _, ev := range e.Evidence {
			if strings.HasPrefix(ev.File, "commit:") && v.agents != nil {
				continue // commit-message refs are not tied to one agent's files
			}
			if !strings.HasPrefix(ev.File, "commit:") && !v.sees(ev.File) {
				continue
			}
			pe.Evidence = append(pe.Evidence, &memoryv1.Evidence{File: ev.File, Commit: ev.Commit, Span: &memoryv1.Span{StartLine: int32(ev.Line), EndLine: int32(ev.Line)}})
		}
		if len(pe.Evidence) == 0 {
			continue
		}
		pe.Weight = float64(len(pe.Evidence))
		out = append(out, pe)
	}
	return out
}

func notFound(id string) error {
	return apierr.New(codes.NotFound, memoryv1.ErrorReason_ERROR_REASON_ENTITY_NOT_FOUND, fmt.Sprintf("entity %q not found", id), nil)
}

// GetEntity returns a node with its edges and refs, optionally at a time.
func (h *handler) GetEntity(ctx context.Context, req *memoryv1.GetEntityRequest) (*memoryv1.GetEntityResponse, error) {
	v, err := h.viewer(ctx)
	if err != nil {
		return nil, err
	}
	if req.GetEntityId() == "" || len(req.GetEntityId()) > 256 {
		return nil, invalid("entityId", "entityId must be 1 to 256 bytes")
	}
	if agent := req.GetAgentId(); agent != "" {
		// The DiffMem adapter path: the entity as one agent's memory has it.
		if !memlayout.ValidAgentID(agent) {
			return nil, invalid("agentId", "agentId must be a slug")
		}
		if _, err := authz.RequireAgent(ctx, agent, auth.RoleAgent, auth.RoleService, auth.RoleAdmin); err != nil {
			return nil, err
		}
		v = viewer{agents: []string{agent}}
	}
	at, err := h.at(ctx, req.GetAt())
	if err != nil {
		return nil, err
	}
	h.svc.mu.RLock()
	n, edges, ok := h.svc.graph.NodeAt(temporalgraph.Slug(req.GetEntityId()), at)
	h.svc.mu.RUnlock()
	e := v.node(n)
	if !ok || (v.agents != nil && len(e.Refs) == 0) {
		return nil, notFound(req.GetEntityId())
	}
	return &memoryv1.GetEntityResponse{Entity: e, Edges: v.edges(edges), Refs: e.Refs}, nil
}

// pageSize checks a request's page size; 0 means def.
func pageSize(n int32, def int) (int, error) {
	if n < 0 || n > maxPageSize {
		return 0, invalid("pageSize", fmt.Sprintf("pageSize must be 0 to %d", maxPageSize))
	}
	if n == 0 {
		return def, nil
	}
	return int(n), nil
}

// ListEntities lists nodes by type and label, sorted by id, paged.
func (h *handler) ListEntities(ctx context.Context, req *memoryv1.ListEntitiesRequest) (*memoryv1.ListEntitiesResponse, error) {
	v, err := h.viewer(ctx)
	if err != nil {
		return nil, err
	}
	size, err := pageSize(req.GetPageSize(), 50)
	if err != nil {
		return nil, err
	}
	if agent := req.GetAgentId(); agent != "" {
		// Asking for another agent's entities is denied, as reading its
		// memory is, rather than answered with an empty page.
		if _, err := authz.RequireAgent(ctx, agent, viewRoles...); err != nil {
			return nil, err
		}
	}
	at, err := h.at(ctx, req.GetAt())
	if err != nil {
		return nil, err
	}
	filter := temporalgraph.NodeFilter{Query: req.GetQuery(), Point: at}
	if t := req.GetType(); t != memoryv1.EntityType_ENTITY_TYPE_UNSPECIFIED {
		filter.Type = restjson.EnumName(t)
	}
	h.svc.mu.RLock()
	nodes := h.svc.graph.Nodes(filter)
	h.svc.mu.RUnlock()
	resp := &memoryv1.ListEntitiesResponse{}
	for _, n := range nodes {
		if req.GetPageToken() != "" && n.ID <= req.GetPageToken() {
			continue
		}
		e := v.node(n)
		if v.agents != nil && len(e.Refs) == 0 {
			continue
		}
		if agent := req.GetAgentId(); agent != "" && !refersToAgent(e.Refs, agent) {
			continue
		}
		if len(resp.Entities) == size {
			resp.NextPageToken = resp.Entities[size-1].GetEntityId()
			break
		}
		resp.Entities = append(resp.Entities, e)
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

// GetNeighbors returns the entities within depth (≤ 3) by relation.
func (h *handler) GetNeighbors(ctx context.Context, req *memoryv1.GetNeighborsRequest) (*memoryv1.GetNeighborsResponse, error) {
	v, err := h.viewer(ctx)
	if err != nil {
		return nil, err
	}
	if req.GetDepth() < 0 || req.GetDepth() > temporalgraph.MaxDepth {
		return nil, invalid("depth", fmt.Sprintf("depth must be 1 to %d", temporalgraph.MaxDepth))
	}
	at, err := h.at(ctx, req.GetAt())
	if err != nil {
		return nil, err
	}
	var rels []string
	for _, r := range req.GetRelations() {
		rels = append(rels, restjson.EnumName(r))
	}
	id := temporalgraph.Slug(req.GetEntityId())
	h.svc.mu.RLock()
	start, _, ok := h.svc.graph.NodeAt(id, at)
	nodes, edges := h.svc.graph.NeighborsAt(id, int(req.GetDepth()), rels, at)
	h.svc.mu.RUnlock()
	if !ok || !v.visible(start) {
		return nil, notFound(req.GetEntityId())
	}
	resp := &memoryv1.GetNeighborsResponse{Edges: v.edges(edges)}
	if v.agents != nil {
		// Walk again over the edges the viewer may see only: a neighbour
		// reached through another agent's evidence would reveal that
		// agent's links even when the neighbour itself is visible.
		reached := reachable(id, resp.Edges, int(req.GetDepth()))
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

// GetEntityHistory lists facts about an entity added and removed, oldest first.
func (h *handler) GetEntityHistory(ctx context.Context, req *memoryv1.GetEntityHistoryRequest) (*memoryv1.GetEntityHistoryResponse, error) {
	v, err := h.viewer(ctx)
	if err != nil {
		return nil, err
	}
	size, err := pageSize(req.GetPageSize(), 100)
	if err != nil {
		return nil, err
	}
	skip := 0
	if tok := req.GetPageToken(); tok != "" {
		if _, err := fmt.Sscanf(tok, "%d", &skip); err != nil || skip < 0 {
			return nil, invalid("pageToken", "invalid pageToken")
		}
	}
	h.svc.mu.RLock()
	changes := h.svc.graph.History(temporalgraph.Slug(req.GetEntityId()))
	node, _, known := h.svc.graph.Node(temporalgraph.Slug(req.GetEntityId()), timeZero)
	h.svc.mu.RUnlock()
	if v.agents != nil && !(known && v.visible(node)) && !slices.ContainsFunc(changes, func(c temporalgraph.FactChange) bool { return v.sees(c.File) }) {
		// For an agent token an entity only other agents know reads like
		// an unknown one, as GetEntity answers.
		return nil, notFound(req.GetEntityId())
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
		kind := memoryv1.ChangeKind_CHANGE_KIND_ADDED
		if c.Change == "removed" {
			kind = memoryv1.ChangeKind_CHANGE_KIND_REMOVED
		}
		agent := ""
		if parts := strings.SplitN(c.File, "/", 3); len(parts) == 3 && parts[0] == "memory" {
			agent = parts[1]
		}
		resp.Changes = append(resp.Changes, &memoryv1.EntityFactChange{Change: kind, Fact: c.Text, File: c.File, Commit: c.Commit,
			Time: timestamppb.New(c.Time), ProposalId: c.ProposalID, AgentId: agent})
	}
	return resp, nil
}
