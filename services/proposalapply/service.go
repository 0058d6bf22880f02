// Package proposalapply is the proposal-apply target: proposals, review and the apply engine — the only writer of the memory monorepo (write plane).
package proposalapply

import (
	"log/slog"

	"google.golang.org/grpc"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// Name is the fully-qualified gRPC service name, also its health-check name.
var Name = memoryv1.ProposalApplyService_ServiceDesc.ServiceName

// Service is the proposal-apply service.
type Service struct {
	logger *slog.Logger
}

// New returns the service.
func New(logger *slog.Logger) *Service {
	return &Service{logger: logger.With("service", "proposal-apply")}
}

// Register adds the service's gRPC handlers to g.
func (s *Service) Register(g *grpc.Server) {
	memoryv1.RegisterProposalApplyServiceServer(g, &handler{svc: s})
}
