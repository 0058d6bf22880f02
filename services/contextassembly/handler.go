package contextassembly

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/authz"
	"github.com/garden-bloom/memory/pkg/history"
	"github.com/garden-bloom/memory/pkg/mdops"
	"github.com/garden-bloom/memory/pkg/memdiff"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memread"
	"github.com/garden-bloom/memory/pkg/memrepo"
)

// handler implements the gRPC methods; it stays thin and delegates to the Service.
type handler struct {
	memoryv1.UnimplementedContextAssemblyServiceServer
	svc *Service
}

var readRoles = []auth.Role{auth.RoleAgent, auth.RoleService, auth.RoleAdmin}

// Request bounds.
const (
	maxListItems   = 64
	maxPageSize    = 500
	lastGoodLookup = 1000
)

func invalid(reason memoryv1.ErrorReason, field, msg string) error {
	return apierr.New(codes.InvalidArgument, reason, msg, map[string]string{"field": field})
}

// access validates the agent id and the caller's right to read it.
func access(ctx context.Context, agent, field string) error {
	if !memlayout.ValidAgentID(agent) {
		return invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, field, field+" must be a slug [a-z0-9][a-z0-9-]{0,63}")
	}
	_, err := authz.RequireAgent(ctx, agent, readRoles...)
	return err
}

// retryAfter is what an Unavailable answer tells clients to wait (spec
// integration §9: phase 3 is retried after 5 s).
const retryAfter = 5 * time.Second

func (h *handler) unavailable(err error) error {
	h.svc.logger.Warn("repository read failed", "err", err)
	return apierr.Retryable(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_REPOSITORY_UNAVAILABLE,
		"the memory repository is unavailable; retry later", retryAfter)
}

// withRetries runs fn up to three times with a short backoff: a repository on
// a network volume may hiccup, and a read should ride that out.
func withRetries(ctx context.Context, fn func() error) error {
	backoff := 50 * time.Millisecond
	var err error
	for attempt := range 3 {
		if err = fn(); err == nil || errors.Is(err, errRevision) {
			return err
		}
		if attempt < 2 {
			select {
			case <-ctx.Done():
				return err
			case <-time.After(backoff):
			}
			backoff *= 2
		}
	}
	return err
}

// at resolves the request's revision to a commit and its files.
func (h *handler) at(ctx context.Context, agent, at string) (agentFiles, *object.Commit, error) {
	var (
		repo   *memrepo.Repo
		commit plumbing.Hash
		c      *object.Commit
	)
	err := withRetries(ctx, func() error {
		var err error
		if repo, err = h.svc.openRepo(); err != nil {
			return err
		}
		commit, c, err = resolve(ctx, repo, at)
		return err
	})
	if errors.Is(err, errRevision) {
		return agentFiles{}, nil, apierr.New(codes.NotFound, memoryv1.ErrorReason_ERROR_REASON_REVISION_NOT_FOUND,
			fmt.Sprintf("at %q names no commit of main", at), map[string]string{"at": at})
	}
	if err != nil {
		return agentFiles{}, nil, h.unavailable(err)
	}
	files := agentFiles{ctx: ctx, repo: repo, commit: commit, agent: agent}
	if files.tree, err = files.folderHash(); err != nil {
		return agentFiles{}, nil, h.unavailable(err)
	}
	if files.tree.IsZero() {
		return agentFiles{}, nil, apierr.New(codes.NotFound, memoryv1.ErrorReason_ERROR_REASON_AGENT_NOT_FOUND,
			fmt.Sprintf("agent %q has no memory at %s", agent, commit.String()[:12]), nil)
	}
	return files, c, nil
}

