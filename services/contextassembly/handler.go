package contextassembly

import (
	"context"

	"github.com/garden-bloom/memory/pkg/apierr"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// handler implements the gRPC methods; it stays thin and delegates to the Service.
type handler struct {
	memoryv1.UnimplementedContextAssemblyServiceServer
	svc *Service
}

// ReadMemory: read-memory arrives with issue #5.
func (h *handler) ReadMemory(context.Context, *memoryv1.ReadMemoryRequest) (*memoryv1.ReadMemoryResponse, error) {
	return nil, apierr.NotImplemented("read-memory", 5)
}

// GetLayer2: Layer 2 reads arrives with issue #5.
func (h *handler) GetLayer2(context.Context, *memoryv1.GetLayer2Request) (*memoryv1.GetLayer2Response, error) {
	return nil, apierr.NotImplemented("Layer 2 reads", 5)
}

// AssembleContext: context assembly arrives with issue #5.
func (h *handler) AssembleContext(context.Context, *memoryv1.AssembleContextRequest) (*memoryv1.AssembleContextResponse, error) {
	return nil, apierr.NotImplemented("context assembly", 5)
}

// DiffMemory: memory-diff arrives with issue #5.
func (h *handler) DiffMemory(context.Context, *memoryv1.DiffMemoryRequest) (*memoryv1.DiffMemoryResponse, error) {
	return nil, apierr.NotImplemented("memory-diff", 5)
}

// ListHistory: memory history arrives with issue #5.
func (h *handler) ListHistory(context.Context, *memoryv1.ListHistoryRequest) (*memoryv1.ListHistoryResponse, error) {
	return nil, apierr.NotImplemented("memory history", 5)
}
