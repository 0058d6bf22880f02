package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
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
// (runtime.HTTPStatusFromCode, refined by reason: see httpStatusOf), a
// Retry-After header when the status carries a google.rpc.RetryInfo, and an
// RFC 6750 WWW-Authenticate challenge on 401 and 403.
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
	if c := bearerChallenge(r, httpStatus, st); c != "" {
		// grpc-gateway's handler sets WWW-Authenticate to the status
		// message on Unauthenticated; ours replaces it as the header goes out.
		w = &headerOverride{ResponseWriter: w, key: "WWW-Authenticate", value: c}
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
	a, err := anypb.New(&errdetails.ErrorInfo{Reason: apierr.ReasonString(apierr.FallbackReason(st.Code())), Domain: apierr.Domain})
	if err != nil {
		return st // ErrorInfo always marshals
	}
	p.Details = append([]*anypb.Any{a}, p.Details...)
	return status.FromProto(p)
}

// httpStatusOf is grpc-gateway's mapping (400 InvalidArgument,
// FailedPrecondition, OutOfRange; 401; 403; 404; 409 AlreadyExists,
// Aborted; 429 ResourceExhausted; 499 Canceled; 501; 503; 504
// DeadlineExceeded; 500 otherwise, DataLoss and Internal included), except
// where the reason says more than the code: REQUEST_TOO_LARGE is 413, a
// state conflict (INVALID_TRANSITION, VERSION_CONFLICT, ALREADY_EXISTS) is
// 409, and MEMORY_CORRUPTED is 500 — the stored memory is broken, not the
// request — whatever code the service chose.
func httpStatusOf(st *status.Status) int {
	if s, ok := statusByReason[apierr.Info(st.Err()).GetReason()]; ok {
		return s
	}
	return runtime.HTTPStatusFromCode(st.Code())
}

var statusByReason = map[string]int{
	apierr.ReasonString(memoryv1.ErrorReason_ERROR_REASON_REQUEST_TOO_LARGE):  http.StatusRequestEntityTooLarge,
	apierr.ReasonString(memoryv1.ErrorReason_ERROR_REASON_INVALID_TRANSITION): http.StatusConflict,
	apierr.ReasonString(memoryv1.ErrorReason_ERROR_REASON_VERSION_CONFLICT):   http.StatusConflict,
	apierr.ReasonString(memoryv1.ErrorReason_ERROR_REASON_ALREADY_EXISTS):     http.StatusConflict,
	apierr.ReasonString(memoryv1.ErrorReason_ERROR_REASON_MEMORY_CORRUPTED):   http.StatusInternalServerError,
}

// Realm is the realm of the REST edge's WWW-Authenticate challenges.
const Realm = auth.HTTPRealm

// bearerChallenge is the RFC 6750 §3 challenge of a 401 or 403 answer: no
// error code when the request carried no bearer token, invalid_token when
// its token was refused, invalid_request when it sent several Authorization
// headers, insufficient_scope on 403.
func bearerChallenge(r *http.Request, httpStatus int, st *status.Status) string {
	switch httpStatus {
	case http.StatusUnauthorized:
		vals := r.Header.Values("Authorization")
		switch {
		case len(vals) == 0 || (len(vals) == 1 && !auth.IsBearer(vals[0])):
			// No bearer token at all: another scheme counts as none (§3.1).
			return auth.BearerChallenge(Realm, "", "")
		case len(vals) > 1:
			return auth.BearerChallenge(Realm, "invalid_request", "authorization must be one bearer token")
		default:
			return auth.BearerChallenge(Realm, "invalid_token", st.Message())
		}
	case http.StatusForbidden:
		if st.Code() == codes.PermissionDenied {
			return auth.BearerChallenge(Realm, "insufficient_scope", st.Message())
		}
	}
	return ""
}

// routingError is the mux's answer for a path or method it has no handler
// for. The edge answers these before the mux (see edge.route); this keeps
// the mux's own answers in the same shape should the two ever disagree.
func (e *edge) routingError(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, httpStatus int) {
	var err error
	switch httpStatus {
	case http.StatusNotFound:
		err = apierr.RouteNotFound(r.URL.Path)
	case http.StatusMethodNotAllowed:
		allowed := e.methodsOf(r.URL.Path)
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		err = methodNotAllowed(r.Method, allowed)
	default:
		runtime.DefaultRoutingErrorHandler(ctx, mux, m, w, r, httpStatus)
		return
	}
	e.writeError(ctx, mux, m, w, r, &runtime.HTTPStatusError{HTTPStatus: httpStatus, Err: err})
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

// headerOverride sets one header just before the status line is written.
type headerOverride struct {
	http.ResponseWriter
	key, value string
	done       bool
}

func (h *headerOverride) WriteHeader(code int) {
	if !h.done {
		h.done = true
		h.Header().Set(h.key, h.value)
	}
	h.ResponseWriter.WriteHeader(code)
}

func (h *headerOverride) Write(b []byte) (int, error) {
	if !h.done {
		h.WriteHeader(http.StatusOK) // as net/http does for a Write before WriteHeader
	}
	return h.ResponseWriter.Write(b)
}

func (h *headerOverride) Unwrap() http.ResponseWriter { return h.ResponseWriter }
