package contextassembly

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/authz"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

// handler implements the gRPC methods: each validates the request, checks
// the caller, converts it (convert.go), calls the Service and converts
// the answer back. What a call does lives in the Service (read.go,
// history.go, diff.go, assemble.go, status.go).
type handler struct {
	memoryv1.UnimplementedContextAssemblyServiceServer
	svc *Service
}

var readRoles = []auth.Role{auth.RoleAgent, auth.RoleService, auth.RoleAdmin}

// Request bounds.
const (
	maxListItems = 64
	maxPageSize  = 500
)

// access validates the agent id and the caller's right to read it.
func access(ctx context.Context, agent, field string) error {
	if !memlayout.ValidAgentID(agent) {
		return apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, field, field+" must be a slug [a-z0-9][a-z0-9-]{0,63}")
	}
	_, err := authz.RequireAgent(ctx, agent, readRoles...)
	return err
}

// ReadMemory reads an agent's memory in a mode; the same commit and request
// give a byte-identical answer (loadedAt is the commit's time).
func (h *handler) ReadMemory(ctx context.Context, req *memoryv1.ReadMemoryRequest) (*memoryv1.ReadMemoryResponse, error) {
	if err := access(ctx, req.GetAgentId(), "agentId"); err != nil {
		return nil, err
	}
	if err := specRead(req); err != nil {
		return nil, err
	}
	readMode := req.GetMode()
	if readMode == memoryv1.ReadMode_READ_MODE_UNSPECIFIED {
		readMode = req.GetDepth() // the DiffMem adapter's name
	}
	m, err := mode(readMode)
	if err != nil {
		return nil, apierr.InvalidArgument("mode", "mode must be basic, wide, deep or temporal")
	}
	if req.GetMaxTokens() < 0 {
		return nil, apierr.InvalidArgument("maxTokens", "maxTokens must not be negative")
	}
	if len(req.GetIncludeFiles()) > maxListItems || len(req.GetExcludeFiles()) > maxListItems {
		return nil, apierr.InvalidArgument("includeFiles", fmt.Sprintf("at most %d include/exclude entries", maxListItems))
	}
	for field, list := range map[string][]string{"includeFiles": req.GetIncludeFiles(), "excludeFiles": req.GetExcludeFiles()} {
		if err := checkFileNames(req.GetAgentId(), field, list); err != nil {
			return nil, err
		}
	}
	read, err := h.svc.readMemory(ctx, readRequest{agent: req.GetAgentId(), at: req.GetAt(), from: req.GetFrom(), to: req.GetTo(),
		mode: m, maxTokens: int(req.GetMaxTokens()), include: req.GetIncludeFiles(), exclude: req.GetExcludeFiles()})
	if err != nil {
		return nil, err
	}
	return readResponse(req.GetAgentId(), readMode, read), nil
}

// readFolders are the folders include/exclude lists may name ("runs/").
var readFolders = []string{"runs/", "timeline/", "logic/", "diffs/"}

// checkFileNames accepts only names of the agent's memory files (optionally
// under diffs/, temporal mode's diffs) and the folders a read has.
func checkFileNames(agent, field string, names []string) error {
	for _, n := range names {
		if slices.Contains(readFolders, n) {
			continue
		}
		if _, err := memlayout.Resolve(agent, strings.TrimPrefix(n, "diffs/")); err != nil {
			return apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_PATH, field,
				fmt.Sprintf("%s: %q is not a memory file (snapshot.md, facts.md, runs/run_<id>.md, …) or folder (%s)", field, apierr.Clip(n), strings.Join(readFolders, ", ")))
		}
	}
	return nil
}

var layer2Kinds = []string{"decisions", "changelog", "timeline", "runs"}

