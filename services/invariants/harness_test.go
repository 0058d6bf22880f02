package invariants

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/grpctest"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/tokens"
	"github.com/garden-bloom/memory/services/contextassembly"
	"github.com/garden-bloom/memory/services/proposalapply"
)

// testClock is the services' clock; the test advances it between proposals.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// harness is proposal-apply (writes) and context-assembly (reads) over real
// gRPC on loopback, sharing one real bare repository and a local object store.
type harness struct {
	t       *testing.T
	repo    *memrepo.Repo
	pa      *proposalapply.Service
	pac     memoryv1.ProposalApplyServiceClient
	paSrv   *grpctest.Server
	cac     memoryv1.ContextAssemblyServiceClient
	caSrv   *grpctest.Server
	clock   *testClock
	counter *tokens.Counter
	git     *gitReader
}

func newHarness(t *testing.T, encoding string) *harness {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	repo, err := memrepo.Init(ctx, filepath.Join(dir, "memory.git"), memrepo.InitOptions{})
	require.NoError(t, err)
	blobs, err := blob.NewFS(filepath.Join(dir, "objects"))
	require.NoError(t, err)
	h := &harness{t: t, repo: repo, clock: &testClock{now: time.Date(2026, 2, 17, 14, 30, 0, 0, time.UTC)}}

	cfg := proposalapply.Config{}
	cfg.RegisterFlags(flag.NewFlagSet("invariants", flag.ContinueOnError))
	cfg.AutoApproveDefault = true
	cfg.WatchPoll = 20 * time.Millisecond
	cfg.RotateEvery = 0 // no run rotation behind the model's back
	cfg.BackupEvery = 0
	if encoding != "" {
		cfg.TokenEncoding = encoding
	}
	h.counter, err = tokens.New(cfg.TokenEncoding)
	require.NoError(t, err)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	pa, err := proposalapply.New(ctx, cfg, proposalapply.Deps{Repo: repo, Blobs: blobs, Logger: logger, Now: h.clock.Now})
	require.NoError(t, err)
	require.NoError(t, pa.Start(ctx))
	h.pa = pa
	h.paSrv = grpctest.Serve(t, pa.Register)
	h.pac = memoryv1.NewProposalApplyServiceClient(h.paSrv.Conn)
	t.Cleanup(func() { h.paSrv.Stop(); pa.Stop() })

	// The read plane: no usage client, so the test alone reports fact use
	// and the model knows every fact's last use.
	ca, err := contextassembly.New(contextassembly.Deps{RepoPath: repo.Path(), Logger: logger, TokenEncoding: cfg.TokenEncoding, Blobs: blobs})
	require.NoError(t, err)
	ca.Start(ctx)
	h.caSrv = grpctest.Serve(t, ca.Register)
	h.cac = memoryv1.NewContextAssemblyServiceClient(h.caSrv.Conn)
	t.Cleanup(func() { h.caSrv.Stop(); ca.Stop() })

	h.git = newGitReader(t, repo.Path())
	return h
}

func (h *harness) service() context.Context {
	return h.paSrv.As(h.t, "orchestrator", []auth.Role{auth.RoleService}, "*")
}
func (h *harness) admin() context.Context {
	return h.paSrv.As(h.t, "root", []auth.Role{auth.RoleAdmin}, "*")
}
func (h *harness) reviewer() context.Context {
	return h.paSrv.As(h.t, "alice", []auth.Role{auth.RoleReviewer}, "*")
}
func (h *harness) reader() context.Context {
	return h.caSrv.As(h.t, "runtime", []auth.Role{auth.RoleService}, "*")
}

// settle waits until the engine is idle and returns the proposal as stored.
// A proposal flagged for a person is approved by a reviewer (the model
// treats the agent as auto-approved; flags are recorded).
func (h *harness) settle(id string, flagged *[]string) (*memoryv1.Proposal, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	approved := false
	for {
		if err := h.pa.WaitIdle(ctx); err != nil {
			return nil, err
		}
		resp, err := h.pac.GetProposal(h.service(), &memoryv1.GetProposalRequest{ProposalId: id})
		if err != nil {
			return nil, err
		}
		p := resp.GetProposal()
		switch p.GetStatus() {
		case memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED, memoryv1.ProposalStatus_PROPOSAL_STATUS_FAILED,
			memoryv1.ProposalStatus_PROPOSAL_STATUS_REJECTED:
			return p, nil
		case memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, memoryv1.ProposalStatus_PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW:
			if approved {
				return p, fmt.Errorf("proposal %s still %s after approval", id, p.GetStatus())
			}
			*flagged = append(*flagged, fmt.Sprintf("%s %s %v", p.GetStatus(), p.GetReason(), p.GetFlags()))
			if _, err := h.pac.ApproveProposal(h.reviewer(), &memoryv1.ApproveProposalRequest{ProposalId: id, Comment: "invariant test"}); err != nil {
				return p, fmt.Errorf("approve %s: %w", id, err)
			}
			approved = true
		}
		if ctx.Err() != nil {
			return p, ctx.Err()
		}
		time.Sleep(time.Millisecond)
	}
}

// gitReader reads the repository with the real git binary, independently of
// the services' own git code: a long-lived `git cat-file --batch` for blobs.
type gitReader struct {
	t      *testing.T
	dir    string
	mu     sync.Mutex
	in     io.WriteCloser
	out    *bufio.Reader
	cmd    *exec.Cmd
	closed bool
}

