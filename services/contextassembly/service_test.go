package contextassembly

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/grpctest"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/tokens"
)

type env struct {
	t      *testing.T
	repo   *memrepo.Repo
	client memoryv1.ContextAssemblyServiceClient
	server *grpctest.Server
	when   time.Time
}

func newEnv(t *testing.T) *env { return newEnvWithSources(t, nil) }

// newEnvWithSources is newEnv with the agents' sources in blobs (and the
// service's clock now, if given).
func newEnvWithSources(t *testing.T, blobs blob.Store, now ...func() time.Time) *env {
	repo, err := memrepo.Init(context.Background(), filepath.Join(t.TempDir(), "memory.git"), memrepo.InitOptions{})
	require.NoError(t, err)
	d := Deps{RepoPath: repo.Path(), Blobs: blobs, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if len(now) > 0 {
		d.Now = now[0]
	}
	svc, err := New(d)
	require.NoError(t, err)
	server := grpctest.Serve(t, svc.Register)
	return &env{t: t, repo: repo, client: memoryv1.NewContextAssemblyServiceClient(server.Conn), server: server,
		when: time.Date(2026, 2, 17, 9, 0, 0, 0, time.UTC)}
}

func (e *env) ctx(roles []auth.Role, agents ...string) context.Context {
	return e.server.As(e.t, "t", roles, agents...)
}

func (e *env) svc() context.Context { return e.ctx([]auth.Role{auth.RoleService}, "*") }

// commit writes files as of e.when (advancing an hour per commit).
func (e *env) commit(msg string, files map[string]string) plumbing.Hash {
	ctx := context.Background()
	head, err := e.repo.Head(ctx)
	require.NoError(e.t, err)
	var changes []memrepo.Change
	for p, c := range files {
		changes = append(changes, memrepo.Change{Path: p, Content: []byte(c)})
	}
	e.when = e.when.Add(time.Hour)
	sig := memrepo.Signature{Name: "t", Email: "t@x", When: e.when}
	h, err := e.repo.Commit(ctx, memrepo.CommitRequest{Parent: head, Changes: changes, Message: msg, Author: sig, Committer: sig})
	require.NoError(e.t, err)
	return h
}

func seedAgent(e *env) plumbing.Hash {
	return e.commit("memory-update: cur / run_1 / proposal_1\n\nFiles: snapshot.md\nReason: seed\nAuto-approved: true\n", map[string]string{
		"memory/cur/snapshot.md":            "# Snapshot: cur\n\n## Role\nCurator.\n",
		"memory/cur/open_loops.md":          "# Open Loops: cur\n\n## Open\n- [ ] loop_001: check backups — opened 2026-02-17 | priority: normal\n",
		"memory/cur/facts.md":               "# Facts: cur\n\n## Domain\n- fact one\n",
		"memory/cur/decisions.md":           "# Decisions: cur\n\n## 2026-02-17 — Use MinIO\n**Status:** accepted\n",
		"memory/cur/changelog.md":           "# Changelog: cur\n\n## 2026-02-17\n\n### 10:00 — run_1 / proposal_1\n- **snapshot.md:** replaced\n",
		"memory/cur/timeline/2026-02-17.md": "# Timeline: cur / 2026-02-17\n",
		"memory/cur/runs/run_1.md":          "# Run: run_1\n",
		"memory/cur/meta.json":              `{"agentId":"cur","version":1,"schemaVersion":"1.0"}`,
	})
}

func TestReadModesNeverLoadLayer2AndAreDeterministic(t *testing.T) {
	e := newEnv(t)
	seedAgent(e)
	files := func(r *memoryv1.ReadMemoryResponse) []string {
		var out []string
		for _, f := range r.GetFiles() {
			out = append(out, f.GetFile())
		}
		return out
	}
	basic, err := e.client.ReadMemory(e.svc(), &memoryv1.ReadMemoryRequest{AgentId: "cur"})
	require.NoError(t, err)
	require.Equal(t, []string{"snapshot.md", "open_loops.md"}, files(basic))
	require.Equal(t, memoryv1.ReadMode_READ_MODE_BASIC, basic.GetMode())
	require.Equal(t, int32(1), basic.GetVersion())
	require.LessOrEqual(t, basic.GetTokenCount(), int32(4100))
	require.Equal(t, e.when, basic.GetLoadedAt().AsTime(), "loadedAt is the commit's time")

	wide, err := e.client.ReadMemory(e.svc(), &memoryv1.ReadMemoryRequest{AgentId: "cur", Mode: memoryv1.ReadMode_READ_MODE_WIDE,
		IncludeFiles: []string{"snapshot.md", "facts.md", "decisions.md", "changelog.md", "runs/run_1.md"}})
	require.NoError(t, err)
	require.Equal(t, []string{"snapshot.md", "facts.md", "decisions.md"}, files(wide), "no Layer 2 beyond the last decisions")

	deep, err := e.client.ReadMemory(e.svc(), &memoryv1.ReadMemoryRequest{AgentId: "cur", Mode: memoryv1.ReadMode_READ_MODE_DEEP})
	require.NoError(t, err)
	require.Contains(t, files(deep), "changelog.md")
	require.Contains(t, files(deep), "timeline/2026-02-17.md")
	require.NotContains(t, files(deep), "runs/run_1.md")

	again, err := e.client.ReadMemory(e.svc(), &memoryv1.ReadMemoryRequest{AgentId: "cur"})
	require.NoError(t, err)
	a, _ := proto.MarshalOptions{Deterministic: true}.Marshal(basic)
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(again)
	require.Equal(t, a, b, "same commit, same request: byte-identical")

	_, err = e.client.ReadMemory(e.svc(), &memoryv1.ReadMemoryRequest{AgentId: "cur", Mode: memoryv1.ReadMode_READ_MODE_WIDE, MaxTokens: 40})
	min := checkBudgetError(t, "wide/40", 40, err) // the meta block alone is about 40 tokens
	small, err := e.client.ReadMemory(e.svc(), &memoryv1.ReadMemoryRequest{AgentId: "cur", Mode: memoryv1.ReadMode_READ_MODE_WIDE, MaxTokens: min + 10})
	require.NoError(t, err)
	require.LessOrEqual(t, small.GetTokenCount(), min+10)
	require.True(t, small.GetTruncated())
	require.NotEmpty(t, small.GetWarnings())
}

func TestReadAtCommitOrTime(t *testing.T) {
	e := newEnv(t)
	first := seedAgent(e)
	firstTime := e.when
	e.commit("fix snapshot by hand", map[string]string{"memory/cur/snapshot.md": "# Snapshot: cur\n\n## Role\nChief curator.\n"})

	now, err := e.client.ReadMemory(e.svc(), &memoryv1.ReadMemoryRequest{AgentId: "cur"})
	require.NoError(t, err)
	require.Contains(t, now.GetContent()["snapshot.md"], "Chief curator")
	for _, at := range []string{first.String(), first.String()[:10], firstTime.Add(30 * time.Minute).Format(time.RFC3339), "HEAD~1"} {
		then, err := e.client.ReadMemory(e.svc(), &memoryv1.ReadMemoryRequest{AgentId: "cur", At: at})
		require.NoError(t, err, at)
		require.Equal(t, first.String(), then.GetCommit(), at)
		require.NotContains(t, then.GetContent()["snapshot.md"], "Chief", at)
	}
	_, err = e.client.ReadMemory(e.svc(), &memoryv1.ReadMemoryRequest{AgentId: "cur", At: "2001-01-01T00:00:00Z"})
	require.Equal(t, codes.NotFound, status.Code(err))
	require.Equal(t, "REVISION_NOT_FOUND", apierr.Info(err).GetReason())
}

func TestCorruptSnapshotNamesLastGoodCommit(t *testing.T) {
	e := newEnv(t)
	good := seedAgent(e)
	e.commit("oops", map[string]string{"memory/cur/snapshot.md": "   \n"})
	_, err := e.client.ReadMemory(e.svc(), &memoryv1.ReadMemoryRequest{AgentId: "cur"})
	// Stored memory that cannot be read is lost data, not a state the
	// caller can change: gRPC DATA_LOSS (REST 500), issue #24 point 5.
	require.Equal(t, codes.DataLoss, status.Code(err), err)
	info := apierr.Info(err)
	require.Equal(t, "MEMORY_CORRUPTED", info.GetReason())
	require.Equal(t, "memory/cur/snapshot.md", info.GetMetadata()["file"])
	require.Equal(t, good.String(), info.GetMetadata()["lastGoodCommit"])
}

func TestLayer2AndHistory(t *testing.T) {
	e := newEnv(t)
	seedAgent(e)
	e.commit("memory-update: cur / run_2 / proposal_2\n\nFiles: facts.md\nReason: more\nAuto-approved: true\n",
		map[string]string{"memory/cur/facts.md": "# Facts: cur\n\n## Domain\n- fact one\n- fact two\n"})
	e.commit("memory-update: other / run_9 / proposal_9\n\nFiles: facts.md\nReason: x\nAuto-approved: true\n",
		map[string]string{"memory/other/facts.md": "# Facts: other\n"})

	l2, err := e.client.GetLayer2(e.svc(), &memoryv1.GetLayer2Request{AgentId: "cur", Include: []string{"decisions", "runs", "timeline"}, RunIds: []string{"run_1", "run_404"}})
	require.NoError(t, err)
	require.Len(t, l2.GetDecisions(), 1)
	require.Equal(t, "Use MinIO", l2.GetDecisions()[0].GetTitle())
	require.Len(t, l2.GetRuns(), 1)
	require.Len(t, l2.GetTimeline(), 1)
	require.Empty(t, l2.GetChangelog(), "only what is asked for")
	_, err = e.client.GetLayer2(e.svc(), &memoryv1.GetLayer2Request{AgentId: "cur", Include: []string{"secrets"}})
	require.Equal(t, codes.InvalidArgument, status.Code(err))

	hist, err := e.client.ListHistory(e.svc(), &memoryv1.ListHistoryRequest{AgentId: "cur", PageSize: 1})
	require.NoError(t, err)
	require.Len(t, hist.GetCommits(), 1)
	require.Equal(t, "proposal_2", hist.GetCommits()[0].GetProposalId())
	require.Equal(t, "run_2", hist.GetCommits()[0].GetRunId())
	require.NotEmpty(t, hist.GetNextPageToken())
	rest, err := e.client.ListHistory(e.svc(), &memoryv1.ListHistoryRequest{AgentId: "cur", PageToken: hist.GetNextPageToken()})
	require.NoError(t, err)
	require.Len(t, rest.GetCommits(), 1)
	require.Equal(t, "proposal_1", rest.GetCommits()[0].GetProposalId())
	require.Empty(t, rest.GetNextPageToken())

	byFile, err := e.client.ListHistory(e.svc(), &memoryv1.ListHistoryRequest{AgentId: "cur", Files: []string{"snapshot.md"}})
	require.NoError(t, err)
	require.Len(t, byFile.GetCommits(), 1)
}

func TestAccess(t *testing.T) {
	e := newEnv(t)
	seedAgent(e)
	_, err := e.client.ReadMemory(e.ctx([]auth.Role{auth.RoleAgent}, "cur"), &memoryv1.ReadMemoryRequest{AgentId: "cur"})
	require.NoError(t, err)
	_, err = e.client.ReadMemory(e.ctx([]auth.Role{auth.RoleAgent}, "other"), &memoryv1.ReadMemoryRequest{AgentId: "cur"})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	_, err = e.client.ReadMemory(e.ctx([]auth.Role{auth.RoleReviewer}, "*"), &memoryv1.ReadMemoryRequest{AgentId: "cur"})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	_, err = e.client.ReadMemory(e.svc(), &memoryv1.ReadMemoryRequest{AgentId: "../cur"})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	_, err = e.client.ReadMemory(e.svc(), &memoryv1.ReadMemoryRequest{AgentId: "nobody"})
	require.Equal(t, codes.NotFound, status.Code(err))
}

func TestAssembleContextWithoutSearch(t *testing.T) {
	e := newEnv(t)
	seedAgent(e)
	resp, err := e.client.AssembleContext(e.svc(), &memoryv1.AssembleContextRequest{AgentId: "cur", QueryHint: "backups"})
	require.NoError(t, err)
	var files []string
	for _, s := range resp.GetSections() {
		require.Equal(t, "layer1", s.GetKind())
		files = append(files, s.GetFile())
	}
	require.Equal(t, []string{"memory/cur/snapshot.md", "memory/cur/open_loops.md", "memory/cur/facts.md"}, files)
	require.Equal(t, int32(DefaultBudget), resp.GetBudget())
	c, err := tokens.New(tokens.DefaultEncoding)
	require.NoError(t, err)
	warned := 0
	for _, w := range resp.GetWarnings() {
		warned += c.Count(w)
	}
	require.Equal(t, resp.GetTotalTokens(), resp.GetTokensByLayer()["layer1"]+int32(warned), "sections by layer, plus warnings")
	require.Contains(t, resp.GetWarnings(), "search is not configured: no hits for the query hint")
	_, err = e.client.AssembleContext(e.svc(), &memoryv1.AssembleContextRequest{AgentId: "cur", Budget: MaxBudget + 1})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
}

// countingStore is a real store that counts the objects read from it.
type countingStore struct {
	blob.Store
	gets atomic.Int32
}

func (c *countingStore) Get(ctx context.Context, key string) (io.ReadCloser, blob.Info, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, key)
}

