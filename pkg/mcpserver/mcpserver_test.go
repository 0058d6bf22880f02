package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/garden-bloom/memory/cmd/memoryd/app"
	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/mcpserver"
	"github.com/garden-bloom/memory/pkg/telemetry"
)

// env is a real memoryd (--target=all, in this process, on loopback) with
// two agents, alpha and beta, that have memory, and tokens to reach it.
type env struct {
	httpAddr string
	conn     *grpc.ClientConn
	pa       memoryv1.ProposalApplyServiceClient
	signer   *auth.Signer
	secret   []byte
	// Tokens: every role on every agent; an agent token of alpha only.
	admin, alpha string
	// The id of alpha's first decision.
	decisionID string
}

const alphaWord = "heliotrope"

// startEnv runs memoryd on a fresh data dir and seeds alpha and beta
// through reviewed proposals, then waits for the read plane to catch up.
func startEnv(t *testing.T) *env {
	t.Helper()
	dataDir := t.TempDir()
	cfg, flags, err := app.LoadConfig([]string{"--data-dir", dataDir, "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0",
		"--rate-limit=0"}, func(string) (string, bool) { return "", false })
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, cfg, flags, telemetry.NewLogger(io.Discard, 0))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(60 * time.Second):
			t.Error("memoryd did not stop")
		}
	})
	secret, err := auth.LoadSecret(filepath.Join(dataDir, "auth.secret"))
	require.NoError(t, err)
	signer, err := auth.NewSigner(secret)
	require.NoError(t, err)
	conn, err := grpc.NewClient(a.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	e := &env{httpAddr: a.HTTPAddr(), conn: conn, pa: memoryv1.NewProposalApplyServiceClient(conn), signer: signer, secret: secret}
	e.admin = e.mint(t, "mcp-test-admin", []auth.Role{auth.RoleAdmin, auth.RoleReviewer, auth.RoleService}, auth.AllAgents)
	e.alpha = e.mint(t, "mcp-test-alpha", []auth.Role{auth.RoleAgent}, "alpha")
	e.seed(t)
	return e
}

func (e *env) mint(t testing.TB, sub string, roles []auth.Role, agents ...string) string {
	t.Helper()
	tok, err := e.signer.Mint(sub, roles, agents, time.Hour)
	require.NoError(t, err)
	return tok
}

// as is a context carrying token, for the test's own gRPC calls.
func as(token string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
}

// apply proposes updates for agent as the admin and has them approved.
func (e *env) apply(t *testing.T, agent, run string, updates ...*memoryv1.FileUpdate) {
	t.Helper()
	ctx := as(e.admin)
	resp, err := e.pa.Propose(ctx, &memoryv1.ProposeRequest{AgentId: agent, RunId: run, Updates: updates, Reasoning: "mcp test seed"})
	require.NoError(t, err)
	id := resp.GetProposalId()
	if resp.GetStatus() != memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED {
		_, err = e.pa.ApproveProposal(ctx, &memoryv1.ApproveProposalRequest{ProposalId: id, Comment: "ok"})
		require.NoError(t, err)
	}
	e.waitApplied(t, id)
}

func (e *env) waitApplied(t *testing.T, id string) *memoryv1.Proposal {
	t.Helper()
	var p *memoryv1.Proposal
	require.Eventually(t, func() bool {
		got, err := e.pa.GetProposal(as(e.admin), &memoryv1.GetProposalRequest{ProposalId: id})
		p = got.GetProposal()
		return err == nil && (p.GetStatus() == memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED || p.GetStatus() == memoryv1.ProposalStatus_PROPOSAL_STATUS_FAILED)
	}, 20*time.Second, 20*time.Millisecond, "proposal %s is applied", id)
	require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED, p.GetStatus(), p.GetMessage())
	return p
}

func facts(content string) *memoryv1.FileUpdate {
	return &memoryv1.FileUpdate{File: "facts.md", Operation: memoryv1.Operation_OPERATION_APPEND, Section: "Technical", Content: content}
}