// GetLayer2 returns only the Layer 2 pieces asked for.
func (h *handler) GetLayer2(ctx context.Context, req *memoryv1.GetLayer2Request) (*memoryv1.GetLayer2Response, error) {
	if err := access(ctx, req.GetAgentId(), "agent"); err != nil {
		return nil, err
	}
	include := req.GetInclude()
	if len(include) == 0 {
		include = []string{"decisions"}
	}
	for _, k := range include {
		if !slices.Contains(layer2Kinds, k) {
			return nil, apierr.InvalidArgument("include", fmt.Sprintf("include %q: want decisions, changelog, timeline or runs", k))
		}
	}
	for _, d := range []string{req.GetTimelineFrom(), req.GetTimelineTo()} {
		if _, err := time.Parse("2006-01-02", d); d != "" && err != nil {
			return nil, apierr.InvalidArgument("timelineFrom", "timeline dates are YYYY-MM-DD")
		}
	}
	if len(req.GetRunIds()) > maxListItems || req.GetDecisionsLimit() < 0 || req.GetMaxTokens() < 0 {
		return nil, apierr.InvalidArgument("runIds", "invalid limits")
	}
	return h.svc.layer2(ctx, layer2Request{agent: req.GetAgentId(), at: req.GetAt(), include: include,
		timelineFrom: req.GetTimelineFrom(), timelineTo: req.GetTimelineTo(), runIDs: req.GetRunIds(),
		decisionsLimit: int(req.GetDecisionsLimit()), maxTokens: int(req.GetMaxTokens())})
}

// ListHistory lists the commits that touched an agent's memory, newest first.
func (h *handler) ListHistory(ctx context.Context, req *memoryv1.ListHistoryRequest) (*memoryv1.ListHistoryResponse, error) {
	if err := access(ctx, req.GetAgentId(), "agentId"); err != nil {
		return nil, err
	}
	q := historyQuery{agent: req.GetAgentId(), size: int(req.GetPageSize()), pageToken: req.GetPageToken()}
	if q.size < 0 || q.size > maxPageSize {
		return nil, apierr.InvalidArgument("pageSize", fmt.Sprintf("pageSize must be 0 to %d", maxPageSize))
	}
	if q.size == 0 {
		q.size = 50
	}
	for _, p := range []struct {
		v   string
		dst *time.Time
	}{{req.GetSince(), &q.since}, {req.GetUntil(), &q.until}} {
		if p.v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, p.v)
		if err != nil {
			return nil, apierr.InvalidArgument("since", "since and until are RFC 3339 times")
		}
		*p.dst = t
	}
	for _, f := range req.GetFiles() {
		file, err := memlayout.Resolve(req.GetAgentId(), f)
		if err != nil {
			return nil, apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_PATH, "files", fmt.Sprintf("file %q is not an agent memory file", apierr.Clip(f)))
		}
		q.prefixes = append(q.prefixes, file.Path)
	}
	if len(q.prefixes) == 0 {
		q.prefixes = []string{memlayout.AgentDir(req.GetAgentId()), memlayout.LogicDir(req.GetAgentId())}
	}
	// A commit made with plain git may touch several agents: a caller
	// limited to some agents sees only the agent's own files of it.
	claims, err := authz.Caller(ctx)
	if err != nil {
		return nil, err
	}
	q.ownFilesOnly = authz.VisibleAgents(claims, readRoles...) != nil
	return h.svc.history(ctx, q)
}

// DiffMemory returns what changed in an agent's memory between two points
// (spec DiffMem §4.3): unified diffs per file or a structured list of facts,
// loops and decisions, with the "N commits, M files, +a −d" summary.
func (h *handler) DiffMemory(ctx context.Context, req *memoryv1.DiffMemoryRequest) (*memoryv1.DiffMemoryResponse, error) {
	if err := access(ctx, req.GetAgentId(), "agentId"); err != nil {
		return nil, err
	}
	if err := checkTool(req.GetTool(), "memory-diff", "diff_memory"); err != nil {
		return nil, err
	}
	if req.GetMaxTokens() < 0 {
		return nil, apierr.InvalidArgument("maxTokens", "maxTokens must not be negative")
	}
	if len(req.GetFiles()) > maxListItems {
		return nil, apierr.InvalidArgument("files", fmt.Sprintf("at most %d files", maxListItems))
	}
	for _, f := range req.GetFiles() {
		if _, err := memlayout.Resolve(req.GetAgentId(), f); err != nil {
			return nil, apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_PATH, "files", fmt.Sprintf("file %q is not an agent memory file", apierr.Clip(f)))
		}
	}
	format := req.GetFormat()
	if format != memoryv1.DiffFormat_DIFF_FORMAT_UNSPECIFIED && format != memoryv1.DiffFormat_DIFF_FORMAT_UNIFIED && format != memoryv1.DiffFormat_DIFF_FORMAT_FACTS {
		return nil, apierr.InvalidArgument("format", "format must be unified or facts")
	}
	return h.svc.diffMemory(ctx, diffRequest{agent: req.GetAgentId(), from: req.GetFrom(), to: req.GetTo(), files: req.GetFiles(),
		facts: format == memoryv1.DiffFormat_DIFF_FORMAT_FACTS, maxTokens: int(req.GetMaxTokens())})
}

