package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/durationpb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// serverStatus is `memctl status` without an agent (-o json).
type serverStatus struct {
	Target   string            `json:"target"`
	From     string            `json:"from"`
	Embedded bool              `json:"embedded"`
	Services map[string]string `json:"services"`
	// Index is GetIndexStatus's answer, when the token may read it.
	Index      *indexStatus `json:"index,omitempty"`
	IndexError string       `json:"indexError,omitempty"`
}

type indexStatus struct {
	LastCommit string `json:"lastCommit"`
	HeadCommit string `json:"headCommit"`
	Documents  int32  `json:"documents"`
	Chunks     int32  `json:"chunks"`
	LagCommits int32  `json:"lagCommits"`
	Reindexing bool   `json:"reindexing"`
}

var serviceNames = []string{
	memoryv1.ContextAssemblyService_ServiceDesc.ServiceName,
	memoryv1.SearchIndexService_ServiceDesc.ServiceName,
	memoryv1.EntityGraphService_ServiceDesc.ServiceName,
	memoryv1.ProposalApplyService_ServiceDesc.ServiceName,
}

func (c *cli) statusCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "status [AGENT]",
		Short: "Show an agent's memory status, or the server's health",
		Long: `With an agent: its version, Layer 1 sizes against their hard limits, run count
(GetAgentStatus). Without: where memctl connects (and why: flag, environment,
config file or default), each service's gRPC health and the search index.`,
		Example: `  memctl status
  memctl status my-agent
  memctl status my-agent -o json | jq .layer1Tokens`,
		Args: rangeArgs(0, 1, "[AGENT]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			cl, err := c.clients(ctx)
			if err != nil {
				return err
			}
			if len(args) == 1 {
				resp, err := cl.ca.GetAgentStatus(ctx, &memoryv1.GetAgentStatusRequest{AgentId: args[0]})
				if err != nil {
					return err
				}
				return c.printer.message(resp, func(t *table) {
					m := resp.GetMeta()
					t.kv("agent", resp.GetAgentId())
					t.kv("version", m.GetVersion())
					t.kv("last update", m.GetLastUpdate())
					t.kv("last run", m.GetLastRunId())
					t.kv("commit", resp.GetCommit())
					t.kv("runs", resp.GetRuns())
					t.kv("layer 1", fmt.Sprintf("%d / %d tokens", resp.GetLayer1Tokens(), resp.GetLayer1Limit()))
					t.header("file", "tokens", "limit", "used")
					for _, u := range resp.GetLayer1() {
						t.row(u.GetFile(), u.GetTokens(), u.GetLimit(), percent(u.GetTokens(), u.GetLimit()))
					}
				})
			}
			return c.serverStatus(ctx, cl)
		},
	}
}

func percent(n, of int32) string {
	if of == 0 {
		return "-"
	}
	return strconv.Itoa(int(n*100/of)) + "%"
}

func (c *cli) serverStatus(ctx context.Context, cl *clients) error {
	st := serverStatus{Target: c.target.Addr, From: c.target.From, Services: map[string]string{}}
	if c.target.DataDir != "" {
		dir, _ := filepath.Abs(c.target.DataDir)
		st.Target, st.Embedded = dir, true
	}
	conn, err := c.connect(ctx)
	if err != nil {
		return err
	}
	health := healthpb.NewHealthClient(conn)
	var firstErr error
	for _, s := range serviceNames {
		resp, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: s})
		if err != nil {
			st.Services[s] = strings.ToLower(reasonOf(err))
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		st.Services[s] = strings.ToLower(resp.GetStatus().String())
	}
	if idx, err := cl.search.GetIndexStatus(ctx, &memoryv1.GetIndexStatusRequest{}); err == nil {
		st.Index = &indexStatus{LastCommit: idx.GetLastCommit(), HeadCommit: idx.GetHeadCommit(), Documents: idx.GetDocuments(),
			Chunks: idx.GetChunks(), LagCommits: idx.GetLagCommits(), Reindexing: idx.GetReindexing()}
	} else {
		st.IndexError = reasonOf(err) + ": " + messageOf(err)
	}
	if err := c.printer.value(st, func(t *table) {
		where := st.Target
		if st.Embedded {
			where = "embedded store " + where
		}
		t.kv("server", where+" (from "+st.From+")")
		for _, s := range serviceNames {
			t.kv(s, st.Services[s])
		}
		if st.Index != nil {
			t.kv("index", fmt.Sprintf("%d documents, %d chunks, %d commits behind, at %s", st.Index.Documents, st.Index.Chunks,
				st.Index.LagCommits, shortSHA(st.Index.LastCommit)))
		} else {
			t.kv("index", st.IndexError)
		}
	}); err != nil {
		return err
	}
	// Unreachable is an error (exit 6), so `memctl status && …` works in scripts.
	return firstErr
}

