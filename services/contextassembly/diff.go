package contextassembly

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/memdiff"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memread"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/revision"
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
func (s *Service) diffRange(ctx context.Context, agent, from, to string, files []string) (*rangeDiff, error) {
	repo, err := s.openRepo()
	if err != nil {
		return nil, s.unavailable(err)
	}
	d := &rangeDiff{}
	if d.toC, err = revision.Resolve(ctx, repo, to); errors.Is(err, revision.ErrNotFound) {
		return nil, apierr.RevisionNotFound("to", to)
	} else if err != nil {
		return nil, s.unavailable(err)
	}
	d.to = d.toC.Hash
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
		if d.fromC, err = revision.Resolve(ctx, repo, from); errors.Is(err, revision.ErrNotFound) {
			return nil, apierr.RevisionNotFound("from", from)
		} else if err != nil {
			return nil, s.unavailable(err)
		}
		d.from = d.fromC.Hash
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
		return nil, s.unavailable(err)
	}
	if d.from.IsZero() && first != nil && len(first.ParentHashes) > 0 {
		d.from = first.ParentHashes[0]
		if d.fromC, err = repo.CommitInfo(ctx, d.from); err != nil {
			return nil, s.unavailable(err)
		}
	}
	paths, err := repo.DiffCommits(ctx, d.from, d.to)
	if err != nil {
		return nil, s.unavailable(err)
	}
	read := func(commit plumbing.Hash, path string) (*string, error) {
		if commit.IsZero() {
			return nil, nil
		}
		text, _, err := repo.ReadTextBlob(ctx, commit, path)
		if errors.Is(err, memrepo.ErrFileNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return &text, nil
	}
	for _, p := range paths {
		rel := relOf(agent, p)
		if rel == "" || (len(files) > 0 && !slices.Contains(files, rel)) || rel == memlayout.MetaFile {
			continue
		}
		before, err := read(d.from, p)
		if err != nil {
			return nil, s.unavailable(err)
		}
		after, err := read(d.to, p)
		if err != nil {
			return nil, s.unavailable(err)
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

// diffRequest is a validated DiffMemory request.
type diffRequest struct {
	agent, from, to string
	files           []string
	// facts asks for the structured list of items instead of unified diffs.
	facts     bool
	maxTokens int
}

// diffMemory diffs the agent's memory over r.from..r.to: stats and the
// summary of the whole range, and as many files' diffs (or item changes)
// as r.maxTokens holds.
func (s *Service) diffMemory(ctx context.Context, r diffRequest) (*memoryv1.DiffMemoryResponse, error) {
	d, err := s.diffRange(ctx, r.agent, r.from, r.to, r.files)
	if err != nil {
		return nil, err
	}
	resp := &memoryv1.DiffMemoryResponse{AgentId: r.agent, To: d.to.String(), ToDate: timestamppb.New(d.toC.Committer.When),
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
		if r.facts {
			p.text = ""
			for _, ic := range memdiff.Items(c.rel, orEmpty(c.before), orEmpty(c.after)) {
				ch := &memoryv1.ItemChange{Item: ic.Item, Change: changeKind(ic.Change), File: c.rel, Section: ic.Section, Before: ic.Before, After: ic.After}
				p.changes = append(p.changes, ch)
				for _, t := range []string{ch.Item, ch.File, ch.Section, ch.Before, ch.After} {
					p.tokens += s.count(t)
				}
			}
		} else {
			p.tokens = s.count(memread.Header(c.rel)) + s.count(text)
		}
		pieces = append(pieces, p)
	}
	resp.Summary = memdiff.Summary(int(resp.Stats.Commits), int(resp.Stats.Files), int(resp.Stats.Additions), int(resp.Stats.Deletions))
	budget := r.maxTokens
	resp.TokenCount = int32(s.count(resp.Summary))
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
		if !r.facts {
			resp.Diff[p.rel] = p.text
		}
	}
	return resp, nil
}

// temporalDiffs renders the diffs of a time range for read-memory's temporal
// mode: from defaults to seven days before `to`.
func (s *Service) temporalDiffs(ctx context.Context, agent, from, to string, toTime time.Time) ([]agentChange, string, error) {
	if from == "" {
		from = toTime.Add(-7 * 24 * time.Hour).Format(time.RFC3339)
	}
	d, err := s.diffRange(ctx, agent, from, to, nil)
	if _, isTime := revision.Time(from); isTime && apierr.Info(err).GetReason() == apierr.ReasonString(memoryv1.ErrorReason_ERROR_REASON_REVISION_NOT_FOUND) {
		// A time before the repository's first commit: diff the agent's
		// whole history. A ref that names nothing stays not found.
		d, err = s.diffRange(ctx, agent, "", to, nil)
	}
	if err != nil {
		return nil, "", err
	}
	return d.changes, d.from.String(), nil
}
