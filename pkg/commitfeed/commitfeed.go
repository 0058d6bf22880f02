// Package commitfeed follows proposal-apply's commit stream for the read
// plane: it calls back on every commit and reconnects with backoff when the
// stream breaks (callers also poll, so a gap only delays them).
package commitfeed

import (
	"context"
	"time"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// Follow calls onCommit once when the stream is (re)established — commits
// may have landed while it was down — and once per commit, until ctx ends.
func Follow(ctx context.Context, client memoryv1.ProposalApplyServiceClient, onCommit func()) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		stream, err := client.WatchCommits(ctx, &memoryv1.WatchCommitsRequest{})
		if err == nil {
			onCommit()
			for {
				if _, err = stream.Recv(); err != nil {
					break
				}
				backoff = 100 * time.Millisecond
				onCommit()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}
