package contextassembly

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"
	"google.golang.org/grpc/codes"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/mdops"
	"github.com/garden-bloom/memory/pkg/memdiff"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memread"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/revision"
)

// lastGoodLookup bounds how far back checkSnapshot looks for a sound
// snapshot.md.
const lastGoodLookup = 1000

// retryAfter is what an Unavailable answer tells clients to wait (spec
// integration §9: phase 3 is retried after 5 s).
const retryAfter = 5 * time.Second

// unavailable logs a repository failure and answers with the retryable
// error clients see instead (the cause stays in the log).
func (s *Service) unavailable(err error) error {
	s.logger.Warn("repository read failed", "err", err)
	return apierr.Retryable(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_REPOSITORY_UNAVAILABLE,
		"the memory repository is unavailable; retry later", retryAfter)
}

// withRetries runs fn up to three times with a short backoff: a repository on
// a network volume may hiccup, and a read should ride that out.
func withRetries(ctx context.Context, fn func() error) error {
	backoff := 50 * time.Millisecond
	var err error
	for attempt := range 3 {
		if err = fn(); err == nil || errors.Is(err, revision.ErrNotFound) {
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
func (s *Service) at(ctx context.Context, agent, at string) (agentFiles, *object.Commit, error) {
	var (
		repo *memrepo.Repo
		c    *object.Commit
	)
	err := withRetries(ctx, func() error {
		var err error
		if repo, err = s.openRepo(); err != nil {
			return err
		}
		c, err = revision.Resolve(ctx, repo, at)
		return err
	})
	if errors.Is(err, revision.ErrNotFound) {
		return agentFiles{}, nil, apierr.RevisionNotFound("at", at)
	}
	if err != nil {
		return agentFiles{}, nil, s.unavailable(err)
	}
	files := agentFiles{ctx: ctx, repo: repo, commit: c.Hash, agent: agent}
	if files.tree, err = files.folderHash(); err != nil {
		return agentFiles{}, nil, s.unavailable(err)
	}
	if files.tree.IsZero() {
		return agentFiles{}, nil, apierr.AgentNotFound(agent, c.Hash.String()[:12])
	}
	return files, c, nil
}

// readRequest is a validated ReadMemory request.
type readRequest struct {
	agent, at, from, to string
	mode                memread.Mode
	maxTokens           int
	include, exclude    []string
}

// memoryRead is a read of an agent's memory and the commit it was made at.
type memoryRead struct {
	commit *object.Commit
	*folderRead
}

// readMemory reads an agent's memory at r.at in r.mode; temporal mode adds
// the diffs of r.from..r.to (to defaulting to the commit read).
func (s *Service) readMemory(ctx context.Context, r readRequest) (*memoryRead, error) {
	files, commit, err := s.at(ctx, r.agent, r.at)
	if err != nil {
		return nil, err
	}
	var extra func() ([]memread.File, error)
	if r.mode == memread.Temporal {
		extra = func() ([]memread.File, error) {
			to := r.to
			if to == "" {
				to = files.commit.String()
			}
			changes, _, err := s.temporalDiffs(ctx, r.agent, r.from, to, commit.Committer.When)
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
	read, err := s.readFolder(ctx, files, memread.Request{
		Mode: r.mode, MaxTokens: r.maxTokens, Include: r.include, Exclude: r.exclude,
		Today: commit.Committer.When.UTC().Format("2006-01-02"),
	}, true, extra)
	if err != nil {
		return nil, budgetError("maxTokens", err)
	}
	read = staleWarning(r.agent, read, commit.Committer.When, s.count) // stale.go
	for _, f := range read.res.Files {
		if f.Rel == memlayout.FactsFile {
			s.usage.record(r.agent, f.Content)
		}
	}
	return &memoryRead{commit: commit, folderRead: read}, nil
}

// checkSnapshot refuses to serve an empty or unreadable snapshot.md and says
// where it was last good (spec integration §9: restore with git).
func (s *Service) checkSnapshot(ctx context.Context, files agentFiles) error {
	snap, ok, err := files.read(memlayout.SnapshotFile)
	if err != nil {
		return s.unavailable(err)
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

// layer2Request is a validated GetLayer2 request; include is not empty.
type layer2Request struct {
	agent, at                string
	include                  []string
	timelineFrom, timelineTo string
	runIDs                   []string
	decisionsLimit           int
	maxTokens                int
}

// layer2 reads the Layer 2 pieces r asks for at r.at.
func (s *Service) layer2(ctx context.Context, r layer2Request) (*memoryv1.GetLayer2Response, error) {
	files, _, err := s.at(ctx, r.agent, r.at)
	if err != nil {
		return nil, err
	}
	resp := &memoryv1.GetLayer2Response{AgentId: r.agent, Commit: files.commit.String()}
	// Each piece is taken whole if it fits what is left of the budget, else
	// left out (truncated); what is counted is listed in budget.go.
	budget := r.maxTokens
	smallest := 0 // the cheapest piece asked for
	spend := func(texts ...string) bool {
		n := 0
		for _, t := range texts {
			n += s.count(t)
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
	if slices.Contains(r.include, "decisions") {
		md, _, err := files.read(memlayout.DecisionsFile)
		if err != nil {
			return nil, s.unavailable(err)
		}
		limit := r.decisionsLimit
		if limit == 0 {
			limit = memread.WideDecisions
		}
		for _, d := range mdops.LastDecisions(md, limit) {
			if !spend(d.ID, d.Title, d.Status, d.Context, d.Decision, d.Rationale, d.Consequences, d.RunID) {
				continue
			}
			resp.Decisions = append(resp.Decisions, decisionMessage(d))
		}
	}
	if slices.Contains(r.include, "changelog") {
		md, _, err := files.read(memlayout.ChangelogFile)
		if err != nil {
			return nil, s.unavailable(err)
		}
		if md != "" && spend(md) {
			resp.Changelog = md
		}
	}
	if slices.Contains(r.include, "timeline") {
		days, err := files.list("timeline/")
		if err != nil {
			return nil, s.unavailable(err)
		}
		for _, rel := range days {
			date := strings.TrimSuffix(strings.TrimPrefix(rel, "timeline/"), ".md")
			if (r.timelineFrom != "" && date < r.timelineFrom) || (r.timelineTo != "" && date > r.timelineTo) {
				continue
			}
			md, _, err := files.read(rel)
			if err != nil {
				return nil, s.unavailable(err)
			}
			if !spend(date, md) {
				continue
			}
			resp.Timeline = append(resp.Timeline, &memoryv1.TimelineDay{Date: date, Content: md, TokenCount: int32(s.count(md))})
		}
	}
	if slices.Contains(r.include, "runs") {
		for _, id := range r.runIDs {
			// Checked here, after the revision, as the API always has: a
			// bad `at` is reported before a bad run id.
			if !memlayout.ValidRunID(id) {
				return nil, apierr.InvalidArgument("runIds", fmt.Sprintf("run id %q is not valid", apierr.Clip(id)))
			}
			run := memlayout.RunRef(id)
			md, ok, err := files.read("runs/" + run + ".md")
			if err != nil {
				return nil, s.unavailable(err)
			}
			if !ok || !spend(run, md) {
				continue
			}
			resp.Runs = append(resp.Runs, &memoryv1.RunRecord{RunId: run, Content: md, TokenCount: int32(s.count(md))})
		}
	}
	if resp.Truncated && len(resp.Decisions)+len(resp.Timeline)+len(resp.Runs) == 0 && resp.Changelog == "" {
		// Nothing asked for fits: an empty answer would say nothing.
		return nil, tooSmall("maxTokens", budget, smallest)
	}
	return resp, nil
}