func (e *env) seed(t *testing.T) {
	t.Helper()
	e.apply(t, "alpha", "run_seed1",
		&memoryv1.FileUpdate{File: "snapshot.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "# Snapshot: alpha\n\n## Role\nCurator of the " + alphaWord + " garden.\n"},
		facts("- [[MinIO]] bucket mcpstorage has versioning on for the "+alphaWord+" archive"),
		&memoryv1.FileUpdate{File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_OPEN, Section: "Active", Content: "Migrate the " + alphaWord + " sources to MinIO"},
		&memoryv1.FileUpdate{File: "decisions.md", Operation: memoryv1.Operation_OPERATION_ADD_DECISION, Decision: &memoryv1.Decision{
			Title: "Use MinIO for sources", Status: "accepted", Context: "sources of the " + alphaWord + " garden need a home",
			Decision: "store them in [[MinIO]]", Rationale: "S3-compatible and self-hosted", Consequences: "run a MinIO server"}})
	e.apply(t, "beta", "run_seed1",
		&memoryv1.FileUpdate{File: "snapshot.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "# Snapshot: beta\n\n## Role\nBeta.\n"},
		facts("- beta keeps its secrets"))

	ca := memoryv1.NewContextAssemblyServiceClient(e.conn)
	l2, err := ca.GetLayer2(as(e.admin), &memoryv1.GetLayer2Request{AgentId: "alpha", Include: []string{"decisions"}})
	require.NoError(t, err)
	require.NotEmpty(t, l2.GetDecisions())
	e.decisionID = l2.GetDecisions()[0].GetId()
	// A later decision that builds on it, so there is a chain to explain.
	e.apply(t, "alpha", "run_seed2", &memoryv1.FileUpdate{File: "decisions.md", Operation: memoryv1.Operation_OPERATION_ADD_DECISION,
		Decision: &memoryv1.Decision{Title: "Turn on bucket versioning", Status: "accepted",
			Context: "follows [[decision-" + e.decisionID + "]]", Decision: "version the mcpstorage bucket", Rationale: "undo mistakes"}})

	// The read plane follows: alpha searchable, the graph built.
	si := memoryv1.NewSearchIndexServiceClient(e.conn)
	eg := memoryv1.NewEntityGraphServiceClient(e.conn)
	require.Eventually(t, func() bool {
		s, err := si.Search(as(e.admin), &memoryv1.SearchRequest{Query: alphaWord, AgentId: "alpha"})
		if err != nil || len(s.GetResults()) == 0 {
			return false
		}
		why, err := eg.ExplainDecision(as(e.admin), &memoryv1.ExplainDecisionRequest{Query: "bucket versioning"})
		return err == nil && len(why.GetChain()) >= 2
	}, 30*time.Second, 50*time.Millisecond, "the read plane catches up")
}

// bearer adds an Authorization header to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// httpSession connects the Go SDK's client to memoryd's /mcp with token;
// agent is the ?agent= default ("" = none).
func (e *env) httpSession(t *testing.T, token, agent string) *mcp.ClientSession {
	t.Helper()
	url := "http://" + e.httpAddr + mcpserver.HTTPPath
	if agent != "" {
		url += "?agent=" + agent
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpserver-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearer{token}}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// stdioSession runs RunStdio over a pair of pipes, as memctl mcp runs it
// over stdin and stdout, and connects the Go SDK's client to it.
func (e *env) stdioSession(t *testing.T, token, agent string) *mcp.ClientSession {
	t.Helper()
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- mcpserver.RunStdio(context.Background(), e.conn, token, serverIn, serverOut, mcpserver.Options{Agent: agent, Version: "test"})
		_ = serverOut.Close()
	}()
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpserver-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.Close()
		select {
		case err := <-done:
			require.NoError(t, err, "RunStdio ends cleanly when the client closes stdin")
		case <-time.After(10 * time.Second):
			t.Error("RunStdio did not return after the client closed")
		}
	})
	return cs
}

// call calls a tool that must succeed and decodes its structured content.
func call[Out any](t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) Out {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err, "a tool call is never a protocol error")
	require.False(t, res.IsError, "%s failed: %s", tool, text(res))
	require.NotEmpty(t, text(res), "a text rendering beside the structured content")
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var out Out
	require.NoError(t, json.Unmarshal(raw, &out), string(raw))
	return out
}

