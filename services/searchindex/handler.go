package searchindex

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/authz"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/fulltext"
)

// handler implements the gRPC methods; it stays thin and delegates to the Service.
type handler struct {
	memoryv1.UnimplementedSearchIndexServiceServer
	svc *Service
}

// maxQueryBytes bounds a query's text.
const maxQueryBytes = 4096

var knownKinds = map[string]bool{"snapshot": true, "facts": true, "open_loops": true, "decisions": true,
	"timeline": true, "run": true, "logic_pseudo": true, "source": true}

func invalid(field, msg string) error {
	return apierr.New(codes.InvalidArgument, memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, msg, map[string]string{"field": field})
}

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
	q := fulltext.Query{Text: req.GetQuery(), TopK: int(req.GetTopK()), AgentID: req.GetAgentId(),
		Layer: int(req.GetLayer()), Kinds: req.GetKinds(), PathPrefix: req.GetPathPrefix(),
		OmitExcerpts: req.GetOmitExcerpts()}
	switch {
	case strings.TrimSpace(q.Text) == "":
		return nil, invalid("q", "q must not be empty")
	case len(q.Text) > maxQueryBytes:
		return nil, invalid("q", fmt.Sprintf("q is longer than %d bytes", maxQueryBytes))
	case q.TopK < 0 || q.TopK > fulltext.MaxTopK:
		return nil, invalid("top_k", fmt.Sprintf("top_k must be 1 to %d", fulltext.MaxTopK))
	case q.Layer < 0 || q.Layer > 2:
		return nil, invalid("layer", "layer must be 1, 2 or unset")
	case q.AgentID != "" && !memlayout.ValidAgentID(q.AgentID):
		return nil, apierr.New(codes.InvalidArgument, memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, "agent_id must be a slug", map[string]string{"field": "agent_id"})
	case len(q.PathPrefix) > 512:
		return nil, invalid("path_prefix", "path_prefix is too long")
	case strings.HasPrefix(q.PathPrefix, "/") || strings.Contains(q.PathPrefix, "..") || strings.ContainsAny(q.PathPrefix, "\\\x00"):
		return nil, apierr.New(codes.InvalidArgument, memoryv1.ErrorReason_ERROR_REASON_INVALID_PATH,
			"path_prefix must be a repository path prefix such as memory/<agentId>/ (no '..', '/' at the start, backslash or NUL)", map[string]string{"field": "path_prefix"})
	}
	for _, k := range q.Kinds {
		if !knownKinds[k] {
			return nil, invalid("kinds", fmt.Sprintf("unknown kind %q", k))
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
			return nil, invalid("agent_id", "agent_id is required for a token that names several agents")
		}
		q.AgentID = agents[0]
	}

	var (
		res      *fulltext.Result
		pastRepo *memrepo.Repo
		past     plumbing.Hash
	)
	if at := req.GetAt(); at != "" {
		// As of a commit: exact, the state right after it in commit order.
		if len(at) > 256 {
			return nil, invalid("at", "at must be a commit sha or an RFC 3339 time")
		}
		repo, err := h.svc.openRepo()
		if err != nil {
			return nil, apierr.New(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_REPOSITORY_UNAVAILABLE, "the memory repository is not available yet", nil)
		}
		commit, err := resolveAt(ctx, repo, at)
		if e := atError(at, err); e != nil {
			return nil, e
		}
		if err != nil {
			h.svc.logger.Warn("search at: cannot resolve", "at", at, "err", err)
			return nil, apierr.New(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_REPOSITORY_UNAVAILABLE, "cannot read main", nil)
		}
		if commit.String() != h.svc.index.State().LastCommit {
			// The index holds only its head: search that commit's files.
			if q.AgentID == "" {
				return nil, invalid("agent_id", "agent_id is required with at (a past commit is searched one agent at a time)")
			}
			pastRepo, past = repo, commit
		}
	}
	if pastRepo != nil {
		start := time.Now()
		res, err = h.searchAt(ctx, pastRepo, past, q)
		if e := atError(req.GetAt(), err); e != nil {
			return nil, e
		}
		if res != nil {
			res.Took = time.Since(start)
		}
	} else {
		res, err = h.svc.index.Search(ctx, q)
	}
	if errors.Is(err, fulltext.ErrEmptyQuery) {
		return nil, invalid("q", "q has no searchable words")
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		h.svc.logger.Error("search failed", "err", err)
		return nil, apierr.New(codes.Internal, memoryv1.ErrorReason_ERROR_REASON_UNSPECIFIED, "search failed", nil)
	}
	resp := &memoryv1.SearchResponse{TotalHits: int32(res.TotalHits), Took: durationpb.New(res.Took), IndexCommit: res.State.LastCommit}
	if pastRepo == nil {
		if repo, err := h.svc.openRepo(); err == nil {
			if head, err := repo.Head(ctx); err == nil {
				resp.Stale = head.String() != res.State.LastCommit
			}
		}
	}
	for _, hit := range res.Hits {
		resp.Results = append(resp.Results, &memoryv1.SearchResult{
			Score: hit.Score, File: hit.Path, Excerpt: hit.Excerpt, Layer: int32(hit.Layer), AgentId: hit.AgentID,
			Span: &memoryv1.Span{StartLine: int32(hit.StartLine), EndLine: int32(hit.EndLine)}, Commit: hit.Version, Kind: hit.Kind,
		})
	}
	return resp, nil
}

