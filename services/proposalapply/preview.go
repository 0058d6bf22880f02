package proposalapply

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/memdiff"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/proposalstore"
)

// diffContextLines is the context of the preview's unified diffs: git's
// default, so a preview reads like `git show` of the commit.
const diffContextLines = 3

// PreviewProposal returns the diff a proposal's commit makes: for an
// applied proposal that of its commit, for any other what applying it now
// would commit (see preview). Whoever may read the proposal may preview it.
func (h *handler) PreviewProposal(ctx context.Context, req *memoryv1.PreviewProposalRequest) (*memoryv1.PreviewProposalResponse, error) {
	rec, _, err := h.proposal(ctx, req.GetProposalId(), readRoles...)
	if err != nil {
		return nil, err
	}
	resp, err := h.svc.preview(ctx, rec)
	if err != nil {
		return nil, h.svc.internal(err, "previewing the proposal")
	}
	return resp, nil
}

// preview is the commit rec's proposal makes, without making it: nothing is
// written (no proposal update, no commit, no fact-index change).
//
//   - applied: the diff of its own commit against that commit's parent,
//     this agent's files only, with the commit's message;
//   - any other status: the apply's own planning (planApply) on main's head,
//     so the files are exactly what an apply now would commit. When that
//     apply would commit nothing (version conflict, section conflict,
//     validation, token limit) the reason and message say why and no file
//     is listed.
//
// A rejected proposal is planned like a pending one: it never commits
// (status says so), but a reviewer sees what was refused on today's files,
// and one rejected for a version conflict shows that conflict again.
// needs_human_review is planned as approving it plans it: approval takes
// the head it is approved on as the new base (review.go), so the section
// conflict that stopped it is no longer one.
func (s *Service) preview(ctx context.Context, rec *proposalstore.Record) (*memoryv1.PreviewProposalResponse, error) {
	p := rec.Proposal
	if p.GetStatus() == memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED {
		return s.committedPreview(ctx, p)
	}
	asApplied := *rec // a copy: the stored record is not touched
	if p.GetStatus() == memoryv1.ProposalStatus_PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW {
		asApplied.BaseCommit = ""
	}
	planned, err := s.planApply(ctx, &asApplied)
	if err != nil {
		return nil, err
	}
	resp := &memoryv1.PreviewProposalResponse{BaseCommit: planned.head.String(), Status: p.GetStatus()}
	if o := planned.refused; o != nil {
		resp.WouldFailReason, resp.WouldFailMessage = o.reason, o.message
		if len(o.flags) > 0 {
			resp.WouldFailMessage += ": " + strings.Join(o.flags, "; ")
		}
		return resp, nil
	}
	plan := planned.plan
	read := s.reader(ctx, planned.head, p.GetAgentId())
	var changes []fileChange
	add := func(rel string, after *string) error {
		before, ok, err := read(rel)
		if err != nil {
			return err
		}
		c := fileChange{rel: rel, after: after}
		if ok {
			c.before = &before
		}
		changes = append(changes, c)
		return nil
	}
	for rel, content := range plan.Changes {
		if err := add(rel, &content); err != nil {
			return nil, err
		}
	}
	for _, rel := range plan.Deleted {
		if err := add(rel, nil); err != nil {
			return nil, err
		}
	}
	resp.Files = fileDiffs(changes)
	resp.EvictedFacts, resp.FrozenLoops, resp.RemovedClosedLoops = plan.EvictedFacts, plan.FrozenLoops, plan.RemovedClosedLoops
	resp.Warnings, resp.CommitMessage = plan.Warnings, plan.Message
	return resp, nil
}

// committedPreview is the diff of an applied proposal's commit against its
// parent, this agent's memory and logic files only: in a group commit the
// parent is the commit before it in the chain, so other agents' changes
// never show.
func (s *Service) committedPreview(ctx context.Context, p *memoryv1.Proposal) (*memoryv1.PreviewProposalResponse, error) {
	sha := plumbing.NewHash(p.GetCommitSha())
	c, err := s.repo.CommitInfo(ctx, sha)
	if err != nil {
		return nil, err
	}
	parent := plumbing.ZeroHash
	if len(c.ParentHashes) > 0 {
		parent = c.ParentHashes[0]
	}
	files, err := s.repo.DiffFiles(ctx, parent, sha)
	if err != nil {
		return nil, err
	}
	var changes []fileChange
	for _, f := range files {
		rel := agentRel(p.GetAgentId(), f.Path)
		if rel == "" {
			continue
		}
		ch := fileChange{rel: rel}
		if !parent.IsZero() {
			data, err := s.repo.ReadFile(ctx, parent, f.Path)
			switch {
			case err == nil:
				before := string(data)
				ch.before = &before
			case !errors.Is(err, memrepo.ErrFileNotFound):
				return nil, err
			}
		}
		if !f.Deleted() {
			after, err := s.repo.ReadBlobText(ctx, f.Blob)
			if err != nil {
				return nil, err
			}
			ch.after = &after
		}
		changes = append(changes, ch)
	}
	resp := &memoryv1.PreviewProposalResponse{Status: p.GetStatus(), Files: fileDiffs(changes), CommitMessage: c.Message,
		EvictedFacts: p.GetEvictedFacts(), FrozenLoops: p.GetFrozenLoops(), RemovedClosedLoops: p.GetRemovedClosedLoops(), Warnings: p.GetWarnings()}
	if !parent.IsZero() {
		resp.BaseCommit = parent.String()
	}
	return resp, nil
}

// agentRel is a repository path's name relative to the agent (as
// memlayout.Resolve takes it), or "" for another agent's path.
func agentRel(agent, path string) string {
	if rel, ok := strings.CutPrefix(path, memlayout.AgentDir(agent)); ok {
		return rel
	}
	if rel, ok := strings.CutPrefix(path, memlayout.LogicDir(agent)); ok {
		return "logic/" + rel
	}
	return ""
}

// fileChange is one file of a commit; nil is absent on that side.
type fileChange struct {
	rel           string
	before, after *string
}

// fileDiffs renders changes as unified diffs, the proposal's own files first
// and the bookkeeping every commit carries (meta.json, changelog.md, the
// timeline) last, each group by name; a file whose content is unchanged is
// left out.
func fileDiffs(changes []fileChange) []*memoryv1.FileDiff {
	slices.SortFunc(changes, func(a, b fileChange) int {
		if ka, kb := memlayout.Bookkeeping(a.rel), memlayout.Bookkeeping(b.rel); ka != kb {
			if ka {
				return 1
			}
			return -1
		}
		return strings.Compare(a.rel, b.rel)
	})
	var out []*memoryv1.FileDiff
	for _, c := range changes {
		diff, added, removed := memdiff.Unified(c.rel, c.before, c.after, diffContextLines)
		if diff == "" {
			continue
		}
		kind := memoryv1.ChangeKind_CHANGE_KIND_CHANGED
		switch {
		case c.before == nil:
			kind = memoryv1.ChangeKind_CHANGE_KIND_ADDED
		case c.after == nil:
			kind = memoryv1.ChangeKind_CHANGE_KIND_REMOVED
		}
		out = append(out, &memoryv1.FileDiff{File: c.rel, Change: kind, UnifiedDiff: diff,
			AddedLines: int32(added), RemovedLines: int32(removed)})
	}
	return out
}
