package contextassembly

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/history"
	"github.com/garden-bloom/memory/pkg/memrepo"
)

// historyQuery is a validated ListHistory request.
type historyQuery struct {
	agent string
	// size is the page size (1 to maxPageSize); pageToken is the last
	// commit of the previous page.
	size      int
	pageToken string
	// since and until bound commit times (zero: unbounded).
	since, until time.Time
	// prefixes are the repository paths whose changes count.
	prefixes []string
	// ownFilesOnly lists only the agent's own files of each commit.
	ownFilesOnly bool
}

// history lists the commits of main that changed q.prefixes, newest first.
func (s *Service) history(ctx context.Context, q historyQuery) (*memoryv1.ListHistoryResponse, error) {
	repo, err := s.openRepo()
	if err != nil {
		return nil, s.unavailable(err)
	}
	start, err := repo.Head(ctx)
	if err != nil {
		return nil, s.unavailable(err)
	}
	if tok := q.pageToken; tok != "" {
		// The token is the last commit of the previous page.
		c, err := repo.CommitInfo(ctx, plumbing.NewHash(tok))
		if err != nil || len(c.ParentHashes) == 0 || len(tok) != 40 {
			return nil, apierr.InvalidArgument("pageToken", "invalid pageToken")
		}
		start = c.ParentHashes[0]
	}
	resp := &memoryv1.ListHistoryResponse{}
	err = repo.Walk(ctx, start, func(c *object.Commit) error {
		if !q.since.IsZero() && c.Committer.When.Before(q.since) {
			return memrepo.ErrStopWalk
		}
		if !q.until.IsZero() && c.Committer.When.After(q.until) {
			return nil
		}
		changed, err := repo.ChangedFiles(ctx, c.Hash)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(changed, func(f string) bool {
			return slices.ContainsFunc(q.prefixes, func(p string) bool { return strings.HasPrefix(f, p) })
		}) {
			return nil
		}
		if len(resp.Commits) == q.size {
			resp.NextPageToken = resp.Commits[q.size-1].GetSha()
			return memrepo.ErrStopWalk
		}
		info, err := history.Describe(ctx, repo, c)
		if err != nil {
			return err
		}
		if q.ownFilesOnly {
			info.Files = slices.DeleteFunc(info.Files, func(f string) bool { return relOf(q.agent, f) == "" })
		}
		resp.Commits = append(resp.Commits, info)
		return nil
	})
	if err != nil {
		return nil, s.unavailable(err)
	}
	return resp, nil
}
