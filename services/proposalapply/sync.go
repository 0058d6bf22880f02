package proposalapply

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
)

// syncRemote pushes main to the configured remote now.
func (s *Service) syncRemote(ctx context.Context) (*memoryv1.SyncRemoteResponse, error) {
	p := s.pusher
	if !p.enabled() {
		return nil, apierr.New(codes.FailedPrecondition, memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, "no --git-remote-url is configured", nil)
	}
	if err := p.push(ctx); err != nil {
		s.logger.Warn("sync: push failed", "err", err)
		return nil, apierr.New(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_REPOSITORY_UNAVAILABLE, "push to the remote failed; retry later", nil)
	}
	head, err := s.repo.Head(ctx)
	if err != nil {
		return nil, s.internal(err, "reading main")
	}
	return &memoryv1.SyncRemoteResponse{Remote: redactURL(p.url), HeadCommit: head.String(), PushedAt: timestamppb.New(s.now())}, nil
}
