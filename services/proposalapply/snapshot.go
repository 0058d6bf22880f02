package proposalapply

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/memsnapshot"
	"github.com/garden-bloom/memory/pkg/proposalstore"
	"github.com/garden-bloom/memory/pkg/revision"
)

// Memory snapshots (spec DiffMem §4.4): memory-snapshots/<agentId>/<label>.tar.gz
// holds memory/<agentId>/ at a commit; <label>.json beside it describes it,
// so listing needs no archive to be opened. The archive is written first:
// a description always names an archive that exists.
const (
	snapshotPrefix   = "memory-snapshots/"
	snapshotIDPrefix = "snapshot_"
)

var labelRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// snapshotLabelTime labels a snapshot taken without a label: the time.
const snapshotLabelTime = "2006-01-02T150405Z"

func snapshotKey(agent, label, ext string) string {
	return snapshotPrefix + agent + "/" + label + ext
}

// labelOf accepts a snapshot id ("snapshot_<label>") or a bare label.
func labelOf(id string) string { return strings.TrimPrefix(id, snapshotIDPrefix) }

func (s *Service) objectsUnavailable(err error, what string) error {
	s.logger.Warn(what+": object store unavailable", "err", err)
	return apierr.Retryable(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_OBJECT_STORE_UNAVAILABLE,
		what+": the object store is unavailable; retry later", 5*time.Second)
}

// snapshotRequest is a validated CreateSnapshot request.
type snapshotRequest struct {
	agent string
	// label is the snapshot's label ("": the time it is taken); name is
	// where it is stored (the spec's path's name, "": the label).
	label, name string
	// commit is the commit-ish archived ("": main's head).
	commit      string
	includeRuns bool
}

// createSnapshot archives an agent's memory at a commit in the object store.
func (s *Service) createSnapshot(ctx context.Context, r snapshotRequest) (*memoryv1.Snapshot, error) {
	agent, label, name := r.agent, r.label, r.name
	now := s.now().UTC()
	if label == "" {
		label = now.Format(snapshotLabelTime)
	}
	if name == "" {
		name = label
	}
	commit, err := s.resolveCommit(ctx, r.commit)
	if err != nil {
		return nil, err
	}
	files, err := s.agentFiles(ctx, commit, agent, r.includeRuns)
	if err != nil {
		return nil, s.internal(err, "reading the agent's memory")
	}
	if _, ok := files[memlayout.AgentDir(agent)+memlayout.MetaFile]; !ok {
		return nil, apierr.AgentNotFound(agent, commit.String()[:12])
	}
	key := snapshotKey(agent, name, ".tar.gz")
	if _, err := s.blobs.Stat(ctx, key); err == nil {
		return nil, apierr.New(codes.AlreadyExists, memoryv1.ErrorReason_ERROR_REASON_ALREADY_EXISTS,
			fmt.Sprintf("snapshot %q of %s already exists; choose another label", name, agent), nil)
	} else if !errors.Is(err, blob.ErrNotFound) {
		return nil, s.objectsUnavailable(err, "snapshot")
	}
	c, err := s.repo.CommitInfo(ctx, commit)
	if err != nil {
		return nil, s.internal(err, "reading the commit")
	}
	var archive bytes.Buffer
	if err := memsnapshot.Write(&archive, files, c.Committer.When); err != nil {
		return nil, s.internal(err, "writing the archive")
	}
	info, err := s.blobs.Put(ctx, key, bytes.NewReader(archive.Bytes()), int64(archive.Len()), blob.PutOptions{ContentType: "application/gzip"})
	if err != nil {
		return nil, s.objectsUnavailable(err, "snapshot")
	}
	snap := &memoryv1.Snapshot{
		SnapshotId: snapshotIDPrefix + name, AgentId: agent, Label: label, CreatedAt: timestamppb.New(now),
		GitCommit: commit.String(), SizeBytes: info.Size, Size: humanSize(info.Size),
		StoredAt: s.location(key), Restorable: true, IncludeRuns: r.includeRuns,
	}
	desc, err := protojson.Marshal(snap)
	if err != nil {
		return nil, s.internal(err, "describing the snapshot")
	}
	if _, err := s.blobs.Put(ctx, snapshotKey(agent, name, ".json"), bytes.NewReader(desc), int64(len(desc)), blob.PutOptions{ContentType: "application/json"}); err != nil {
		return nil, s.objectsUnavailable(err, "snapshot")
	}
	s.logger.Info("snapshot written", "agent", agent, "label", label, "commit", commit.String(), "bytes", info.Size, "files", len(files))
	return snap, nil
}

