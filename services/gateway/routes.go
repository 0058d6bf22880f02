package gateway

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/reflect/protoreflect"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/restjson"
)

// queryAliases: one name per concept across paths. The agent filter is
// `agent` (spec memory-backend-integration §8: /memory/context?agent=…);
// agentId and agent_id are accepted everywhere the agent is a query
// parameter, whatever the request message's JSON name.
var queryAliases = restjson.QueryAliases{
	{Field: "agent_id", Names: []string{"agent", "agentId", "agent_id"}},
}

// apiServices are the services whose HTTP rules the edge serves.
func apiServices() []protoreflect.ServiceDescriptor {
	var out []protoreflect.ServiceDescriptor
	for _, f := range []protoreflect.FileDescriptor{
		memoryv1.File_gardenbloom_memory_v1_context_assembly_proto,
		memoryv1.File_gardenbloom_memory_v1_search_index_proto,
		memoryv1.File_gardenbloom_memory_v1_entity_graph_proto,
		memoryv1.File_gardenbloom_memory_v1_proposal_apply_proto,
	} {
		for i := 0; i < f.Services().Len(); i++ {
			out = append(out, f.Services().Get(i))
		}
	}
	return out
}

// route finds r's route and puts its query in canonical form (one proto
// name per field, aliases resolved), or answers the request itself: 400
// INVALID_ARGUMENT for bad URL text (see textProblem) in the path
// ({"field":"path"}) or the query ({"parameter":name}), 404 NOT_FOUND for
// an unknown path, 405 with Allow for a known path and another method, 400
// INVALID_ARGUMENT naming a query parameter the route does not take or
// whose value does not parse as its field's type. It reports whether the
// request may go on, and the template of the route it matched ("" for
// none), the http.route of the request metrics.
func (e *edge) route(w http.ResponseWriter, r *http.Request) (*restjson.Route, bool) {
	if err := checkPathText(r.URL.Path); err != nil {
		e.reject(w, r, http.StatusBadRequest, err)
		return nil, false
	}
	var values url.Values
	if r.URL.RawQuery != "" {
		var err error
		if values, err = url.ParseQuery(r.URL.RawQuery); err != nil {
			e.reject(w, r, http.StatusBadRequest, apierr.InvalidArgument("query", "the query string is malformed"))
			return nil, false
		}
		if err := checkQueryText(values); err != nil {
			e.reject(w, r, http.StatusBadRequest, err)
			return nil, false
		}
	}
	route, allowed := e.routes.Match(r.Method, r.URL.Path)
	if route == nil {
		if len(allowed) == 0 {
			allowed = e.methodsOf(r.URL.Path) // the documents' paths
		}
		if len(allowed) > 0 {
			w.Header().Set("Allow", strings.Join(allowed, ", "))
			e.reject(w, r, http.StatusMethodNotAllowed, methodNotAllowed(r.Method, allowed))
			return nil, false
		}
		e.reject(w, r, http.StatusNotFound, apierr.RouteNotFound(r.URL.Path))
		return nil, false
	}
	if values == nil {
		return route, true
	}
	canonical, err := route.Query(values)
	if err != nil {
		e.reject(w, r, http.StatusBadRequest, queryError(err))
		return route, false
	}
	r.URL.RawQuery = canonical.Encode()
	return route, true
}

// URL text. Every percent-decoded path segment, query parameter name and
// query parameter value must be valid UTF-8 (no overlong forms, no
// surrogates), at most MaxParamBytes long, and free of control characters
// (Unicode category Cc: C0 including NUL, tab, CR and LF; DEL; C1). No
// identifier, filter or search text of the API needs one, and refusing them
// all keeps NUL and terminal escapes out of logs, file names and git. The
// edge checks this before routing, so bad bytes anywhere in a URL are a 400
// INVALID_ARGUMENT — {"field":"path"} for the path, {"parameter":name} for
// the query — and never reach gRPC marshaling (which fails on invalid UTF-8
// with a 500). That a value parses as its field's type is checked after
// routing, by restjson.Route.Query.

// textProblem says what is wrong with s as URL text, or "".
func textProblem(s string) string {
	if len(s) > MaxParamBytes {
		return "is longer than " + strconv.Itoa(MaxParamBytes) + " bytes"
	}
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	for _, c := range s {
		if unicode.IsControl(c) {
			return fmt.Sprintf("contains the control character U+%04X", c)
		}
	}
	return ""
}

func checkPathText(path string) error {
	for _, seg := range strings.Split(path, "/") {
		if why := textProblem(seg); why != "" {
			return apierr.InvalidArgument("path", fmt.Sprintf("the URL path segment %s %s", quoteClipped(seg), why))
		}
	}
	return nil
}

func checkQueryText(values url.Values) error {
	for _, key := range slices.Sorted(maps.Keys(values)) {
		why := textProblem(key)
		if why != "" {
			why = "has a name that " + why
		} else {
			for _, v := range values[key] {
				if why = textProblem(v); why != "" {
					why = "has a value that " + why
					break
				}
			}
		}
		if why != "" {
			// ErrorInfo metadata is a proto string: valid UTF-8.
			name := apierr.Clip(strings.ToValidUTF8(key, "\uFFFD"))
			return apierr.New(codes.InvalidArgument, memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT,
				fmt.Sprintf("query parameter %s %s", quoteClipped(key), why), map[string]string{"parameter": name})
		}
	}
	return nil
}

// quoteClipped quotes a caller's text for a message, escaping what is not
// printable UTF-8, cut to 80 bytes.
func quoteClipped(s string) string {
	if len(s) > 80 {
		return strconv.Quote(s[:80]) + "…"
	}
	return strconv.Quote(s)
}

func queryError(err error) error {
	var qe *restjson.QueryParamError
	if !errors.As(err, &qe) {
		return apierr.New(codes.InvalidArgument, memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, err.Error(), nil)
	}
	// The names come from the caller: clipped, like every caller's value.
	clipped := *qe
	clipped.Param, clipped.ConflictsWith = apierr.Clip(qe.Param), apierr.Clip(qe.ConflictsWith)
	md := map[string]string{"parameter": clipped.Param}
	if qe.Suggestion != "" {
		md["suggestion"] = qe.Suggestion
	}
	return apierr.New(codes.InvalidArgument, memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, clipped.Error(), md)
}

func methodNotAllowed(method string, allowed []string) error {
	return apierr.New(codes.Unimplemented, memoryv1.ErrorReason_ERROR_REASON_METHOD_NOT_ALLOWED,
		fmt.Sprintf("%s is not allowed here; allowed: %s", apierr.Clip(method), strings.Join(allowed, ", ")),
		map[string]string{"allow": strings.Join(allowed, ", ")})
}

// Routes returns the edge's route table: every REST route of the API, with
// the query parameters each takes (tests walk it).
func Routes() (*restjson.Routes, error) {
	return restjson.NewRoutes(apiServices(), queryAliases)
}
