package searchindex

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/fulltext"
	"github.com/garden-bloom/memory/pkg/grpctest"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/readstate"
)

type env struct {
	t      *testing.T
	dir    string
	repo   *memrepo.Repo
	blobs  blob.Store
	svc    *Service
	client memoryv1.SearchIndexServiceClient
	server *grpctest.Server
	stop   func()
}

func newEnv(t *testing.T) *env {
	dir := t.TempDir()
	repo, err := memrepo.Init(context.Background(), filepath.Join(dir, "memory.git"), memrepo.InitOptions{})
	require.NoError(t, err)
	blobs, err := blob.NewFS(filepath.Join(dir, "objects"))
	require.NoError(t, err)
	e := &env{t: t, dir: dir, repo: repo, blobs: blobs}
	e.start()
	return e
}

func (e *env) start() {
	e.startWith(filepath.Join(e.dir, "index"), nil)
}

// startWith starts the service on indexDir, sharing its state through
// shared (nil: not shared).
func (e *env) startWith(indexDir string, shared *readstate.Shared) {
	t := e.t
	svc, err := New(Config{IndexDir: indexDir, HeadPoll: 20 * time.Millisecond, SourcesPoll: 50 * time.Millisecond},
		Deps{RepoPath: e.repo.Path(), Blobs: e.blobs, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Shared: shared})
	require.NoError(t, err)
	e.server = grpctest.Serve(t, svc.Register)
	svc.Start(context.Background())
	e.svc, e.client = svc, memoryv1.NewSearchIndexServiceClient(e.server.Conn)
	e.stop = func() {
		e.server.Stop()
		svc.Stop()
	}
	t.Cleanup(e.stop)
}

func (e *env) as(roles []auth.Role, agents ...string) context.Context {
	return e.server.As(e.t, "t", roles, agents...)
}

func (e *env) svcCtx() context.Context { return e.as([]auth.Role{auth.RoleService}, "*") }

func (e *env) commit(changes ...memrepo.Change) plumbing.Hash {
	ctx := context.Background()
	head, err := e.repo.Head(ctx)
	require.NoError(e.t, err)
	h, err := e.repo.Commit(ctx, memrepo.CommitRequest{Parent: head, Message: "test commit", Changes: changes})
	require.NoError(e.t, err)
	return h
}

func put(path, content string) memrepo.Change {
	return memrepo.Change{Path: path, Content: []byte(content)}
}

func (e *env) search(req *memoryv1.SearchRequest) []string {
	e.t.Helper()
	resp, err := e.client.Search(e.svcCtx(), req)
	require.NoError(e.t, err)
	var files []string
	for _, r := range resp.GetResults() {
		files = append(files, r.GetFile())
	}
	return files
}

func (e *env) current() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(e.t, e.svc.WaitCurrent(ctx))
}

func TestFollowsCommitsIncrementally(t *testing.T) {
	e := newEnv(t)
	e.commit(put("memory/cur/facts.md", "# Facts: cur\n\n## Storage\n- MinIO bucket has versioning\n"),
		put("memory/cur/decisions.md", "# Decisions: cur\n\n## 2026-02-17 — Use MinIO\n**Status:** accepted\n"),
		put("memory/cur/meta.json", `{"version": 1}`),
		put("logic/cur/current.pseudo.md", "# Logic\n\n1. check the MinIO bucket\n"))
	e.current()
	require.ElementsMatch(t, []string{"memory/cur/facts.md", "logic/cur/current.pseudo.md"}, e.search(&memoryv1.SearchRequest{Query: "minio"}))
	require.Equal(t, []string{"memory/cur/decisions.md"}, e.search(&memoryv1.SearchRequest{Query: "minio", Layer: 2}))

	// Change one file, delete another, add a third.
	e.commit(put("memory/cur/facts.md", "# Facts: cur\n\n## Storage\n- Snapshots go to tape\n"),
		memrepo.Change{Path: "logic/cur/current.pseudo.md", Delete: true},
		put("memory/ops/snapshot.md", "# Snapshot: ops\n\nWatching the MinIO upgrade.\n"))
	e.current()
	require.Equal(t, []string{"memory/ops/snapshot.md"}, e.search(&memoryv1.SearchRequest{Query: "minio"}))
	require.Equal(t, []string{"memory/cur/facts.md"}, e.search(&memoryv1.SearchRequest{Query: "tape"}))

	resp, err := e.client.Search(e.svcCtx(), &memoryv1.SearchRequest{Query: "tape"})
	require.NoError(t, err)
	r := resp.GetResults()[0]
	require.Equal(t, int32(1), r.GetLayer())
	require.Equal(t, "cur", r.GetAgentId())
	require.Equal(t, "facts", r.GetKind())
	require.Equal(t, int32(4), r.GetSpan().GetStartLine())
	head, _ := e.repo.Head(context.Background())
	require.Equal(t, head.String(), r.GetCommit())
	require.Equal(t, head.String(), resp.GetIndexCommit())
	require.False(t, resp.GetStale())
	require.Contains(t, r.GetExcerpt(), "«tape»")

	bare, err := e.client.Search(e.svcCtx(), &memoryv1.SearchRequest{Query: "tape", OmitExcerpts: true})
	require.NoError(t, err)
	require.Empty(t, bare.GetResults()[0].GetExcerpt(), "omit_excerpts reaches the index")
	require.Equal(t, r.GetSpan().GetStartLine(), bare.GetResults()[0].GetSpan().GetStartLine())

	st, err := e.client.GetIndexStatus(e.svcCtx(), &memoryv1.GetIndexStatusRequest{})
	require.NoError(t, err)
	require.Equal(t, head.String(), st.GetLastCommit())
	require.Equal(t, head.String(), st.GetHeadCommit())
	require.Equal(t, int32(0), st.GetLagCommits())
	require.Equal(t, int32(3), st.GetDocuments())
}

