package proposalapply

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/blob"
)

// Object keys of git backups (spec DiffMem §8.5).
const (
	BackupKey    = "git-backup/garden-bloom-memory.bundle"
	backupPrefix = "git-backup/"
)

// backup writes a git bundle of the whole monorepo to the object store: the
// latest at BackupKey and a dated copy beside it. A bundle is a single file
// `git clone` reads directly, so restoring needs nothing but git:
//
//	git clone --mirror garden-bloom-memory.bundle memory.git
func (s *Service) backup(ctx context.Context) (*memoryv1.CreateBackupResponse, error) {
	head, err := s.repo.Head(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "memory-bundle-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := os.RemoveAll(dir); err != nil {
			s.logger.Warn("git backup scratch directory not removed", "dir", dir, "err", err)
		}
	}()
	file := filepath.Join(dir, "memory.bundle")
	cmd := exec.CommandContext(ctx, "git", "--git-dir", s.repo.Path(), "bundle", "create", "--quiet", file, "refs/heads/main")
	if out, err := cmd.CombinedOutput(); err != nil {
		if ctx.Err() == nil {
			s.metrics.gitFailed(ctx, gitOpBundle)
		}
		return nil, fmt.Errorf("git bundle: %w: %s", err, strings.TrimSpace(string(out)))
	}
	now := s.now().UTC()
	var info blob.Info
	for _, key := range []string{BackupKey, backupPrefix + "garden-bloom-memory-" + now.Format("20060102T150405Z") + ".bundle"} {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		st, _ := f.Stat()
		info, err = s.blobs.Put(ctx, key, f, st.Size(), blob.PutOptions{ContentType: "application/x-git-bundle"})
		_ = f.Close()
		if err != nil {
			return nil, err
		}
	}
	s.logger.Info("git backup written", "key", BackupKey, "head", head.String(), "bytes", info.Size)
	return &memoryv1.CreateBackupResponse{StoredAt: s.location(BackupKey), HeadCommit: head.String(), SizeBytes: info.Size, CreatedAt: timestamppb.New(now)}, nil
}

// backupLoop backs up every interval until ctx ends.
func (s *Service) backupLoop(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.backup(ctx); err != nil && ctx.Err() == nil {
				s.logger.Warn("scheduled git backup failed; will retry at the next interval", "err", err)
			}
		}
	}
}
