package contextassembly

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/grpctest"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/tokens"
)

// The agent's facts.md with every kind of fact the TTL spec names: a plain
// one, one that only mentions "expires", TTLs run out (with each action),
// one still running, one already marked stale; and decisions.md with an
// archived one.
const staleFactsMD = `# Facts: cur

## Infra
- The staging DB is pg15 _(expires 2026-01-10T08:00:00Z, then archive)_
- The TLS certificate expires 2027-01-01T00:00:00Z
- Deploys go through Argo _(expires 2999-01-01T00:00:00Z, then delete)_
- Redis runs 7.2 _(stale since 2025-12-01T00:00:00Z)_

## People
- Alice owns billing _(expires 2026-02-01T12:00:00Z)_
- Bob is on call _(expires 2026-01-20T00:00:00Z, then delete)_
- Carol reviews proposals
`

const staleDecisionsMD = `# Decisions: cur

## 2026-02-17 — Use MinIO
**Status:** accepted

## Expired facts
- The old bucket is gardenbloom-old — expired 2025-11-01T00:00:00Z, archived 2025-11-01
- a note a person wrote here by hand
`

// staleAt is "now" for these tests: after every run-out TTL above, long
// before the one still running.
var staleAt = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// staleClock is a settable clock for GetStaleFacts.
type staleClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *staleClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *staleClock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }

// newClockedEnv is newEnv with the service's clock set to clock.
func newClockedEnv(t *testing.T, clock *staleClock) *env {
	repo, err := memrepo.Init(context.Background(), filepath.Join(t.TempDir(), "memory.git"), memrepo.InitOptions{})
	require.NoError(t, err)
	svc, err := New(Deps{RepoPath: repo.Path(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: clock.Now})
	require.NoError(t, err)
	server := grpctest.Serve(t, svc.Register)
	return &env{t: t, repo: repo, client: memoryv1.NewContextAssemblyServiceClient(server.Conn), server: server,
		when: time.Date(2026, 2, 17, 9, 0, 0, 0, time.UTC)}
}

func seedStale(t *testing.T) (*env, *staleClock) {
	clock := &staleClock{now: staleAt}
	e := newClockedEnv(t, clock)
	seedAgent(e)
	e.commit("memory-update: cur / run_2 / proposal_2\n\nFiles: facts.md\nReason: ttl\nAuto-approved: true\n", map[string]string{
		"memory/cur/facts.md":     staleFactsMD,
		"memory/cur/decisions.md": staleDecisionsMD,
	})
	return e, clock
}

type staleRow struct {
	fact, section, expires string
	action                 memoryv1.TTLAction
	marked, archived       bool
}

func staleRows(r *memoryv1.GetStaleFactsResponse) []staleRow {
	var out []staleRow
	for _, f := range r.GetFacts() {
		out = append(out, staleRow{f.GetFact(), f.GetSection(), f.GetExpiresAt().AsTime().Format(time.RFC3339), f.GetOnExpire(), f.GetMarkedStale(), f.GetArchived()})
	}
	return out
}

// "List facts whose marker's expiry has passed (not yet acted on) and facts
// marked stale, oldest expiry first; include_archived also lists
// decisions.md § Expired facts."
func TestGetStaleFactsListsRunOutAndStaleOldestFirst(t *testing.T) {
	e, clock := seedStale(t)
	resp, err := e.client.GetStaleFacts(e.svc(), &memoryv1.GetStaleFactsRequest{AgentId: "cur"})
	require.NoError(t, err)
	head, err := e.repo.Head(t.Context())
	require.NoError(t, err)
	require.Equal(t, head.String(), resp.GetCommit())
	require.Equal(t, []staleRow{
		{"- Redis runs 7.2 _(stale since 2025-12-01T00:00:00Z)_", "Infra", "2025-12-01T00:00:00Z", memoryv1.TTLAction_TTL_ACTION_MARK_STALE, true, false},
		{"- The staging DB is pg15 _(expires 2026-01-10T08:00:00Z, then archive)_", "Infra", "2026-01-10T08:00:00Z", memoryv1.TTLAction_TTL_ACTION_ARCHIVE, false, false},
		{"- Bob is on call _(expires 2026-01-20T00:00:00Z, then delete)_", "People", "2026-01-20T00:00:00Z", memoryv1.TTLAction_TTL_ACTION_DELETE, false, false},
		{"- Alice owns billing _(expires 2026-02-01T12:00:00Z)_", "People", "2026-02-01T12:00:00Z", memoryv1.TTLAction_TTL_ACTION_MARK_STALE, false, false},
	}, staleRows(resp), "the TTL still running, the plain facts and the mere mention of \"expires\" are not listed")

	withArchived, err := e.client.GetStaleFacts(e.svc(), &memoryv1.GetStaleFactsRequest{AgentId: "cur", IncludeArchived: true})
	require.NoError(t, err)
	rows := staleRows(withArchived)
	require.Len(t, rows, 5)
	require.Equal(t, staleRow{"- The old bucket is gardenbloom-old", "Expired facts", "2025-11-01T00:00:00Z", memoryv1.TTLAction_TTL_ACTION_ARCHIVE, false, true}, rows[0],
		"the archived fact expired first; the hand-written note is not a record")
	require.Equal(t, staleRows(resp), rows[1:])

	// Before any TTL ran out only the fact already marked stale is listed.
	clock.Set(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	early, err := e.client.GetStaleFacts(e.svc(), &memoryv1.GetStaleFactsRequest{AgentId: "cur"})
	require.NoError(t, err)
	require.Len(t, early.GetFacts(), 1)
	require.True(t, early.GetFacts()[0].GetMarkedStale())
}

func TestGetStaleFactsAccessAndBadInput(t *testing.T) {
	e, _ := seedStale(t)
	_, err := e.client.GetStaleFacts(e.ctx([]auth.Role{auth.RoleAgent}, "other"), &memoryv1.GetStaleFactsRequest{AgentId: "cur"})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "an agent token reaches only its agents")
	own, err := e.client.GetStaleFacts(e.ctx([]auth.Role{auth.RoleAgent}, "cur"), &memoryv1.GetStaleFactsRequest{AgentId: "cur"})
	require.NoError(t, err)
	require.Len(t, own.GetFacts(), 4)

	_, err = e.client.GetStaleFacts(e.svc(), &memoryv1.GetStaleFactsRequest{AgentId: "Not A Slug"})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Equal(t, "INVALID_AGENT_ID", apierr.Info(err).GetReason())
	require.Equal(t, "agentId", apierr.Info(err).GetMetadata()["field"])

	_, err = e.client.GetStaleFacts(e.svc(), &memoryv1.GetStaleFactsRequest{AgentId: "nobody"})
	require.Equal(t, codes.NotFound, status.Code(err))
	require.Equal(t, "AGENT_NOT_FOUND", apierr.Info(err).GetReason())

	_, err = e.client.GetStaleFacts(t.Context(), &memoryv1.GetStaleFactsRequest{AgentId: "cur"})
	require.Equal(t, codes.Unauthenticated, status.Code(err))
}

// An agent without TTLs gets an empty list, not an error.
func TestGetStaleFactsNone(t *testing.T) {
	e := newEnv(t)
	seedAgent(e)
	resp, err := e.client.GetStaleFacts(e.svc(), &memoryv1.GetStaleFactsRequest{AgentId: "cur", IncludeArchived: true})
	require.NoError(t, err)
	require.Empty(t, resp.GetFacts())
	require.NotEmpty(t, resp.GetCommit())
}

// "When the agent has expired or stale facts among what is returned, add
// one warning"; warnings count toward the token budget.
func TestReadMemoryWarnsOfStaleFacts(t *testing.T) {
	e, _ := seedStale(t)
	c, err := tokens.New(tokens.DefaultEncoding)
	require.NoError(t, err)
	// The commit is made at e.when (2026-02-17 13:00 here): Redis (stale),
	// the staging DB, Bob and Alice had run out by then.
	require.True(t, e.when.After(time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC)))
	wide, err := e.client.ReadMemory(e.svc(), &memoryv1.ReadMemoryRequest{AgentId: "cur", Mode: memoryv1.ReadMode_READ_MODE_WIDE})
	require.NoError(t, err)
	want := "4 facts are past their TTL or stale (GET /v1/memory/cur/stale-facts)"
	require.Equal(t, []string{want}, wide.GetWarnings())
	require.Equal(t, readCounted(c.Count, wide), int(wide.GetTokenCount()), "the warning is counted")

	again, err := e.client.ReadMemory(e.svc(), &memoryv1.ReadMemoryRequest{AgentId: "cur", Mode: memoryv1.ReadMode_READ_MODE_WIDE})
	require.NoError(t, err)
	require.True(t, proto.Equal(wide, again), "same commit, same answer")

	// basic does not return facts.md: nothing to warn about.
	basic, err := e.client.ReadMemory(e.svc(), &memoryv1.ReadMemoryRequest{AgentId: "cur"})
	require.NoError(t, err)
	require.Empty(t, basic.GetWarnings())

	// A budget that holds the files but not the warning: the answer stays
	// within it and goes without the warning.
	for i, budget := range []int32{wide.GetTokenCount() - int32(c.Count(want)), wide.GetTokenCount() - 1} {
		tight, err := e.client.ReadMemory(e.svc(), &memoryv1.ReadMemoryRequest{AgentId: "cur", Mode: memoryv1.ReadMode_READ_MODE_WIDE, MaxTokens: budget})
		require.NoError(t, err)
		require.LessOrEqual(t, tight.GetTokenCount(), budget)
		require.Equal(t, readCounted(c.Count, tight), int(tight.GetTokenCount()))
		if i == 0 {
			require.Empty(t, tight.GetWarnings(), "every file fits, the warning does not")
			require.Equal(t, wide.GetContent(), tight.GetContent())
		}
	}

	// An older commit, before the TTLs: no warning (past is judged at the
	// commit read).
	first, err := e.client.ReadMemory(e.svc(), &memoryv1.ReadMemoryRequest{AgentId: "cur", Mode: memoryv1.ReadMode_READ_MODE_WIDE, At: "HEAD~1"})
	require.NoError(t, err)
	require.Empty(t, first.GetWarnings())
}

