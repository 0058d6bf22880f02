package searchindex

import (
	"context"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"
	"google.golang.org/grpc/codes"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/fulltext"
	"github.com/garden-bloom/memory/pkg/memrepo"
)

// maxLagWalk bounds how far back status counts commits of lag.
const maxLagWalk = 10000

// indexStatus is where the index is against main.
type indexStatus struct {
	state      fulltext.State
	reindexing bool
	// head is main's head ("": no repository yet).
	head string
	// lag is how much older the indexed commit is than head (nil: unknown,
	// further back than maxLagWalk or no repository); lagCommits counts
	// the commits between.
	lag        *time.Duration
	lagCommits int
}

// indexStatus compares the index's commit with main's head.
func (s *Service) indexStatus(ctx context.Context) (*indexStatus, error) {
	st := &indexStatus{state: s.index.State(), reindexing: s.reindexing.Load()}
	repo, err := s.openRepo()
	if err != nil {
		return st, nil // no repository yet: nothing to lag behind
	}
	head, err := repo.Head(ctx)
	if err != nil {
		return nil, apierr.New(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_REPOSITORY_UNAVAILABLE, "cannot read main", nil)
	}
	st.head = head.String()
	if st.head == st.state.LastCommit {
		st.lag = new(time.Duration)
		return st, nil
	}
	var headTime time.Time
	lag := 0
	_ = repo.Walk(ctx, head, func(c *object.Commit) error {
		if lag == 0 {
			headTime = c.Committer.When
		}
		if c.Hash.String() == st.state.LastCommit || lag >= maxLagWalk {
			if c.Hash.String() == st.state.LastCommit {
				d := headTime.Sub(c.Committer.When)
				st.lag = &d
			}
			return memrepo.ErrStopWalk
		}
		lag++
		return nil
	})
	st.lagCommits = lag
	return st, nil
}