// AssembleContext builds a run's context: Layer 1 first, then the agent's
// sources and search hits for the query hint by score, within the budget.
func (h *handler) AssembleContext(ctx context.Context, req *memoryv1.AssembleContextRequest) (*memoryv1.AssembleContextResponse, error) {
	if err := access(ctx, req.GetAgentId(), "agent"); err != nil {
		return nil, err
	}
	budget := int(req.GetBudget())
	switch {
	case budget < 0 || budget > MaxBudget:
		return nil, apierr.InvalidArgument("budget", fmt.Sprintf("budget must be 1 to %d tokens", MaxBudget))
	case budget == 0:
		budget = DefaultBudget
	}
	if len(req.GetQueryHint()) > maxHintBytes {
		return nil, apierr.InvalidArgument("query_hint", fmt.Sprintf("query_hint is longer than %d bytes", maxHintBytes))
	}
	topK := int(req.GetTopK()) // 0: sized by the budget (Retrieval.topK)
	if topK < 0 || topK > 100 {
		return nil, apierr.InvalidArgument("top_k", "top_k must be 1 to 100")
	}
	graph := h.svc.retrieval.Graph
	if req.Graph != nil {
		graph = req.GetGraph()
	}
	return h.svc.assemble(ctx, assembleRequest{agent: req.GetAgentId(), at: req.GetAt(), budget: budget,
		queryHint: req.GetQueryHint(), topK: topK, excludeSources: req.GetExcludeSources(), graph: graph})
}

// listRoles may list agents: the memory readers, and reviewers, who need
// to find the agents whose proposals they review (the list shows
// meta.json, not memory).
var listRoles = append(slices.Clone(readRoles), auth.RoleReviewer)

// maxAgentsPage bounds a ListAgents page (one meta.json read per agent).
const maxAgentsPage = 1000

// ListAgents lists the agents with memory that the caller may see.
func (h *handler) ListAgents(ctx context.Context, req *memoryv1.ListAgentsRequest) (*memoryv1.ListAgentsResponse, error) {
	claims, err := authz.RequireRole(ctx, listRoles...)
	if err != nil {
		return nil, err
	}
	q := agentsQuery{visible: authz.VisibleAgents(claims, listRoles...), query: strings.ToLower(strings.TrimSpace(req.GetQuery())),
		size: int(req.GetPageSize()), after: req.GetPageToken(), at: req.GetAt()}
	switch {
	case q.size < 0 || q.size > maxAgentsPage:
		return nil, apierr.InvalidArgument("pageSize", fmt.Sprintf("pageSize must be 0 to %d", maxAgentsPage))
	case q.size == 0:
		q.size = 100
	}
	if q.after != "" && !memlayout.ValidAgentID(q.after) {
		return nil, apierr.InvalidArgument("pageToken", "invalid pageToken")
	}
	if err := apierr.CheckText("query", req.GetQuery(), 256); err != nil {
		return nil, err
	}
	return h.svc.listAgents(ctx, q)
}

// GetAgentStatus reports an agent's memory at main's head: meta.json, and
// Layer 1's token use counted now against the hard limits.
func (h *handler) GetAgentStatus(ctx context.Context, req *memoryv1.GetAgentStatusRequest) (*memoryv1.GetAgentStatusResponse, error) {
	if err := access(ctx, req.GetAgentId(), "agentId"); err != nil {
		return nil, err
	}
	st, err := h.svc.agentStatus(ctx, req.GetAgentId())
	if err != nil {
		return nil, err
	}
	return statusResponse(req.GetAgentId(), st), nil
}
