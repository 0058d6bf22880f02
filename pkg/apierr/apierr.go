// Package apierr builds the API's error statuses: a canonical gRPC code plus a
// google.rpc.ErrorInfo detail whose reason comes from the ErrorReason enum of
// the public contract, so clients (and the REST edge) can branch on reasons
// rather than on message text.
package apierr

import (
	"fmt"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// Domain is the ErrorInfo domain of every error this API returns.
const Domain = "memory.gardenbloom.dev"

// ReasonString is the published reason string of r: the enum value name
// without its ERROR_REASON_ prefix, e.g. "VERSION_CONFLICT".
func ReasonString(r memoryv1.ErrorReason) string {
	return strings.TrimPrefix(r.String(), "ERROR_REASON_")
}

// New returns a status error with code, message and an ErrorInfo carrying the
// reason and metadata. The message must not leak internals.
func New(code codes.Code, reason memoryv1.ErrorReason, msg string, metadata map[string]string) error {
	st := status.New(code, msg)
	withInfo, err := st.WithDetails(&errdetails.ErrorInfo{
		Reason:   ReasonString(reason),
		Domain:   Domain,
		Metadata: metadata,
	})
	if err != nil {
		// Only fails if the detail cannot be marshalled, which ErrorInfo always can.
		return st.Err()
	}
	return withInfo.Err()
}

// NotImplemented is the honest answer of a method whose capability a later
// issue delivers: codes.Unimplemented (HTTP 501) naming the capability.
func NotImplemented(capability string, issue int) error {
	return New(codes.Unimplemented, memoryv1.ErrorReason_ERROR_REASON_NOT_IMPLEMENTED,
		fmt.Sprintf("%s is not implemented yet (tracked in issue #%d)", capability, issue),
		map[string]string{"capability": capability, "issue": fmt.Sprint(issue)})
}

// Info returns the ErrorInfo detail of err, or nil when it has none.
func Info(err error) *errdetails.ErrorInfo {
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info
		}
	}
	return nil
}

// Retryable is New plus a google.rpc.RetryInfo telling the client when to
// try again (spec integration §9: context assembly is retried after 5 s).
func Retryable(code codes.Code, reason memoryv1.ErrorReason, msg string, after time.Duration) error {
	st := status.New(code, msg)
	withInfo, err := st.WithDetails(
		&errdetails.ErrorInfo{Reason: ReasonString(reason), Domain: Domain},
		&errdetails.RetryInfo{RetryDelay: durationpb.New(after)})
	if err != nil {
		return st.Err()
	}
	return withInfo.Err()
}

// Clip keeps a caller's value short for an error message, so hostile input
// cannot bloat errors or logs (cut on a rune boundary).
func Clip(s string) string {
	if len(s) <= 80 {
		return s
	}
	return strings.ToValidUTF8(s[:80], "") + "…"
}

// reasonByCode is the reason WithInfo gives a status that came without
// one; codes whose cause is not one reason get UNSPECIFIED.
var reasonByCode = map[codes.Code]memoryv1.ErrorReason{
	codes.Unauthenticated:  memoryv1.ErrorReason_ERROR_REASON_UNAUTHENTICATED,
	codes.PermissionDenied: memoryv1.ErrorReason_ERROR_REASON_PERMISSION_DENIED,
	codes.InvalidArgument:  memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT,
	codes.Unimplemented:    memoryv1.ErrorReason_ERROR_REASON_NOT_IMPLEMENTED,
}

// FallbackReason is the reason the edges (REST, MCP) give a status that
// reached them without one — from grpc-gateway itself (malformed JSON,
// unknown path), from the transport or from a handler that did not say.
// Codes with no matching reason get UNSPECIFIED: the code is then all
// there is to branch on.
func FallbackReason(c codes.Code) memoryv1.ErrorReason {
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

// WithInfo returns err as a status error that carries an ErrorInfo, so
// every error of the API can be branched on by reason: err itself when it
// has one (or is nil), else its status (codes.Unknown for a plain error,
// as gRPC would send it) plus an ErrorInfo whose reason follows the code —
// UNAUTHENTICATED, PERMISSION_DENIED, INVALID_ARGUMENT, NOT_IMPLEMENTED or
// else UNSPECIFIED. pkg/grpcserver applies it to every API method.
func WithInfo(err error) error {
	if err == nil || Info(err) != nil {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		st = status.FromContextError(err) // Unknown unless a ctx error
	}
	if st.Code() == codes.OK {
		return err
	}
	withInfo, derr := st.WithDetails(&errdetails.ErrorInfo{Reason: ReasonString(reasonByCode[st.Code()]), Domain: Domain})
	if derr != nil {
		return err
	}
	return withInfo.Err()
}
