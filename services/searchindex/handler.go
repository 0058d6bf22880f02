package searchindex

import (
	"context"

	"github.com/garden-bloom/memory/pkg/apierr"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// handler implements the gRPC methods; it stays thin and delegates to the Service.
type handler struct {
	memoryv1.UnimplementedSearchIndexServiceServer
	svc *Service
}

// Search: BM25 search (search-notes) arrives with issue #4.
func (h *handler) Search(context.Context, *memoryv1.SearchRequest) (*memoryv1.SearchResponse, error) {
	return nil, apierr.NotImplemented("BM25 search (search-notes)", 4)
}

// Reindex: reindex arrives with issue #4.
func (h *handler) Reindex(context.Context, *memoryv1.ReindexRequest) (*memoryv1.ReindexResponse, error) {
	return nil, apierr.NotImplemented("reindex", 4)
}

// GetIndexStatus: index status arrives with issue #4.
func (h *handler) GetIndexStatus(context.Context, *memoryv1.GetIndexStatusRequest) (*memoryv1.GetIndexStatusResponse, error) {
	return nil, apierr.NotImplemented("index status", 4)
}
