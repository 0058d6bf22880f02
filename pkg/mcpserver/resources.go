package mcpserver

import (
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

// ResourceScheme is the URI scheme of the memory's resources:
// memory://<agent>/<file>.
const ResourceScheme = "memory://"

// layer1Files are the files served as resources: Layer 1, what an agent
// loads at the start of every run.
var layer1Files = []struct{ file, title, description string }{
	{memlayout.SnapshotFile, "Snapshot", "The agent's snapshot.md (Layer 1): who it is and where its work stands; at most 2K tokens."},
	{memlayout.FactsFile, "Facts", "The agent's facts.md (Layer 1): what it knows, by section; at most 8K tokens."},
	{memlayout.OpenLoopsFile, "Open loops", "The agent's open_loops.md (Layer 1): unfinished work; at most 2K tokens."},
}

// addResources registers one resource template per Layer 1 file and, for
// a caller with a default agent, lists that agent's three files.
func (s *server) addResources(srv *mcp.Server) {
	for _, f := range layer1Files {
		srv.AddResourceTemplate(&mcp.ResourceTemplate{
			Name: strings.TrimSuffix(f.file, ".md"), Title: f.title, Description: f.description, MIMEType: "text/markdown",
			URITemplate: ResourceScheme + "{agent_id}/" + f.file,
		}, s.readResource)
	}
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method != "resources/list" || err != nil {
				return res, err
			}
			if list, ok := res.(*mcp.ListResourcesResult); ok && list.NextCursor == "" {
				if a := s.caller(req.GetExtra()).Agent; a != "" {
					list.Resources = append(list.Resources, agentResources(a)...)
				}
			}
			return res, err
		}
	})
}

// agentResources are agent's Layer 1 files as resources.
func agentResources(agent string) []*mcp.Resource {
	out := make([]*mcp.Resource, 0, len(layer1Files))
	for _, f := range layer1Files {
		out = append(out, &mcp.Resource{URI: ResourceScheme + agent + "/" + f.file, Name: agent + "/" + f.file,
			Title: f.title + " of " + agent, Description: f.description, MIMEType: "text/markdown"})
	}
	return out
}

// readResource reads one Layer 1 file through ReadMemory (wide mode holds
// all three), with the caller's token like every tool.
func (s *server) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	agentID, file, ok := strings.Cut(strings.TrimPrefix(uri, ResourceScheme), "/")
	if !ok || agentID == "" {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	ctx, cancel := s.call(ctx, s.caller(req.Extra))
	defer cancel()
	resp, err := s.clients.ContextAssembly.ReadMemory(ctx, &memoryv1.ReadMemoryRequest{AgentId: agentID,
		Mode: memoryv1.ReadMode_READ_MODE_WIDE, IncludeFiles: []string{file}})
	if err != nil {
		return nil, resourceError(uri, err)
	}
	text := ""
	for _, f := range resp.GetFiles() {
		if f.GetFile() == file {
			text = f.GetContent()
		}
	}
	// A Layer 1 file the agent does not have yet reads as empty: the
	// agent exists (ReadMemory said so), its file is just not written.
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: text}}}, nil
}

// resourceError is a failed read as a JSON-RPC error (resources have no
// isError result): not found for a missing agent, else the ToolError text,
// so the reason leads here too.
func resourceError(uri string, err error) error {
	te := toolError(err, nil)
	if te.Reason == apierr.ReasonString(memoryv1.ErrorReason_ERROR_REASON_AGENT_NOT_FOUND) {
		return mcp.ResourceNotFoundError(uri)
	}
	code := int64(jsonrpc.CodeInternalError)
	switch te.Code {
	case codes.InvalidArgument, codes.NotFound, codes.PermissionDenied, codes.Unauthenticated:
		code = jsonrpc.CodeInvalidParams
	}
	return &jsonrpc.Error{Code: code, Message: te.Error()}
}