// callError calls a tool that must fail and returns the error text.
func callError(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err, "a refused call is a tool error, not a protocol error")
	require.True(t, res.IsError, "%s must fail, got: %s", tool, text(res))
	return text(res)
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func TestMCP(t *testing.T) {
	e := startEnv(t)
	transports := map[string]func(t *testing.T, token, agent string) *mcp.ClientSession{
		"http": e.httpSession, "stdio": e.stdioSession,
	}
	for _, name := range []string{"http", "stdio"} {
		session := transports[name]
		t.Run(name, func(t *testing.T) {
			t.Run("tools", func(t *testing.T) { testToolList(t, session(t, e.admin, "alpha")) })
			t.Run("read tools", func(t *testing.T) { testReadTools(t, e, session(t, e.admin, "alpha")) })
			t.Run("write tools", func(t *testing.T) { testWriteTools(t, e, session(t, e.alpha, "alpha"), name) })
			t.Run("resources", func(t *testing.T) { testResources(t, session(t, e.alpha, "alpha")) })
			t.Run("errors", func(t *testing.T) { testErrors(t, session(t, e.alpha, "")) })
		})
	}
	t.Run("http edge", func(t *testing.T) { testHTTPEdge(t, e) })
	t.Run("stdio without a token", func(t *testing.T) {
		// The token is given once at start; without one, every call is
		// refused by the services (over HTTP the edge refuses: http edge).
		msg := callError(t, e.stdioSession(t, "", "alpha"), "read_memory", map[string]any{})
		require.True(t, strings.HasPrefix(msg, "UNAUTHENTICATED (Unauthenticated)"), msg)
	})
}

// testToolList: every tool of the issue, each argument described so a
// model can fill it in.
func testToolList(t *testing.T, cs *mcp.ClientSession) {
	init := cs.InitializeResult()
	require.Equal(t, mcpserver.Name, init.ServerInfo.Name)
	require.NotEmpty(t, init.Instructions)
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		require.NotEmpty(t, tool.Description, tool.Name)
		require.NotNil(t, tool.OutputSchema, "%s has structured output", tool.Name)
		schema, ok := tool.InputSchema.(map[string]any)
		require.True(t, ok, tool.Name)
		requireDescribed(t, tool.Name, schema)
	}
	require.ElementsMatch(t, []string{"route_context", "get_causal_chain", "get_stale_facts", "set_ttl", "read_memory",
		"search_memory", "propose_memory_update", "memory_diff", "get_entity", "ingest_episode"}, names)
	require.ElementsMatch(t, mcpserver.ToolNames, names)

	byName := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		byName[tool.Name] = tool
	}
	prop := func(tool string, path ...string) map[string]any {
		s := byName[tool].InputSchema.(map[string]any)
		for _, p := range path {
			if p == "[]" {
				s = s["items"].(map[string]any)
				continue
			}
			s = s["properties"].(map[string]any)[p].(map[string]any)
		}
		return s
	}
	// memory-bridge §7: route_context(query, max_tokens=2000, include_stale=False).
	require.EqualValues(t, 2000, prop("route_context", "max_tokens")["default"])
	require.Equal(t, false, prop("route_context", "include_stale")["default"])
	require.Contains(t, byName["route_context"].InputSchema.(map[string]any)["required"], "query")
	require.EqualValues(t, 5, prop("get_causal_chain", "max_depth")["default"])
	require.ElementsMatch(t, []any{"basic", "wide", "deep", "temporal"}, prop("read_memory", "mode")["enum"])
	require.ElementsMatch(t, []any{"mark_stale", "archive", "delete"}, prop("set_ttl", "on_expire")["enum"])
	require.ElementsMatch(t, []any{"success", "failure", "partial"}, prop("ingest_episode", "episode", "outcome", "status")["enum"])
	ops := prop("propose_memory_update", "updates", "[]", "operation")["enum"]
	require.Contains(t, ops, "append")
	require.NotContains(t, ops, "restore", "only RestoreSnapshot makes restore updates")
	require.True(t, byName["read_memory"].Annotations.ReadOnlyHint)
	require.False(t, byName["propose_memory_update"].Annotations.ReadOnlyHint)
}

