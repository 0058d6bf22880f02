package gateway

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

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
// name per field, aliases resolved), or answers the request itself: 404
// NOT_FOUND for an unknown path, 405 with Allow for a known path and
// another method, 400 INVALID_ARGUMENT naming a query parameter the route
// does not take. It reports whether the request may go on.
func (e *edge) route(w http.ResponseWriter, r *http.Request) bool {
	route, allowed := e.routes.Match(r.Method, r.URL.Path)
	if route == nil {
		if len(allowed) == 0 {
			allowed = e.methodsOf(r.URL.Path) // the documents' paths
		}
		if len(allowed) > 0 {
			w.Header().Set("Allow", strings.Join(allowed, ", "))
			e.reject(w, r, http.StatusMethodNotAllowed, methodNotAllowed(r.Method, allowed))
			return false
		}
		e.reject(w, r, http.StatusNotFound, notFound(r.URL.Path))
		return false
	}
	if r.URL.RawQuery == "" {
		return true
	}
	values, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		e.reject(w, r, http.StatusBadRequest, apierr.New(codes.InvalidArgument, memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT,
			"the query string is malformed", map[string]string{"field": "query"}))
		return false
	}
	canonical, err := route.Query(values)
	if err != nil {
		e.reject(w, r, http.StatusBadRequest, queryError(err))
		return false
	}
	r.URL.RawQuery = canonical.Encode()
	return true
}

func queryError(err error) error {
	qe, ok := err.(*restjson.QueryParamError)
	if !ok {
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

func notFound(path string) error {
	return apierr.New(codes.NotFound, memoryv1.ErrorReason_ERROR_REASON_NOT_FOUND, fmt.Sprintf("no REST path %q", apierr.Clip(path)), nil)
}

func methodNotAllowed(method string, allowed []string) error {
	return apierr.New(codes.Unimplemented, memoryv1.ErrorReason_ERROR_REASON_METHOD_NOT_ALLOWED,
		fmt.Sprintf("%s is not allowed here; allowed: %s", apierr.Clip(method), strings.Join(allowed, ", ")),
		map[string]string{"allow": strings.Join(allowed, ", ")})
}