func TestRestartCatchesUpWithoutRebuilding(t *testing.T) {
	e := newEnv(t)
	e.commit(put("memory/a/facts.md", "# Facts: a\n\n## D\n- alpha fact\n"))
	e.current()
	e.stop()
	e.commit(put("memory/b/facts.md", "# Facts: b\n\n## D\n- beta fact\n"))
	e.commit(put("memory/c/facts.md", "# Facts: c\n\n## D\n- gamma fact\n"))
	e.start()
	// Until it catches up the index says it is behind.
	e.current()
	require.Equal(t, []string{"memory/b/facts.md"}, e.search(&memoryv1.SearchRequest{Query: "beta"}))
	require.Equal(t, []string{"memory/a/facts.md"}, e.search(&memoryv1.SearchRequest{Query: "alpha"}))
	gens, _ := filepath.Glob(filepath.Join(e.dir, "index", "gen-*"))
	require.Equal(t, []string{filepath.Join(e.dir, "index", "gen-1")}, gens, "caught up in place, no rebuild")
}

// A replica with an empty index starts from the copy another one published
// at shutdown and indexes only the commits after it.
func TestNewReplicaStartsFromThePublishedIndex(t *testing.T) {
	e := newEnv(t)
	e.stop()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	shared := func() *readstate.Shared {
		return readstate.New(e.blobs, "search-index.tar.gz", time.Hour, 0, t.TempDir(), logger)
	}
	e.startWith(filepath.Join(e.dir, "first"), shared())
	e.commit(put("memory/a/facts.md", "# Facts: a\n\n## D\n- alpha fact\n"))
	e.current()
	e.stop() // publishes
	_, _, err := e.blobs.Get(context.Background(), readstate.Prefix+"search-index.tar.gz")
	require.NoError(t, err)

	e.commit(put("memory/b/facts.md", "# Facts: b\n\n## D\n- beta fact\n"))
	e.startWith(filepath.Join(e.dir, "second"), shared())
	e.current()
	require.Equal(t, []string{"memory/a/facts.md"}, e.search(&memoryv1.SearchRequest{Query: "alpha"}))
	require.Equal(t, []string{"memory/b/facts.md"}, e.search(&memoryv1.SearchRequest{Query: "beta"}))
	gens, _ := filepath.Glob(filepath.Join(e.dir, "second", "gen-*"))
	require.Len(t, gens, 1, "the restored generation replaced the empty one")
	require.NotEqual(t, filepath.Join(e.dir, "second", "gen-1"), gens[0], "restored, not built from the repository")
}

