package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/restjson"
	"github.com/garden-bloom/memory/services/gateway"
)

// These tests come from issue #25 point 3: bad bytes anywhere in a URL are
// a 400 INVALID_ARGUMENT naming where they are, refused at the edge before
// any gRPC marshaling; never a 500.

// badURLValues are the percent-encoded values every path and query
// parameter is tried with.
var badURLValues = []struct{ name, encoded string }{
	{"invalid UTF-8 %ff", "%ff"},
	{"invalid UTF-8 %c3%28", "%c3%28"},
	{"overlong UTF-8 encoding of /", "%c0%af"},
	{"surrogate half", "%ed%a0%80"},
	{"NUL", "a%00b"},
	{"control character %01", "%01"},
	{"escape %1b", "x%1b[31m"},
	{"newline", "x%0ay"},
	{"tab", "x%09y"},
	{"DEL", "x%7f"},
	{"C1 control U+0085", "x%c2%85"},
	{"overlong value", strings.Repeat("a", gateway.MaxParamBytes+1)},
}

// badTypedValue is a value that is valid text but not of the field's type,
// or "" for a string field.
func badTypedValue(fd protoreflect.FieldDescriptor) string {
	if fd.IsMap() {
		fd = fd.MapValue()
	}
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return "twelve"
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return "lots"
	case protoreflect.BoolKind:
		return "maybe"
	case protoreflect.EnumKind:
		return "no-such-value"
	case protoreflect.MessageKind:
		switch fd.Message().FullName() {
		case "google.protobuf.Timestamp":
			return "yesterday"
		case "google.protobuf.Duration":
			return "a-while"
		}
	}
	return ""
}

var pathVariable = regexp.MustCompile(`\{[^}]*\}`)

// routePath is route's template with every variable set to a valid value,
// except variable bad (by index), set to value (already encoded).
func routePath(route *restjson.Route, bad int, value string) string {
	i := -1
	return pathVariable.ReplaceAllStringFunc(route.Pattern, func(string) string {
		i++
		if i == bad {
			return value
		}
		return fmt.Sprintf("utf8-check-%d", i)
	})
}

// TestRESTURLText walks every REST route of the route table: each path
// variable and each query parameter gets invalid UTF-8, NUL, control
// characters and an overlong value, and each typed query parameter a value
// that does not parse. Every answer is 400 INVALID_ARGUMENT whose ErrorInfo
// names the place ({"field":"path"} or {"parameter":name}), and nothing is
// written.
func TestRESTURLText(t *testing.T) {
	d := startInProcess(t)
	admin := token(t, d, auth.RoleAdmin)
	svc := token(t, d, auth.RoleService)

	proposals := func() int {
		t.Helper()
		r := edgeCall(t, d, "GET", "/proposals", nil, svc)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		var list struct {
			Proposals []any `json:"proposals"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.raw), &list))
		return len(list.Proposals)
	}
	// One proposal, so that "unchanged" is not trivially zero.
	code, resp := jsonCall(t, d, "POST", "/memory/propose", `{"agentId":"utf8-check","runId":"run_u1",
	  "updates":[{"file":"facts.md","operation":"append","section":"Notes","content":"- a fact"}]}`, svc)
	require.Equal(t, http.StatusOK, code, resp)
	before := proposals()
	require.Equal(t, 1, before)

	routes, err := gateway.Routes()
	require.NoError(t, err)
	all := routes.All()
	require.GreaterOrEqual(t, len(all), 30, "the route table has every REST route")

	cases := 0
	expect := func(t *testing.T, route *restjson.Route, target string, md map[string]string) {
		t.Helper()
		var body *strings.Reader
		if route.Body != "" {
			body = strings.NewReader(`{}`)
		}
		var r edgeResponse
		if body != nil {
			r = edgeCall(t, d, route.Method, target, body, admin)
		} else {
			r = edgeCall(t, d, route.Method, target, nil, admin)
		}
		cases++
		require.Less(t, r.status, 500, "%s %s: never a 5xx: %s", route.Method, target, r.raw)
		require.Equal(t, http.StatusBadRequest, r.status, "%s %s: %s", route.Method, target, r.raw)
		require.Equal(t, int(codes.InvalidArgument), r.err.Code, r.raw)
		require.Equal(t, "INVALID_ARGUMENT", r.reason(), r.raw)
		require.Equal(t, md, r.err.Details[0].Metadata, "%s %s: %s", route.Method, target, r.raw)
	}

	for _, route := range all {
		t.Run(route.Method+" "+route.Pattern, func(t *testing.T) {
			for i, name := range route.PathParams() {
				for _, bad := range badURLValues {
					t.Run("path "+name+": "+bad.name, func(t *testing.T) {
						expect(t, route, routePath(route, i, bad.encoded), map[string]string{"field": "path"})
					})
				}
			}
			valid := routePath(route, -1, "")
			for _, p := range route.QueryParams() {
				name := p.Name
				if p.Field.IsMap() {
					name += "[k]"
				}
				for _, bad := range badURLValues {
					t.Run("query "+name+": "+bad.name, func(t *testing.T) {
						expect(t, route, valid+"?"+url.QueryEscape(name)+"="+bad.encoded, map[string]string{"parameter": name})
					})
				}
				if v := badTypedValue(p.Field); v != "" {
					t.Run("query "+name+": not a "+p.Field.Kind().String(), func(t *testing.T) {
						expect(t, route, valid+"?"+url.QueryEscape(name)+"="+v, map[string]string{"parameter": name})
					})
				}
			}
			t.Run("query parameter name", func(t *testing.T) {
				expect(t, route, valid+"?x%ffy=1", map[string]string{"parameter": "x\uFFFDy"})
				expect(t, route, valid+"?x%00y=1", map[string]string{"parameter": "x\x00y"})
			})
		})
	}
	t.Logf("%d routes, %d refused requests", len(all), cases)
	require.Equal(t, before, proposals(), "no refused request stored a proposal")
}
