package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/restjson"
)

// OpenAPIPath serves the OpenAPI document of the REST API, without a token.
const OpenAPIPath = "/openapi.json"

// edge puts the REST edge's limits in front of the grpc-gateway mux: the
// CORS policy, the request target's length, the route (404, 405 with
// Allow) and its query parameters (none unknown, aliases resolved), a
// deadline per request, and a body that is bounded in size, valid UTF-8 and
// not nested too deeply — all checked before any service is called.
type edge struct {
	cfg     Config
	mux     *runtime.ServeMux
	routes  *restjson.Routes
	logger  *slog.Logger
	openAPI http.Handler
	metrics *edgeMetrics
}

// ServeHTTP serves one REST request and records it (metrics.go).
func (e *edge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.metrics.serve(w, r, e.serve)
}

// serve answers r and returns the template of the route it took ("" for
// none).
func (e *edge) serve(w http.ResponseWriter, r *http.Request) string {
	if e.cors(w, r) {
		return ""
	}
	if (r.URL.Path == OpenAPIPath || r.URL.Path == DocsPath) && (r.Method == http.MethodGet || r.Method == http.MethodHead) { // docs.go
		e.openAPI.ServeHTTP(w, r)
		return r.URL.Path
	}
	target := r.RequestURI
	if target == "" {
		target = r.URL.RequestURI()
	}
	if len(target) > MaxURLBytes {
		e.reject(w, r, http.StatusRequestURITooLong, tooLarge("the request URL", MaxURLBytes))
		return ""
	}
	route, ok := e.route(w, r)
	if !ok {
		return patternOf(route)
	}
	ctx, cancel := context.WithTimeout(r.Context(), e.cfg.Timeout)
	defer cancel()
	r = r.WithContext(ctx)
	if r.Body != nil && r.Body != http.NoBody {
		if code, err := e.readBody(w, r, route); err != nil {
			e.reject(w, r, code, err)
			return route.Pattern
		}
	}
	e.mux.ServeHTTP(w, r)
	return route.Pattern
}

// patternOf is a route's template, "" for none.
func patternOf(r *restjson.Route) string {
	if r == nil {
		return ""
	}
	return r.Pattern
}

// readBody replaces r.Body with its checked contents, or returns the HTTP
// status and error to answer with. The body is read whole, up to the
// limit, because the JSON decoder would read it whole anyway; a declared
// Content-Length over the limit is refused without reading anything, and a
// chunked body is cut off as soon as it passes the limit.
func (e *edge) readBody(w http.ResponseWriter, r *http.Request, route *restjson.Route) (int, error) {
	limit := e.cfg.MaxBodyBytes
	if r.ContentLength > limit {
		return http.StatusRequestEntityTooLarge, tooLarge("the request body", limit)
	}
	// memoryd's server bounds every body (pkg/httplimit: a deadline per
	// read and one in total) and owns the connection's read deadline; this
	// request's deadline may be sooner, so the body is asked to keep it.
	// Without such a body (the edge served elsewhere), the connection's
	// deadline is set, and cleared afterwards so that the server's
	// background read watching for a closed connection cannot time out.
	if dl, ok := r.Context().Deadline(); ok {
		if b, ok := r.Body.(interface{ LimitDeadline(time.Time) }); ok {
			b.LimitDeadline(dl)
		} else if rc := http.NewResponseController(w); rc.SetReadDeadline(dl) == nil {
			defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
		}
	}
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength))
	}
	// MaxBytesReader also makes the server close the connection after the
	// answer instead of reading the rest.
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit)); err != nil {
		var tooBig *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.As(err, &tooBig):
			return http.StatusRequestEntityTooLarge, tooLarge("the request body", limit)
		case errors.As(err, &ne) && ne.Timeout():
			return http.StatusRequestTimeout, status.Error(codes.DeadlineExceeded, "the request body did not arrive in time")
		default:
			return http.StatusBadRequest, apierr.InvalidArgument("body", "the request body could not be read")
		}
	}
	body := buf.Bytes()
	if !utf8.Valid(body) {
		return http.StatusBadRequest, apierr.InvalidArgument("body", "the request body is not valid UTF-8")
	}
	switch deep, trailing := scanJSON(body, MaxJSONDepth); {
	case deep:
		return http.StatusBadRequest, apierr.InvalidArgument("body", "the request body nests more than "+strconv.Itoa(MaxJSONDepth)+" levels deep")
	case trailing:
		return http.StatusBadRequest, apierr.InvalidArgument("body", "the request body holds more than one JSON value")
	}
	if err := agentMatchesPath(r.URL.Path, body); err != nil {
		return http.StatusBadRequest, err
	}
	if err := checkEnums(route, body); err != nil {
		return http.StatusBadRequest, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.TransferEncoding = nil
	return 0, nil
}

