package contextassembly

import (
	"context"
	"hash/maphash"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/mdops"
)

// usageFlushEvery is how often fact usage is reported to the write plane.
const usageFlushEvery = 2 * time.Second

// usage collects which facts reads returned and reports them to
// proposal-apply in batches, off the read path: a read never waits for it,
// and a report that fails is dropped (usage only tunes eviction order).
type usage struct {
	client memoryv1.ProposalApplyServiceClient
	logger *slog.Logger
	now    func() time.Time

	mu      sync.Mutex
	pending map[string]map[string]time.Time // agent -> fact hash -> used at
	held    int                             // facts in pending
	// recent is, per agent, the facts text last recorded and when, so that
	// reads of unchanged facts within usageResolution are not parsed and
	// reported again.
	recent map[string]recentFacts
}

type recentFacts struct {
	sum uint64 // maphash of the facts text
	at  time.Time
}

// maxPendingUsage bounds the facts held between reports: reading every
// agent of a large deployment within one flush (a replica warming up) would
// otherwise hold every fact hash at once (180 MB at 10,000 agents). Reads
// past the bound are recorded at a later read.
const maxPendingUsage = 50_000

// usageResolution matches proposal-apply's: uses closer together than this
// change nothing it saves.
const usageResolution = time.Hour

var usageSeed = maphash.MakeSeed()

func newUsage(client memoryv1.ProposalApplyServiceClient, logger *slog.Logger) *usage {
	return &usage{client: client, logger: logger, now: time.Now, pending: map[string]map[string]time.Time{}, recent: map[string]recentFacts{}}
}

// record notes the facts in a facts.md text that a read returned.
func (u *usage) record(agent, factsMD string) {
	if u == nil || u.client == nil || factsMD == "" {
		return
	}
	at := u.now()
	sum := maphash.String(usageSeed, factsMD)
	u.mu.Lock()
	defer u.mu.Unlock()
	if r, ok := u.recent[agent]; (ok && r.sum == sum && at.Sub(r.at) < usageResolution) || u.held >= maxPendingUsage {
		return
	}
	u.recent[agent] = recentFacts{sum: sum, at: at}
	m := u.pending[agent]
	if m == nil {
		m = map[string]time.Time{}
		u.pending[agent] = m
	}
	for _, f := range mdops.ParseFacts(factsMD) {
		h := mdops.FactHash(f.Text)
		if _, ok := m[h]; !ok {
			u.held++
		}
		m[h] = at
	}
}

// run reports every usageFlushEvery until ctx ends, then once more.
func (u *usage) run(ctx context.Context) {
	t := time.NewTicker(usageFlushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			u.flush(context.WithoutCancel(ctx))
			return
		case <-t.C:
			u.flush(ctx)
		}
	}
}

// take returns the pending usage and starts a new batch.
func (u *usage) take() map[string]map[string]time.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	batch := u.pending
	u.pending, u.held = map[string]map[string]time.Time{}, 0
	return batch
}

func (u *usage) flush(ctx context.Context) {
	batch := u.take()
	for _, agent := range slices.Sorted(maps.Keys(batch)) {
		req := &memoryv1.ReportFactUsageRequest{AgentId: agent}
		for _, h := range slices.Sorted(maps.Keys(batch[agent])) {
			req.Usages = append(req.Usages, &memoryv1.FactUsage{FactHash: h, UsedAt: timestamppb.New(batch[agent][h])})
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := u.client.ReportFactUsage(cctx, req)
		cancel()
		if err != nil {
			u.logger.Debug("fact usage report dropped", "agent", agent, "facts", len(req.Usages), "err", err)
		}
	}
}
