package app

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// PublishTarget is what the one-off job runs: the two services whose
// state a new read replica would otherwise rebuild from all of history.
const PublishTarget = "search-index,entity-graph"

// publishTimeout bounds the job's publish of each state: a large index
// takes longer to upload than a pod's shutdown allows.
const publishTimeout = 30 * time.Minute

// ConfigurePublish makes cfg the one-off job's (PublishReadState): the
// two read services, publishing when they stop, however long it takes.
func ConfigurePublish(cfg *Config) error {
	if cfg.Target != "all" && cfg.Target != PublishTarget {
		return fmt.Errorf("publish-read-state runs %s; --target %q is not for it", PublishTarget, cfg.Target)
	}
	if cfg.Storage.ReadStateEvery <= 0 {
		return errors.New("publish-read-state publishes to the object store: --read-state-every must not be 0")
	}
	cfg.Target = PublishTarget
	cfg.Storage.ReadStatePublishTimeout = publishTimeout
	// It serves nobody: free ports, so it runs beside a memoryd on the
	// default ones.
	cfg.Server.GRPCAddr, cfg.Server.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	return nil
}

// PublishReadState is the one-off job behind `memoryd publish-read-state`
// (issue #30, point 3): it builds the search index and the entity graph
// up to main's head (from the state dir, or the state published before,
// replaying only what is newer), publishes both to the object store as a
// read replica does at shutdown, and stops. A new deployment started with
// an empty data dir then loads them and replays only the commits after.
// Use it after importing a repository, or before the first read replica
// of a large history starts.
func (a *App) PublishReadState(ctx context.Context) error {
	if a.searchIndex == nil || a.entityGraph == nil {
		return errors.New("publish-read-state: the config is not the job's (ConfigurePublish)")
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan error, 1)
	go func() { ran <- a.Run(runCtx) }()
	start := time.Now()
	err := errors.Join(a.searchIndex.WaitCurrent(runCtx), a.entityGraph.WaitCurrent(runCtx))
	if err == nil {
		a.logger.Info("read state built; publishing it", "after", time.Since(start).Round(time.Millisecond).String())
	}
	stop() // stopping publishes both (forced, publishTimeout each)
	return errors.Join(err, <-ran)
}
