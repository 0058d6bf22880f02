// Package history describes commits of the memory monorepo as the API shows
// them: proposal and run ids from the message, the files changed, the agent,
// the meta.json version, and whether a person made it directly with git.
package history

import (
	"context"
	"errors"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/commitmsg"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memrepo"
)

// ErrNotAncestor: a commit that main does not contain.
var ErrNotAncestor = errors.New("commit is not an ancestor of main")

// After lists the first-parent commits after `after` up to head,
// oldest first. A zero `after` means all of history; max > 0 bounds the count.
func After(ctx context.Context, repo *memrepo.Repo, head, after plumbing.Hash, max int) ([]*memoryv1.CommitInfo, error) {
	var commits []*object.Commit
	found := after.IsZero()
	err := repo.Walk(ctx, head, func(c *object.Commit) error {
		if c.Hash == after {
			found = true
			return memrepo.ErrStopWalk
		}
		commits = append(commits, c)
		if max > 0 && len(commits) >= max {
			return memrepo.ErrStopWalk
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !found && max == 0 {
		return nil, ErrNotAncestor
	}
	out := make([]*memoryv1.CommitInfo, 0, len(commits))
	for i := len(commits) - 1; i >= 0; i-- {
		info, err := Describe(ctx, repo, commits[i])
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// Describe describes a commit as the API does: ids from the message, files
// from the tree diff, version from meta.json when the commit changed it.
func Describe(ctx context.Context, repo *memrepo.Repo, c *object.Commit) (*memoryv1.CommitInfo, error) {
	changes, err := repo.ChangedFileBlobs(ctx, c.Hash)
	if err != nil {
		return nil, err
	}
	files := memrepo.Paths(changes)
	p := commitmsg.Parse(c.Message)
	info := &memoryv1.CommitInfo{
		Sha:       c.Hash.String(),
		Time:      timestamppb.New(c.Committer.When),
		Author:    c.Author.Name + " <" + c.Author.Email + ">",
		Message:   c.Message,
		Files:     files,
		HumanEdit: p.HumanEdit,
	}
	if p.Update != nil {
		info.AgentId, info.RunId, info.ProposalId, info.Evicted = p.Update.AgentID, p.Update.RunID, p.Update.ProposalID, p.Update.Evicted
	} else {
		info.AgentId = soleAgent(files)
	}
	if info.AgentId != "" {
		metaPath := memlayout.AgentDir(info.AgentId) + memlayout.MetaFile
		for _, ch := range changes {
			// By blob: a lookup by path would decode memory/, an entry
			// per agent, for every commit described.
			if ch.Path == metaPath && !ch.Deleted() {
				if data, err := repo.ReadBlob(ctx, ch.Blob); err == nil {
					if m, err := memlayout.ParseMeta(data); err == nil {
						info.Version = m.Version
					}
				}
			}
		}
	}
	return info, nil
}

// soleAgent returns the agent whose folders all files are in, or "".
func soleAgent(files []string) string {
	agent := ""
	for _, f := range files {
		parts := strings.SplitN(f, "/", 3)
		if len(parts) < 3 || (parts[0] != "memory" && parts[0] != "logic") {
			return ""
		}
		if agent != "" && parts[1] != agent {
			return ""
		}
		agent = parts[1]
	}
	return agent
}