// requireDescribed requires a description on every property of schema,
// nested objects and array items included.
func requireDescribed(t *testing.T, where string, schema map[string]any) {
	t.Helper()
	props, _ := schema["properties"].(map[string]any)
	for name, p := range props {
		ps := p.(map[string]any)
		require.NotEmpty(t, ps["description"], "%s.%s has no description", where, name)
		requireDescribed(t, where+"."+name, ps)
	}
	if items, ok := schema["items"].(map[string]any); ok {
		requireDescribed(t, where+"[]", items)
	}
}

func testReadTools(t *testing.T, e *env, cs *mcp.ClientSession) {
	t.Run("route_context", func(t *testing.T) {
		out := call[mcpserver.RouteContextOutput](t, cs, "route_context", map[string]any{"query": "where are the " + alphaWord + " sources stored"})
		require.Equal(t, "success", out.Status)
		require.Equal(t, "alpha", out.AgentID, "the default agent")
		require.EqualValues(t, 2000, out.MaxTokens, "max_tokens defaults to 2000")
		require.LessOrEqual(t, out.TokensUsed, out.MaxTokens)
		require.Positive(t, out.TokensUsed)
		require.Contains(t, out.Facts, "- [[MinIO]] bucket mcpstorage has versioning on for the "+alphaWord+" archive")
		require.Contains(t, out.Context, "Curator of the "+alphaWord+" garden")
		require.NotEmpty(t, out.Sections)
		require.Contains(t, out.RoutingExplanation, "Layer 1")
		require.Len(t, out.Commit, 40)

		small := call[mcpserver.RouteContextOutput](t, cs, "route_context", map[string]any{"query": "minio", "max_tokens": 300, "agent_id": "alpha"})
		require.LessOrEqual(t, small.TokensUsed, int32(300))
	})
	t.Run("read_memory", func(t *testing.T) {
		out := call[mcpserver.ReadMemoryOutput](t, cs, "read_memory", map[string]any{"mode": "wide"})
		require.Equal(t, "alpha", out.AgentID)
		require.Equal(t, "wide", out.Mode)
		require.GreaterOrEqual(t, out.Version, int32(2))
		var files []string
		for _, f := range out.Files {
			files = append(files, f.File)
		}
		require.Contains(t, files, "snapshot.md")
		require.Contains(t, files, "facts.md")
		basic := call[mcpserver.ReadMemoryOutput](t, cs, "read_memory", map[string]any{"agent_id": "beta"})
		require.Equal(t, "basic", basic.Mode, "mode defaults to basic")
		require.Equal(t, "beta", basic.AgentID, "an admin token reads any agent")
	})
	t.Run("search_memory", func(t *testing.T) {
		out := call[mcpserver.SearchMemoryOutput](t, cs, "search_memory", map[string]any{"query": alphaWord})
		require.NotEmpty(t, out.Results)
		for _, r := range out.Results {
			require.Equal(t, "alpha", r.AgentID, "the default agent scopes the search")
			require.Contains(t, strings.ToLower(r.Excerpt), alphaWord)
		}
		require.Len(t, out.IndexCommit, 40)
	})
	t.Run("get_entity", func(t *testing.T) {
		out := call[mcpserver.GetEntityOutput](t, cs, "get_entity", map[string]any{"entity_id": "minio"})
		require.Equal(t, "minio", out.Entity.EntityID)
		require.NotEmpty(t, out.Refs)
		require.NotEmpty(t, out.Edges)
	})
	t.Run("get_causal_chain", func(t *testing.T) {
		out := call[mcpserver.CausalChainOutput](t, cs, "get_causal_chain", map[string]any{"query": "bucket versioning"})
		require.Equal(t, "success", out.Status)
		require.GreaterOrEqual(t, len(out.Chain), 2)
		require.Equal(t, "Turn on bucket versioning", out.Chain[0].Title)
		require.Equal(t, "Use MinIO for sources", out.Chain[1].Title)
		require.True(t, strings.HasPrefix(out.Mermaid, "flowchart"), out.Mermaid)
	})
	t.Run("memory_diff", func(t *testing.T) {
		out := call[mcpserver.MemoryDiffOutput](t, cs, "memory_diff", map[string]any{})
		require.Equal(t, "alpha", out.AgentID)
		require.NotEmpty(t, out.Summary)
		require.Contains(t, out.Diff, "facts.md")
		facts := call[mcpserver.MemoryDiffOutput](t, cs, "memory_diff", map[string]any{"format": "facts"})
		require.NotEmpty(t, facts.Changes)
	})
	t.Run("get_stale_facts", func(t *testing.T) {
		out := call[mcpserver.GetStaleFactsOutput](t, cs, "get_stale_facts", map[string]any{"include_archived": true})
		require.Equal(t, "alpha", out.AgentID)
		require.NotNil(t, out.Facts)
	})
}