func TestOnlineReindexAndSources(t *testing.T) {
	e := newEnv(t)
	e.commit(put("memory/a/facts.md", "# Facts: a\n\n## D\n- delta fact\n"))
	_, err := blob.PutBytes(context.Background(), e.blobs, "agents/a/sources/guide.md", []byte("# Guide\n\nHow to rotate keys.\n"), blob.PutOptions{})
	require.NoError(t, err)
	e.current()
	require.Eventually(t, func() bool { return len(e.search(&memoryv1.SearchRequest{Query: "rotate keys"})) == 1 }, 10*time.Second, 10*time.Millisecond)

	_, err = e.client.Reindex(e.svcCtx(), &memoryv1.ReindexRequest{})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "reindex is for admins")
	resp, err := e.client.Reindex(e.as([]auth.Role{auth.RoleAdmin}), &memoryv1.ReindexRequest{})
	require.NoError(t, err)
	require.True(t, resp.GetStarted())
	for range 20 { // searches answer throughout
		require.Equal(t, []string{"memory/a/facts.md"}, e.search(&memoryv1.SearchRequest{Query: "delta"}))
	}
	e.current()
	require.Equal(t, []string{"agents/a/sources/guide.md"}, e.search(&memoryv1.SearchRequest{Query: "rotate keys"}))

	// A source removed from the object store leaves the index.
	require.NoError(t, e.blobs.Delete(context.Background(), "agents/a/sources/guide.md"))
	require.Eventually(t, func() bool { return len(e.search(&memoryv1.SearchRequest{Query: "rotate keys"})) == 0 }, 10*time.Second, 10*time.Millisecond)
}

func TestSearchValidationAndAccess(t *testing.T) {
	e := newEnv(t)
	e.commit(put("memory/mine/facts.md", "# Facts: mine\n\n## D\n- shared secret word zebra\n"),
		put("memory/theirs/facts.md", "# Facts: theirs\n\n## D\n- another zebra fact\n"))
	e.current()
	for name, req := range map[string]*memoryv1.SearchRequest{
		"empty":        {Query: " "},
		"huge top_k":   {Query: "zebra", TopK: 1000},
		"bad layer":    {Query: "zebra", Layer: 3},
		"bad agent":    {Query: "zebra", AgentId: "../x"},
		"unknown kind": {Query: "zebra", Kinds: []string{"secrets"}},
		"only stops":   {Query: "the and of"},
	} {
		_, err := e.client.Search(e.svcCtx(), req)
		require.Equal(t, codes.InvalidArgument, status.Code(err), name)
	}
	agent := e.as([]auth.Role{auth.RoleAgent}, "mine")
	resp, err := e.client.Search(agent, &memoryv1.SearchRequest{Query: "zebra"})
	require.NoError(t, err)
	require.Len(t, resp.GetResults(), 1, "an agent token never sees another agent's files")
	require.Equal(t, "memory/mine/facts.md", resp.GetResults()[0].GetFile())
	_, err = e.client.Search(agent, &memoryv1.SearchRequest{Query: "zebra", AgentId: "theirs"})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	_, err = e.client.Search(context.Background(), &memoryv1.SearchRequest{Query: "zebra"})
	require.Equal(t, codes.Unauthenticated, status.Code(err))
}

// Inflected Ukrainian, Russian and English forms find each other end to end.
func TestInflectedFormsFindEachOther(t *testing.T) {
	e := newEnv(t)
	e.commit(put("memory/uk/facts.md", "# Факти: uk\n\n## Домен\n- Агент зберігає рішення у пам'яті\n"),
		put("memory/ru/facts.md", "# Факты: ru\n\n## Домен\n- Решения агентов хранятся в памяти\n"),
		put("memory/en/facts.md", "# Facts: en\n\n## Domain\n- The agents studied memories of running jobs\n"))
	e.current()
	for query, want := range map[string]string{
		"рішенням агентові":  "memory/uk/facts.md",
		"пам’ять рішень":     "memory/uk/facts.md",
		"решение агента":     "memory/ru/facts.md",
		"памятью":            "memory/ru/facts.md",
		"agent study memory": "memory/en/facts.md",
		"runs":               "memory/en/facts.md",
	} {
		got := e.search(&memoryv1.SearchRequest{Query: query})
		require.NotEmpty(t, got, query)
		require.Equal(t, want, got[0], query)
	}
}

func TestReindexOneAgent(t *testing.T) {
	e := newEnv(t)
	e.commit(put("memory/a/facts.md", "# Facts: a\n\n## D\n- kiwi fact\n"), put("memory/b/facts.md", "# Facts: b\n\n## D\n- kiwi too\n"))
	e.current()
	// Lose agent a's entries (as a damaged index would), then repair just a.
	require.NoError(t, e.svc.index.Apply(context.Background(), fulltext.Batch{Deletes: []string{"memory/a/facts.md"}}))
	require.Equal(t, []string{"memory/b/facts.md"}, e.search(&memoryv1.SearchRequest{Query: "kiwi"}))
	_, err := e.client.Reindex(e.as([]auth.Role{auth.RoleAdmin}), &memoryv1.ReindexRequest{AgentId: "a"})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"memory/a/facts.md", "memory/b/facts.md"}, e.search(&memoryv1.SearchRequest{Query: "kiwi"}))
	_, err = e.client.Reindex(e.as([]auth.Role{auth.RoleAdmin}), &memoryv1.ReindexRequest{AgentId: "Bad/Agent"})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
}

