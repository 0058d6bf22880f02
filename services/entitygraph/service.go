// Package entitygraph is the entity-graph target: the temporal entity graph derived from git (read plane).
package entitygraph

import (
	"log/slog"

	"google.golang.org/grpc"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// Name is the fully-qualified gRPC service name, also its health-check name.
var Name = memoryv1.EntityGraphService_ServiceDesc.ServiceName

// Service is the entity-graph service.
type Service struct {
	logger *slog.Logger
}

// New returns the service.
func New(logger *slog.Logger) *Service {
	return &Service{logger: logger.With("service", "entity-graph")}
}

// Register adds the service's gRPC handlers to g.
func (s *Service) Register(g *grpc.Server) {
	memoryv1.RegisterEntityGraphServiceServer(g, &handler{svc: s})
}
