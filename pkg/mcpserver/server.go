// Package mcpserver is the memory's Model Context Protocol server, built
// with the official Go SDK (github.com/modelcontextprotocol/go-sdk): the
// tools of memory-bridge §7 that fit our API (route_context,
// get_causal_chain, get_stale_facts, set_ttl) and of DiffMem §4
// (read_memory, search_memory, propose_memory_update, memory_diff) plus
// get_entity and ingest_episode, and each agent's Layer 1 files as
// resources (memory://<agent>/snapshot.md, facts.md, open_loops.md).
//
// It is a client of the gRPC API and holds no logic the services lack:
// each tool is one call (route_context with include_stale is two), made
// with the caller's own bearer token, so the services' authorization
// decides what an agent token reaches, exactly as for REST and gRPC
// callers. A refused or failed call is an MCP tool error (isError) whose
// text starts with the ErrorInfo reason (see ToolError), never a protocol
// error.
//
// Two transports: NewHTTPHandler serves streamable HTTP at /mcp on the
// edge (the caller's token from each request's Authorization header), and
// RunStdio serves one client over stdin/stdout (memctl mcp, the token given
// once).
package mcpserver

import (
	"context"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
)

// Name is the server's name in the MCP handshake.
const Name = "garden-bloom-memory"

// DefaultCallTimeout bounds a tool call or resource read when
// Options.CallTimeout is 0: the REST edge's default deadline.
const DefaultCallTimeout = 30 * time.Second

// Clients are the gRPC clients of the services the tools call.
type Clients struct {
	ContextAssembly memoryv1.ContextAssemblyServiceClient
	SearchIndex     memoryv1.SearchIndexServiceClient
	EntityGraph     memoryv1.EntityGraphServiceClient
	ProposalApply   memoryv1.ProposalApplyServiceClient
}

// ClientsOf returns the clients of the four services, all on conn (one
// memoryd serving them all, as memctl talks to one address).
func ClientsOf(conn grpc.ClientConnInterface) Clients {
	return Clients{
		ContextAssembly: memoryv1.NewContextAssemblyServiceClient(conn),
		SearchIndex:     memoryv1.NewSearchIndexServiceClient(conn),
		EntityGraph:     memoryv1.NewEntityGraphServiceClient(conn),
		ProposalApply:   memoryv1.NewProposalApplyServiceClient(conn),
	}
}

// Caller is who makes an MCP request.
type Caller struct {
	// Authorization is sent as the "authorization" metadata of every gRPC
	// call the request makes ("Bearer <jwt>"); "" sends none (and the
	// services answer UNAUTHENTICATED).
	Authorization string
	// Agent is the agent a call is about when its arguments name none; ""
	// means the call must name one.
	Agent string
}

// CallerFunc tells who made a request from what the transport knows of
// it (extra is nil on transports that know nothing, such as stdio).
type CallerFunc func(extra *mcp.RequestExtra) Caller

// StaticCaller is a CallerFunc for a connection with one caller, such as
// stdio: every request is made with token (no "Bearer " prefix; "" = no
// token) and defaults to agent.
func StaticCaller(token, agent string) CallerFunc {
	c := Caller{Agent: agent}
	if token != "" {
		c.Authorization = "Bearer " + token
	}
	return func(*mcp.RequestExtra) Caller { return c }
}

// Options are what a server may be told beyond its clients.
type Options struct {
	// Version is the server's version in the MCP handshake; "" = "dev".
	Version string
	// Agent is the default agent of RunStdio's caller (memctl mcp --agent);
	// the HTTP handler takes it per request from /mcp?agent=<id>.
	Agent string
	// CallTimeout bounds each tool call and resource read; 0 =
	// DefaultCallTimeout.
	CallTimeout time.Duration
	// Logger receives one line per failed call and the SDK's warnings;
	// nil = none.
	Logger *slog.Logger
}

// server holds what the tool and resource handlers share.
type server struct {
	clients  Clients
	callerOf CallerFunc
	timeout  time.Duration
	logger   *slog.Logger
}

