package searchindex

import (
	"fmt"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
)

// specSearch moves the specs' spellings of search fields to ours (issue
// #24): integration §4 nests agent_id and layer in `filters`; the Mastra
// adapter's search_memory calls top_k `k`. Each must agree with the field it
// stands for when both are given.
func specSearch(req *memoryv1.SearchRequest) error {
	if k := req.GetK(); k != 0 {
		if req.GetTopK() != 0 && req.GetTopK() != k {
			return apierr.InvalidArgument("k", fmt.Sprintf("k %d differs from top_k %d; give one", k, req.GetTopK()))
		}
		req.TopK, req.K = k, 0
	}
	f := req.GetFilters()
	if f == nil {
		return nil
	}
	if a := f.GetAgentId(); a != "" {
		if req.GetAgentId() != "" && req.GetAgentId() != a {
			return apierr.InvalidArgument("filters.agent_id", fmt.Sprintf("filters.agent_id %q differs from the agent %q the request names", a, req.GetAgentId()))
		}
		req.AgentId = a
	}
	if l := f.GetLayer(); l != 0 {
		if req.GetLayer() != 0 && req.GetLayer() != l {
			return apierr.InvalidArgument("filters.layer", fmt.Sprintf("filters.layer %d differs from layer %d; give one", l, req.GetLayer()))
		}
		req.Layer = l
	}
	req.Filters = nil
	return nil
}
