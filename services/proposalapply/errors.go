package proposalapply

import (
	"errors"
	"time"

	"google.golang.org/grpc/codes"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/blob"
)

// internal logs a storage failure while doing what, and answers with the
// retryable error clients see instead (the cause stays in the log).
func (s *Service) internal(err error, what string) error {
	s.logger.Error(what, "err", err)
	return storageUnavailable(err, what)
}

// storageUnavailable is the retryable answer for a storage failure, naming
// which storage failed: every 503 says when to retry (RetryInfo, which the
// edge turns into Retry-After).
func storageUnavailable(err error, what string) error {
	switch {
	case blob.DiskFull(err): // the folder object store's too: say what to fix
		return apierr.Retryable(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_REPOSITORY_UNAVAILABLE,
			what+": the disk is full; retry once space is freed", storageRetryAfter)
	case errors.Is(err, blob.ErrUnavailable):
		return apierr.Retryable(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_OBJECT_STORE_UNAVAILABLE,
			what+": the object store is unavailable; retry later", storageRetryAfter)
	}
	return apierr.Retryable(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_REPOSITORY_UNAVAILABLE,
		what+": storage unavailable; retry later", storageRetryAfter)
}

// storageRetryAfter is the RetryInfo of a storage failure: about how long
// a guarded store takes to notice it is back (one probe), with margin.
const storageRetryAfter = 2 * time.Second
