package apierr

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc/codes"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// The constructors of the errors every service answers with. They live here,
// not as local helpers in each service, so one kind of error has one code,
// reason, metadata and wording wherever it comes from: clients and the REST
// edge branch on them.

// Invalid is an InvalidArgument naming the request field at fault
// (metadata "field") with reason, e.g. INVALID_AGENT_ID or INVALID_PATH.
func Invalid(reason memoryv1.ErrorReason, field, msg string) error {
	return New(codes.InvalidArgument, reason, msg, map[string]string{"field": field})
}

// InvalidArgument is Invalid with the generic INVALID_ARGUMENT reason.
func InvalidArgument(field, msg string) error {
	return Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, field, msg)
}

// NotFound is a NotFound whose reason says what is missing (ENTITY_NOT_FOUND,
// PROPOSAL_NOT_FOUND, …).
func NotFound(reason memoryv1.ErrorReason, msg string, metadata map[string]string) error {
	return New(codes.NotFound, reason, msg, metadata)
}

// RevisionNotFound answers a revision parameter (field "at", "from", "to")
// whose value rev names no commit of main; the metadata repeats it under
// the field's name.
func RevisionNotFound(field, rev string) error {
	return NotFound(memoryv1.ErrorReason_ERROR_REASON_REVISION_NOT_FOUND,
		fmt.Sprintf("%s %q names no commit of main", field, rev), map[string]string{field: rev})
}

// AgentNotFound answers a read of an agent that has no memory at the
// commit whose short sha is at.
func AgentNotFound(agent, at string) error {
	return NotFound(memoryv1.ErrorReason_ERROR_REASON_AGENT_NOT_FOUND,
		fmt.Sprintf("agent %q has no memory at %s", agent, at), nil)
}

// EntityNotFound answers an entity id the graph does not have, or has only
// in files the caller may not see: the two read alike.
func EntityNotFound(id string) error {
	return NotFound(memoryv1.ErrorReason_ERROR_REASON_ENTITY_NOT_FOUND, fmt.Sprintf("entity %q not found", id), nil)
}

// ProposalNotFound answers an unknown proposal and one the caller may not
// see: the two must not be told apart.
func ProposalNotFound(id string) error {
	return NotFound(memoryv1.ErrorReason_ERROR_REASON_PROPOSAL_NOT_FOUND, fmt.Sprintf("proposal %q not found", Clip(id)), nil)
}

// RouteNotFound answers a REST path the API does not have.
func RouteNotFound(path string) error {
	return NotFound(memoryv1.ErrorReason_ERROR_REASON_NOT_FOUND, fmt.Sprintf("no REST path %q", Clip(path)), nil)
}

// CheckText rejects a text field that is larger than maxBytes
// (REQUEST_TOO_LARGE, with "limit"), not valid UTF-8 or holds a NUL byte
// (INVALID_CONTENT): what every free-text field of a request must pass.
func CheckText(field, v string, maxBytes int) error {
	if len(v) > maxBytes {
		return New(codes.InvalidArgument, memoryv1.ErrorReason_ERROR_REASON_REQUEST_TOO_LARGE,
			fmt.Sprintf("%s is %d bytes, at most %d allowed", field, len(v), maxBytes),
			map[string]string{"field": field, "limit": strconv.Itoa(maxBytes)})
	}
	if !utf8.ValidString(v) {
		return Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_CONTENT, field, field+" is not valid UTF-8")
	}
	if strings.ContainsRune(v, 0) {
		return Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_CONTENT, field, field+" contains a NUL byte")
	}
	return nil
}
