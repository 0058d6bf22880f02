package entitygraph

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/garden-bloom/memory/pkg/telemetry"
)

// lagWalkLimit bounds the commits one lag observation walks; beyond it
// the figures are lower bounds (a graph that far behind alerts anyway).
const lagWalkLimit = 10000

// instrument exports how far the graph is behind main:
// memory.entity_graph.commits_behind and memory.entity_graph.lag.
func (s *Service) instrument(mp metric.MeterProvider) (metric.Registration, error) {
	return telemetry.ObserveLag(mp, "github.com/garden-bloom/memory/services/entitygraph", "memory.entity_graph", "the entity graph",
		func(ctx context.Context) (int64, time.Duration, bool, error) {
			repo, err := s.repo.Get()
			if err != nil {
				return 0, 0, false, nil // no repository yet (a mirror not fetched): nothing to lag behind
			}
			head, err := repo.Head(ctx)
			if err != nil {
				return 0, 0, false, err
			}
			s.mu.RLock()
			last := s.last
			s.mu.RUnlock()
			lag, err := repo.Behind(ctx, head, last, lagWalkLimit)
			return int64(lag.Commits), lag.Age(time.Now()), err == nil, err
		})
}
