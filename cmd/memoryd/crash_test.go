package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

// TestCrashDuringApply kills the real memoryd with SIGKILL at random moments
// while proposals are being applied, restarts it, and checks every promise of
// the write plane: no acknowledged proposal is lost, each is applied at most
// once (one commit each), nothing is half-committed (git fsck), history is
// linear and every agent's meta.json version counts its applied proposals.
func TestCrashDuringApply(t *testing.T) {
	rounds := 8
	if v, err := strconv.Atoi(os.Getenv("CRASH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	dataDir := t.TempDir()
	args := []string{"--target=all", "--auto-approve-default", "--data-dir", dataDir,
		"--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}
	agents := []string{"crash-a", "crash-b", "crash-c", "crash-d"}

	var mu sync.Mutex
	acked := map[string]string{} // proposal id -> agent
	seq := 0
	for round := range rounds {
		p := startKillable(t, args)
		ctx, cancel := context.WithCancel(context.Background())
		client := memoryv1.NewProposalApplyServiceClient(dial(t, p.grpcAddr))
		tctx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+mintFor(t, dataDir, auth.RoleService))
		var wg sync.WaitGroup
		for _, agent := range agents {
			wg.Go(func() {
				for ctx.Err() == nil {
					mu.Lock()
					seq++
					n := seq
					mu.Unlock()
					resp, err := client.Propose(tctx, &memoryv1.ProposeRequest{
						AgentId: agent, RunId: fmt.Sprintf("run_%d", n), IdempotencyKey: fmt.Sprintf("k%d", n),
						Updates: []*memoryv1.FileUpdate{{File: "facts.md", Operation: memoryv1.Operation_OPERATION_APPEND,
							Section: "Crash", Content: fmt.Sprintf("- fact %d written in round %d", n, round)}},
					})
					if err == nil {
						mu.Lock()
						acked[resp.GetProposalId()] = agent
						mu.Unlock()
					}
				}
			})
		}
		time.Sleep(time.Duration(150+rand.IntN(350)) * time.Millisecond) // let load build, then kill at a random instant
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
		<-p.exited
		cancel()
		wg.Wait()
	}
	require.NotEmpty(t, acked)

	// Final start: recovery finishes everything that was acknowledged.
	p := startKillable(t, args)
	client := memoryv1.NewProposalApplyServiceClient(dial(t, p.grpcAddr))
	admin := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+mintFor(t, dataDir, auth.RoleAdmin))
	deadline := time.Now().Add(60 * time.Second)
	for id := range acked {
		for {
			resp, err := client.GetProposal(admin, &memoryv1.GetProposalRequest{ProposalId: id})
			require.NoError(t, err, "acknowledged proposal %s must survive", id)
			p := resp.GetProposal()
			if p.GetStatus() == memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED {
				break
			}
			require.True(t, time.Now().Before(deadline), "proposal %s never applied: status %v reason %v: %s",
				id, p.GetStatus(), p.GetReason(), p.GetMessage())
			time.Sleep(10 * time.Millisecond)
		}
	}

	// Every stored proposal (acknowledged or caught mid-call) and its commit.
	applied := map[string]*memoryv1.Proposal{}
	perAgent := map[string]int32{}
	for _, agent := range agents {
		token := ""
		for {
			page, err := client.ListProposals(admin, &memoryv1.ListProposalsRequest{AgentId: agent, PageSize: 500, PageToken: token})
			require.NoError(t, err)
			for _, pr := range page.GetProposals() {
				require.NotEqual(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_FAILED, pr.GetStatus(), pr.GetMessage())
				if pr.GetStatus() == memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED {
					applied[pr.GetProposalId()] = pr
					perAgent[agent]++
				}
			}
			if token = page.GetNextPageToken(); token == "" {
				break
			}
		}
	}
	p.stop(t)

	repo := filepath.Join(dataDir, "memory.git")
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"--git-dir", repo}, args...)...).CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return string(out)
	}
	git("fsck", "--strict", "--full")
	require.Empty(t, strings.TrimSpace(git("rev-list", "--merges", "main")), "history is linear")
	commitsOf := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(git("log", "--format=%H %s", "main")), "\n") {
		sha, subject, _ := strings.Cut(line, " ")
		if rest, ok := strings.CutPrefix(subject, "memory-update: "); ok {
			parts := strings.Split(rest, " / ")
			commitsOf[parts[2]] = append(commitsOf[parts[2]], sha)
		}
	}
	require.Len(t, commitsOf, len(applied), "one commit per applied proposal, none for anything else")
	for id, pr := range applied {
		require.Len(t, commitsOf[id], 1, "proposal %s applied exactly once", id)
		require.Equal(t, commitsOf[id][0], pr.GetCommitSha())
	}
	for _, agent := range agents {
		meta, err := memlayout.ParseMeta([]byte(git("show", "main:memory/"+agent+"/meta.json")))
		require.NoError(t, err)
		require.Equal(t, perAgent[agent], meta.Version, "agent %s: version counts its applied proposals", agent)
	}
	t.Logf("%d rounds, %d proposals acknowledged, %d applied, %d commits", rounds, len(acked), len(applied), len(commitsOf))
}

// killable is a memoryd the test may SIGKILL.
type killable struct {
	process
	cmd    *exec.Cmd
	exited chan struct{}
}

func startKillable(t *testing.T, args []string) *killable {
	t.Helper()
	cmd := exec.Command(memorydBin, args...)
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT=")
	ready, dump, wait := watchLogs(t, cmd)
	require.NoError(t, cmd.Start())
	k := &killable{cmd: cmd, exited: make(chan struct{})}
	go func() { _ = wait(); close(k.exited) }()
	select {
	case k.process = <-ready:
	case <-k.exited:
		t.Fatalf("memoryd exited before serving\n%s", dump())
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("memoryd did not start\n%s", dump())
	}
	return k
}

func (k *killable) stop(t *testing.T) {
	require.NoError(t, k.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-k.exited:
	case <-time.After(30 * time.Second):
		_ = k.cmd.Process.Kill()
		t.Fatal("memoryd did not stop on SIGTERM")
	}
}

func mintFor(t testing.TB, dataDir string, roles ...auth.Role) string {
	t.Helper()
	secret, err := auth.LoadSecret(filepath.Join(dataDir, "auth.secret"))
	require.NoError(t, err)
	s, err := auth.NewSigner(secret)
	require.NoError(t, err)
	tok, err := s.Mint("crash-test", roles, []string{"*"}, time.Hour)
	require.NoError(t, err)
	return tok
}