// Only the stale facts among what is returned count.
func TestReadMemoryWarnsOnlyOfReturnedFacts(t *testing.T) {
	e := newEnv(t)
	seedAgent(e)
	e.commit("memory-update: cur / run_2 / proposal_2\n", map[string]string{
		"memory/cur/facts.md": "# Facts: cur\n\n## Fresh\n- Carol reviews proposals\n\n## Old\n" +
			strings.Repeat("- filler fact about the garden and its many beds\n", 40) +
			"- Redis runs 7.2 _(stale since 2025-12-01T00:00:00Z)_\n",
	})
	full, err := e.client.ReadMemory(e.svc(), &memoryv1.ReadMemoryRequest{AgentId: "cur", Mode: memoryv1.ReadMode_READ_MODE_WIDE})
	require.NoError(t, err)
	require.Equal(t, []string{"1 fact is past its TTL or stale (GET /v1/memory/cur/stale-facts)"}, full.GetWarnings())

	// Cut before § Old: the stale fact is not among what is returned.
	cut, err := e.client.ReadMemory(e.svc(), &memoryv1.ReadMemoryRequest{AgentId: "cur", Mode: memoryv1.ReadMode_READ_MODE_WIDE, MaxTokens: 200})
	require.NoError(t, err)
	require.NotContains(t, cut.GetContent()["facts.md"], "Redis")
	for _, w := range cut.GetWarnings() {
		require.NotContains(t, w, "past its TTL")
	}
}

func TestAssembleContextWarnsOfStaleFacts(t *testing.T) {
	e, _ := seedStale(t)
	c, err := tokens.New(tokens.DefaultEncoding)
	require.NoError(t, err)
	resp, err := e.client.AssembleContext(e.svc(), &memoryv1.AssembleContextRequest{AgentId: "cur", Budget: 5000})
	require.NoError(t, err)
	want := "4 facts are past their TTL or stale (GET /v1/memory/cur/stale-facts)"
	require.Contains(t, resp.GetWarnings(), want)
	n := 0
	for _, s := range resp.GetSections() {
		n += c.Count(s.GetFile()) + int(s.GetTokens())
	}
	for _, w := range resp.GetWarnings() {
		n += c.Count(w)
	}
	require.Equal(t, n, int(resp.GetTotalTokens()), "the warning is counted")
	require.LessOrEqual(t, int(resp.GetTotalTokens()), 5000)
}
