package searchindex

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/authz"
	"github.com/garden-bloom/memory/pkg/fulltext"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

// handler implements the gRPC methods: each validates the request, checks
// the caller, converts it (convert.go), calls the Service (search.go,
// status.go) and converts the answer back.
type handler struct {
	memoryv1.UnimplementedSearchIndexServiceServer
	svc *Service
}

// maxQueryBytes bounds a query's text.
const maxQueryBytes = 4096

var knownKinds = map[string]bool{"snapshot": true, "facts": true, "open_loops": true, "decisions": true,
	"timeline": true, "run": true, "logic_pseudo": true, "source": true}

// searchRoles may search; only they count when deciding which agents a
// token sees (a reviewer role on the same token widens nothing here).
var searchRoles = []auth.Role{auth.RoleAgent, auth.RoleService, auth.RoleAdmin}

// Search answers a natural-language query; an agent token sees only its
// own agents' files.
func (h *handler) Search(ctx context.Context, req *memoryv1.SearchRequest) (*memoryv1.SearchResponse, error) {
	claims, err := authz.RequireRole(ctx, searchRoles...)
	if err != nil {
		return nil, err
	}
	if err := specSearch(req); err != nil {
		return nil, err
	}
	q := searchQuery(req)
	q.KeepQuestionWords = h.svc.cfg.KeepQuestionWords
	switch {
	case strings.TrimSpace(q.Text) == "":
		return nil, apierr.InvalidArgument("q", "q must not be empty")
	case len(q.Text) > maxQueryBytes:
		return nil, apierr.InvalidArgument("q", fmt.Sprintf("q is longer than %d bytes", maxQueryBytes))
	case q.TopK < 0 || q.TopK > fulltext.MaxTopK:
		return nil, apierr.InvalidArgument("top_k", fmt.Sprintf("top_k must be 1 to %d", fulltext.MaxTopK))
	case q.Layer < 0 || q.Layer > 2:
		return nil, apierr.InvalidArgument("layer", "layer must be 1, 2 or unset")
	case q.AgentID != "" && !memlayout.ValidAgentID(q.AgentID):
		return nil, apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, "agent_id", "agent_id must be a slug")
	case len(q.PathPrefix) > 512:
		return nil, apierr.InvalidArgument("path_prefix", "path_prefix is too long")
	case strings.HasPrefix(q.PathPrefix, "/") || strings.Contains(q.PathPrefix, "..") || strings.ContainsAny(q.PathPrefix, "\\\x00"):
		return nil, apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_PATH, "path_prefix",
			"path_prefix must be a repository path prefix such as memory/<agentId>/ (no '..', '/' at the start, backslash or NUL)")
	}
	for _, k := range q.Kinds {
		if !knownKinds[k] {
			return nil, apierr.InvalidArgument("kinds", fmt.Sprintf("unknown kind %q", k))
		}
	}
	if q.AgentID != "" {
		if _, err := authz.RequireAgent(ctx, q.AgentID, searchRoles...); err != nil {
			return nil, err
		}
	} else if agents := authz.VisibleAgents(claims, searchRoles...); agents != nil {
		// An agent token without agent_id searches its own agent; a token
		// for several agents must say which, so no result leaks across.
		if len(agents) == 0 {
			return nil, apierr.New(codes.PermissionDenied, memoryv1.ErrorReason_ERROR_REASON_PERMISSION_DENIED, "the token grants access to no agent", nil)
		}
		if len(agents) != 1 {
			return nil, apierr.InvalidArgument("agent_id", "agent_id is required for a token that names several agents")
		}
		q.AgentID = agents[0]
	}
	if len(req.GetAt()) > 256 {
		return nil, apierr.InvalidArgument("at", "at must be a commit sha or an RFC 3339 time")
	}
	res, err := h.svc.search(ctx, q, req.GetAt())
	if err != nil {
		return nil, err
	}
	return searchResponse(res), nil
}

// Reindex starts an online rebuild (admin).
func (h *handler) Reindex(ctx context.Context, req *memoryv1.ReindexRequest) (*memoryv1.ReindexResponse, error) {
	if _, err := authz.RequireRole(ctx, auth.RoleAdmin); err != nil {
		return nil, err
	}
	if agent := req.GetAgentId(); agent != "" {
		if !memlayout.ValidAgentID(agent) {
			return nil, apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, "agentId", "agentId must be a slug")
		}
		if err := h.svc.ReindexAgent(ctx, agent); err != nil {
			h.svc.logger.Error("agent reindex failed", "agent", agent, "err", err)
			return nil, apierr.New(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_REPOSITORY_UNAVAILABLE, "reindex failed; retry later", nil)
		}
		st, err := h.svc.indexStatus(ctx)
		if err != nil {
			return nil, err
		}
		return &memoryv1.ReindexResponse{Started: true, Status: statusResponse(st)}, nil
	}
	started, err := h.svc.Reindex()
	if err != nil {
		return nil, apierr.New(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_REPOSITORY_UNAVAILABLE, "the memory repository is not available yet", nil)
	}
	st, err := h.svc.indexStatus(ctx)
	if err != nil {
		return nil, err
	}
	return &memoryv1.ReindexResponse{Started: started, Status: statusResponse(st)}, nil
}

// GetIndexStatus reports where the index is against main.
func (h *handler) GetIndexStatus(ctx context.Context, _ *memoryv1.GetIndexStatusRequest) (*memoryv1.GetIndexStatusResponse, error) {
	if _, err := authz.RequireRole(ctx, auth.RoleAgent, auth.RoleService, auth.RoleAdmin, auth.RoleReviewer); err != nil {
		return nil, err
	}
	st, err := h.svc.indexStatus(ctx)
	if err != nil {
		return nil, err
	}
	return statusResponse(st), nil
}