func testWriteTools(t *testing.T, e *env, cs *mcp.ClientSession, transport string) {
	read := call[mcpserver.ReadMemoryOutput](t, cs, "read_memory", map[string]any{})
	t.Run("propose_memory_update", func(t *testing.T) {
		fact := fmt.Sprintf("- the %s test proposed this over %s", alphaWord, transport)
		out := call[mcpserver.ProposalOutput](t, cs, "propose_memory_update", map[string]any{
			"updates":   []any{map[string]any{"file": "facts.md", "operation": "append", "section": "Technical", "content": fact}},
			"reasoning": "learned while testing MCP", "run_id": "run_mcp-test-" + transport,
		})
		require.Equal(t, "alpha", out.AgentID)
		require.NotEmpty(t, out.ProposalID)
		require.Contains(t, []string{"pending", "approved", "applied"}, out.Status)
		// The call was made with the caller's token: the proposal says who.
		got, err := e.pa.GetProposal(as(e.admin), &memoryv1.GetProposalRequest{ProposalId: out.ProposalID})
		require.NoError(t, err)
		require.Equal(t, "mcp-test-alpha", got.GetProposal().GetProposedBy())

		stale := call[mcpserver.ProposalOutput](t, cs, "propose_memory_update", map[string]any{
			"updates":   []any{map[string]any{"file": "facts.md", "operation": "append", "section": "Technical", "content": fact + " again"}},
			"reasoning": "stale version", "expected_version": read.Version - 1,
		})
		require.Equal(t, "rejected", stale.Status)
		require.Equal(t, "version_conflict", stale.Reason)
		require.Equal(t, "retry_with_latest", stale.Resolution)
	})
	t.Run("ingest_episode", func(t *testing.T) {
		episode := map[string]any{
			"episode_id": "ep-mcp-" + transport, "task_text": "Move the " + alphaWord + " sources to MinIO",
			"summary": "Copied the sources; the first upload timed out.", "used_skills": []any{"minio-client"},
			"touched_artifacts": []any{"scripts/upload.sh"}, "errors": []any{"upload timed out after 30s"},
			"outcome": map[string]any{"status": "partial", "severity": "low"}, "fix": "raise the client timeout",
			"context": "ops/storage/minio", "timestamp": "2026-03-01T09:30:00Z", "duration": "45s",
		}
		out := call[mcpserver.IngestEpisodeOutput](t, cs, "ingest_episode", map[string]any{"episode": episode})
		require.Equal(t, "ep-mcp-"+transport, out.EpisodeID)
		require.True(t, strings.HasPrefix(out.RunFile, "runs/run_"), out.RunFile)
		require.NotEmpty(t, out.Proposal.ProposalID)
		again := call[mcpserver.IngestEpisodeOutput](t, cs, "ingest_episode", map[string]any{"episode": episode})
		require.True(t, again.Duplicate, "re-ingesting the same episode is idempotent")
		require.Equal(t, out.Proposal.ProposalID, again.Proposal.ProposalID)

		bad := callError(t, cs, "ingest_episode", map[string]any{"episode": map[string]any{"task_text": "x", "timestamp": "yesterday"}})
		require.Contains(t, bad, "INVALID_ARGUMENT (InvalidArgument)")
		require.Contains(t, bad, "field=episode.timestamp")
	})
	t.Run("set_ttl", func(t *testing.T) {
		out := call[mcpserver.SetTTLOutput](t, cs, "set_ttl", map[string]any{
			"fact": "[[MinIO]] bucket mcpstorage has versioning on for the " + alphaWord + " archive", "ttl_seconds": 7 * 24 * 3600,
		})
		require.NotEmpty(t, out.Proposal.ProposalID)
		require.NotEmpty(t, out.ExpiresAt)
		expires, err := time.Parse(time.RFC3339, out.ExpiresAt)
		require.NoError(t, err)
		require.WithinDuration(t, time.Now().Add(7*24*time.Hour), expires, time.Hour)

		neg := callError(t, cs, "set_ttl", map[string]any{"fact": "x", "ttl_seconds": -5})
		require.Contains(t, neg, "ttl_seconds")
	})
}

