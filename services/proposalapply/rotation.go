package proposalapply

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

// Run rotation (spec DiffMem §3.2, §12): run files whose last change is older
// than the retention move to memory-archive/<agentId>/runs/<yyyy>/<mm>/ in the
// object store, then leave the repository through one proposal per agent,
// applied as one commit like every other write. The archive copy is written
// first, so a crash in between leaves the run in both places, never in
// neither; the next rotation writes the same object again and goes on.
const (
	archivePrefix = "memory-archive/"
	rotationActor = "memoryd/run-rotation"
)

// errArchive marks a failure to write the archive copy (the object store).
var errArchive = errors.New("archiving a run")

// rotateRuns archives and removes the expired runs of one agent, or of every
// agent when agent is "".
func (s *Service) rotateRuns(ctx context.Context, agent string) (*memoryv1.RotateRunsResponse, error) {
	head, err := s.repo.Head(ctx)
	if err != nil {
		return nil, err
	}
	dir := "memory"
	if agent != "" {
		dir = strings.TrimSuffix(memlayout.AgentDir(agent), "/")
	}
	paths, err := s.repo.ListFiles(ctx, head, dir)
	if err != nil {
		return nil, err
	}
	pending := map[string]bool{}
	for _, p := range paths {
		if parts := strings.SplitN(p, "/", 4); len(parts) == 4 && parts[2] == "runs" && memlayout.RunIDOfFile(parts[2]+"/"+parts[3]) != "" {
			pending[p] = true
		}
	}
	resp := &memoryv1.RotateRunsResponse{}
	if len(pending) == 0 {
		return resp, nil
	}
	changed, err := s.repo.LastChanged(ctx, head, dir+"/", pending)
	if err != nil {
		return nil, err
	}
	cutoff := s.now().Add(-s.cfg.RunRetention)
	expired := map[string][]string{} // agent → repository paths
	for path, when := range changed {
		if when.Before(cutoff) {
			a := strings.SplitN(path, "/", 3)[1]
			expired[a] = append(expired[a], path)
		}
	}
	for _, a := range slices.Sorted(maps.Keys(expired)) {
		files := expired[a]
		slices.Sort(files)
		p := s.newProposal(a, "rotation", rotationActor)
		for _, path := range files {
			rel := strings.TrimPrefix(path, memlayout.AgentDir(a))
			data, err := s.repo.ReadFile(ctx, head, path)
			if err != nil {
				return nil, err
			}
			key := archivePrefix + a + "/runs/" + changed[path].UTC().Format("2006/01") + "/" + strings.TrimPrefix(rel, "runs/")
			if _, err := s.blobs.Put(ctx, key, bytes.NewReader(data), int64(len(data)), blob.PutOptions{ContentType: "text/markdown; charset=utf-8"}); err != nil {
				return nil, fmt.Errorf("%w: %s: %w", errArchive, path, err)
			}
			resp.Archived = append(resp.Archived, key)
			p.Updates = append(p.Updates, &memoryv1.FileUpdate{File: rel, Operation: memoryv1.Operation_OPERATION_DELETE})
		}
		p.AutoApproved = true
		p.IdempotencyKey = "run-rotation@" + head.String()
		p.Reasoning = fmt.Sprintf("Run rotation: %d run file(s) unchanged for %s archived to %s%s/runs/",
			len(files), retentionText(s.cfg.RunRetention), archivePrefix, a)
		_, meta, policy, err := s.headState(ctx, a)
		if err != nil {
			return nil, err
		}
		rec, err := s.submit(ctx, p, head, meta, policy)
		if err != nil {
			return nil, err
		}
		resp.Proposals = append(resp.Proposals, proposeResponse(rec.Proposal))
		s.logger.Info("runs rotated", "agent", a, "files", len(files), "proposal", rec.Proposal.GetProposalId())
	}
	return resp, nil
}

func retentionText(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	return d.String()
}

// rotationLoop rotates runs ten minutes after start (off the cold-start
// path: on a long history the log scan costs seconds of CPU), then every
// interval.
func (s *Service) rotationLoop(ctx context.Context, every time.Duration) {
	wait := min(10*time.Minute, every)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = every
		if _, err := s.rotateRuns(ctx, ""); err != nil && ctx.Err() == nil {
			s.logger.Warn("run rotation failed; will retry at the next interval", "err", err)
		}
	}
}
