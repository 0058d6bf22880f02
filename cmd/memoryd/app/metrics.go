package app

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/telemetry"
)

// The process's own metrics, of what the App owns rather than a service:
// the caches of the repository handles and of verified tokens, and the
// mirror's failed fetches. The services export theirs (see
// docs/operations.md, "Metrics").

// instrument registers the caches' figures (memory.cache.*); the
// registration lives as long as the process's meter provider.
func (a *App) instrument() error {
	_, err := telemetry.ObserveCaches(a.tel.MeterProvider(), func() []telemetry.NamedCache {
		caches := []telemetry.NamedCache{{Name: "auth.verified_tokens", Stats: a.verifier.CacheStats()}}
		// One handle in the all-in-one (the read services share the
		// writer's); a read replica's mirror and a writer's repository
		// are each the only one of their process.
		var repo *memrepo.Repo
		if a.sharedRepo != nil {
			repo, _ = a.sharedRepo.Opened()
		}
		if repo == nil {
			repo = a.writeRepo
		}
		if repo != nil {
			trees, commits := repo.CacheStats()
			caches = append(caches, telemetry.NamedCache{Name: "git.trees", Stats: trees}, telemetry.NamedCache{Name: "git.commits", Stats: commits})
		}
		return caches
	})
	return err
}

// gitOpFetch is the op of memory.git.errors for a failed mirror fetch.
const gitOpFetch = "fetch"

// fetchFailed counts a failed fetch of the mirror.
func (a *App) fetchFailed(ctx context.Context) {
	if a.fetchErrors != nil {
		a.fetchErrors.Add(ctx, 1, metric.WithAttributes(attribute.String("op", gitOpFetch)))
	}
}
