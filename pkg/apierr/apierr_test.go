package apierr

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

func TestWithInfo(t *testing.T) {
	if WithInfo(nil) != nil {
		t.Fatal("nil stays nil")
	}
	own := New(codes.FailedPrecondition, memoryv1.ErrorReason_ERROR_REASON_INVALID_TRANSITION, "no", map[string]string{"status": "applied"})
	if WithInfo(own) != own { //nolint:errorlint // identity, not a match: the very same error comes back
		t.Fatal("an error with its ErrorInfo is kept as it is")
	}
	for _, c := range []struct {
		err    error
		code   codes.Code
		reason string
	}{
		{status.Error(codes.Unauthenticated, "x"), codes.Unauthenticated, "UNAUTHENTICATED"},
		{status.Error(codes.InvalidArgument, "x"), codes.InvalidArgument, "INVALID_ARGUMENT"},
		{status.Error(codes.NotFound, "x"), codes.NotFound, "UNSPECIFIED"},
		{errors.New("x"), codes.Unknown, "UNSPECIFIED"},
		{context.Canceled, codes.Canceled, "UNSPECIFIED"},
	} {
		err := WithInfo(c.err)
		if status.Code(err) != c.code || Info(err).GetReason() != c.reason || Info(err).GetDomain() != Domain {
			t.Errorf("WithInfo(%v) = %v, %v; want %v, %s", c.err, status.Code(err), Info(err), c.code, c.reason)
		}
		if status.Convert(err).Message() != status.Convert(c.err).Message() {
			t.Errorf("WithInfo(%v) changed the message", c.err)
		}
	}
}
