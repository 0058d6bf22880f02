package benchharness

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// endingWatch serves WatchCommits as memoryd does at a connection's
// maximum age: each stream ends after two commits; a stream resumed from
// a sha continues after it.
type endingWatch struct {
	memoryv1.UnimplementedProposalApplyServiceServer
	mu    sync.Mutex
	froms []string
}

func (e *endingWatch) WatchCommits(req *memoryv1.WatchCommitsRequest, stream memoryv1.ProposalApplyService_WatchCommitsServer) error {
	e.mu.Lock()
	e.froms = append(e.froms, req.GetFromSha())
	e.mu.Unlock()
	var n int
	_, _ = fmt.Sscanf(req.GetFromSha(), "sha%d", &n)
	for i := n + 1; i <= n+2 && i <= 7; i++ {
		if err := stream.Send(&memoryv1.WatchCommitsResponse{Commit: &memoryv1.CommitInfo{Sha: fmt.Sprint("sha", i), ProposalId: fmt.Sprint("p", i)}}); err != nil {
			return err
		}
	}
	return nil // the stream ends, as at a GOAWAY
}

func TestCommitWatcherResumesAfterTheLastCommit(t *testing.T) {
	srv := grpc.NewServer()
	fake := &endingWatch{}
	memoryv1.RegisterProposalApplyServiceServer(srv, fake)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := watchCommits(ctx, memoryv1.NewProposalApplyServiceClient(conn), "sha0")
	require.NoError(t, err)
	for i := 1; i <= 7; i++ {
		_, err := w.wait(ctx, fmt.Sprint("p", i))
		require.NoError(t, err, "p%d", i)
	}
	require.GreaterOrEqual(t, w.resumedStreams(), 3)
	fake.mu.Lock()
	require.Equal(t, []string{"sha0", "sha2", "sha4", "sha6"}, fake.froms[:4], "each resumed after the last commit it saw")
	fake.mu.Unlock()
}