// listSnapshots lists a page of an agent's snapshots by label, after
// label pageToken; next is the token of the next page ("": none).
func (s *Service) listSnapshots(ctx context.Context, agent string, size int, pageToken string) (snaps []*memoryv1.Snapshot, next string, err error) {
	archives := map[string]bool{}
	var descs []string
	for info, err := range s.blobs.List(ctx, snapshotPrefix+agent+"/") {
		if err != nil {
			return nil, "", s.objectsUnavailable(err, "listing snapshots")
		}
		if label, ok := strings.CutSuffix(strings.TrimPrefix(info.Key, snapshotPrefix+agent+"/"), ".json"); ok {
			if label > pageToken {
				descs = append(descs, label)
			}
		} else if label, ok := strings.CutSuffix(strings.TrimPrefix(info.Key, snapshotPrefix+agent+"/"), ".tar.gz"); ok {
			archives[label] = true
		}
	}
	for _, label := range descs {
		if len(snaps) == size {
			next = labelOf(snaps[size-1].GetSnapshotId()) // the stored name
			break
		}
		snap, err := s.readSnapshotDesc(ctx, agent, label)
		if err != nil {
			return nil, "", s.objectsUnavailable(err, "listing snapshots")
		}
		snap.Restorable = archives[label]
		snaps = append(snaps, snap)
	}
	return snaps, next, nil
}

func (s *Service) readSnapshotDesc(ctx context.Context, agent, label string) (*memoryv1.Snapshot, error) {
	data, err := blob.GetBytesLimit(ctx, s.blobs, snapshotKey(agent, label, ".json"), 1<<20)
	if err != nil {
		return nil, err
	}
	snap := &memoryv1.Snapshot{}
	if err := protojson.Unmarshal(data, snap); err != nil {
		return nil, fmt.Errorf("snapshot description %s: %w", label, err)
	}
	return snap, nil
}

// restoreSnapshot proposes, on behalf of by, to put the snapshot's files
// back: every file of memory/<agentId>/ the snapshot holds is restored byte
// for byte, and the files it did not have are removed. meta.json, changelog.md and
// timeline/ are the engine's own record and are not rolled back: the restore
// is one more entry in them, with the next version. Runs are restored (and
// later runs removed) only when the snapshot included them. The proposal is
// reviewed like any other and applied as one commit.
func (s *Service) restoreSnapshot(ctx context.Context, by, agent, snapshotID, reasoning string) (*memoryv1.Proposal, error) {
	label := labelOf(snapshotID)
	notFound := apierr.NotFound(memoryv1.ErrorReason_ERROR_REASON_SNAPSHOT_NOT_FOUND,
		fmt.Sprintf("snapshot %q of %s not found", apierr.Clip(snapshotID), agent), nil)
	if !labelRe.MatchString(label) || strings.Contains(label, "..") {
		return nil, notFound
	}
	snap, err := s.readSnapshotDesc(ctx, agent, label)
	if errors.Is(err, blob.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, s.objectsUnavailable(err, "restore")
	}
	archive, err := blob.GetBytesLimit(ctx, s.blobs, snapshotKey(agent, label, ".tar.gz"), memsnapshot.MaxTotal)
	if errors.Is(err, blob.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, s.objectsUnavailable(err, "restore")
	}
	files, err := memsnapshot.Read(bytes.NewReader(archive))
	if err != nil {
		return nil, apierr.New(codes.DataLoss, memoryv1.ErrorReason_ERROR_REASON_MEMORY_CORRUPTED,
			fmt.Sprintf("snapshot %q cannot be restored: %v", label, err), nil)
	}
	head, meta, policy, err := s.headState(ctx, agent)
	if err != nil {
		return nil, s.internal(err, "reading the agent's memory")
	}
	current, err := s.agentFiles(ctx, head, agent, snap.GetIncludeRuns())
	if err != nil {
		return nil, s.internal(err, "reading the agent's memory")
	}
	updates, err := restoreUpdates(agent, files, current)
	if err != nil {
		return nil, apierr.New(codes.DataLoss, memoryv1.ErrorReason_ERROR_REASON_MEMORY_CORRUPTED,
			fmt.Sprintf("snapshot %q cannot be restored: %v", label, err), nil)
	}
	if len(updates) == 0 {
		return nil, apierr.New(codes.FailedPrecondition, memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT,
			fmt.Sprintf("the memory of %s already equals snapshot %q", agent, label), nil)
	}
	reason := reasoning
	if reason == "" {
		reason = fmt.Sprintf("Restore snapshot %s (commit %s)", label, snap.GetGitCommit())
	}
	p := s.newProposal(agent, "restore", by)
	p.Updates, p.Reasoning = updates, reason
	p.Flags = reviewFlags(updates)
	rec, err := s.submit(ctx, p, head, meta, policy)
	if err != nil {
		return nil, s.internal(err, "storing the proposal")
	}
	return rec.Proposal, nil
}

