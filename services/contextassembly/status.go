package contextassembly

import (
	"context"

	"github.com/garden-bloom/memory/pkg/memlayout"
)

// agentStatus is an agent's memory at main's head as GetAgentStatus
// reports it.
type agentStatus struct {
	commit string
	meta   memlayout.Meta
	// layer1 is the token use of each Layer 1 file against its hard limit.
	layer1           []layerUsage
	runs, alwaysLoad int
}

type layerUsage struct {
	file          string
	tokens, limit int
}

// agentStatus reads meta.json and counts Layer 1's tokens now.
func (s *Service) agentStatus(ctx context.Context, agent string) (*agentStatus, error) {
	files, _, err := s.at(ctx, agent, "")
	if err != nil {
		return nil, err
	}
	metaRaw, _, err := files.read(memlayout.MetaFile)
	if err != nil {
		return nil, s.unavailable(err)
	}
	meta, _ := memlayout.ParseMeta([]byte(metaRaw))
	st := &agentStatus{commit: files.commit.String(), meta: meta}
	for _, l := range []struct {
		file  string
		limit int
	}{{memlayout.SnapshotFile, memlayout.SnapshotLimit}, {memlayout.FactsFile, memlayout.FactsLimit}, {memlayout.OpenLoopsFile, memlayout.OpenLoopsLimit}} {
		content, _, err := files.read(l.file)
		if err != nil {
			return nil, s.unavailable(err)
		}
		st.layer1 = append(st.layer1, layerUsage{file: l.file, tokens: s.count(content), limit: l.limit})
	}
	runs, err := files.list("runs/")
	if err != nil {
		return nil, s.unavailable(err)
	}
	blocks, err := s.alwaysLoad(files)
	if err != nil {
		return nil, s.unavailable(err)
	}
	st.runs, st.alwaysLoad = len(runs), len(blocks)
	return st, nil
}
