package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
)

// unavailableRetry is the retry delay suggested when a service behind the
// edge cannot be reached at all (the connection's own retries, for
// idempotent methods, are already spent).
const unavailableRetry = time.Second

// writeError is the mux's error handler, so every error of the edge —
// the services' statuses, grpc-gateway's own (bad JSON, unknown path) and
// the edge's limits — leaves in one shape: grpc-gateway's JSON status
// {code, message, details}, whose first detail is always a
// google.rpc.ErrorInfo, with the HTTP status of the code
// (runtime.HTTPStatusFromCode, except REQUEST_TOO_LARGE → 413) and, when
// the status carries a google.rpc.RetryInfo, a Retry-After header.
func (e *edge) writeError(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	httpStatus := 0
	var hs *runtime.HTTPStatusError
	if errors.As(err, &hs) {
		httpStatus, err = hs.HTTPStatus, hs.Err
	}
	st := e.normalize(r, toStatus(err, httpStatus))
	if httpStatus == 0 {
		httpStatus = httpStatusOf(st)
	}
	if d, ok := retryDelay(st); ok {
		w.Header().Set("Retry-After", retryAfter(d))
	}
	runtime.DefaultHTTPErrorHandler(ctx, mux, m, w, r, &runtime.HTTPStatusError{HTTPStatus: httpStatus, Err: st.Err()})
}

// toStatus converts what grpc-gateway hands the error handler: almost
// always a status, sometimes a context error or (with an explicit HTTP
// status) a plain error such as a malformed path escape.
func toStatus(err error, httpStatus int) *status.Status {
	if st, ok := status.FromError(err); ok {
		return st
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return status.FromContextError(err)
	}
	code := codes.Unknown
	if httpStatus == http.StatusBadRequest {
		code = codes.InvalidArgument
	}
	return status.New(code, err.Error())
}

// normalize rewrites what must not reach a client as it is, and gives
// every status an ErrorInfo.
func (e *edge) normalize(r *http.Request, st *status.Status) *status.Status {
	info := apierr.Info(st.Err())
	switch {
	case st.Code() == codes.Unavailable && info == nil:
		// The connection to a service failed; grpc-go's message names
		// internal addresses. It stays in our log.
		e.logger.LogAttrs(r.Context(), slog.LevelWarn, "REST edge: service unavailable",
			slog.String("path", apierr.Clip(r.URL.Path)), slog.String("error", st.Message()))
		return status.Convert(apierr.Retryable(codes.Unavailable, memoryv1.ErrorReason_ERROR_REASON_UNSPECIFIED,
			"the service is unavailable; retry later", unavailableRetry))
	case st.Code() == codes.DeadlineExceeded && info == nil && deadlinePassed(r.Context()):
		st = status.New(codes.DeadlineExceeded, fmt.Sprintf("the request did not complete within %s", e.cfg.Timeout))
	}
	if info != nil {
		return st
	}
	// Prepend, so the ErrorInfo is the first detail like everywhere else.
	p := st.Proto()
	a, err := anypb.New(&errdetails.ErrorInfo{Reason: apierr.ReasonString(fallbackReason(st.Code())), Domain: apierr.Domain})
	if err != nil {
		return st // ErrorInfo always marshals
	}
	p.Details = append([]*anypb.Any{a}, p.Details...)
	return status.FromProto(p)
}

// fallbackReason is the reason of a status that came without one: from
// grpc-gateway itself (malformed JSON, unknown path), from the transport or
// from a handler that did not say. Codes with no matching reason get
// UNSPECIFIED: the code is then all there is to branch on.
func fallbackReason(c codes.Code) memoryv1.ErrorReason {
	switch c {
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange:
		return memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT
	case codes.Unauthenticated:
		return memoryv1.ErrorReason_ERROR_REASON_UNAUTHENTICATED
	case codes.PermissionDenied:
		return memoryv1.ErrorReason_ERROR_REASON_PERMISSION_DENIED
	case codes.AlreadyExists:
		return memoryv1.ErrorReason_ERROR_REASON_ALREADY_EXISTS
	case codes.Unimplemented:
		return memoryv1.ErrorReason_ERROR_REASON_NOT_IMPLEMENTED
	default:
		return memoryv1.ErrorReason_ERROR_REASON_UNSPECIFIED
	}
}

// httpStatusOf is grpc-gateway's mapping (400 InvalidArgument,
// FailedPrecondition, OutOfRange; 401; 403; 404; 409 AlreadyExists,
// Aborted; 429 ResourceExhausted; 499 Canceled; 501; 503; 504
// DeadlineExceeded; 500 otherwise), except that a REQUEST_TOO_LARGE reason
// is 413 whatever its code.
func httpStatusOf(st *status.Status) int {
	if apierr.Info(st.Err()).GetReason() == apierr.ReasonString(memoryv1.ErrorReason_ERROR_REASON_REQUEST_TOO_LARGE) {
		return http.StatusRequestEntityTooLarge
	}
	return runtime.HTTPStatusFromCode(st.Code())
}

// retryDelay returns the RetryInfo delay of st, if it has one.
func retryDelay(st *status.Status) (time.Duration, bool) {
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay() != nil {
			return ri.GetRetryDelay().AsDuration(), true
		}
	}
	return 0, false
}

// retryAfter renders d as Retry-After seconds, rounded up: a client that
// waits that long finds the service ready (at least 1, since 0 invites an
// immediate retry).
func retryAfter(d time.Duration) string {
	return strconv.FormatInt(max(1, int64(math.Ceil(d.Seconds()))), 10)
}

// deadlineSlack: the edge's deadline travels with the call (grpc-timeout),
// so the service may cut the stream a moment before ctx itself expires.
const deadlineSlack = 50 * time.Millisecond

// deadlinePassed reports whether ctx's deadline has passed, or is so close
// that a DeadlineExceeded from the service is this request's own.
func deadlinePassed(ctx context.Context) bool {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && time.Until(dl) < deadlineSlack
}
