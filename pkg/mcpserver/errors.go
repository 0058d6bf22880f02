package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
)

// ToolError is a failed call as the MCP client sees it: a tool result with
// isError set whose text is Error(), e.g.
//
//	PERMISSION_DENIED (PermissionDenied): the token may not read agent "b" [field=agent_id]
//
// — the ErrorInfo reason first, so a model (or a script) can branch on it
// the way REST and gRPC clients do, then the gRPC code, the service's
// message and the ErrorInfo metadata. It is a tool error, not a protocol
// error: the call reached the memory and the memory said no.
type ToolError struct {
	Code     codes.Code
	Reason   string
	Message  string
	Metadata map[string]string
}

func (e *ToolError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %s", e.Reason, e.Code, e.Message)
	if len(e.Metadata) > 0 {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(e.Metadata)) {
			kv = append(kv, k+"="+e.Metadata[k])
		}
		b.WriteString(" [" + strings.Join(kv, " ") + "]")
	}
	return b.String()
}

// toolError converts what a gRPC call (or this package's own input check)
// returned into a ToolError. fields renames the request field named in
// the error (ErrorInfo metadata "field") to the tool's own argument name,
// so the model is told which of ITS arguments was wrong (the service says
// "budget", the tool took "max_tokens").
func toolError(err error, fields map[string]string) *ToolError {
	var te *ToolError
	if errors.As(err, &te) {
		return te
	}
	st, ok := status.FromError(err)
	if !ok {
		st = status.FromContextError(err)
	}
	info := apierr.Info(st.Err())
	out := &ToolError{Code: st.Code(), Message: st.Message()}
	if info != nil {
		out.Reason = info.GetReason()
		out.Metadata = maps.Clone(info.GetMetadata())
	}
	switch {
	case st.Code() == codes.Unavailable && info == nil:
		// The connection to a service failed; grpc-go's message names
		// internal addresses (the REST edge says the same, for the same reason).
		out.Message = "the service is unavailable; retry later"
	case errors.Is(err, context.DeadlineExceeded) && info == nil:
		out.Message = "the call did not complete in time"
	}
	if out.Reason == "" {
		out.Reason = apierr.ReasonString(apierr.FallbackReason(st.Code()))
	}
	if f, ok := out.Metadata["field"]; ok {
		out.Metadata["field"] = renameField(f, fields)
	}
	return out
}

// renameField maps a service field path ("budget", "updates[0].loopId")
// to the tool's argument path ("max_tokens", "updates[0].loop_id"): each
// segment renamed by fields, else written in snake_case as the tools'
// arguments are.
func renameField(field string, fields map[string]string) string {
	segs := strings.Split(field, ".")
	for i, seg := range segs {
		base, index := seg, ""
		if j := strings.IndexByte(seg, '['); j >= 0 {
			base, index = seg[:j], seg[j:]
		}
		if to, ok := fields[base]; ok && i == 0 {
			base = to
		} else {
			base = snake(base)
		}
		segs[i] = base + index
	}
	return strings.Join(segs, ".")
}

// snake writes a camelCase name in snake_case ("loopId" -> "loop_id").
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// missingAgent is the answer to a call that names no agent on a server
// without a default one.
func missingAgent() error {
	return apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, "agent_id",
		"agent_id is required: this server has no default agent (memctl mcp --agent, or /mcp?agent=<id>)")
}

// The SDK checks a call's arguments against the tool's input schema before
// the tool runs, and reports a mismatch as a tool error of its own wording
// ("validating \"arguments\": validating root: validating
// /properties/mode: enum: …"). argumentErrors rewrites it into the shape
// of every other error of the server: INVALID_ARGUMENT, the argument's
// path as the field.
var (
	validatingPrefix = regexp.MustCompile(`^(?:validating [^:]*: )+`)
	schemaPath       = regexp.MustCompile(`validating (/[^:\s]*)`)
	// The argument named by an unknown or a missing property.
	namedProperty = regexp.MustCompile(`(?:unexpected additional|missing) properties:? \["([^"]+)"`)
)

// argumentError is the ToolError of the SDK's argument error msg.
func argumentError(msg string) *ToolError {
	field := ""
	if m := schemaPath.FindAllStringSubmatch(msg, -1); len(m) > 0 {
		field = argumentPath(m[len(m)-1][1])
	}
	if m := namedProperty.FindStringSubmatch(msg); m != nil {
		field = strings.TrimPrefix(field+"."+m[1], ".")
	}
	detail := validatingPrefix.ReplaceAllString(msg, "")
	if field != "" {
		detail = field + ": " + detail
	}
	te := &ToolError{Code: codes.InvalidArgument, Reason: apierr.ReasonString(memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT),
		Message: "the arguments do not match the tool's input schema: " + detail}
	if field != "" {
		te.Metadata = map[string]string{"field": field}
	}
	return te
}

// argumentPath turns a schema location (/properties/updates/items/properties/operation)
// into an argument path (updates[].operation).
func argumentPath(loc string) string {
	var b strings.Builder
	for seg := range strings.SplitSeq(strings.TrimPrefix(loc, "/"), "/") {
		switch seg {
		case "properties", "":
		case "items":
			b.WriteString("[]")
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(seg)
		}
	}
	return b.String()
}

// argumentErrors is the receiving middleware that applies argumentError
// to every tool error that is not already a ToolError (the tools return
// nothing else, so those are the SDK's argument checks).
func argumentErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		r, ok := res.(*mcp.CallToolResult)
		if err != nil || !ok || !r.IsError {
			return res, err
		}
		var te *ToolError
		if errors.As(r.GetError(), &te) {
			return res, err
		}
		msg := ""
		if e := r.GetError(); e != nil {
			msg = e.Error()
		}
		te = argumentError(msg)
		r.Content = []mcp.Content{&mcp.TextContent{Text: te.Error()}}
		return r, nil
	}
}