func newGitReader(t *testing.T, dir string) *gitReader {
	g := &gitReader{t: t, dir: dir}
	g.cmd = exec.Command("git", "--git-dir", dir, "cat-file", "--batch")
	var err error
	g.in, err = g.cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := g.cmd.StdoutPipe()
	require.NoError(t, err)
	g.out = bufio.NewReaderSize(stdout, 1<<20)
	require.NoError(t, g.cmd.Start())
	t.Cleanup(func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.closed = true
		_ = g.in.Close()
		_ = g.cmd.Wait()
	})
	return g
}

// object returns the type and content of a named object ("sha:path",
// "refs/heads/main") and whether it exists.
func (g *gitReader) object(name string) (typ, content string, ok bool) {
	_, typ, content, ok = g.objectID(name)
	return typ, content, ok
}

// objectID is object with the object's id.
func (g *gitReader) objectID(name string) (oid, typ, content string, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, err := fmt.Fprintf(g.in, "%s\n", name)
	require.NoError(g.t, err)
	header, err := g.out.ReadString('\n')
	require.NoError(g.t, err)
	fields := strings.Fields(header)
	if len(fields) == 2 && fields[1] == "missing" {
		return "", "", "", false
	}
	require.Len(g.t, fields, 3, "cat-file header %q", header)
	size, err := strconv.Atoi(fields[2])
	require.NoError(g.t, err)
	buf := make([]byte, size+1) // content and the trailing LF
	_, err = io.ReadFull(g.out, buf)
	require.NoError(g.t, err)
	return fields[0], fields[1], string(buf[:size]), true
}

// file returns the content of path at commit and whether it exists.
func (g *gitReader) file(commit, path string) (string, bool) {
	typ, content, ok := g.object(commit + ":" + path)
	if !ok || typ != "blob" {
		return "", false
	}
	return content, true
}

type treeEntry struct {
	name, sha string
	tree      bool
}

// tree reads a tree object ("sha:path" or a tree sha); nil if missing.
func (g *gitReader) tree(name string) []treeEntry {
	typ, raw, ok := g.object(name)
	if !ok || typ != "tree" {
		return nil
	}
	var out []treeEntry
	for len(raw) > 0 {
		sp := strings.IndexByte(raw, ' ')
		nul := strings.IndexByte(raw, 0)
		mode, fname := raw[:sp], raw[sp+1:nul]
		sha := fmt.Sprintf("%x", raw[nul+1:nul+21])
		out = append(out, treeEntry{name: fname, sha: sha, tree: mode == "40000"})
		raw = raw[nul+21:]
	}
	return out
}

// diffTrees appends the paths of blobs that differ between trees a and b
// (shas; "" = empty tree) under prefix.
func (g *gitReader) diffTrees(a, b, prefix string, out *[]string) {
	list := func(sha string) map[string]treeEntry {
		m := map[string]treeEntry{}
		if sha != "" {
			for _, e := range g.tree(sha) {
				m[e.name] = e
			}
		}
		return m
	}
	ea, eb := list(a), list(b)
	names := map[string]bool{}
	for n := range ea {
		names[n] = true
	}
	for n := range eb {
		names[n] = true
	}
	for n := range names {
		x, inA := ea[n]
		y, inB := eb[n]
		if inA && inB && x.sha == y.sha {
			continue
		}
		if x.tree || y.tree {
			sa, sb := "", ""
			if inA && x.tree {
				sa = x.sha
			}
			if inB && y.tree {
				sb = y.sha
			}
			g.diffTrees(sa, sb, prefix+n+"/", out)
			if (inA && !x.tree) || (inB && !y.tree) {
				*out = append(*out, prefix+n)
			}
			continue
		}
		*out = append(*out, prefix+n)
	}
}

func (g *gitReader) run(args ...string) string {
	out, err := exec.Command("git", append([]string{"--git-dir", g.dir}, args...)...).CombinedOutput()
	require.NoError(g.t, err, "git %v: %s", args, out)
	return string(out)
}

// head is main's commit ("" before the first commit).
func (g *gitReader) head() string {
	oid, typ, _, ok := g.objectID("refs/heads/main")
	if !ok || typ != "commit" {
		return ""
	}
	return oid
}

// commit returns a commit's parents, message and changed paths.
func (g *gitReader) commit(sha string) (parents []string, message string, files []string) {
	_, text, ok := g.object(sha)
	require.True(g.t, ok, "commit %s", sha)
	hdr, msg, _ := strings.Cut(text, "\n\n")
	tree := ""
	for _, l := range strings.Split(hdr, "\n") {
		if v, ok := strings.CutPrefix(l, "parent "); ok {
			parents = append(parents, v)
		}
		if v, ok := strings.CutPrefix(l, "tree "); ok {
			tree = v
		}
	}
	parentTree := ""
	if len(parents) > 0 {
		_, ptext, _ := g.object(parents[0])
		if v, ok := strings.CutPrefix(strings.SplitN(ptext, "\n", 2)[0], "tree "); ok {
			parentTree = v
		}
	}
	g.diffTrees(parentTree, tree, "", &files)
	sort.Strings(files)
	return parents, msg, files
}

// ls lists the blobs under dir (ending in "/") at commit, relative to dir.
func (g *gitReader) ls(commit, dir string) []string {
	var out []string
	var walk func(name, prefix string)
	walk = func(name, prefix string) {
		for _, e := range g.tree(name) {
			if e.tree {
				walk(e.sha, prefix+e.name+"/")
			} else {
				out = append(out, prefix+e.name)
			}
		}
	}
	walk(commit+":"+strings.TrimSuffix(dir, "/"), "")
	sort.Strings(out)
	return out
}
