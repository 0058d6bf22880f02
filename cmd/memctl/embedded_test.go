package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// Issue #27: "with --data-dir, create an embedded memory store for local
// use": init creates it, later commands run memoryd inside memctl on it,
// and nothing else is needed — no server, no token.
func TestEmbeddedStoreNeedsNoServer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	c := &clirun{t: t, env: map[string]string{envConfig: filepath.Join(t.TempDir(), "c.yaml")}}
	doc := c.jsonOK("--data-dir", dir, "init", "local-agent", "--role", "Keeps notes", "--fact", "Notes: the store is local")
	require.Equal(t, dir, doc["dataDir"])
	require.DirExists(t, filepath.Join(dir, "memory.git"))
	for _, f := range []string{"auth.secret", embeddedConfigName} {
		require.FileExists(t, filepath.Join(dir, f))
	}
	cfg, err := os.ReadFile(filepath.Join(dir, embeddedConfigName))
	require.NoError(t, err)
	require.Contains(t, string(cfg), "auto-approve-default: true")

	// MEMCTL_DATA_DIR works like --data-dir.
	c.env[envDataDir] = dir
	read := c.jsonOK("read", "local-agent", "--mode", "wide")
	require.Contains(t, get(read, "content", "facts.md"), "the store is local")
	require.Contains(t, get(read, "content", "snapshot.md"), "Keeps notes")

	// init made local-agent the default agent (the config had none).
	require.Equal(t, true, doc["defaultAgentSaved"])
	ing := c.jsonOK("ingest", writeFile(t, "ep.json", specExample), "--wait")
	require.EqualValues(t, 1, ing["applied"])
	st := c.jsonOK("status")
	require.Equal(t, true, st["embedded"])
	require.Equal(t, "environment", st["from"])
	out, err := exec.Command("git", "--git-dir", filepath.Join(dir, "memory.git"), "log", "--format=%s", "main").CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "memory-update: local-agent / run_ep-")
}

// Issue #27: "memctl mcp for stdio": an MCP client (the official Go SDK's)
// initializes, lists the tools and calls one, with memctl's token.
func TestMCPOverStdio(t *testing.T) {
	s := server(t)
	const agent = "e2e-mcp"
	op := memctlFor(t, s, s.operator(t))
	op.ok("init", agent, "--fact", "Tools: the MCP server reads this fact", "--approve")
	require.Eventually(t, func() bool {
		r := op.run("read", agent, "--mode", "wide", "-o", "json")
		return r.code == 0 && strings.Contains(r.stdout, "the MCP server reads this fact")
	}, 30*time.Second, 50*time.Millisecond)

	session, done := mcpSession(t, memctlFor(t, s, s.agentToken(t, agent)), "mcp", "--agent", agent)
	ctx := context.Background()
	tools, err := session.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{"route_context", "read_memory", "search_memory", "propose_memory_update", "memory_diff",
		"get_entity", "get_causal_chain", "get_stale_facts", "set_ttl", "ingest_episode"} {
		require.Contains(t, names, want)
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "read_memory", Arguments: map[string]any{"mode": "wide"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	require.Contains(t, mcpText(res), "the MCP server reads this fact")
	// The token reaches only its agent.
	res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "read_memory", Arguments: map[string]any{"agent_id": "e2e-day"}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, mcpText(res), "PERMISSION_DENIED")
	require.NoError(t, session.Close())
	require.Equal(t, 0, <-done)
}

// mcpSession starts `memctl args…` in-process with pipes for stdin and
// stdout and connects an MCP client to it; done yields its exit code.
func mcpSession(t *testing.T, c *clirun, args ...string) (*mcp.ClientSession, <-chan int) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		var errOut strings.Builder
		lookup := func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }
		code := run(context.Background(), args, streams{in: inR, out: outW, err: &errOut}, lookup)
		_ = outW.Close()
		if code != 0 {
			t.Logf("memctl mcp: %s", errOut.String())
		}
		done <- code
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "memctl-test", Version: "1"}, nil)
	session, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	require.NoError(t, err)
	return session, done
}

func mcpText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// The same behaviour from the real binary (etcd's habit: the same checks
// in-process and against the binary): help, version, usage and
// unavailable exit codes.
func TestBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "memctl")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	env := append(os.Environ(), envConfig+"="+filepath.Join(t.TempDir(), "c.yaml"), envAddr+"=", envToken+"=", envDataDir+"=")
	runBin := func(args ...string) (int, string, string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok { //nolint:errorlint // exec returns it unwrapped
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return code, stdout.String(), stderr.String()
	}
	code, stdout, _ := runBin("--help")
	require.Equal(t, 0, code)
	require.Contains(t, stdout, "Examples:")
	require.Contains(t, stdout, "export-onboarding")
	code, stdout, _ = runBin("ingest", "--help")
	require.Equal(t, 0, code)
	require.Contains(t, stdout, "memctl ingest examples/episodes.jsonl --agent my-agent --wait")
	code, stdout, _ = runBin("version")
	require.Equal(t, 0, code)
	require.NotEmpty(t, strings.TrimSpace(stdout))
	code, _, stderr := runBin("read")
	require.Equal(t, exitUsage, code)
	require.True(t, strings.HasPrefix(stderr, "memctl: USAGE: "), stderr)
	code, _, stderr = runBin("--addr", "127.0.0.1:1", "--timeout", "5s", "status")
	require.Equal(t, exitUnavailable, code, stderr)
	require.Contains(t, stderr, "memctl: UNAVAILABLE: ")
	code, stdout, _ = runBin("completion", "bash")
	require.Equal(t, 0, code)
	require.Contains(t, stdout, "__start_memctl")
}
