package proposalapply

import (
	"context"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/grpctest"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/proposalstore"
	"github.com/garden-bloom/memory/pkg/tokens"
)

// clock is a settable test clock; real=true makes it the wall clock
// (benchmarks measure latency with it).
type clock struct {
	mu   sync.Mutex
	now  time.Time
	real bool
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.real {
		return time.Now()
	}
	return c.now
}
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// env is a running proposal-apply over real gRPC on loopback, with a real
// bare repository and the local object store.
type env struct {
	t       testing.TB
	dir     string
	repo    *memrepo.Repo
	blobs   blob.Store
	svc     *Service
	client  memoryv1.ProposalApplyServiceClient
	server  *grpctest.Server
	clock   *clock
	counter *tokens.Counter
	stop    func()
	// meters, when set before (re)starting, receives the service's metrics.
	meters metric.MeterProvider
	// guard, when set before (re)starting, is the semantic guard.
	guard memoryv1.EntityGraphServiceClient
}

type envOption func(*Config)

func autoApprove(c *Config) { c.AutoApproveDefault = true }

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	repo, err := memrepo.Init(ctx, filepath.Join(dir, "memory.git"), memrepo.InitOptions{})
	require.NoError(t, err)
	blobs, err := blob.NewFS(filepath.Join(dir, "objects"))
	require.NoError(t, err)
	e := &env{t: t, dir: dir, repo: repo, blobs: blobs,
		clock: &clock{now: time.Date(2026, 2, 17, 14, 30, 0, 0, time.UTC)}}
	e.counter, err = tokens.New("")
	require.NoError(t, err)
	e.start(opts...)
	return e
}

// start (re)starts the service over the same repository and objects.
func (e *env) start(opts ...envOption) {
	t := e.t
	ctx := context.Background()
	cfg := Config{}
	fs := flagSet()
	cfg.RegisterFlags(fs)
	cfg.WatchPoll = 20 * time.Millisecond
	for _, o := range opts {
		o(&cfg)
	}
	svc, err := New(ctx, cfg, Deps{Repo: e.repo, Blobs: e.blobs, ProposalIndex: e.proposalIndex(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: e.clock.Now, MeterProvider: e.meters, Guard: e.guard})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	e.server = grpctest.Serve(t, svc.Register)
	e.svc, e.client = svc, memoryv1.NewProposalApplyServiceClient(e.server.Conn)
	stopped := false
	e.stop = func() {
		if stopped {
			return
		}
		stopped = true
		e.server.Stop()
		svc.Stop()
	}
	t.Cleanup(e.stop)
}

// proposalIndex is where the service keeps its proposal index, as the
// embedded default does under its data dir.
func (e *env) proposalIndex() string { return filepath.Join(e.dir, "proposals.db") }

// offline changes the proposal store while the service is stopped, as
// another process over the same data would.
func (e *env) offline(change func(*proposalstore.Store)) {
	e.t.Helper()
	store, err := proposalstore.Open(context.Background(), e.blobs, proposalstore.Options{IndexPath: e.proposalIndex()})
	require.NoError(e.t, err)
	defer store.Close()
	change(store)
}

func (e *env) restart(opts ...envOption) {
	e.stop()
	e.start(opts...)
}

// as returns a context carrying a token with the roles for the agents.
func (e *env) as(sub string, roles []auth.Role, agents ...string) context.Context {
	return e.server.As(e.t, sub, roles, agents...)
}

func (e *env) agent(id string) context.Context {
	return e.as("run-of-"+id, []auth.Role{auth.RoleAgent}, id)
}
func (e *env) service() context.Context {
	return e.as("orchestrator", []auth.Role{auth.RoleService}, "*")
}
func (e *env) reviewer() context.Context {
	return e.as("alice", []auth.Role{auth.RoleReviewer}, "*")
}

// propose sends a proposal as the service role and requires success.
func (e *env) propose(req *memoryv1.ProposeRequest) *memoryv1.ProposeResponse {
	e.t.Helper()
	resp, err := e.client.Propose(e.service(), req)
	require.NoError(e.t, err)
	return resp
}

// wait polls until the proposal reaches one of the statuses.
func (e *env) wait(id string, statuses ...memoryv1.ProposalStatus) *memoryv1.Proposal {
	e.t.Helper()
	var p *memoryv1.Proposal
	require.Eventually(e.t, func() bool {
		resp, err := e.client.GetProposal(e.service(), &memoryv1.GetProposalRequest{ProposalId: id})
		require.NoError(e.t, err)
		p = resp.GetProposal()
		for _, s := range statuses {
			if p.GetStatus() == s {
				return true
			}
		}
		return false
	}, 20*time.Second, 5*time.Millisecond, "proposal %s never reached %v", id, statuses)
	return p
}

func (e *env) waitApplied(id string) *memoryv1.Proposal {
	e.t.Helper()
	p := e.wait(id, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED, memoryv1.ProposalStatus_PROPOSAL_STATUS_FAILED,
		memoryv1.ProposalStatus_PROPOSAL_STATUS_REJECTED, memoryv1.ProposalStatus_PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW)
	require.Equal(e.t, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED, p.GetStatus(), "message: %s", p.GetMessage())
	return p
}

// git runs the real git binary against the bare repository.
func (e *env) git(args ...string) string {
	e.t.Helper()
	out, err := exec.Command("git", append([]string{"--git-dir", e.repo.Path()}, args...)...).CombinedOutput()
	require.NoError(e.t, err, "git %v: %s", args, out)
	return string(out)
}

// file reads an agent file at main.
func (e *env) file(agent, rel string) string {
	e.t.Helper()
	f, err := memlayout.Resolve(agent, rel)
	require.NoError(e.t, err)
	head, err := e.repo.Head(context.Background())
	require.NoError(e.t, err)
	data, err := e.repo.ReadFile(context.Background(), head, f.Path)
	require.NoError(e.t, err)
	return string(data)
}

func (e *env) meta(agent string) memlayout.Meta {
	m, err := memlayout.ParseMeta([]byte(e.file(agent, memlayout.MetaFile)))
	require.NoError(e.t, err)
	return m
}

func (e *env) commitCount() int {
	n := strings.TrimSpace(e.git("rev-list", "--count", "main"))
	var c int
	for _, ch := range n {
		c = c*10 + int(ch-'0')
	}
	return c
}

// requireCommitCountStays fails the test if main's commit count is not
// want at any moment within d. It polls on the test's goroutine: testify's
// Never calls its condition on another one, which could still be running
// git after the test (and its temp dir) had ended, a panic.
func (e *env) requireCommitCountStays(want int, d time.Duration) {
	e.t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		require.Equal(e.t, want, e.commitCount())
	}
}

func ver(v int32) *int32 { return &v }

func appendFact(section, content string) *memoryv1.FileUpdate {
	return &memoryv1.FileUpdate{File: "facts.md", Operation: memoryv1.Operation_OPERATION_APPEND, Section: section, Content: content}
}

func adminRole() []auth.Role { return []auth.Role{auth.RoleAdmin} }