func testResources(t *testing.T, cs *mcp.ClientSession) {
	ctx := context.Background()
	templates, err := cs.ListResourceTemplates(ctx, nil)
	require.NoError(t, err)
	var uris []string
	for _, tpl := range templates.ResourceTemplates {
		uris = append(uris, tpl.URITemplate)
		require.NotEmpty(t, tpl.Description)
	}
	require.ElementsMatch(t, []string{"memory://{agent_id}/snapshot.md", "memory://{agent_id}/facts.md", "memory://{agent_id}/open_loops.md"}, uris)

	list, err := cs.ListResources(ctx, nil)
	require.NoError(t, err)
	uris = nil
	for _, r := range list.Resources {
		uris = append(uris, r.URI)
	}
	require.ElementsMatch(t, []string{"memory://alpha/snapshot.md", "memory://alpha/facts.md", "memory://alpha/open_loops.md"}, uris,
		"the default agent's Layer 1 files")

	got, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "memory://alpha/facts.md"})
	require.NoError(t, err)
	require.Len(t, got.Contents, 1)
	require.Equal(t, "text/markdown", got.Contents[0].MIMEType)
	require.Contains(t, got.Contents[0].Text, "bucket mcpstorage has versioning on")
	loops, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "memory://alpha/open_loops.md"})
	require.NoError(t, err)
	require.Contains(t, loops.Contents[0].Text, "Migrate the "+alphaWord+" sources")

	// An agent token reaches only its own agents, resources included.
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "memory://beta/facts.md"})
	require.ErrorContains(t, err, "PERMISSION_DENIED")
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "memory://alpha/decisions.md"})
	require.Error(t, err, "only Layer 1 files are resources")
}

// testErrors: noDefault has alpha's agent token and no default agent.
func testErrors(t *testing.T, noDefault *mcp.ClientSession) {
	t.Run("another agent", func(t *testing.T) {
		msg := callError(t, noDefault, "read_memory", map[string]any{"agent_id": "beta"})
		require.True(t, strings.HasPrefix(msg, "PERMISSION_DENIED (PermissionDenied): "), msg)
		require.NotContains(t, msg, "beta keeps its secrets")
		msg = callError(t, noDefault, "propose_memory_update", map[string]any{"agent_id": "beta", "reasoning": "x",
			"updates": []any{map[string]any{"file": "facts.md", "operation": "append", "section": "S", "content": "- planted"}}})
		require.True(t, strings.HasPrefix(msg, "PERMISSION_DENIED"), msg)
	})
	t.Run("no agent", func(t *testing.T) {
		msg := callError(t, noDefault, "read_memory", map[string]any{})
		require.Contains(t, msg, "INVALID_AGENT_ID (InvalidArgument)")
		require.Contains(t, msg, "field=agent_id")
	})
	t.Run("field names are the tool's", func(t *testing.T) {
		msg := callError(t, noDefault, "route_context", map[string]any{"agent_id": "alpha", "query": "minio", "max_tokens": 1})
		require.Contains(t, msg, "INVALID_ARGUMENT (InvalidArgument)")
		require.Contains(t, msg, "field=max_tokens", "the service says budget; the tool's argument is max_tokens")
		msg = callError(t, noDefault, "propose_memory_update", map[string]any{"agent_id": "alpha", "reasoning": "x",
			"updates": []any{map[string]any{"file": "open_loops.md", "operation": "close", "loop_id": "nope"}}})
		require.Contains(t, msg, "field=updates[0].loop_id")
	})
	t.Run("bad arguments", func(t *testing.T) {
		// The SDK checks arguments against the schema; its errors get the
		// same shape as the services'.
		for _, tc := range []struct {
			tool  string
			args  map[string]any
			field string
		}{
			{"read_memory", map[string]any{"agent_id": "alpha", "mode": "everything"}, "mode"},
			{"search_memory", map[string]any{"query": "x", "unknown": 1}, "unknown"},
			{"route_context", map[string]any{"agent_id": "alpha"}, ""},
			{"search_memory", map[string]any{"query": "x", "top_k": 1000}, "top_k"},
			{"propose_memory_update", map[string]any{"agent_id": "alpha", "reasoning": "x",
				"updates": []any{map[string]any{"file": "facts.md", "operation": "explode"}}}, "updates[].operation"},
		} {
			msg := callError(t, noDefault, tc.tool, tc.args)
			require.True(t, strings.HasPrefix(msg, "INVALID_ARGUMENT (InvalidArgument): "), msg)
			if tc.field != "" {
				require.Contains(t, msg, "[field="+tc.field+"]")
			}
		}
	})
	t.Run("not found", func(t *testing.T) {
		msg := callError(t, noDefault, "get_entity", map[string]any{"entity_id": "no-such-entity-anywhere"})
		require.True(t, strings.HasPrefix(msg, "ENTITY_NOT_FOUND (NotFound)"), msg)
	})
}