// A source's text is fetched once per version: AssembleContext lists the
// sources (at most once a sourceListTTL) and so sees a new version, a
// removed and an added source.
func TestAssembleContextFetchesEachSourceVersionOnce(t *testing.T) {
	fs, err := blob.NewFS(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = fs.Close() })
	store := &countingStore{Store: fs}
	var clock atomic.Int64
	e := newEnvWithSources(t, store, func() time.Time { return time.Unix(0, clock.Load()) })
	later := func() { clock.Add(int64(sourceListTTL)) }
	seedAgent(e)
	ctx := context.Background()
	put := func(key, text string) {
		_, err := blob.PutBytes(ctx, fs, key, []byte(text), blob.PutOptions{})
		require.NoError(t, err)
	}
	sources := func() map[string]string {
		resp, err := e.client.AssembleContext(e.svc(), &memoryv1.AssembleContextRequest{AgentId: "cur"})
		require.NoError(t, err)
		out := map[string]string{}
		for _, s := range resp.GetSections() {
			if s.GetKind() == "source" {
				out[s.GetFile()] = s.GetContent()
			}
		}
		return out
	}
	const guide, notes = "agents/cur/sources/guide.md", "agents/cur/sources/notes.md"
	put(guide, "# Guide\n\nRotate the keys monthly.\n")
	require.Equal(t, map[string]string{guide: "# Guide\n\nRotate the keys monthly.\n"}, sources())
	require.Equal(t, map[string]string{guide: "# Guide\n\nRotate the keys monthly.\n"}, sources())
	require.Equal(t, int32(1), store.gets.Load(), "the second call reads the cached version")

	put(guide, "# Guide\n\nRotate the keys weekly.\n")
	put(notes, "# Notes\n\nNothing yet.\n")
	later()
	want := map[string]string{guide: "# Guide\n\nRotate the keys weekly.\n", notes: "# Notes\n\nNothing yet.\n"}
	require.Equal(t, want, sources())
	require.Equal(t, want, sources())
	require.Equal(t, int32(3), store.gets.Load(), "each new version is read once")

	require.NoError(t, fs.Delete(ctx, notes))
	later()
	require.Equal(t, map[string]string{guide: want[guide]}, sources())
}

