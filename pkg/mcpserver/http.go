package mcpserver

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

// HTTPPath is where the edge serves MCP over streamable HTTP.
const HTTPPath = "/mcp"

// agentHeader carries a request's default agent (from ?agent=) from the
// HTTP handler to the tool handlers, which see the request's headers only.
// A client's own value is dropped: the query parameter is the interface.
const agentHeader = "X-Garden-Bloom-Mcp-Agent"

// HTTPOptions configure the streamable HTTP handler.
type HTTPOptions struct {
	Options
	// Verifier checks each request's bearer token before anything else
	// runs, so a missing, malformed, badly signed or expired token is an
	// HTTP 401 with a WWW-Authenticate challenge — what MCP clients act on
	// (they re-authenticate) — rather than a tool error on every call. The
	// services still authorize each call (which agents, which roles). nil:
	// only a missing or non-bearer Authorization header is refused here.
	Verifier *auth.Verifier
	// MaxBodyBytes bounds a request body (the REST edge's
	// --rest-max-body-bytes); 0 = the SDK's default of 4 MiB.
	MaxBodyBytes int64
}

// NewHTTPHandler serves MCP's streamable HTTP transport (serve it at
// HTTPPath). It is stateless: each POST carries the caller's token and is
// answered on its own (JSON, no server-sent events, no session), so any
// replica of the read edge can answer any request and the edge's limits
// (body size, write deadline) apply as to REST. The default agent of a
// request is its ?agent= parameter.
func NewHTTPHandler(clients Clients, opts HTTPOptions) http.Handler {
	srv := New(clients, func(extra *mcp.RequestExtra) Caller {
		if extra == nil || extra.Header == nil {
			return Caller{}
		}
		return Caller{Authorization: extra.Header.Get("Authorization"), Agent: extra.Header.Get(agentHeader)}
	}, opts.Options)
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		Logger:              sdkLogger(opts.Logger),
		MaxRequestBodyBytes: opts.MaxBodyBytes,
	})
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := checkBearer(r, opts.Verifier); err != nil {
			logger.LogAttrs(r.Context(), slog.LevelInfo, "MCP request refused at the edge",
				slog.String("remote", r.RemoteAddr), slog.String("error", status.Convert(err).Message()))
			writeUnauthenticated(w, r, err)
			return
		}
		r.Header.Del(agentHeader)
		if a := r.URL.Query().Get("agent"); a != "" {
			if !memlayout.ValidAgentID(a) {
				writeStatus(w, http.StatusBadRequest, "", invalidAgent("agent", a))
				return
			}
			r.Header.Set(agentHeader, a)
		}
		mcpHandler.ServeHTTP(w, r)
	})
}

// checkBearer refuses a request without exactly one bearer token, or (with
// v) with one v does not accept, as the gRPC interceptors would.
func checkBearer(r *http.Request, v *auth.Verifier) error {
	vals := r.Header.Values("Authorization")
	switch {
	case len(vals) == 0 || (len(vals) == 1 && !auth.IsBearer(vals[0])):
		return unauthenticated(auth.ReasonUnauthenticated, "missing bearer token")
	case len(vals) > 1:
		return unauthenticated(auth.ReasonUnauthenticated, "authorization must be one bearer token")
	}
	_, token, _ := strings.Cut(strings.TrimSpace(vals[0]), " ")
	if token = strings.TrimSpace(token); token == "" {
		return unauthenticated(auth.ReasonUnauthenticated, "authorization must be a bearer token")
	}
	if v == nil {
		return nil
	}
	if _, err := v.Verify(token); err != nil {
		if errors.Is(err, auth.ErrExpiredToken) {
			return unauthenticated(auth.ReasonTokenExpired, auth.PublicMessage(err))
		}
		return unauthenticated(auth.ReasonUnauthenticated, auth.PublicMessage(err))
	}
	return nil
}

func unauthenticated(reason, msg string) error {
	r := memoryv1.ErrorReason_ERROR_REASON_UNAUTHENTICATED
	if reason == auth.ReasonTokenExpired {
		r = memoryv1.ErrorReason_ERROR_REASON_TOKEN_EXPIRED
	}
	return apierr.New(codes.Unauthenticated, r, msg, nil)
}

// writeUnauthenticated answers 401 in the REST edge's error shape — the
// JSON status {code, message, details: [ErrorInfo]} — with the RFC 6750
// challenge the REST edge sends (no error code when the request had no
// bearer token at all).
func writeUnauthenticated(w http.ResponseWriter, r *http.Request, err error) {
	st := status.Convert(err)
	challenge := auth.BearerChallenge(auth.HTTPRealm, "invalid_token", st.Message())
	vals := r.Header.Values("Authorization")
	switch {
	case len(vals) == 0 || (len(vals) == 1 && !auth.IsBearer(vals[0])):
		challenge = auth.BearerChallenge(auth.HTTPRealm, "", "")
	case len(vals) > 1:
		challenge = auth.BearerChallenge(auth.HTTPRealm, "invalid_request", st.Message())
	}
	writeStatus(w, http.StatusUnauthorized, challenge, err)
}

// writeStatus answers httpStatus with err's status as the REST edge's JSON
// body, and a WWW-Authenticate challenge unless it is "".
func writeStatus(w http.ResponseWriter, httpStatus int, challenge string, err error) {
	body, merr := protojson.Marshal(status.Convert(err).Proto())
	if merr != nil {
		body = []byte(`{"code":2,"message":"unknown"}`)
	}
	if challenge != "" {
		w.Header().Set("WWW-Authenticate", challenge)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(httpStatus)
	_, _ = w.Write(body) // the status is sent: a failed write has no one to tell
}

// invalidAgent refuses a default agent that is not an agent id.
func invalidAgent(field, agent string) error {
	return apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, field,
		fmt.Sprintf("%s %q is not an agent id (a slug: [a-z0-9][a-z0-9-]{0,63})", field, apierr.Clip(agent)))
}
