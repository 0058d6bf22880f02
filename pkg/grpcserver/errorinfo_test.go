package grpcserver

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
)

// errorSearch fails each method its own way.
type errorSearch struct {
	memoryv1.UnimplementedSearchIndexServiceServer
}

func (errorSearch) Search(_ context.Context, req *memoryv1.SearchRequest) (*memoryv1.SearchResponse, error) {
	switch req.GetQuery() {
	case "panic":
		panic("boom")
	case "bare":
		return nil, status.Error(codes.PermissionDenied, "no")
	case "plain":
		return nil, errors.New("plain error")
	case "deadline":
		return nil, context.DeadlineExceeded
	}
	return nil, apierr.New(codes.InvalidArgument, memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, "agent_id must be a slug", map[string]string{"field": "agent_id"})
}

// Every error status of an API method carries a google.rpc.ErrorInfo in
// the API's domain, whatever produced it (issue #24, point 7).
func TestAPIErrorsCarryErrorInfo(t *testing.T) {
	client := memoryv1.NewSearchIndexServiceClient(serveSearch(t, errorSearch{}))
	for query, want := range map[string]struct {
		code   codes.Code
		reason string
	}{
		"panic":    {codes.Internal, "UNSPECIFIED"},
		"bare":     {codes.PermissionDenied, "PERMISSION_DENIED"},
		"plain":    {codes.Unknown, "UNSPECIFIED"},
		"deadline": {codes.DeadlineExceeded, "UNSPECIFIED"},
		"own":      {codes.InvalidArgument, "INVALID_AGENT_ID"},
	} {
		_, err := client.Search(ctxT(t), &memoryv1.SearchRequest{Query: query})
		require.Equal(t, want.code, status.Code(err), query)
		info := apierr.Info(err)
		require.NotNil(t, info, query)
		require.Equal(t, want.reason, info.GetReason(), query)
		require.Equal(t, apierr.Domain, info.GetDomain(), query)
	}
	_, err := client.Reindex(ctxT(t), &memoryv1.ReindexRequest{})
	require.Equal(t, codes.Unimplemented, status.Code(err))
	require.Equal(t, "NOT_IMPLEMENTED", apierr.Info(err).GetReason())
}
