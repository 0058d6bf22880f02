package searchindex

import (
	"context"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"go.opentelemetry.io/otel/metric"

	"github.com/garden-bloom/memory/pkg/telemetry"
)

// lagWalkLimit bounds the commits one lag observation walks; beyond it
// the figures are lower bounds (an index that far behind alerts anyway).
const lagWalkLimit = 10000

// instrument exports how far the index is behind main:
// memory.search.index.commits_behind and memory.search.index.lag.
func (s *Service) instrument(mp metric.MeterProvider) (metric.Registration, error) {
	return telemetry.ObserveLag(mp, "github.com/garden-bloom/memory/services/searchindex", "memory.search.index", "the search index",
		func(ctx context.Context) (int64, time.Duration, bool, error) {
			repo, err := s.openRepo()
			if err != nil {
				return 0, 0, false, nil // no repository yet (a mirror not fetched): nothing to lag behind
			}
			head, err := repo.Head(ctx)
			if err != nil {
				return 0, 0, false, err
			}
			base := plumbing.ZeroHash
			if last := s.index.State().LastCommit; last != "" {
				base = plumbing.NewHash(last)
			}
			lag, err := repo.Behind(ctx, head, base, lagWalkLimit)
			return int64(lag.Commits), lag.Age(time.Now()), err == nil, err
		})
}