func mode(m memoryv1.ReadMode) (memread.Mode, error) {
	switch m {
	case memoryv1.ReadMode_READ_MODE_UNSPECIFIED, memoryv1.ReadMode_READ_MODE_BASIC:
		return memread.Basic, nil
	case memoryv1.ReadMode_READ_MODE_WIDE:
		return memread.Wide, nil
	case memoryv1.ReadMode_READ_MODE_DEEP:
		return memread.Deep, nil
	case memoryv1.ReadMode_READ_MODE_TEMPORAL:
		return memread.Temporal, nil
	}
	return "", fmt.Errorf("unknown mode")
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
		return nil, invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, "mode", "mode must be basic, wide, deep or temporal")
	}
	if req.GetMaxTokens() < 0 {
		return nil, invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, "maxTokens", "maxTokens must not be negative")
	}
	if len(req.GetIncludeFiles()) > maxListItems || len(req.GetExcludeFiles()) > maxListItems {
		return nil, invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, "includeFiles", fmt.Sprintf("at most %d include/exclude entries", maxListItems))
	}
	for field, list := range map[string][]string{"includeFiles": req.GetIncludeFiles(), "excludeFiles": req.GetExcludeFiles()} {
		if err := checkFileNames(req.GetAgentId(), field, list); err != nil {
			return nil, err
		}
	}
	files, commit, err := h.at(ctx, req.GetAgentId(), req.GetAt())
	if err != nil {
		return nil, err
	}
	var extra func() ([]memread.File, error)
	if m == memread.Temporal {
		extra = func() ([]memread.File, error) {
			to := req.GetTo()
			if to == "" {
				to = files.commit.String()
			}
			changes, _, err := h.temporalDiffs(ctx, req.GetAgentId(), req.GetFrom(), to, commit.Committer.When)
			if err != nil {
				return nil, err
			}
			var out []memread.File
			for _, c := range changes {
				text, _, _ := memdiff.Unified(c.rel, c.before, c.after, diffContext)
				if text != "" {
					out = append(out, memread.File{Rel: "diffs/" + c.rel, Content: text, Layer: 2})
				}
			}
			return out, nil
		}
	}
	read, err := h.readFolder(ctx, files, memread.Request{
		Mode: m, MaxTokens: int(req.GetMaxTokens()), Include: req.GetIncludeFiles(), Exclude: req.GetExcludeFiles(),
		Today: commit.Committer.When.UTC().Format("2006-01-02"),
	}, true, extra)
	if err != nil {
		return nil, budgetError("maxTokens", err)
	}
	res, meta := read.res, read.meta
	diffs := map[string]string{}
	resp := &memoryv1.ReadMemoryResponse{
		AgentId: req.GetAgentId(), Version: meta.Version, Commit: files.commit.String(),
		LoadedAt: timestamppb.New(commit.Committer.When), Mode: readMode, TokenCount: int32(res.Tokens),
		Content: map[string]string{}, Meta: metaMessage(req.GetAgentId(), meta), Truncated: res.Truncated, Warnings: slices.Clip(res.Warnings),
	}
	if resp.Mode == memoryv1.ReadMode_READ_MODE_UNSPECIFIED {
		resp.Mode = memoryv1.ReadMode_READ_MODE_BASIC
	}
	for _, f := range res.Files {
		if rel, ok := strings.CutPrefix(f.Rel, "diffs/"); ok {
			diffs[rel] = f.Content
		}
		if f.Rel == memlayout.FactsFile {
			h.svc.usage.record(req.GetAgentId(), f.Content)
		}
		resp.Content[f.Rel] = f.Content
		resp.Files = append(resp.Files, &memoryv1.FileContent{File: f.Rel, Content: f.Content, TokenCount: int32(f.Tokens), Layer: int32(f.Layer), Truncated: f.Truncated})
	}
	if len(diffs) > 0 {
		resp.Diffs = diffs
	}
	return resp, nil
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
			return invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_PATH, field,
				fmt.Sprintf("%s: %q is not a memory file (snapshot.md, facts.md, runs/run_<id>.md, …) or folder (%s)", field, apierr.Clip(n), strings.Join(readFolders, ", ")))
		}
	}
	return nil
}

func metaMessage(agent string, m memlayout.Meta) *memoryv1.MemoryMeta {
	out := &memoryv1.MemoryMeta{
		AgentId: agent, Version: m.Version, LastRunId: m.LastRunID,
		SnapshotTokenCount: int32(m.SnapshotTokenCount), FactsTokenCount: int32(m.FactsTokenCount),
		OpenLoopsTokenCount: int32(m.OpenLoopsTokenCount), OpenLoopsCount: int32(m.OpenLoopsCount),
		DecisionsCount: int32(m.DecisionsCount), SchemaVersion: m.SchemaVersion, TokenEncoding: m.TokenEncoding,
		Checksum: m.Layer1SHA256,
	}
	if !m.LastUpdate.IsZero() {
		out.LastUpdate = timestamppb.New(m.LastUpdate)
	}
	return out
}

