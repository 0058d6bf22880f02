package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/garden-bloom/memory/cmd/memoryd/app"
	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/telemetry"
)

// BenchmarkCommitToSearchable measures, in the all-in-one process, how long
// after a proposal's commit lands its fact is found by search (search-index
// follows proposal-apply's commit stream over gRPC). Reports p50/p95.
func BenchmarkCommitToSearchable(b *testing.B) {
	d := startInProcessWith(b, "--auto-approve-default")
	dataDir := d.dataDir
	conn := dial(b, d.grpcAddr[memoryv1.ProposalApplyService_ServiceDesc.ServiceName])
	pa := memoryv1.NewProposalApplyServiceClient(conn)
	si := memoryv1.NewSearchIndexServiceClient(conn)
	call := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+mintFor(b, dataDir, auth.RoleService))

	lags := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		word := fmt.Sprintf("marker%dx", i)
		resp, err := pa.Propose(call, &memoryv1.ProposeRequest{AgentId: "bench", RunId: fmt.Sprintf("run_%d", i),
			Updates: []*memoryv1.FileUpdate{{File: "facts.md", Operation: memoryv1.Operation_OPERATION_APPEND, Section: "Bench", Content: "- fact " + word}}})
		require.NoError(b, err)
		var applied time.Time
		for applied.IsZero() {
			p, err := pa.GetProposal(call, &memoryv1.GetProposalRequest{ProposalId: resp.GetProposalId()})
			require.NoError(b, err)
			if p.GetProposal().GetStatus() == memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED {
				applied = p.GetProposal().GetAppliedAt().AsTime()
			}
		}
		for {
			res, err := si.Search(call, &memoryv1.SearchRequest{Query: word, AgentId: "bench"})
			require.NoError(b, err)
			if len(res.GetResults()) > 0 {
				lags = append(lags, time.Since(applied))
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	b.StopTimer()
	slices.Sort(lags)
	b.ReportMetric(float64(lags[len(lags)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lags[len(lags)*95/100].Microseconds())/1000, "p95-ms")
}

// readBench is a suite over a repository of 1,000 agents, set up once for
// the read benchmarks.
type readBench struct {
	dir  string
	ca   memoryv1.ContextAssemblyServiceClient
	call context.Context
	n    int
}

var (
	readBenchOnce sync.Once
	readBenchEnv  *readBench
	readBenchErr  error
)

const benchAgents = 1000

// setupReadBench commits 1,000 agents' memory (snapshot, 40 facts, 8 open
// loops, decisions) in one commit, starts the suite on it and waits until the
// search index has caught up.
func setupReadBench(b *testing.B) *readBench {
	readBenchOnce.Do(func() {
		dataDir, err := os.MkdirTemp("", "membench-read-")
		if err != nil {
			readBenchErr = err
			return
		}
		ctx := context.Background()
		repo, err := memrepo.Init(ctx, filepath.Join(dataDir, "memory.git"), memrepo.InitOptions{})
		if err != nil {
			readBenchErr = err
			return
		}
		head, _ := repo.Head(ctx)
		var changes []memrepo.Change
		topics := []string{"storage", "backups", "replication", "alerting", "billing", "search", "retention", "access"}
		for a := range benchAgents {
			agent := fmt.Sprintf("agent-%04d", a)
			var facts, loops strings.Builder
			fmt.Fprintf(&facts, "# Facts: %s\n\n## Domain\n", agent)
			for f := range 40 {
				fmt.Fprintf(&facts, "- The %s service for team %d keeps %d replicas and rotates its keys every %d days\n", topics[(a+f)%len(topics)], f, f%5+1, f%30+1)
			}
			fmt.Fprintf(&loops, "# Open Loops: %s\n\n## Open\n", agent)
			for l := range 8 {
				fmt.Fprintf(&loops, "- [ ] loop_%03d: Confirm the %s migration step %d — opened 2026-02-1%d | priority: normal\n", l+1, topics[l], l, l)
			}
			dir := "memory/" + agent + "/"
			changes = append(changes,
				memrepo.Change{Path: dir + "snapshot.md", Content: []byte(fmt.Sprintf("# Snapshot: %s\n\n## Role\nOperator of the %s platform.\n\n## Active context\nWorking on the %s migration.\n", agent, topics[a%8], topics[(a+1)%8]))},
				memrepo.Change{Path: dir + "facts.md", Content: []byte(facts.String())},
				memrepo.Change{Path: dir + "open_loops.md", Content: []byte(loops.String())},
				memrepo.Change{Path: dir + "decisions.md", Content: []byte(fmt.Sprintf("# Decisions: %s\n\n## 2026-02-17 — Use MinIO\n**Status:** accepted\n**Rationale:** S3 API\n", agent))},
				memrepo.Change{Path: dir + "meta.json", Content: []byte(fmt.Sprintf(`{"agentId":%q,"version":1}`, agent))})
		}
		if _, err := repo.Commit(ctx, memrepo.CommitRequest{Parent: head, Changes: changes, Message: "benchmark: 1,000 agents"}); err != nil {
			readBenchErr = err
			return
		}
		cfg, flags, err := app.LoadConfig([]string{"--data-dir", dataDir, "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"},
			func(string) (string, bool) { return "", false })
		if err != nil {
			readBenchErr = err
			return
		}
		a, err := app.New(ctx, cfg, flags, telemetry.NewLogger(io.Discard, 8))
		if err != nil {
			readBenchErr = err
			return
		}
		go func() { _ = a.Run(ctx) }() // lives for the rest of the benchmark binary
		conn, err := grpc.NewClient(a.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			readBenchErr = err
			return
		}
		secret, _ := auth.LoadSecret(filepath.Join(dataDir, "auth.secret"))
		signer, _ := auth.NewSigner(secret)
		tok, _ := signer.Mint("bench", []auth.Role{auth.RoleService}, []string{"*"}, 24*time.Hour)
		call := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
		si := memoryv1.NewSearchIndexServiceClient(conn)
		for {
			st, err := si.GetIndexStatus(call, &memoryv1.GetIndexStatusRequest{})
			if err == nil && st.GetLagCommits() == 0 && st.GetDocuments() > 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		readBenchEnv = &readBench{dir: dataDir, ca: memoryv1.NewContextAssemblyServiceClient(conn), call: call, n: benchAgents}
	})
	require.NoError(b, readBenchErr)
	return readBenchEnv
}

// reportLatency reports p50/p95/p99 of the samples in milliseconds.
func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	at := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.95), "p95-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// BenchmarkReadMemory1000Agents: ReadMemory over gRPC on a random agent of
// 1,000, basic and wide.
func BenchmarkReadMemory1000Agents(b *testing.B) {
	env := setupReadBench(b)
	for _, mode := range []memoryv1.ReadMode{memoryv1.ReadMode_READ_MODE_BASIC, memoryv1.ReadMode_READ_MODE_WIDE} {
		b.Run(strings.ToLower(strings.TrimPrefix(mode.String(), "READ_MODE_")), func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for i := range b.N {
				t0 := time.Now()
				_, err := env.ca.ReadMemory(env.call, &memoryv1.ReadMemoryRequest{AgentId: fmt.Sprintf("agent-%04d", (i*7919)%env.n), Mode: mode})
				require.NoError(b, err)
				lat = append(lat, time.Since(t0))
			}
			reportLatency(b, lat)
		})
	}
}

// BenchmarkAssembleContext1000Agents: AssembleContext with a query hint and
// the default 200K budget on a random agent of 1,000.
func BenchmarkAssembleContext1000Agents(b *testing.B) {
	env := setupReadBench(b)
	lat := make([]time.Duration, 0, b.N)
	for i := range b.N {
		t0 := time.Now()
		_, err := env.ca.AssembleContext(env.call, &memoryv1.AssembleContextRequest{AgentId: fmt.Sprintf("agent-%04d", (i*7919)%env.n),
			QueryHint: "which replicas does the backups service keep"})
		require.NoError(b, err)
		lat = append(lat, time.Since(t0))
	}
	reportLatency(b, lat)
}