func TestDiffMemory(t *testing.T) {
	e := newEnv(t)
	start := seedAgent(e)
	e.commit("memory-update: cur / run_2 / proposal_2\n\nFiles: facts.md, open_loops.md\nReason: r\nAuto-approved: true\n", map[string]string{
		"memory/cur/facts.md":      "# Facts: cur\n\n## Domain\n- fact one\n- fact two\n",
		"memory/cur/open_loops.md": "# Open Loops: cur\n\n## Closed\n- [x] loop_001: check backups — closed 2026-02-17 | run_2 | opened 2026-02-17 | priority: normal | resolution: done\n",
		"memory/cur/meta.json":     `{"agentId":"cur","version":2}`,
	})
	e.commit("other agent", map[string]string{"memory/zzz/facts.md": "# Facts: zzz\n- x\n"})

	resp, err := e.client.DiffMemory(e.svc(), &memoryv1.DiffMemoryRequest{AgentId: "cur", From: start.String(), To: "HEAD"})
	require.NoError(t, err)
	require.Equal(t, start.String(), resp.GetFrom())
	require.ElementsMatch(t, []string{"facts.md", "open_loops.md"}, keys(resp.GetDiff()), "meta.json and other agents are left out")
	require.Contains(t, resp.GetDiff()["facts.md"], "--- a/facts.md\n+++ b/facts.md\n")
	require.Contains(t, resp.GetDiff()["facts.md"], "\n+- fact two\n")
	require.Equal(t, int32(1), resp.GetStats().GetCommits())
	require.Equal(t, "1 commit, 2 files, +3 −2", resp.GetSummary())
	require.Positive(t, resp.GetTokenCount())

	facts, err := e.client.DiffMemory(e.svc(), &memoryv1.DiffMemoryRequest{AgentId: "cur", From: start.String(), Format: memoryv1.DiffFormat_DIFF_FORMAT_FACTS})
	require.NoError(t, err)
	var items []string
	for _, c := range facts.GetChanges() {
		items = append(items, c.GetItem()+":"+c.GetChange().String())
	}
	require.ElementsMatch(t, []string{"fact:CHANGE_KIND_ADDED", "loop:CHANGE_KIND_CHANGED"}, items)

	whole, err := e.client.DiffMemory(e.svc(), &memoryv1.DiffMemoryRequest{AgentId: "cur", Files: []string{"snapshot.md"}})
	require.NoError(t, err)
	require.Contains(t, whole.GetDiff()["snapshot.md"], "--- /dev/null", "without from: the agent's whole history")
	require.Equal(t, int32(1), whole.GetStats().GetCommits())

	_, err = e.client.DiffMemory(e.svc(), &memoryv1.DiffMemoryRequest{AgentId: "cur", From: start.String(), MaxTokens: 5})
	min := checkBudgetError(t, "diff/5", 5, err) // not even the summary fits
	tiny, err := e.client.DiffMemory(e.svc(), &memoryv1.DiffMemoryRequest{AgentId: "cur", From: start.String(), MaxTokens: min})
	require.NoError(t, err)
	require.True(t, tiny.GetTruncated())
	require.LessOrEqual(t, tiny.GetTokenCount(), min)
	_, err = e.client.DiffMemory(e.svc(), &memoryv1.DiffMemoryRequest{AgentId: "cur", From: "nope"})
	require.Equal(t, codes.NotFound, status.Code(err))

	// Temporal read: snapshot plus the diffs of the range.
	tr, err := e.client.ReadMemory(e.svc(), &memoryv1.ReadMemoryRequest{AgentId: "cur", Mode: memoryv1.ReadMode_READ_MODE_TEMPORAL, From: start.String()})
	require.NoError(t, err)
	require.Contains(t, tr.GetContent(), "snapshot.md")
	require.Contains(t, tr.GetDiffs()["facts.md"], "+- fact two")
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestRepositoryUnavailableAnswersWithRetryInfo(t *testing.T) {
	e := newEnv(t)
	svc, err := New(Deps{RepoPath: filepath.Join(t.TempDir(), "gone.git"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	gone := grpctest.Serve(t, svc.Register)
	_, err = memoryv1.NewContextAssemblyServiceClient(gone.Conn).ReadMemory(e.svc(), &memoryv1.ReadMemoryRequest{AgentId: "cur"})
	require.Equal(t, codes.Unavailable, status.Code(err))
	var retry *errdetails.RetryInfo
	for _, d := range status.Convert(err).Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			retry = r
		}
	}
	require.NotNil(t, retry)
	require.Equal(t, 5*time.Second, retry.GetRetryDelay().AsDuration())
	require.Equal(t, "REPOSITORY_UNAVAILABLE", apierr.Info(err).GetReason())
}

// Reads are cached by the agent folder's hash: two agents with identical
// folders still get their own answers, a commit to one agent shows at once,
// and the other agent's read is unchanged.
func TestReadCacheFollowsFolders(t *testing.T) {
	e := newEnv(t)
	same := map[string]string{}
	for _, agent := range []string{"twin-a", "twin-b"} {
		same["memory/"+agent+"/snapshot.md"] = "# Snapshot\n\n## Role\nTwin.\n"
		same["memory/"+agent+"/meta.json"] = `{"version":1,"schemaVersion":"1.0"}`
	}
	e.commit("seed twins", same)
	read := func(agent string) *memoryv1.ReadMemoryResponse {
		resp, err := e.client.ReadMemory(e.svc(), &memoryv1.ReadMemoryRequest{AgentId: agent})
		require.NoError(t, err)
		return resp
	}
	for range 2 { // the second round is served from the cache
		for _, agent := range []string{"twin-a", "twin-b"} {
			resp := read(agent)
			require.Equal(t, agent, resp.GetAgentId())
			require.Equal(t, agent, resp.GetMeta().GetAgentId())
			require.Contains(t, resp.GetContent()["snapshot.md"], "Twin.")
		}
	}
	before := read("twin-b")
	head := e.commit("change a", map[string]string{"memory/twin-a/snapshot.md": "# Snapshot\n\n## Role\nChanged.\n"})
	a := read("twin-a")
	require.Equal(t, head.String(), a.GetCommit())
	require.Contains(t, a.GetContent()["snapshot.md"], "Changed.")
	b := read("twin-b")
	require.Equal(t, head.String(), b.GetCommit(), "the answer names the commit it was read at")
	require.Equal(t, before.GetContent(), b.GetContent())
}