// checkSnapshot refuses to serve an empty or unreadable snapshot.md and says
// where it was last good (spec integration §9: restore with git).
func (h *handler) checkSnapshot(ctx context.Context, files agentFiles) error {
	snap, ok, err := files.read(memlayout.SnapshotFile)
	if err != nil {
		return h.unavailable(err)
	}
	if !ok || mdops.CheckSnapshot(snap) == nil {
		return nil // no snapshot yet is a young agent, not corruption
	}
	path := memlayout.AgentDir(files.agent) + memlayout.SnapshotFile
	lastGood, n := "", 0
	_ = files.repo.Walk(ctx, files.commit, func(c *object.Commit) error {
		if n++; n > lastGoodLookup {
			return memrepo.ErrStopWalk
		}
		data, err := files.repo.ReadFile(ctx, c.Hash, path)
		if err == nil && mdops.CheckSnapshot(string(data)) == nil {
			lastGood = c.Hash.String()
			return memrepo.ErrStopWalk
		}
		return nil
	})
	msg := fmt.Sprintf("%s is empty or unreadable at %s", path, files.commit.String()[:12])
	if lastGood != "" {
		msg += fmt.Sprintf("; last good at %s (restore it with a proposal or git revert)", lastGood[:12])
	}
	return apierr.New(codes.DataLoss, memoryv1.ErrorReason_ERROR_REASON_MEMORY_CORRUPTED, msg,
		map[string]string{"file": path, "commit": files.commit.String(), "lastGoodCommit": lastGood})
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
			return nil, invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, "include", fmt.Sprintf("include %q: want decisions, changelog, timeline or runs", k))
		}
	}
	for _, d := range []string{req.GetTimelineFrom(), req.GetTimelineTo()} {
		if _, err := time.Parse("2006-01-02", d); d != "" && err != nil {
			return nil, invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, "timelineFrom", "timeline dates are YYYY-MM-DD")
		}
	}
	if len(req.GetRunIds()) > maxListItems || req.GetDecisionsLimit() < 0 || req.GetMaxTokens() < 0 {
		return nil, invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, "runIds", "invalid limits")
	}
	files, _, err := h.at(ctx, req.GetAgentId(), req.GetAt())
	if err != nil {
		return nil, err
	}
	resp := &memoryv1.GetLayer2Response{AgentId: req.GetAgentId(), Commit: files.commit.String()}
	// Each piece is taken whole if it fits what is left of the budget, else
	// left out (truncated); what is counted is listed in budget.go.
	budget := int(req.GetMaxTokens())
	smallest := 0 // the cheapest piece asked for
	spend := func(texts ...string) bool {
		n := 0
		for _, t := range texts {
			n += h.svc.count(t)
		}
		if smallest == 0 || n < smallest {
			smallest = n
		}
		if budget > 0 && int(resp.TokenCount)+n > budget {
			resp.Truncated = true
			return false
		}
		resp.TokenCount += int32(n)
		return true
	}
	if slices.Contains(include, "decisions") {
		md, _, err := files.read(memlayout.DecisionsFile)
		if err != nil {
			return nil, h.unavailable(err)
		}
		limit := int(req.GetDecisionsLimit())
		if limit == 0 {
			limit = memread.WideDecisions
		}
		for _, d := range mdops.LastDecisions(md, limit) {
			if !spend(d.ID, d.Title, d.Status, d.Context, d.Decision, d.Rationale, d.Consequences, d.RunID) {
				continue
			}
			resp.Decisions = append(resp.Decisions, &memoryv1.Decision{Id: d.ID, Title: d.Title, Status: d.Status, Context: d.Context,
				Decision: d.Decision, Rationale: d.Rationale, Consequences: d.Consequences, RunId: d.RunID, Date: timestamppb.New(d.Date)})
		}
	}
	if slices.Contains(include, "changelog") {
		md, _, err := files.read(memlayout.ChangelogFile)
		if err != nil {
			return nil, h.unavailable(err)
		}
		if md != "" && spend(md) {
			resp.Changelog = md
		}
	}
	if slices.Contains(include, "timeline") {
		days, err := files.list("timeline/")
		if err != nil {
			return nil, h.unavailable(err)
		}
		for _, rel := range days {
			date := strings.TrimSuffix(strings.TrimPrefix(rel, "timeline/"), ".md")
			if (req.GetTimelineFrom() != "" && date < req.GetTimelineFrom()) || (req.GetTimelineTo() != "" && date > req.GetTimelineTo()) {
				continue
			}
			md, _, err := files.read(rel)
			if err != nil {
				return nil, h.unavailable(err)
			}
			if !spend(date, md) {
				continue
			}
			resp.Timeline = append(resp.Timeline, &memoryv1.TimelineDay{Date: date, Content: md, TokenCount: int32(h.svc.count(md))})
		}
	}
	if slices.Contains(include, "runs") {
		for _, id := range req.GetRunIds() {
			if !memlayout.ValidRunID(id) {
				return nil, invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, "runIds", fmt.Sprintf("run id %q is not valid", apierr.Clip(id)))
			}
			run := memlayout.RunRef(id)
			md, ok, err := files.read("runs/" + run + ".md")
			if err != nil {
				return nil, h.unavailable(err)
			}
			if !ok || !spend(run, md) {
				continue
			}
			resp.Runs = append(resp.Runs, &memoryv1.RunRecord{RunId: run, Content: md, TokenCount: int32(h.svc.count(md))})
		}
	}
	if resp.Truncated && len(resp.Decisions)+len(resp.Timeline)+len(resp.Runs) == 0 && resp.Changelog == "" {
		// Nothing asked for fits: an empty answer would say nothing.
		return nil, tooSmall("maxTokens", budget, smallest)
	}
	return resp, nil
}