func (c *cli) staleCommand() *cobra.Command {
	var archived bool
	cmd := &cobra.Command{
		Use:   "stale AGENT",
		Short: "List facts whose TTL has run out (GetStaleFacts)",
		Long: `List an agent's stale facts (memory-bridge §4): facts whose TTL has run out and
facts already marked stale; with --archived also those archived to
decisions.md. 'memctl stale set-ttl' gives a fact a TTL and an expiry action.`,
		Example: `  memctl stale my-agent
  memctl stale my-agent --archived -o json
  memctl stale set-ttl my-agent "MinIO bucket mcpstorage has versioning on" --ttl 30d --on-expire archive`,
		Args: exactArgs(1, "AGENT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.clients(cmd.Context())
			if err != nil {
				return err
			}
			resp, err := cl.ca.GetStaleFacts(cmd.Context(), &memoryv1.GetStaleFactsRequest{AgentId: args[0], IncludeArchived: archived})
			if err != nil {
				return err
			}
			return c.printer.message(resp, func(t *table) {
				t.header("section", "expired", "action", "marked", "archived", "fact")
				for _, f := range resp.GetFacts() {
					t.row(f.GetSection(), f.GetExpiresAt(), f.GetOnExpire(), f.GetMarkedStale(), f.GetArchived(), f.GetFact())
				}
				t.text(fmt.Sprintf("%d stale facts at %s\n", len(resp.GetFacts()), shortSHA(resp.GetCommit())))
			})
		},
	}
	cmd.Flags().BoolVar(&archived, "archived", false, "also facts archived to decisions.md")
	cmd.AddCommand(c.setTTLCommand())
	return cmd
}

func (c *cli) setTTLCommand() *cobra.Command {
	var ttl, onExpire, runID string
	cmd := &cobra.Command{
		Use:   "set-ttl AGENT FACT",
		Short: "Give a fact a TTL and an expiry action (SetFactTTL)",
		Long: `Give a fact of facts.md (its exact line, or its text without "- ") a time to
live and what happens when it runs out: mark_stale (default), archive (to
decisions.md, Layer 2) or delete. --ttl 0 removes the TTL. The change is a
proposal like any other, so git shows it.`,
		Example: `  memctl stale set-ttl my-agent "Staging runs Postgres 16" --ttl 30d
  memctl stale set-ttl my-agent "Deploy freeze until Friday" --ttl 72h --on-expire delete
  memctl stale set-ttl my-agent "Staging runs Postgres 16" --ttl 0`,
		Args: exactArgs(2, "AGENT FACT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := parseTTL(ttl)
			if err != nil {
				return err
			}
			action, err := parseEnum("on-expire", onExpire, memoryv1.TTLAction(0).Descriptor())
			if err != nil {
				return err
			}
			cl, err := c.clients(cmd.Context())
			if err != nil {
				return err
			}
			resp, err := cl.write.SetFactTTL(cmd.Context(), &memoryv1.SetFactTTLRequest{AgentId: args[0], Fact: args[1],
				Ttl: durationpb.New(d), OnExpire: memoryv1.TTLAction(action), RunId: runID})
			if err != nil {
				return err
			}
			return c.printer.message(resp, func(t *table) {
				p := resp.GetProposal()
				t.header("proposal", "status", "reason", "expires")
				t.row(p.GetProposalId(), t.status(short(p.GetStatus())), reasonText(p.GetReason()), resp.GetExpiresAt())
			})
		},
	}
	cmd.Flags().StringVar(&ttl, "ttl", "", "time to live: a Go duration (72h) or days/weeks (30d, 2w); 0 removes it")
	cmd.Flags().StringVar(&onExpire, "on-expire", "mark_stale", "mark_stale | archive | delete")
	cmd.Flags().StringVar(&runID, "run-id", "", "run id of the proposal")
	_ = cmd.MarkFlagRequired("ttl")
	_ = cmd.RegisterFlagCompletionFunc("on-expire", cobra.FixedCompletions([]string{"mark_stale", "archive", "delete"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// parseTTL reads a Go duration or a whole number of days (d) or weeks (w).
func parseTTL(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	for suffix, unit := range map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			v, err := strconv.Atoi(n)
			if err != nil || v < 0 {
				return 0, usagef("--ttl %q: want a duration such as 72h, 30d or 2w", s)
			}
			return time.Duration(v) * unit, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, usagef("--ttl %q: want a duration such as 72h, 30d or 2w", s)
	}
	return d, nil
}
