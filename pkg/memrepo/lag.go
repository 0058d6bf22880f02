package memrepo

import (
	"context"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Lag is how far a follower of main (the search index, the entity graph,
// the git remote) is behind it.
type Lag struct {
	// Commits on main's first-parent line after the follower's commit.
	Commits int
	// Oldest is the committer time of the oldest of them (zero when
	// Commits is 0): how long the follower has been missing something.
	Oldest time.Time
	// Capped: the walk stopped at its limit, so Commits and Oldest are
	// lower bounds.
	Capped bool
}

// Age is how long the oldest missing commit has waited at now (0 when
// nothing is missing).
func (l Lag) Age(now time.Time) time.Duration {
	if l.Commits == 0 {
		return 0
	}
	return max(now.Sub(l.Oldest), 0)
}

// Behind walks main back from head to base, the commit a follower is at,
// counting at most limit commits. A zero base (the follower has nothing
// yet) or one that is not on head's first-parent line (history was
// rewritten under it) counts everything up to the limit.
func (r *Repo) Behind(ctx context.Context, head, base plumbing.Hash, limit int) (Lag, error) {
	var lag Lag
	if head == base || head.IsZero() {
		return lag, nil
	}
	err := r.Walk(ctx, head, func(c *object.Commit) error {
		if c.Hash == base {
			return ErrStopWalk
		}
		if lag.Commits >= limit {
			lag.Capped = true
			return ErrStopWalk
		}
		lag.Commits++
		if t := c.Committer.When; lag.Oldest.IsZero() || t.Before(lag.Oldest) {
			lag.Oldest = t
		}
		return nil
	})
	return lag, err
}