// ListHistory lists the commits that touched an agent's memory, newest first.
func (h *handler) ListHistory(ctx context.Context, req *memoryv1.ListHistoryRequest) (*memoryv1.ListHistoryResponse, error) {
	if err := access(ctx, req.GetAgentId(), "agentId"); err != nil {
		return nil, err
	}
	size := int(req.GetPageSize())
	if size < 0 || size > maxPageSize {
		return nil, invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, "pageSize", fmt.Sprintf("pageSize must be 0 to %d", maxPageSize))
	}
	if size == 0 {
		size = 50
	}
	var since, until time.Time
	for _, p := range []struct {
		v   string
		dst *time.Time
	}{{req.GetSince(), &since}, {req.GetUntil(), &until}} {
		if p.v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, p.v)
		if err != nil {
			return nil, invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, "since", "since and until are RFC 3339 times")
		}
		*p.dst = t
	}
	var prefixes []string
	for _, f := range req.GetFiles() {
		file, err := memlayout.Resolve(req.GetAgentId(), f)
		if err != nil {
			return nil, invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_PATH, "files", fmt.Sprintf("file %q is not an agent memory file", apierr.Clip(f)))
		}
		prefixes = append(prefixes, file.Path)
	}
	if len(prefixes) == 0 {
		prefixes = []string{memlayout.AgentDir(req.GetAgentId()), memlayout.LogicDir(req.GetAgentId())}
	}
	// A commit made with plain git may touch several agents: a caller
	// limited to some agents sees only the agent's own files of it.
	claims, err := authz.Caller(ctx)
	if err != nil {
		return nil, err
	}
	ownFilesOnly := authz.VisibleAgents(claims, readRoles...) != nil
	repo, err := h.svc.openRepo()
	if err != nil {
		return nil, h.unavailable(err)
	}
	start, err := repo.Head(ctx)
	if err != nil {
		return nil, h.unavailable(err)
	}
	if tok := req.GetPageToken(); tok != "" {
		// The token is the last commit of the previous page.
		c, err := repo.CommitInfo(ctx, plumbing.NewHash(tok))
		if err != nil || len(c.ParentHashes) == 0 || len(tok) != 40 {
			return nil, invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, "pageToken", "invalid pageToken")
		}
		start = c.ParentHashes[0]
	}
	resp := &memoryv1.ListHistoryResponse{}
	err = repo.Walk(ctx, start, func(c *object.Commit) error {
		if !since.IsZero() && c.Committer.When.Before(since) {
			return memrepo.ErrStopWalk
		}
		if !until.IsZero() && c.Committer.When.After(until) {
			return nil
		}
		changed, err := repo.ChangedFiles(ctx, c.Hash)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(changed, func(f string) bool {
			return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(f, p) })
		}) {
			return nil
		}
		if len(resp.Commits) == size {
			resp.NextPageToken = resp.Commits[size-1].GetSha()
			return memrepo.ErrStopWalk
		}
		info, err := history.Describe(ctx, repo, c)
		if err != nil {
			return err
		}
		if ownFilesOnly {
			info.Files = slices.DeleteFunc(info.Files, func(f string) bool { return relOf(req.GetAgentId(), f) == "" })
		}
		resp.Commits = append(resp.Commits, info)
		return nil
	})
	if err != nil {
		return nil, h.unavailable(err)
	}
	return resp, nil
}
