package proposalapply

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// metrics of the write plane.
type metrics struct {
	proposed metric.Int64Counter
	outcomes metric.Int64Counter
	duration metric.Float64Histogram
	batch    metric.Int64Histogram
}

func newMetrics(mp metric.MeterProvider) *metrics {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := mp.Meter("github.com/garden-bloom/memory/services/proposalapply")
	proposed, _ := m.Int64Counter("memory.proposals.proposed", metric.WithDescription("proposals accepted by Propose, by initial status"))
	outcomes, _ := m.Int64Counter("memory.proposals.finished", metric.WithDescription("applies finished, by final status"))
	duration, _ := m.Float64Histogram("memory.apply.duration", metric.WithUnit("s"), metric.WithDescription("approved to finished, per proposal"))
	batch, _ := m.Int64Histogram("memory.apply.batch_size", metric.WithUnit("{commit}"),
		metric.WithDescription("commits per group commit (one chain on main, one round of fsyncs)"),
		metric.WithExplicitBucketBoundaries(1, 2, 4, 8, 16, 32, 64))
	return &metrics{proposed: proposed, outcomes: outcomes, duration: duration, batch: batch}
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
