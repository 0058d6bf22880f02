package proposalapply

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/enumname"
	"github.com/garden-bloom/memory/pkg/membudget"
	"github.com/garden-bloom/memory/pkg/telemetry"
)

// Git operations of the write plane, the op of memory.git.errors.
const (
	gitOpCommit  = "commit"
	gitOpPush    = "push"
	gitOpCompact = "compact"
	gitOpBundle  = "bundle"
)

const meterName = "github.com/garden-bloom/memory/services/proposalapply"

// lagWalkLimit bounds the commits a push-lag observation walks; beyond it
// the figures are lower bounds (a remote that far behind alerts anyway).
const lagWalkLimit = 10000

// metrics of the write plane.
type metrics struct {
	mp        metric.MeterProvider
	meter     metric.Meter
	proposed  metric.Int64Counter
	outcomes  metric.Int64Counter
	duration  metric.Float64Histogram
	batch     metric.Int64Histogram
	gitErrors metric.Int64Counter
	// observing are the callbacks of the gauges (instrument),
	// unregistered by Stop.
	observing []metric.Registration
}

func newMetrics(mp metric.MeterProvider) *metrics {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := mp.Meter(meterName)
	proposed, _ := m.Int64Counter("memory.proposals.proposed", metric.WithDescription("proposals accepted by Propose, by initial status"))
	outcomes, _ := m.Int64Counter("memory.proposals.finished", metric.WithDescription("applies finished, by final status"))
	// Buckets: telemetry.DurationBuckets (a view of telemetry.Setup).
	duration, _ := m.Float64Histogram("memory.apply.duration", metric.WithUnit("s"), metric.WithDescription("approved to finished, per proposal"),
		metric.WithExplicitBucketBoundaries(telemetry.DurationBuckets...))
	batch, _ := m.Int64Histogram("memory.apply.batch_size", metric.WithUnit("{commit}"),
		metric.WithDescription("commits per group commit (one chain on main, one round of fsyncs)"),
		metric.WithExplicitBucketBoundaries(1, 2, 4, 8, 16, 32, 64))
	return &metrics{mp: mp, meter: m, proposed: proposed, outcomes: outcomes, duration: duration, batch: batch,
		gitErrors: telemetry.GitErrors(mp, gitOpCommit, gitOpPush, gitOpCompact, gitOpBundle)}
}

func statusLabel(s memoryv1.ProposalStatus) attribute.KeyValue {
	return attribute.String("status", statusName(s))
}

func (m *metrics) proposedOne(ctx context.Context, s memoryv1.ProposalStatus) {
	m.proposed.Add(ctx, 1, metric.WithAttributes(statusLabel(s)))
}

func (m *metrics) applied(ctx context.Context, s memoryv1.ProposalStatus, d time.Duration) {
	m.outcomes.Add(ctx, 1, metric.WithAttributes(statusLabel(s)))
	m.duration.Record(ctx, d.Seconds(), metric.WithAttributes(statusLabel(s)))
}

func (m *metrics) committed(ctx context.Context, commits int) {
	m.batch.Record(ctx, int64(commits))
}

// gitFailed counts a failed git operation (one of the gitOp constants).
func (m *metrics) gitFailed(ctx context.Context, op string) {
	m.gitErrors.Add(ctx, 1, metric.WithAttributes(attribute.String("op", op)))
}

// instrument registers the gauges of the service's state, read at every
// collection where that state lives: the apply queue (engine), the
// proposals waiting for a person (store), the token counter's cache and,
// with a git remote, how far it is behind main (pusher).
func (s *Service) instrument() error {
	m := s.metrics
	s.pusher.metrics = m
	depth, err := m.meter.Int64ObservableGauge("memory.apply.queue.depth", metric.WithUnit("{proposal}"),
		metric.WithDescription("Approved proposals queued or being applied, over all agents."))
	if err != nil {
		return err
	}
	awaiting, err := m.meter.Int64ObservableGauge("memory.proposals.awaiting_review", metric.WithUnit("{proposal}"),
		metric.WithDescription("Proposals that wait for a person (pending or needing review), by agent and reason."))
	if err != nil {
		return err
	}
	reg, err := m.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		o.ObserveInt64(depth, int64(s.engine.depth()))
		for _, w := range s.store.AwaitingReview() {
			o.ObserveInt64(awaiting, int64(w.Count), metric.WithAttributes(
				attribute.String("agent", w.Agent), attribute.String("reason", enumname.Name(w.Reason))))
		}
		return nil
	}, depth, awaiting)
	if err != nil {
		return err
	}
	m.observing = append(m.observing, reg)
	reg, err = telemetry.ObserveCaches(m.mp, s.Caches)
	if err != nil {
		return err
	}
	m.observing = append(m.observing, reg)
	if !s.pusher.enabled() {
		return nil
	}
	// memory.git.push.commits_behind and memory.git.push.lag.
	reg, err = telemetry.ObserveLag(m.mp, meterName, "memory.git.push", "the git remote (--git-remote-url)",
		func(ctx context.Context) (int64, time.Duration, bool, error) {
			lag, err := s.pusher.lag(ctx)
			return int64(lag.Commits), lag.Age(s.now()), err == nil, err
		})
	if err != nil {
		return err
	}
	m.observing = append(m.observing, reg)
	return nil
}

// uninstrument stops the gauges' callbacks (Stop).
func (s *Service) uninstrument() {
	for _, reg := range s.metrics.observing {
		_ = reg.Unregister()
	}
	s.metrics.observing = nil
}

// Caches are the service's caches, for memory.cache.* (attribute cache)
// and the process's memory budget.
func (s *Service) Caches() []membudget.Named {
	return []membudget.Named{{Name: "proposal_apply.token_pieces", Cache: s.counter.Cache()}}
}
