package app

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/garden-bloom/memory/pkg/membudget"
	"github.com/garden-bloom/memory/pkg/telemetry"
)

// The process's own metrics, of what the App owns rather than a service:
// the caches of the repository handles and of verified tokens, and the
// mirror's failed fetches. The services export theirs (see
// docs/operations.md, "Metrics").

// instrument registers the process's own caches' figures (memory.cache.*;
// the services register theirs) and the budget they all share
// (memory.cache.budget); the registrations live as long as the process's
// meter provider.
func (a *App) instrument() error {
	if _, err := telemetry.ObserveCaches(a.tel.MeterProvider(), a.ownCaches); err != nil {
		return err
	}
	return telemetry.ObserveBudget(a.tel.MeterProvider(), a.cfg.MemoryBudget)
}

// ownCaches are the caches the process holds for its services: verified
// tokens, and the repository's. One handle in the all-in-one (the read
// services share the writer's); a read replica's mirror and a writer's
// repository are each the only one of their process.
func (a *App) ownCaches() []membudget.Named {
	caches := []membudget.Named{{Name: "auth.verified_tokens", Cache: a.verifier.Cache()}}
	switch {
	case a.sharedRepo != nil:
		caches = append(caches, a.sharedRepo.Caches()...)
	case a.writeRepo != nil:
		caches = append(caches, a.writeRepo.Caches()...)
	}
	return caches
}

// sizeCaches gives every cache of the process its share of
// --memory-budget (membudget.Split).
func (a *App) sizeCaches() error {
	caches := a.ownCaches()
	if a.contextAssembly != nil {
		caches = append(caches, a.contextAssembly.Caches()...)
	}
	if a.proposalApply != nil {
		caches = append(caches, a.proposalApply.Caches()...)
	}
	if a.entityGraph != nil {
		caches = append(caches, a.entityGraph.Caches()...)
	}
	if err := membudget.Split(a.cfg.MemoryBudget, caches); err != nil {
		return err
	}
	shares := make([]any, 0, 2*len(caches))
	for _, c := range caches {
		shares = append(shares, c.Name, membudget.FormatBytes(c.Cache.Stats().MaxBytes))
	}
	a.logger.Info("memory budget", append([]any{"budget", membudget.FormatBytes(a.cfg.MemoryBudget)}, shares...)...)
	return nil
}

// gitOpFetch is the op of memory.git.errors for a failed mirror fetch.
const gitOpFetch = "fetch"

// fetchFailed counts a failed fetch of the mirror.
func (a *App) fetchFailed(ctx context.Context) {
	if a.fetchErrors != nil {
		a.fetchErrors.Add(ctx, 1, metric.WithAttributes(attribute.String("op", gitOpFetch)))
	}
}
