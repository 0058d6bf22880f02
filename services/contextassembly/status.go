package contextassembly

import (
	"context"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

// GetAgentStatus reports an agent's memory at main's head: meta.json, and
// Layer 1's token use counted now against the hard limits.
func (h *handler) GetAgentStatus(ctx context.Context, req *memoryv1.GetAgentStatusRequest) (*memoryv1.GetAgentStatusResponse, error) {
	if err := access(ctx, req.GetAgentId(), "agentId"); err != nil {
		return nil, err
	}
	files, _, err := h.at(ctx, req.GetAgentId(), "")
	if err != nil {
		return nil, err
	}
	metaRaw, _, err := files.read(memlayout.MetaFile)
	if err != nil {
		return nil, h.unavailable(err)
	}
	meta, _ := memlayout.ParseMeta([]byte(metaRaw))
	resp := &memoryv1.GetAgentStatusResponse{AgentId: req.GetAgentId(), Commit: files.commit.String(),
		Meta: metaMessage(req.GetAgentId(), meta), Layer1Limit: memlayout.Layer1Limit}
	for _, l := range []struct {
		file  string
		limit int
	}{{memlayout.SnapshotFile, memlayout.SnapshotLimit}, {memlayout.FactsFile, memlayout.FactsLimit}, {memlayout.OpenLoopsFile, memlayout.OpenLoopsLimit}} {
		content, _, err := files.read(l.file)
		if err != nil {
			return nil, h.unavailable(err)
		}
		n := int32(h.svc.count(content))
		resp.Layer1 = append(resp.Layer1, &memoryv1.LayerUsage{File: l.file, Tokens: n, Limit: int32(l.limit)})
		resp.Layer1Tokens += n
	}
	runs, err := files.list("runs/")
	if err != nil {
		return nil, h.unavailable(err)
	}
	blocks, err := h.svc.alwaysLoad(files)
	if err != nil {
		return nil, h.unavailable(err)
	}
	resp.Runs, resp.AlwaysLoadBlocks = int32(len(runs)), int32(len(blocks))
	return resp, nil
}
