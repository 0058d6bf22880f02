// Package searchindex is the search-index target: BM25 search over the memory monorepo and agent sources (read plane).
package searchindex

import (
	"log/slog"

	"google.golang.org/grpc"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// Name is the fully-qualified gRPC service name, also its health-check name.
var Name = memoryv1.SearchIndexService_ServiceDesc.ServiceName

// Service is the search-index service.
type Service struct {
	logger *slog.Logger
}

// New returns the service.
func New(logger *slog.Logger) *Service {
	return &Service{logger: logger.With("service", "search-index")}
}

// Register adds the service's gRPC handlers to g.
func (s *Service) Register(g *grpc.Server) {
	memoryv1.RegisterSearchIndexServiceServer(g, &handler{svc: s})
}
