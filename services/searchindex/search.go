package searchindex

import (
	"context"
	"errors"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/fulltext"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/revision"
)

// searchResult is a search's answer and whether the index was behind main.
type searchResult struct {
	*fulltext.Result
	// stale: the index's head is not main's (head searches only).
	stale bool
}

// search runs q (validated, its agent set when the caller is limited to
// one) against the index, or, with at, against the files of that commit.
func (s *Service) search(ctx context.Context, q fulltext.Query, at string) (*searchResult, error) {
	var (
		res      *fulltext.Result
		pastRepo *memrepo.Repo
		past     plumbing.Hash
		err      error
	)
	if at != "" {
		// As of a commit: exact, the state right after it in commit order.
		repo, err := s.openRepo()
		if err != nil {
			return nil, apierr.New(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_REPOSITORY_UNAVAILABLE, "the memory repository is not available yet", nil)
		}
		c, err := revision.Resolve(ctx, repo, at)
		if e := atError(at, err); e != nil {
			return nil, e
		}
		if err != nil {
			s.logger.Warn("search at: cannot resolve", "at", at, "err", err)
			return nil, apierr.New(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_REPOSITORY_UNAVAILABLE, "cannot read main", nil)
		}
		if c.Hash.String() != s.index.State().LastCommit {
			// The index holds only its head: search that commit's files.
			if q.AgentID == "" {
				return nil, apierr.InvalidArgument("agent_id", "agent_id is required with at (a past commit is searched one agent at a time)")
			}
			pastRepo, past = repo, c.Hash
		}
	}
	if pastRepo != nil {
		start := time.Now()
		res, err = s.searchAt(ctx, pastRepo, past, q)
		if e := atError(at, err); e != nil {
			return nil, e
		}
		if res != nil {
			res.Took = time.Since(start)
		}
	} else {
		res, err = s.index.Search(ctx, q)
	}
	if errors.Is(err, fulltext.ErrEmptyQuery) {
		return nil, apierr.InvalidArgument("q", "q has no searchable words")
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		s.logger.Error("search failed", "err", err)
		return nil, apierr.New(codes.Internal, memoryv1.ErrorReason_ERROR_REASON_UNSPECIFIED, "search failed", nil)
	}
	out := &searchResult{Result: res}
	if pastRepo == nil {
		if repo, err := s.openRepo(); err == nil {
			if head, err := repo.Head(ctx); err == nil {
				out.stale = head.String() != res.State.LastCommit
			}
		}
	}
	return out, nil
}
