package contextassembly

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/object"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/revision"
)

// agentsQuery is a validated ListAgents request.
type agentsQuery struct {
	// visible are the agents the caller may list (nil = every agent).
	visible []string
	// query is a lowercased substring of the ids to keep ("" = all).
	query string
	size  int
	// after is the last agent of the previous page ("" = the first page).
	after string
	at    string
}

// listAgents lists the agents with memory at q.at: the folders of
// memory/, each with its meta.json. The Layer 1 counts are meta.json's
// (written by every apply), so a page costs one small read per agent, not
// a token count of its files.
func (s *Service) listAgents(ctx context.Context, q agentsQuery) (*memoryv1.ListAgentsResponse, error) {
	var (
		repo *memrepo.Repo
		c    *object.Commit
	)
	err := withRetries(ctx, func() error {
		var err error
		if repo, err = s.openRepo(); err != nil {
			return err
		}
		c, err = revision.Resolve(ctx, repo, q.at)
		return err
	})
	if errors.Is(err, revision.ErrNotFound) {
		return nil, apierr.RevisionNotFound("at", q.at)
	}
	if err != nil {
		return nil, s.unavailable(err)
	}
	dirs, err := repo.ListDirs(ctx, c.Hash, memlayout.MemoryDir)
	if err != nil {
		return nil, s.unavailable(err)
	}
	var ids []string
	for _, id := range dirs {
		if !memlayout.ValidAgentID(id) || (q.visible != nil && !slices.Contains(q.visible, id)) ||
			(q.query != "" && !strings.Contains(id, q.query)) {
			continue
		}
		ids = append(ids, id)
	}
	resp := &memoryv1.ListAgentsResponse{Commit: c.Hash.String(), TotalSize: int32(len(ids))}
	from := sort.SearchStrings(ids, q.after)
	if from < len(ids) && ids[from] == q.after {
		from++
	}
	to := min(from+q.size, len(ids))
	for _, id := range ids[from:to] {
		raw, _, err := repo.ReadTextBlob(ctx, c.Hash, memlayout.AgentDir(id)+memlayout.MetaFile)
		if err != nil && !errors.Is(err, memrepo.ErrFileNotFound) {
			return nil, s.unavailable(err)
		}
		meta, _ := memlayout.ParseMeta([]byte(raw)) // a folder without meta.json lists with zeros
		resp.Agents = append(resp.Agents, &memoryv1.AgentSummary{AgentId: id, Meta: metaMessage(id, meta), Layer1: []*memoryv1.LayerUsage{
			{File: memlayout.SnapshotFile, Tokens: int32(meta.SnapshotTokenCount), Limit: memlayout.SnapshotLimit},
			{File: memlayout.FactsFile, Tokens: int32(meta.FactsTokenCount), Limit: memlayout.FactsLimit},
			{File: memlayout.OpenLoopsFile, Tokens: int32(meta.OpenLoopsTokenCount), Limit: memlayout.OpenLoopsLimit},
		}})
	}
	if to < len(ids) {
		resp.NextPageToken = ids[to-1]
	}
	return resp, nil
}