// Reindex starts an online rebuild (admin).
func (h *handler) Reindex(ctx context.Context, req *memoryv1.ReindexRequest) (*memoryv1.ReindexResponse, error) {
	if _, err := authz.RequireRole(ctx, auth.RoleAdmin); err != nil {
		return nil, err
	}
	if agent := req.GetAgentId(); agent != "" {
		if !memlayout.ValidAgentID(agent) {
			return nil, apierr.New(codes.InvalidArgument, memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, "agentId must be a slug", map[string]string{"field": "agentId"})
		}
		if err := h.svc.ReindexAgent(ctx, agent); err != nil {
			h.svc.logger.Error("agent reindex failed", "agent", agent, "err", err)
			return nil, apierr.New(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_REPOSITORY_UNAVAILABLE, "reindex failed; retry later", nil)
		}
		st, err := h.status(ctx)
		if err != nil {
			return nil, err
		}
		return &memoryv1.ReindexResponse{Started: true, Status: st}, nil
	}
	started, err := h.svc.Reindex()
	if err != nil {
		return nil, apierr.New(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_REPOSITORY_UNAVAILABLE, "the memory repository is not available yet", nil)
	}
	st, err := h.status(ctx)
	if err != nil {
		return nil, err
	}
	return &memoryv1.ReindexResponse{Started: started, Status: st}, nil
}

// GetIndexStatus reports where the index is against main.
func (h *handler) GetIndexStatus(ctx context.Context, _ *memoryv1.GetIndexStatusRequest) (*memoryv1.GetIndexStatusResponse, error) {
	if _, err := authz.RequireRole(ctx, auth.RoleAgent, auth.RoleService, auth.RoleAdmin, auth.RoleReviewer); err != nil {
		return nil, err
	}
	return h.status(ctx)
}

// maxLagWalk bounds how far back status counts commits of lag.
const maxLagWalk = 10000

func (h *handler) status(ctx context.Context) (*memoryv1.GetIndexStatusResponse, error) {
	st := h.svc.index.State()
	resp := &memoryv1.GetIndexStatusResponse{
		LastCommit: st.LastCommit, Documents: int32(st.Documents), Chunks: int32(st.Chunks),
		Reindexing: h.svc.reindexing.Load(),
	}
	if !st.IndexedAt.IsZero() {
		resp.LastIndexedAt = timestamppb.New(st.IndexedAt)
	}
	repo, err := h.svc.openRepo()
	if err != nil {
		return resp, nil // no repository yet: nothing to lag behind
	}
	head, err := repo.Head(ctx)
	if err != nil {
		return nil, apierr.New(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_REPOSITORY_UNAVAILABLE, "cannot read main", nil)
	}
	resp.HeadCommit = head.String()
	if head.String() == st.LastCommit {
		resp.Lag = durationpb.New(0)
		return resp, nil
	}
	var headTime time.Time
	lag := 0
	_ = repo.Walk(ctx, head, func(c *object.Commit) error {
		if lag == 0 {
			headTime = c.Committer.When
		}
		if c.Hash.String() == st.LastCommit || lag >= maxLagWalk {
			if c.Hash.String() == st.LastCommit {
				resp.Lag = durationpb.New(headTime.Sub(c.Committer.When))
			}
			return memrepo.ErrStopWalk
		}
		lag++
		return nil
	})
	resp.LagCommits = int32(lag)
	return resp, nil
}