// testHTTPEdge: /mcp refuses a request without a usable token before any
// MCP handling, in the REST edge's error shape, with the challenge MCP
// clients re-authenticate on.
func testHTTPEdge(t *testing.T, e *env) {
	url := "http://" + e.httpAddr + mcpserver.HTTPPath
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`
	post := func(t *testing.T, auth ...string) (*http.Response, map[string]any) {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(initialize))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for _, a := range auth {
			req.Header.Add("Authorization", a)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		var body map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		return resp, body
	}
	reasonOf := func(body map[string]any) string {
		details, _ := body["details"].([]any)
		require.NotEmpty(t, details, body)
		return details[0].(map[string]any)["reason"].(string)
	}
	expiredSigner, err := auth.NewSigner(e.secret, auth.WithSignerClock(func() time.Time { return time.Now().Add(-3 * time.Hour) }))
	require.NoError(t, err)
	expired, err := expiredSigner.Mint("old", []auth.Role{auth.RoleAgent}, []string{"alpha"}, time.Hour)
	require.NoError(t, err)

	for _, tc := range []struct {
		name      string
		auth      []string
		reason    string
		challenge string
	}{
		{"no token", nil, "UNAUTHENTICATED", `Bearer realm="garden-bloom-memory"`},
		{"basic auth", []string{"Basic YWxhZGRpbjpvcGVuc2VzYW1l"}, "UNAUTHENTICATED", `Bearer realm="garden-bloom-memory"`},
		{"two tokens", []string{"Bearer " + e.alpha, "Bearer " + e.admin}, "UNAUTHENTICATED", `error="invalid_request"`},
		{"forged", []string{"Bearer " + e.alpha + "x"}, "UNAUTHENTICATED", `error="invalid_token"`},
		{"expired", []string{"Bearer " + expired}, "TOKEN_EXPIRED", `error="invalid_token"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, tc.auth...)
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			require.Contains(t, resp.Header.Get("WWW-Authenticate"), tc.challenge)
			require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			require.EqualValues(t, 16, body["code"])
			require.Equal(t, tc.reason, reasonOf(body))
		})
	}
	t.Run("valid token", func(t *testing.T) {
		resp, body := post(t, "Bearer "+e.alpha)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		require.Equal(t, mcpserver.Name, body["result"].(map[string]any)["serverInfo"].(map[string]any)["name"])
	})
	t.Run("a default agent that is not an agent id", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodPost, url+"?agent=../beta", strings.NewReader(initialize))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+e.alpha)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		var body map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		require.Equal(t, "INVALID_AGENT_ID", reasonOf(body))
		require.Equal(t, "agent", body["details"].([]any)[0].(map[string]any)["metadata"].(map[string]any)["field"])
	})
	t.Run("body over the edge's limit", func(t *testing.T) {
		big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_memory","arguments":{"query":"` +
			strings.Repeat("a", 5<<20) + `"}}}`
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(big))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+e.alpha)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "--rest-max-body-bytes (4 MiB) bounds /mcp too")
	})
	t.Run("only POST", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+e.alpha)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "stateless: no server-sent event stream")
	})
}