// New returns an MCP server with every tool and resource template, whose
// calls go to clients on behalf of whoever callerOf says made them.
func New(clients Clients, callerOf CallerFunc, opts Options) *mcp.Server {
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &server{clients: clients, callerOf: callerOf, timeout: opts.CallTimeout, logger: logger}
	srv := mcp.NewServer(&mcp.Implementation{Name: Name, Title: "Garden Bloom Memory", Version: opts.Version},
		&mcp.ServerOptions{
			Instructions: instructions,
			Logger:       sdkLogger(opts.Logger),
			// No logging capability: the server sends no log messages.
			Capabilities: &mcp.ServerCapabilities{},
		})
	s.addTools(srv)
	s.addResources(srv)
	srv.AddReceivingMiddleware(argumentErrors)
	return srv
}

// sdkLogger is l for the SDK, at Warn and above: over stateless HTTP the
// SDK connects, initializes and ends a session per request, and logs each
// step at Info. nil stays nil (no log).
func sdkLogger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return nil
	}
	return slog.New(minLevel{Handler: l.Handler(), min: slog.LevelWarn})
}

// minLevel drops records below min.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{Handler: h.Handler.WithAttrs(attrs), min: h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: h.Handler.WithGroup(name), min: h.min}
}

// instructions tell the model how the tools fit together.
const instructions = `Long-term memory of AI agents, kept as Markdown in git. ` +
	`Start a task with route_context (the agent's Layer 1 memory plus what matches the task, within a token budget) ` +
	`or read_memory. Search with search_memory; follow entities with get_entity and decisions with get_causal_chain. ` +
	`You never write memory directly: propose_memory_update and ingest_episode create proposals, ` +
	`each applied as one git commit once approved (by policy or by a person). ` +
	`Facts can expire: set_ttl, get_stale_facts. ` +
	`Errors start with a reason such as PERMISSION_DENIED, VERSION_CONFLICT or TOKEN_LIMIT_EXCEEDED.`

// call prepares the context of one gRPC call made for c: its token as
// metadata and the call deadline.
func (s *server) call(ctx context.Context, c Caller) (context.Context, context.CancelFunc) {
	if c.Authorization != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, auth.MetadataKey, c.Authorization)
	}
	return context.WithTimeout(ctx, s.timeout)
}

// caller is who made a request.
func (s *server) caller(extra *mcp.RequestExtra) Caller {
	if s.callerOf == nil {
		return Caller{}
	}
	return s.callerOf(extra)
}

// agent is the agent a call is about: the one it names, else the caller's
// default.
func agent(named string, c Caller) (string, error) {
	switch {
	case named != "":
		return named, nil
	case c.Agent != "":
		return c.Agent, nil
	default:
		return "", missingAgent()
	}
}

// output is what every tool returns: structured content plus the text
// rendering a model reads when its client shows text only.
type output interface {
	text() string
}

// tool describes one tool for addTool.
type tool[In any, Out output] struct {
	name, title, description string
	readOnly, idempotent     bool
	// rules refine the inferred input schema (schema.go).
	rules map[string]rule
	// fields renames service request fields to the tool's arguments in
	// errors (errors.go).
	fields map[string]string
	run    func(ctx context.Context, c Caller, in In) (Out, error)
}

// addTool registers t on srv: the SDK validates the arguments against the
// schema (defaults filled in), run makes the gRPC calls, and an error
// becomes a tool error whose text starts with its reason.
func addTool[In any, Out output](s *server, srv *mcp.Server, t tool[In, Out]) {
	closed := false
	annotations := &mcp.ToolAnnotations{Title: t.title, ReadOnlyHint: t.readOnly, IdempotentHint: t.idempotent,
		// Memory is a closed world; proposals add, they never destroy
		// (git keeps every version, and a person may have to approve).
		OpenWorldHint: &closed, DestructiveHint: &closed}
	mcp.AddTool(srv, &mcp.Tool{Name: t.name, Title: t.title, Description: t.description, Annotations: annotations,
		InputSchema: inputSchema[In](t.rules)},
		func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
			c := s.caller(req.Extra)
			ctx, cancel := s.call(ctx, c)
			defer cancel()
			out, err := t.run(ctx, c, in)
			if err != nil {
				te := toolError(err, t.fields)
				s.logger.LogAttrs(ctx, slog.LevelInfo, "MCP tool call failed", slog.String("tool", t.name),
					slog.String("reason", te.Reason), slog.String("code", te.Code.String()))
				var zero Out
				return nil, zero, te
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out.text()}}}, out, nil
		})
}
