package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/garden-bloom/memory/pkg/apierr"
)

// Exit codes (docs/cli.md "Exit codes"). Scripts branch on them, so a code,
// once published, keeps its meaning.
const (
	exitOK          = 0
	exitError       = 1 // anything not below
	exitUsage       = 2 // bad flags or arguments, or input the server calls INVALID_ARGUMENT
	exitNotFound    = 3 // agent, proposal, entity, snapshot or revision not found
	exitDenied      = 4 // no, bad or expired token, or not allowed
	exitConflict    = 5 // version conflict, already exists, the state does not allow it
	exitUnavailable = 6 // server unreachable, overloaded or too slow (--timeout)
)

// usageError is a mistake in how memctl was called: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// codedError carries an exit code chosen by a command (ingest's failures
// summary), with a message already written, or one still to write.
type codedError struct {
	code int
	msg  string
}

func (e *codedError) Error() string { return e.msg }

// exitCodeOf maps an error to the exit code.
func exitCodeOf(err error) int {
	if err == nil {
		return exitOK
	}
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	var ce *codedError
	if errors.As(err, &ce) {
		return ce.code
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return exitUnavailable
	}
	st, ok := status.FromError(err)
	if !ok {
		return exitError
	}
	if info := apierr.Info(err); info != nil {
		switch info.GetReason() {
		case "VERSION_CONFLICT", "ALREADY_EXISTS", "INVALID_TRANSITION":
			return exitConflict
		case "INVALID_ARGUMENT", "INVALID_AGENT_ID", "INVALID_PATH", "INVALID_OPERATION", "INVALID_CONTENT", "REQUEST_TOO_LARGE":
			return exitUsage
		case "RATE_LIMITED", "REPOSITORY_UNAVAILABLE", "OBJECT_STORE_UNAVAILABLE":
			return exitUnavailable
		}
	}
	switch st.Code() {
	case codes.NotFound:
		return exitNotFound
	case codes.Unauthenticated, codes.PermissionDenied:
		return exitDenied
	case codes.AlreadyExists, codes.Aborted, codes.FailedPrecondition:
		return exitConflict
	case codes.InvalidArgument, codes.OutOfRange:
		return exitUsage
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted:
		return exitUnavailable
	}
	return exitError
}

// reasonOf is the one-word reason memctl prints before an error's message:
// the ErrorInfo reason the server attached, else the gRPC code's name.
func reasonOf(err error) string {
	if info := apierr.Info(err); info != nil && info.GetReason() != "" && info.GetReason() != "UNSPECIFIED" {
		return info.GetReason()
	}
	var ue *usageError
	if errors.As(err, &ue) {
		return "USAGE"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "DEADLINE_EXCEEDED"
	}
	if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown {
		return strings.ToUpper(codeName(st.Code()))
	}
	return ""
}

func codeName(c codes.Code) string {
	// codes.Code's String is CamelCase ("NotFound"); scripts and people
	// read the UPPER_SNAKE canonical names.
	var b strings.Builder
	for i, r := range c.String() {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// messageOf is the error's message on one line, with the ErrorInfo metadata
// (the field at fault, the figures) after it.
func messageOf(err error) string {
	msg := err.Error()
	if st, ok := status.FromError(err); ok {
		msg = st.Message()
		if info := apierr.Info(err); info != nil && len(info.GetMetadata()) > 0 {
			var kv []string
			for _, k := range slices.Sorted(maps.Keys(info.GetMetadata())) {
				kv = append(kv, k+"="+info.GetMetadata()[k])
			}
			msg += " (" + strings.Join(kv, ", ") + ")"
		}
	}
	return strings.Join(strings.Fields(msg), " ")
}

// report writes err as `memctl: <reason>: <message>` and returns its exit code.
func report(w io.Writer, err error) int {
	code := exitCodeOf(err)
	var ce *codedError
	if errors.As(err, &ce) && ce.msg == "" {
		return code // the command has said what went wrong
	}
	if reason := reasonOf(err); reason != "" {
		_, _ = fmt.Fprintf(w, "memctl: %s: %s\n", reason, messageOf(err))
	} else {
		_, _ = fmt.Fprintf(w, "memctl: %s\n", messageOf(err))
	}
	return code
}
