package entitygraph

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

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

// instrumentSize exports what the graph holds — nodes, edges (closed
// intervals included) and fact changes, which grow with history — and the
// bytes of its file, where all of it is (issues #25, #30):
// memory.entity_graph.size and memory.entity_graph.file.
func (s *Service) instrumentSize(mp metric.MeterProvider) (metric.Registration, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := mp.Meter("github.com/garden-bloom/memory/services/entitygraph")
	size, err := m.Int64ObservableGauge("memory.entity_graph.size", metric.WithUnit("{item}"),
		metric.WithDescription("What the entity graph holds, by kind: nodes, edges (closed intervals included), fact changes; its history is on disk."))
	if err != nil {
		return nil, err
	}
	file, err := m.Int64ObservableGauge("memory.entity_graph.file", metric.WithUnit("By"),
		metric.WithDescription("Bytes of the entity graph's file in the state dir: its live state and history, on disk rather than on the heap."))
	if err != nil {
		return nil, err
	}
	kinds := map[string]metric.ObserveOption{}
	for _, k := range []string{"nodes", "edges", "fact_changes"} {
		kinds[k] = metric.WithAttributes(attribute.String("kind", k))
	}
	return m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		s.mu.RLock()
		sz := s.graph.Size()
		s.mu.RUnlock()
		o.ObserveInt64(size, int64(sz.Nodes), kinds["nodes"])
		o.ObserveInt64(size, int64(sz.Edges), kinds["edges"])
		o.ObserveInt64(size, int64(sz.FactChanges), kinds["fact_changes"])
		o.ObserveInt64(file, sz.FileBytes)
		return nil
	}, size, file)
}
