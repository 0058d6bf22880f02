package contextassembly

import (
	"context"
	"io"
	"iter"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/grpctest"
)

// listCounter counts the listings that reach the object store.
type listCounter struct {
	blob.Store
	lists atomic.Int32
}

func (c *listCounter) List(ctx context.Context, prefix string) iter.Seq2[blob.Info, error] {
	c.lists.Add(1)
	return c.Store.List(ctx, prefix)
}

// Issue #30 (AssembleContext on the floor): every AssembleContext listed
// the agent's sources — on MinIO a round trip, on the folder store 9 % of
// the CPU in make bench. An agent's listing is now kept for
// sourceListTTL: a source put in or taken out is seen within it (the
// search index lists sources every --search-sources-poll, 10 s, so its
// hits follow later than that anyway).
func TestSourcesAreListedAtMostOnceATTL(t *testing.T) {
	e := newHintEnv(t)
	store := &listCounter{Store: e.blobs}
	var now atomic.Int64
	now.Store(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC).UnixNano())
	svc, err := New(Deps{RepoPath: e.repo.Path(), Blobs: store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Search: e.search, Now: func() time.Time { return time.Unix(0, now.Load()) }})
	require.NoError(t, err)
	client := memoryv1.NewContextAssemblyServiceClient(grpctest.Serve(t, svc.Register).Conn)
	sources := func(agent string) []string {
		resp, err := client.AssembleContext(e.svc(), &memoryv1.AssembleContextRequest{AgentId: agent, Budget: 10000})
		require.NoError(t, err)
		var out []string
		for _, s := range resp.GetSections() {
			if strings.HasPrefix(s.GetFile(), "agents/") {
				out = append(out, s.GetFile())
			}
		}
		return out
	}
	put := func(key, text string) {
		_, err := blob.PutBytes(context.Background(), e.blobs, key, []byte(text), blob.PutOptions{})
		require.NoError(t, err)
	}

	first := sources("cur")
	require.Len(t, first, 3)
	require.Equal(t, first, sources("cur"))
	require.Equal(t, int32(1), store.lists.Load(), "listed once")

	put("agents/cur/sources/session-4.md", "# Session 4\n\nThe pond pump was replaced.\n")
	require.Equal(t, first, sources("cur"), "within the TTL: the listing kept")
	now.Add(int64(sourceListTTL))
	require.Len(t, sources("cur"), 4, "after it: listed again")
	require.Equal(t, int32(2), store.lists.Load())

	require.NoError(t, e.blobs.Delete(context.Background(), "agents/cur/sources/session-1.md"))
	require.Len(t, sources("cur"), 4, "within the TTL a source taken out is still there")
	now.Add(int64(sourceListTTL))
	require.Len(t, sources("cur"), 3, "after it, gone")
	require.Equal(t, int32(3), store.lists.Load())
}