// checkEnums refuses an enum value of the body that is not one of its
// enum's values, naming the field (updates[0].operation) and, for an
// operation, with the reason INVALID_OPERATION: the decoder's own error
// reaches the error handler as a bare InvalidArgument.
func checkEnums(route *restjson.Route, body []byte) error {
	md := route.Request
	if route.Body != "*" {
		fd := md.Fields().ByName(protoreflect.Name(route.Body))
		if fd == nil || fd.Message() == nil {
			return nil // no body, or a body that is not a message
		}
		md = fd.Message()
	}
	var bad *restjson.EnumValueError
	if !errors.As(restjson.CheckEnums(md, body), &bad) {
		return nil
	}
	reason := memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT
	if bad.Enum == (memoryv1.Operation(0)).Descriptor().FullName() {
		reason = memoryv1.ErrorReason_ERROR_REASON_INVALID_OPERATION
	}
	return apierr.Invalid(reason, bad.Field,
		fmt.Sprintf("%s: %q is not one of %s", bad.Field, apierr.Clip(bad.Value), strings.Join(bad.Allowed, ", ")))
}

// agentMatchesPath refuses a body whose agentId (or agent_id) names
// another agent than the path (/memory/{agentId}/… and /v1/memory/{agentId}/…):
// grpc-gateway lets the path win silently, so the caller would write to an
// agent it did not name in the body.
func agentMatchesPath(path string, body []byte) error {
	rest, ok := strings.CutPrefix(path, "/memory/")
	if !ok {
		if rest, ok = strings.CutPrefix(path, "/v1/memory/"); !ok {
			return nil
		}
	}
	agent, _, nested := strings.Cut(rest, "/")
	if !nested || agent == "" {
		return nil // /memory/propose, /memory/search, …: no agent in the path
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return nil // not an object: the decoder says what is wrong
	}
	for _, key := range []string{"agentId", "agent_id"} {
		raw, ok := top[key]
		if !ok {
			continue
		}
		var named string
		if json.Unmarshal(raw, &named) == nil && named != "" && named != agent {
			return apierr.InvalidArgument(key,
				fmt.Sprintf("the body's %s %q differs from the agent in the path %q", key, apierr.Clip(named), apierr.Clip(agent)))
		}
	}
	return nil
}

// reject answers a request the edge refuses itself, through the mux's
// error handler so the answer has the same shape as every other error.
// Nothing else records these requests, so they are logged here.
func (e *edge) reject(w http.ResponseWriter, r *http.Request, httpStatus int, err error) {
	e.logger.LogAttrs(r.Context(), slog.LevelInfo, "REST request refused at the edge",
		slog.Int("status", httpStatus),
		slog.String("method", r.Method),
		slog.String("path", apierr.Clip(r.URL.Path)),
		slog.String("remote", r.RemoteAddr),
		slog.String("error", status.Convert(err).Message()),
	)
	_, outbound := runtime.MarshalerForRequest(e.mux, r)
	runtime.HTTPError(r.Context(), e.mux, outbound, w, r, &runtime.HTTPStatusError{HTTPStatus: httpStatus, Err: err})
}

func tooLarge(what string, limit int64) error {
	return apierr.New(codes.InvalidArgument, memoryv1.ErrorReason_ERROR_REASON_REQUEST_TOO_LARGE,
		what+" is larger than "+strconv.FormatInt(limit, 10)+" bytes",
		map[string]string{"limit": strconv.FormatInt(limit, 10)})
}

// openAPIHandler serves doc as application/json with an ETag, so clients
// and caches revalidate cheaply (the document changes with the binary).
func openAPIHandler(doc []byte) http.Handler {
	sum := sha256.Sum256(doc)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("ETag", etag)
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(doc))
	})
}
