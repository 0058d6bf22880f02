package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
)

func TestToolErrorText(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		fields map[string]string
		want   string
	}{
		{"reason, code, message, metadata sorted",
			apierr.New(codes.InvalidArgument, memoryv1.ErrorReason_ERROR_REASON_TOKEN_LIMIT_EXCEEDED, "facts.md would exceed 8000 tokens",
				map[string]string{"limit": "8000", "file": "facts.md"}), nil,
			"TOKEN_LIMIT_EXCEEDED (InvalidArgument): facts.md would exceed 8000 tokens [file=facts.md limit=8000]"},
		{"a service field renamed to the tool's argument",
			apierr.New(codes.InvalidArgument, memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, "budget 1 is too small",
				map[string]string{"field": "budget", "min": "40"}), map[string]string{"budget": "max_tokens"},
			"INVALID_ARGUMENT (InvalidArgument): budget 1 is too small [field=max_tokens min=40]"},
		{"nested camelCase fields in snake_case",
			apierr.InvalidArgument("updates[2].loopId", "close needs a loopId"), nil,
			"INVALID_ARGUMENT (InvalidArgument): close needs a loopId [field=updates[2].loop_id]"},
		{"no ErrorInfo: the reason from the code",
			status.Error(codes.Unimplemented, "unknown method IngestEpisode"), nil,
			"NOT_IMPLEMENTED (Unimplemented): unknown method IngestEpisode"},
		{"an unreachable service does not name its address",
			status.Error(codes.Unavailable, "connection error: desc = \"transport: dial tcp 10.0.0.7:9090: connect: connection refused\""), nil,
			"UNSPECIFIED (Unavailable): the service is unavailable; retry later"},
		{"a deadline",
			fmt.Errorf("call: %w", context.DeadlineExceeded), nil,
			"UNSPECIFIED (DeadlineExceeded): the call did not complete in time"},
		{"the tool's own check",
			missingAgent(), nil,
			"INVALID_AGENT_ID (InvalidArgument): agent_id is required: this server has no default agent (memctl mcp --agent, or /mcp?agent=<id>) [field=agent_id]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, toolError(tt.err, tt.fields).Error())
		})
	}
	te := toolError(apierr.ProposalNotFound("proposal_x"), nil)
	require.Same(t, te, toolError(fmt.Errorf("wrapped: %w", te), nil), "a ToolError passes through")
	var target *ToolError
	require.True(t, errors.As(error(te), &target))
}

// The SDK's own argument errors (schema validation) get the same shape.
func TestArgumentError(t *testing.T) {
	tests := []struct{ msg, want string }{
		{`validating "arguments": validating root: validating /properties/mode: enum: x does not equal any of: [basic wide deep temporal]`,
			`INVALID_ARGUMENT (InvalidArgument): the arguments do not match the tool's input schema: mode: enum: x does not equal any of: [basic wide deep temporal] [field=mode]`},
		{`validating "arguments": validating root: validating /properties/updates: validating /properties/updates/items: validating /properties/updates/items/properties/operation: enum: explode does not equal any of: [replace append]`,
			`INVALID_ARGUMENT (InvalidArgument): the arguments do not match the tool's input schema: updates[].operation: enum: explode does not equal any of: [replace append] [field=updates[].operation]`},
		{`validating "arguments": validating root: unexpected additional properties ["unknown"]`,
			`INVALID_ARGUMENT (InvalidArgument): the arguments do not match the tool's input schema: unknown: unexpected additional properties ["unknown"] [field=unknown]`},
		{`validating "arguments": validating root: required: missing properties: ["query"]`,
			`INVALID_ARGUMENT (InvalidArgument): the arguments do not match the tool's input schema: query: required: missing properties: ["query"] [field=query]`},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, argumentError(tt.msg).Error())
	}
}

func TestDefaultRunIDIsValid(t *testing.T) {
	require.Regexp(t, `^run_[A-Za-z0-9_-]{1,64}$`, defaultRunID(time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)))
}