// stopAfter passes the first n batches to dst, then fails like a crash.
type stopAfter struct {
	dst     applier
	n       int
	upserts int
}

var errStopped = errors.New("stopped")

func (s *stopAfter) Apply(ctx context.Context, b fulltext.Batch) error {
	if s.n == 0 {
		return errStopped
	}
	s.n--
	s.upserts += len(b.Upserts)
	return s.dst.Apply(ctx, b)
}

// A first index interrupted part-way (a restart during the first pass over
// a large repository) resumes where it stopped instead of starting over.
func TestInterruptedPassResumes(t *testing.T) {
	e := newEnv(t)
	e.stop()
	ctx := context.Background()
	total := 2*batchFiles + 100
	var changes []memrepo.Change
	for i := range total {
		changes = append(changes, put(fmt.Sprintf("memory/a%04d/facts.md", i), fmt.Sprintf("# Facts\n\n## D\n- fact number%d\n", i)))
	}
	head := e.commit(changes...)

	interrupted := func(dir string) *fulltext.Index {
		ix, err := fulltext.Open(dir)
		require.NoError(t, err)
		last, from := ix.State().LastCommit, plumbing.ZeroHash
		if last != "" { // the service indexed the repository's first commit
			from = plumbing.NewHash(last)
		}
		_, err = indexCommits(ctx, e.repo, &stopAfter{dst: ix, n: 1}, from, head, "")
		require.ErrorIs(t, err, errStopped)
		st := ix.State()
		require.Equal(t, last, st.LastCommit)
		require.Equal(t, &fulltext.Pass{To: head.String(), Done: fmt.Sprintf("memory/a%04d/facts.md", batchFiles-1)}, st.Pass)
		require.Len(t, ix.Files(), batchFiles)
		return ix
	}

	// Resuming indexes only the rest, and its last batch ends the pass.
	ix := interrupted(filepath.Join(e.dir, "other-index"))
	rest := &stopAfter{dst: ix, n: -1}
	n, err := indexCommits(ctx, e.repo, rest, plumbing.ZeroHash, head, ix.State().Pass.Done)
	require.NoError(t, err)
	require.Equal(t, total-batchFiles, n)
	require.Equal(t, total-batchFiles, rest.upserts)
	st := ix.State()
	require.Equal(t, head.String(), st.LastCommit)
	require.Nil(t, st.Pass)
	require.Equal(t, total, st.Documents)
	require.NoError(t, ix.Close())

	// The service resumes an interrupted pass on its own, then follows main.
	require.NoError(t, interrupted(filepath.Join(e.dir, "index")).Close())
	e.commit(put("memory/zz/facts.md", "# Facts\n\n## D\n- late arrival\n"))
	e.start()
	e.current()
	require.Equal(t, []string{"memory/a0000/facts.md"}, e.search(&memoryv1.SearchRequest{Query: "number0"}))
	require.Equal(t, []string{"memory/a1099/facts.md"}, e.search(&memoryv1.SearchRequest{Query: "number1099"}))
	require.Equal(t, []string{"memory/zz/facts.md"}, e.search(&memoryv1.SearchRequest{Query: "late arrival"}))
	status, err := e.client.GetIndexStatus(e.svcCtx(), &memoryv1.GetIndexStatusRequest{})
	require.NoError(t, err)
	require.Equal(t, int32(total+1), status.GetDocuments())
}

func TestSourcesPollBacksOffWithItsCost(t *testing.T) {
	poll := 10 * time.Second
	require.Equal(t, poll, sourcesPollAfter(poll, 0, 0))
	require.Equal(t, poll, sourcesPollAfter(poll, 100*time.Millisecond, 0))
	// A listing of a second (20,000 sources) waits 20 s: under 5 % of a core.
	require.Equal(t, 20*time.Second, sourcesPollAfter(poll, time.Second, 0))
	// Never more than ten polls, however slow the listing.
	require.Equal(t, 100*time.Second, sourcesPollAfter(poll, time.Minute, 0))
	// A pass that indexed sources spent its time indexing: no back-off.
	require.Equal(t, poll, sourcesPollAfter(poll, 3*time.Minute, 20000))
}
