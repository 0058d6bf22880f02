package contextassembly

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/history"
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
	// The agent's commits, from the index: a walk of main would diff
	// every other agent's commits too.
	commits, err := s.agentCommits.Commits(ctx, repo, q.agent)
	if err != nil {
		return nil, s.unavailable(err)
	}
	next := len(commits) - 1
	if tok := q.pageToken; tok != "" {
		// The token is the last commit of the previous page.
		i := slices.Index(commits, plumbing.NewHash(tok))
		if i < 0 || len(tok) != 40 {
			return nil, apierr.InvalidArgument("pageToken", "invalid pageToken")
		}
		next = i - 1
	}
	resp := &memoryv1.ListHistoryResponse{}
	err = func() error {
		for ; next >= 0; next-- {
			c, err := repo.CommitInfo(ctx, commits[next])
			if err != nil {
				return err
			}
			if !q.since.IsZero() && c.Committer.When.Before(q.since) {
				return nil
			}
			if !q.until.IsZero() && c.Committer.When.After(q.until) {
				continue
			}
			changed, err := repo.ChangedFiles(ctx, c.Hash)
			if err != nil {
				return err
			}
			if !slices.ContainsFunc(changed, func(f string) bool {
				return slices.ContainsFunc(q.prefixes, func(p string) bool { return strings.HasPrefix(f, p) })
			}) {
				continue
			}
			if len(resp.Commits) == q.size {
				resp.NextPageToken = resp.Commits[q.size-1].GetSha()
				return nil
			}
			info, err := history.Describe(ctx, repo, c)
			if err != nil {
				return err
			}
			if q.ownFilesOnly {
				info.Files = slices.DeleteFunc(info.Files, func(f string) bool { return relOf(q.agent, f) == "" })
			}
			resp.Commits = append(resp.Commits, info)
		}
		return nil
	}()
	if err != nil {
		return nil, s.unavailable(err)
	}
	return resp, nil
}