// restoreUpdates turns the snapshot's files and the current ones (both keyed
// by repository path, both restricted to the same scope) into RESTORE and
// DELETE updates. Files the engine maintains are left alone.
func restoreUpdates(agent string, snap, current map[string][]byte) ([]*memoryv1.FileUpdate, error) {
	dir := memlayout.AgentDir(agent)
	var updates []*memoryv1.FileUpdate
	for _, path := range slices.Sorted(maps.Keys(snap)) {
		rel, ok := strings.CutPrefix(path, dir)
		if !ok {
			return nil, fmt.Errorf("%q is not in %s", path, dir)
		}
		f, err := memlayout.Resolve(agent, rel)
		if err != nil {
			return nil, err
		}
		if !memlayout.Restorable(f.Kind) {
			continue
		}
		if cur, ok := current[path]; ok && bytes.Equal(cur, snap[path]) {
			continue
		}
		updates = append(updates, &memoryv1.FileUpdate{File: rel, Operation: memoryv1.Operation_OPERATION_RESTORE, Content: string(snap[path])})
	}
	for _, path := range slices.Sorted(maps.Keys(current)) {
		if _, ok := snap[path]; ok {
			continue
		}
		rel := strings.TrimPrefix(path, dir)
		if f, err := memlayout.Resolve(agent, rel); err == nil && memlayout.Restorable(f.Kind) {
			updates = append(updates, &memoryv1.FileUpdate{File: rel, Operation: memoryv1.Operation_OPERATION_DELETE})
		}
	}
	return updates, nil
}

// agentFiles reads memory/<agent>/ at commit, keyed by repository path;
// runs/ only when includeRuns.
func (s *Service) agentFiles(ctx context.Context, commit plumbing.Hash, agent string, includeRuns bool) (map[string][]byte, error) {
	dir := memlayout.AgentDir(agent)
	paths, err := s.repo.ListFiles(ctx, commit, strings.TrimSuffix(dir, "/"))
	if err != nil && !errors.Is(err, memrepo.ErrFileNotFound) {
		return nil, err
	}
	files := map[string][]byte{}
	for _, p := range paths {
		if !includeRuns && strings.HasPrefix(p, dir+"runs/") {
			continue
		}
		data, err := s.repo.ReadFile(ctx, commit, p)
		if err != nil {
			return nil, err
		}
		files[p] = data
	}
	return files, nil
}

// resolveCommit resolves a commit-ish; empty means main's head. A time is
// not a commit here: a snapshot names the commit it archives.
func (s *Service) resolveCommit(ctx context.Context, rev string) (plumbing.Hash, error) {
	if rev == "" {
		head, err := s.repo.Head(ctx)
		if err != nil {
			return plumbing.ZeroHash, s.internal(err, "reading main")
		}
		return head, nil
	}
	c, err := revision.Commit(ctx, s.repo, rev)
	if err != nil {
		// Whatever failed, the answer is the commit's.
		return plumbing.ZeroHash, apierr.NotFound(memoryv1.ErrorReason_ERROR_REASON_REVISION_NOT_FOUND,
			fmt.Sprintf("commit %q not found", apierr.Clip(rev)), nil)
	}
	return c.Hash, nil
}

// newProposal is a proposal the service itself makes on someone's behalf.
func (s *Service) newProposal(agent, runID, by string) *memoryv1.Proposal {
	now := s.now()
	id := proposalstore.NewID(now)
	return &memoryv1.Proposal{
		ProposalId: id, AgentId: agent, RunId: memlayout.RunRef(runID), Priority: memoryv1.Priority_PRIORITY_NORMAL,
		ProposedBy: by, ReviewUrl: s.cfg.ReviewURLBase + id, CreatedAt: timestamppb.New(now), UpdatedAt: timestamppb.New(now),
	}
}

// location is the URL of the object written under key (spec DiffMem §4.4: storedAt).
func (s *Service) location(key string) string { return blob.Location(s.blobs, key) }

// humanSize is the spec's size form: "48KB".
func humanSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1fGB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%dKB", (n+1<<9)>>10)
	}
	return fmt.Sprintf("%dB", n)
}
