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
	"github.com/garden-bloom/memory/pkg/memdiff"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memread"
	"github.com/garden-bloom/memory/pkg/memrepo"
)

// diffContext is how many unchanged lines surround each hunk, as git does.
const diffContext = 3

// agentChange is one file of an agent that differs between two commits.
type agentChange struct {
	rel           string
	before, after *string
}

// rangeDiff is what changed in an agent's memory between two commits.
type rangeDiff struct {
	from, to   plumbing.Hash
	fromC, toC *object.Commit
	commits    int
	changes    []agentChange
}

// relOf maps a repository path to the agent-relative name, or "".
func relOf(agent, path string) string {
	if rel, ok := strings.CutPrefix(path, memlayout.AgentDir(agent)); ok {
		return rel
	}
	if rel, ok := strings.CutPrefix(path, memlayout.LogicDir(agent)); ok {
		return "logic/" + rel
	}
	return ""
}

// diffRange computes the agent's changes from..to ("" from = before the
// agent's first commit; "" to = main), limited to files when given.
func (h *handler) diffRange(ctx context.Context, agent, from, to string, files []string) (*rangeDiff, error) {
	repo, err := h.svc.openRepo()
	if err != nil {
		return nil, h.unavailable(err)
	}
	notFound := func(which, v string) error {
		return apierr.New(codes.NotFound, memoryv1.ErrorReason_ERROR_REASON_REVISION_NOT_FOUND,
			fmt.Sprintf("%s %q names no commit of main", which, v), map[string]string{which: v})
	}
	d := &rangeDiff{}
	if d.to, d.toC, err = resolve(ctx, repo, to); errors.Is(err, errRevision) {
		return nil, notFound("to", to)
	} else if err != nil {
		return nil, h.unavailable(err)
	}
	touches := func(c *object.Commit) (bool, error) {
		changed, err := repo.ChangedFiles(ctx, c.Hash)
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(changed, func(p string) bool {
			rel := relOf(agent, p)
			return rel != "" && (len(files) == 0 || slices.Contains(files, rel))
		}), nil
	}
	if from != "" {
		if d.from, d.fromC, err = resolve(ctx, repo, from); errors.Is(err, errRevision) {
			return nil, notFound("from", from)
		} else if err != nil {
			return nil, h.unavailable(err)
		}
	}
	// Count the agent's commits in the range; without `from`, the range is
	// the agent's whole history (from the parent of its first commit).
	var first *object.Commit
	err = repo.Walk(ctx, d.to, func(c *object.Commit) error {
		if !d.from.IsZero() && c.Hash == d.from {
			return memrepo.ErrStopWalk
		}
		ok, err := touches(c)
		if err != nil {
			return err
		}
		if ok {
			d.commits++
			first = c
		}
		return nil
	})
	if err != nil {
		return nil, h.unavailable(err)
	}
	if d.from.IsZero() && first != nil && len(first.ParentHashes) > 0 {
		d.from = first.ParentHashes[0]
		if d.fromC, err = repo.CommitInfo(ctx, d.from); err != nil {
			return nil, h.unavailable(err)
		}
	}
	paths, err := repo.DiffCommits(ctx, d.from, d.to)
	if err != nil {
		return nil, h.unavailable(err)
	}
	read := func(commit plumbing.Hash, path string) (*string, error) {
		if commit.IsZero() {
			return nil, nil
		}
		data, err := repo.ReadFile(ctx, commit, path)
		if errors.Is(err, memrepo.ErrFileNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		s := string(data)
		return &s, nil
	}
	for _, p := range paths {
		rel := relOf(agent, p)
		if rel == "" || (len(files) > 0 && !slices.Contains(files, rel)) || rel == memlayout.MetaFile {
			continue
		}
		before, err := read(d.from, p)
		if err != nil {
			return nil, h.unavailable(err)
		}
		after, err := read(d.to, p)
		if err != nil {
			return nil, h.unavailable(err)
		}
		d.changes = append(d.changes, agentChange{rel: rel, before: before, after: after})
	}
	return d, nil
}

func orEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
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
		return nil, invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, "maxTokens", "maxTokens must not be negative")
	}
	if len(req.GetFiles()) > maxListItems {
		return nil, invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, "files", fmt.Sprintf("at most %d files", maxListItems))
	}
	for _, f := range req.GetFiles() {
		if _, err := memlayout.Resolve(req.GetAgentId(), f); err != nil {
			return nil, invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_PATH, "files", fmt.Sprintf("file %q is not an agent memory file", apierr.Clip(f)))
		}
	}
	format := req.GetFormat()
	if format != memoryv1.DiffFormat_DIFF_FORMAT_UNSPECIFIED && format != memoryv1.DiffFormat_DIFF_FORMAT_UNIFIED && format != memoryv1.DiffFormat_DIFF_FORMAT_FACTS {
		return nil, invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, "format", "format must be unified or facts")
	}
	d, err := h.diffRange(ctx, req.GetAgentId(), req.GetFrom(), req.GetTo(), req.GetFiles())
	if err != nil {
		return nil, err
	}
	resp := &memoryv1.DiffMemoryResponse{AgentId: req.GetAgentId(), To: d.to.String(), ToDate: timestamppb.New(d.toC.Committer.When),
		Diff: map[string]string{}, Stats: &memoryv1.DiffStats{Commits: int32(d.commits)}}
	if !d.from.IsZero() {
		resp.From, resp.FromDate = d.from.String(), timestamppb.New(d.fromC.Committer.When)
	}
	// Stats and the summary cover the whole range; each file's text is
	// returned whole if it fits what the summary leaves of the budget (see
	// budget.go for what counts), else left out and the answer truncated.
	type piece struct {
		rel, text string
		changes   []*memoryv1.ItemChange
		tokens    int
	}
	var pieces []piece
	for _, c := range d.changes {
		text, added, deleted := memdiff.Unified(c.rel, c.before, c.after, diffContext)
		if text == "" {
			continue
		}
		resp.Stats.Files++
		resp.Stats.Additions += int32(added)
		resp.Stats.Deletions += int32(deleted)
		p := piece{rel: c.rel, text: text}
		if format == memoryv1.DiffFormat_DIFF_FORMAT_FACTS {
			p.text = ""
			for _, ic := range memdiff.Items(c.rel, orEmpty(c.before), orEmpty(c.after)) {
				ch := &memoryv1.ItemChange{Item: ic.Item, Change: changeKind(ic.Change), File: c.rel, Section: ic.Section, Before: ic.Before, After: ic.After}
				p.changes = append(p.changes, ch)
				for _, s := range []string{ch.Item, ch.File, ch.Section, ch.Before, ch.After} {
					p.tokens += h.svc.count(s)
				}
			}
		} else {
			p.tokens = h.svc.count(memread.Header(c.rel)) + h.svc.count(text)
		}
		pieces = append(pieces, p)
	}
	resp.Summary = memdiff.Summary(int(resp.Stats.Commits), int(resp.Stats.Files), int(resp.Stats.Additions), int(resp.Stats.Deletions))
	budget := int(req.GetMaxTokens())
	resp.TokenCount = int32(h.svc.count(resp.Summary))
	if budget > 0 && int(resp.TokenCount) > budget {
		return nil, tooSmall("maxTokens", budget, int(resp.TokenCount))
	}
	for _, p := range pieces {
		if budget > 0 && int(resp.TokenCount)+p.tokens > budget {
			resp.Truncated = true
			continue // the summary still counts the file; its text is left out
		}
		resp.TokenCount += int32(p.tokens)
		resp.Changes = append(resp.Changes, p.changes...)
		if format != memoryv1.DiffFormat_DIFF_FORMAT_FACTS {
			resp.Diff[p.rel] = p.text
		}
	}
	return resp, nil
}

