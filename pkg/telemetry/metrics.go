package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"

	"github.com/garden-bloom/memory/pkg/membudget"
)

// DurationBuckets are the bucket boundaries, in seconds, of every duration
// histogram memoryd exports (Setup installs them with a view; instruments
// also pass them as advice for other meter providers). The values span
// five orders of magnitude: a cached read takes 100–500 µs, an
// uncached one milliseconds, a group commit tens of milliseconds and an
// apply behind a backlog seconds to minutes. The otel default (0, 5, 10,
// 25, … 10000) is meant for milliseconds: in seconds it put every read and
// every apply into its first bucket.
var DurationBuckets = []float64{
	0.00005, 0.0001, 0.00025, 0.0005, // cached reads
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, // reads, searches, object-store calls
	0.1, 0.25, 0.5, 1, 2.5, 5, // commits, applies
	10, 20, 30, 60, 120, // applies behind a backlog, slow object stores
}

// meterProvider is mp, or a no-op provider when mp is nil.
func meterProvider(mp metric.MeterProvider) metric.MeterProvider {
	if mp == nil {
		return metricnoop.NewMeterProvider()
	}
	return mp
}

// ObserveCaches exports the figures of the caches caches returns (names
// unique in a process, the attribute cache) at every collection:
// memory.cache.size and memory.cache.max_size (bytes), memory.cache.entries,
// and the counters memory.cache.hits, .misses and .evictions, each with the
// attribute cache. Call it once per owner of caches (a service, the
// process) with that owner's caches; unregister the returned registration
// when the owner stops.
func ObserveCaches(mp metric.MeterProvider, caches func() []membudget.Named) (metric.Registration, error) {
	m := meterProvider(mp).Meter("github.com/garden-bloom/memory/pkg/telemetry")
	size, err := m.Int64ObservableGauge("memory.cache.size", metric.WithUnit("By"),
		metric.WithDescription("Approximate bytes a cache holds now."))
	if err != nil {
		return nil, err
	}
	maxSize, err := m.Int64ObservableGauge("memory.cache.max_size", metric.WithUnit("By"),
		metric.WithDescription("The most bytes a cache may hold before it evicts."))
	if err != nil {
		return nil, err
	}
	entries, err := m.Int64ObservableGauge("memory.cache.entries", metric.WithUnit("{entry}"),
		metric.WithDescription("Values a cache holds now."))
	if err != nil {
		return nil, err
	}
	hits, err := m.Int64ObservableCounter("memory.cache.hits", metric.WithUnit("{lookup}"),
		metric.WithDescription("Lookups a cache answered."))
	if err != nil {
		return nil, err
	}
	misses, err := m.Int64ObservableCounter("memory.cache.misses", metric.WithUnit("{lookup}"),
		metric.WithDescription("Lookups a cache did not hold the value for."))
	if err != nil {
		return nil, err
	}
	evictions, err := m.Int64ObservableCounter("memory.cache.evictions", metric.WithUnit("{entry}"),
		metric.WithDescription("Values pushed out of a cache to make room for others."))
	if err != nil {
		return nil, err
	}
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, named := range caches() {
			attrs := metric.WithAttributes(attribute.String("cache", named.Name))
			c := named.Cache.Stats()
			o.ObserveInt64(size, c.Bytes, attrs)
			o.ObserveInt64(maxSize, c.MaxBytes, attrs)
			o.ObserveInt64(entries, int64(c.Entries), attrs)
			o.ObserveInt64(hits, c.Hits, attrs)
			o.ObserveInt64(misses, c.Misses, attrs)
			o.ObserveInt64(evictions, c.Evictions, attrs)
		}
		return nil
	}, size, maxSize, entries, hits, misses, evictions)
}

// ObserveBudget exports memory.cache.budget: the bytes the process's
// caches share (--memory-budget); memory.cache.max_size is each one's part.
func ObserveBudget(mp metric.MeterProvider, budget int64) error {
	_, err := meterProvider(mp).Meter("github.com/garden-bloom/memory/pkg/telemetry").Int64ObservableGauge("memory.cache.budget",
		metric.WithUnit("By"), metric.WithDescription("Bytes every cache of the process shares (--memory-budget)."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(budget)
			return nil
		}))
	return err
}

// GitErrors is the counter memory.git.errors (attribute op: commit, push,
// fetch, compact, bundle): git work that failed. Every component that
// does git work counts into this one instrument; ops lists those it does,
// exported from zero so rate() and alerts see them before the first error.
func GitErrors(mp metric.MeterProvider, ops ...string) metric.Int64Counter {
	c, _ := meterProvider(mp).Meter("github.com/garden-bloom/memory/pkg/telemetry").Int64Counter("memory.git.errors",
		metric.WithUnit("{error}"), metric.WithDescription("Git operations that failed, by op (commit, push, fetch, compact, bundle)."))
	for _, op := range ops {
		c.Add(context.Background(), 0, metric.WithAttributes(attribute.String("op", op)))
	}
	return c
}

// LagFunc measures how far a follower of main is behind it: the commits it
// lacks and how long the oldest of them has waited. ok false skips the
// observation (nothing to measure against yet).
type LagFunc func(ctx context.Context) (commits int64, age time.Duration, ok bool, err error)

// ObserveLag exports a follower's lag as two gauges, <name>.commits_behind
// and <name>.lag (seconds), in the meter of scope; what names the
// follower in their descriptions. Unregister the returned registration
// when the follower stops.
func ObserveLag(mp metric.MeterProvider, scope, name, what string, lag LagFunc) (metric.Registration, error) {
	m := meterProvider(mp).Meter(scope)
	behind, err := m.Int64ObservableGauge(name+".commits_behind", metric.WithUnit("{commit}"),
		metric.WithDescription("Commits on main "+what+" has not taken in yet."))
	if err != nil {
		return nil, err
	}
	age, err := m.Float64ObservableGauge(name+".lag", metric.WithUnit("s"),
		metric.WithDescription("Age of the oldest commit on main "+what+" has not taken in yet; 0 when it is current."))
	if err != nil {
		return nil, err
	}
	return m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		commits, d, ok, err := lag(ctx)
		if err != nil || !ok {
			return err
		}
		o.ObserveInt64(behind, commits)
		o.ObserveFloat64(age, d.Seconds())
		return nil
	}, behind, age)
}
