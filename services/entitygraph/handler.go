package entitygraph

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/authz"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/temporalgraph"
)

// handler implements the gRPC methods: each validates the request, checks
// the caller (its viewer), calls the Service (entities.go, guard.go,
// why.go) and converts the answer back (convert.go).
type handler struct {
	memoryv1.UnimplementedEntityGraphServiceServer
	svc *Service
}

const maxPageSize = 500

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

// GetEntity returns a node with its edges and refs, optionally at a time.
func (h *handler) GetEntity(ctx context.Context, req *memoryv1.GetEntityRequest) (*memoryv1.GetEntityResponse, error) {
	v, err := h.viewer(ctx)
	if err != nil {
		return nil, err
	}
	if req.GetEntityId() == "" || len(req.GetEntityId()) > 256 {
		return nil, apierr.InvalidArgument("entityId", "entityId must be 1 to 256 bytes")
	}
	if agent := req.GetAgentId(); agent != "" {
		// The DiffMem adapter path: the entity as one agent's memory has it.
		if !memlayout.ValidAgentID(agent) {
			return nil, apierr.InvalidArgument("agentId", "agentId must be a slug")
		}
		if _, err := authz.RequireAgent(ctx, agent, auth.RoleAgent, auth.RoleService, auth.RoleAdmin); err != nil {
			return nil, err
		}
		v = viewer{agents: []string{agent}}
	}
	skip, size, err := offsetPage(req.GetPageSize(), req.GetPageToken(), 100)
	if err != nil {
		return nil, err
	}
	evidence := int(req.GetEvidencePerEdge())
	switch {
	case evidence < 0 || evidence > maxEvidencePerEdge:
		return nil, apierr.InvalidArgument("evidencePerEdge", fmt.Sprintf("evidencePerEdge must be 0 to %d", maxEvidencePerEdge))
	case evidence == 0:
		evidence = 20
	}
	n, edges, total, ok, err := h.svc.entityPage(ctx, req.GetEntityId(), req.GetAt(), skip, size, evidence, v.seesEdge())
	if err != nil {
		return nil, err
	}
	e := v.node(n)
	if !ok || (v.agents != nil && len(e.Refs) == 0) {
		return nil, apierr.EntityNotFound(req.GetEntityId())
	}
	page := make([]*memoryv1.Edge, 0, len(edges))
	for _, ed := range edges {
		if pe := v.edge(ed, evidence); pe != nil { // nil: no evidence at all, which an edge always has
			page = append(page, pe)
		}
	}
	resp := &memoryv1.GetEntityResponse{Entity: e, Edges: page, Refs: e.Refs, TotalEdges: int32(total)}
	if skip+len(page) < total {
		resp.NextPageToken = fmt.Sprint(skip + len(page))
	}
	return resp, nil
}

// maxEvidencePerEdge bounds GetEntityRequest.evidence_per_edge.
const maxEvidencePerEdge = 1000

// offsetPage checks a page request whose token is an offset ("" = 0):
// how many items the previous pages held; a size of 0 means def.
func offsetPage(size int32, token string, def int) (skip, n int, err error) {
	if n, err = pageSize(size, def); err != nil {
		return 0, 0, err
	}
	if token == "" {
		return 0, n, nil
	}
	skip, err = strconv.Atoi(token)
	if err != nil || skip < 0 {
		return 0, 0, apierr.InvalidArgument("pageToken", "invalid pageToken")
	}
	return skip, n, nil
}

// pageSize checks a request's page size; 0 means def.
func pageSize(n int32, def int) (int, error) {
	if n < 0 || n > maxPageSize {
		return 0, apierr.InvalidArgument("pageSize", fmt.Sprintf("pageSize must be 0 to %d", maxPageSize))
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
	if err := checkEntityType(req.GetType()); err != nil {
		return nil, err
	}
	if agent := req.GetAgentId(); agent != "" {
		// Asking for another agent's entities is denied, as reading its
		// memory is, rather than answered with an empty page.
		if _, err := authz.RequireAgent(ctx, agent, viewRoles...); err != nil {
			return nil, err
		}
	}
	return h.svc.listEntities(ctx, v, entityQuery{query: req.GetQuery(), typ: entityTypeName(req.GetType()), agent: req.GetAgentId(),
		at: req.GetAt(), size: size, pageToken: req.GetPageToken()})
}

// GetNeighbors returns the entities within depth (≤ 3) by relation.
func (h *handler) GetNeighbors(ctx context.Context, req *memoryv1.GetNeighborsRequest) (*memoryv1.GetNeighborsResponse, error) {
	v, err := h.viewer(ctx)
	if err != nil {
		return nil, err
	}
	if req.GetDepth() < 0 || req.GetDepth() > temporalgraph.MaxDepth {
		return nil, apierr.InvalidArgument("depth", fmt.Sprintf("depth must be 1 to %d", temporalgraph.MaxDepth))
	}
	rels, err := relationNames(req.GetRelations())
	if err != nil {
		return nil, err
	}
	return h.svc.neighbors(ctx, v, req.GetEntityId(), int(req.GetDepth()), rels, req.GetAt())
}

// GetEntityHistory lists facts about an entity added and removed, oldest first.
func (h *handler) GetEntityHistory(ctx context.Context, req *memoryv1.GetEntityHistoryRequest) (*memoryv1.GetEntityHistoryResponse, error) {
	v, err := h.viewer(ctx)
	if err != nil {
		return nil, err
	}
	skip, size, err := offsetPage(req.GetPageSize(), req.GetPageToken(), 100)
	if err != nil {
		return nil, err
	}
	return h.svc.entityHistory(v, req.GetEntityId(), skip, size)
}

// CheckProposal is the semantic guard (spec integration §3): entity refs
// the graph does not know, facts that repeat ones the agent has (case and
// spacing aside), and removals of facts linking entities that other agents'
// memory still refers to. proposal-apply flags such proposals for a person.
func (h *handler) CheckProposal(ctx context.Context, req *memoryv1.CheckProposalRequest) (*memoryv1.CheckProposalResponse, error) {
	if _, err := authz.RequireRole(ctx, auth.RoleService, auth.RoleAdmin); err != nil {
		return nil, err
	}
	if !memlayout.ValidAgentID(req.GetAgentId()) {
		return nil, apierr.InvalidArgument("agentId", "agentId must be a slug")
	}
	return &memoryv1.CheckProposalResponse{Findings: h.svc.checkProposal(ctx, req.GetAgentId(), req.GetUpdates(), req.GetEntityRefs())}, nil
}

// ExplainDecision answers "why": the decision, the entities its context,
// rationale and consequences link, and the earlier decisions it builds on,
// followed back up to depth, with a Mermaid flowchart of the chain.
func (h *handler) ExplainDecision(ctx context.Context, req *memoryv1.ExplainDecisionRequest) (*memoryv1.ExplainDecisionResponse, error) {
	v, err := h.viewer(ctx)
	if err != nil {
		return nil, err
	}
	depth := int(req.GetDepth())
	if depth < 0 || depth > maxWhyDepth {
		return nil, apierr.InvalidArgument("depth", fmt.Sprintf("depth must be 1 to %d", maxWhyDepth))
	}
	if depth == 0 {
		depth = 5
	}
	if temporalgraph.Slug(req.GetDecisionId()) == "" && strings.TrimSpace(req.GetQuery()) == "" {
		return nil, apierr.InvalidArgument("decisionId", "give a decisionId or a query")
	}
	return h.svc.explainDecision(ctx, v, req.GetDecisionId(), req.GetQuery(), depth)
}