func changeKind(s string) memoryv1.ChangeKind {
	switch s {
	case "added":
		return memoryv1.ChangeKind_CHANGE_KIND_ADDED
	case "removed":
		return memoryv1.ChangeKind_CHANGE_KIND_REMOVED
	}
	return memoryv1.ChangeKind_CHANGE_KIND_CHANGED
}

// temporalDiffs renders the diffs of a time range for read-memory's temporal
// mode: from defaults to seven days before `to`.
func (h *handler) temporalDiffs(ctx context.Context, agent, from, to string, toTime time.Time) ([]agentChange, string, error) {
	if from == "" {
		from = toTime.Add(-7 * 24 * time.Hour).Format(time.RFC3339)
	}
	d, err := h.diffRange(ctx, agent, from, to, nil)
	if apierr.Info(err).GetReason() == apierr.ReasonString(memoryv1.ErrorReason_ERROR_REASON_REVISION_NOT_FOUND) && isTime(from) {
		// A time before the repository's first commit: diff the agent's
		// whole history. A ref that names nothing stays not found.
		d, err = h.diffRange(ctx, agent, "", to, nil)
	}
	if err != nil {
		return nil, "", err
	}
	return d.changes, d.from.String(), nil
}

// isTime reports whether a revision is an RFC 3339 time rather than a ref.
func isTime(rev string) bool {
	_, err := time.Parse(time.RFC3339, rev)
	return err == nil
}
