package main

import (
	"bufio"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/garden-bloom/memory/cmd/memoryd/app"
	"github.com/garden-bloom/memory/pkg/mcpserver"
)

func (c *cli) loginCommand() *cobra.Command {
	var noVerify bool
	var defaultAgent string
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Remember a server address and token in the config file (mode 0600)",
		Long: `Write --addr and --token (and --tls/--tls-ca) to the config file, so later
commands need neither: <user config dir>/memctl/config.yaml, or $MEMCTL_CONFIG,
or --config. The file is created with mode 0600 (it holds a bearer token).
"--token -" reads the token from stdin, keeping it out of the shell history.
Unless --no-verify, the server must answer a gRPC health check first.

--agent saves a default agent for the commands that take --agent (ingest,
search, export-onboarding, mcp); MEMCTL_AGENT overrides it.

Precedence for every command: flags > environment (MEMCTL_ADDR, MEMCTL_TOKEN,
MEMCTL_DATA_DIR, MEMCTL_AGENT) > config file > default (127.0.0.1:9090).`,
		Example: `  memctl login --addr memory.internal:9090 --token "$TOKEN"
  memoryd token --sub me --role reviewer --agent '*' | memctl login --addr 127.0.0.1:9090 --token -
  memctl login --data-dir ~/agent-memory --agent my-agent`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			flags := cmd.Flags()
			if !changed(flags, "addr") && !changed(flags, "data-dir") {
				return usagef("login needs --addr (a server) or --data-dir (an embedded store)")
			}
			token := c.token
			if token == "-" {
				line, err := bufio.NewReader(c.in).ReadString('\n')
				if err != nil && line == "" {
					return usagef("--token -: no token on stdin")
				}
				token = strings.TrimSpace(line)
			}
			fc := fileConfig{Addr: c.addr, Token: token, DataDir: c.dataDir, TLS: c.tls || c.tlsCA != "", TLSCA: c.tlsCA, Agent: defaultAgent}
			if !changed(flags, "agent") {
				fc.Agent = c.fileCfg.Agent // a new login keeps the default agent
			}
			c.target = target{Addr: fc.Addr, DataDir: fc.DataDir, Token: token, TLS: fc.TLS, TLSCA: fc.TLSCA, From: "flags"}
			if !noVerify && fc.DataDir == "" {
				conn, err := c.connect(cmd.Context())
				if err != nil {
					return err
				}
				ctx := cmd.Context()
				if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
					return err
				}
			}
			if err := saveConfig(c.cfgPath, fc); err != nil {
				return err
			}
			where := fc.Addr
			if fc.DataDir != "" {
				where = "embedded store " + fc.DataDir
			}
			_, err := fmt.Fprintf(c.out, "Saved %s (token: %s) to %s\n", where, map[bool]string{true: "yes", false: "none"}[token != ""], c.cfgPath)
			return err
		},
	}
	cmd.Flags().BoolVar(&noVerify, "no-verify", false, "save without checking that the server answers")
	cmd.Flags().StringVar(&defaultAgent, "agent", "", "default agent of ingest, search, export-onboarding and mcp")
	return cmd
}

func (c *cli) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print memctl's version",
		Example: "  memctl version",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(_ *cobra.Command, _ []string) error {
			return c.printer.value(map[string]string{"version": app.Version}, func(t *table) { t.row(app.Version) })
		},
	}
}

func (c *cli) mcpCommand() *cobra.Command {
	var agent string
	var callTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the memory's MCP tools over stdio (for Claude, Cursor, …)",
		Long: `Serve the Model Context Protocol over stdin/stdout for one client: an agent
host (Claude Desktop, Claude Code, Cursor) starts 'memctl mcp' as a
subprocess. Every tool call goes to memoryd with memctl's token, so the token
decides which agents the tools reach; --agent is the default agent of calls
that name none. Nothing but JSON-RPC is written to stdout.

Tools: route_context, read_memory, search_memory, propose_memory_update,
memory_diff, get_entity, get_causal_chain, get_stale_facts, set_ttl,
ingest_episode; resources: each agent's Layer 1 files. See docs/agents.md.`,
		Example: `  memctl mcp --agent my-agent
  MEMCTL_ADDR=127.0.0.1:9090 MEMCTL_TOKEN=… memctl mcp
  memctl --data-dir ~/agent-memory mcp --agent my-agent`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			conn, err := c.connect(cmd.Context())
			if err != nil {
				return err
			}
			token := c.target.Token
			if token == "" && c.embedded != nil {
				token = c.embedded.token
			}
			return mcpserver.RunStdio(cmd.Context(), conn, token, c.in, c.out, mcpserver.Options{
				Agent: c.agentFlag(cmd, agent), Version: app.Version, CallTimeout: callTimeout})
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "default agent of tool calls that name none (default: $MEMCTL_AGENT or the config's agent)")
	cmd.Flags().DurationVar(&callTimeout, "call-timeout", 0, "deadline of each tool call (default 30s)")
	return cmd
}
