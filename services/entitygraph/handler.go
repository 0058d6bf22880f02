package entitygraph

import (
	"context"

	"github.com/garden-bloom/memory/pkg/apierr"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// handler implements the gRPC methods; it stays thin and delegates to the Service.
type handler struct {
	memoryv1.UnimplementedEntityGraphServiceServer
	svc *Service
}

// GetEntity: entity lookup arrives with issue #6.
func (h *handler) GetEntity(context.Context, *memoryv1.GetEntityRequest) (*memoryv1.GetEntityResponse, error) {
	return nil, apierr.NotImplemented("entity lookup", 6)
}

// ListEntities: entity listing arrives with issue #6.
func (h *handler) ListEntities(context.Context, *memoryv1.ListEntitiesRequest) (*memoryv1.ListEntitiesResponse, error) {
	return nil, apierr.NotImplemented("entity listing", 6)
}

// GetNeighbors: entity neighbours arrives with issue #6.
func (h *handler) GetNeighbors(context.Context, *memoryv1.GetNeighborsRequest) (*memoryv1.GetNeighborsResponse, error) {
	return nil, apierr.NotImplemented("entity neighbours", 6)
}

// GetEntityHistory: entity history arrives with issue #6.
func (h *handler) GetEntityHistory(context.Context, *memoryv1.GetEntityHistoryRequest) (*memoryv1.GetEntityHistoryResponse, error) {
	return nil, apierr.NotImplemented("entity history", 6)
}

// ExplainDecision: decision chains (why) arrives with issue #6.
func (h *handler) ExplainDecision(context.Context, *memoryv1.ExplainDecisionRequest) (*memoryv1.ExplainDecisionResponse, error) {
	return nil, apierr.NotImplemented("decision chains (why)", 6)
}

// CheckProposal: the semantic guard (proposal check) arrives with issue #6.
func (h *handler) CheckProposal(context.Context, *memoryv1.CheckProposalRequest) (*memoryv1.CheckProposalResponse, error) {
	return nil, apierr.NotImplemented("the semantic guard (proposal check)", 6)
}
