// Package contextassembly is the context-assembly target: read-memory, Layer 2, memory diff, history and context assembly (read plane).
package contextassembly

import (
	"log/slog"

	"google.golang.org/grpc"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// Name is the fully-qualified gRPC service name, also its health-check name.
var Name = memoryv1.ContextAssemblyService_ServiceDesc.ServiceName

// Service is the context-assembly service.
type Service struct {
	logger *slog.Logger
}

// New returns the service.
func New(logger *slog.Logger) *Service {
	return &Service{logger: logger.With("service", "context-assembly")}
}

// Register adds the service's gRPC handlers to g.
func (s *Service) Register(g *grpc.Server) {
	memoryv1.RegisterContextAssemblyServiceServer(g, &handler{svc: s})
}
