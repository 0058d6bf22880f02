package contextassembly

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/grpctest"
	"github.com/garden-bloom/memory/pkg/memrepo"
	searchsvc "github.com/garden-bloom/memory/services/searchindex"
)

// serviceSearch is a search client that calls with a service token, as
// memoryd's own client does (per-RPC credentials).
type serviceSearch struct {
	memoryv1.SearchIndexServiceClient
	md metadata.MD
}

func (s serviceSearch) Search(ctx context.Context, in *memoryv1.SearchRequest, opts ...grpc.CallOption) (*memoryv1.SearchResponse, error) {
	return s.SearchIndexServiceClient.Search(metadata.NewOutgoingContext(ctx, s.md), in, opts...)
}

// hintEnv is context assembly over a real search-index service (both on
// loopback gRPC), the agent's sources in a folder object store.
type hintEnv struct {
	*env
	blobs  blob.Store
	search memoryv1.SearchIndexServiceClient
}

func newHintEnv(t *testing.T) *hintEnv {
	dir := t.TempDir()
	repo, err := memrepo.Init(context.Background(), filepath.Join(dir, "memory.git"), memrepo.InitOptions{})
	require.NoError(t, err)
	blobs, err := blob.NewFS(filepath.Join(dir, "objects"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = blobs.Close() })
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	search, err := searchsvc.New(searchsvc.Config{IndexDir: filepath.Join(dir, "index"), HeadPoll: 20 * time.Millisecond, SourcesPoll: 20 * time.Millisecond},
		searchsvc.Deps{RepoPath: repo.Path(), Blobs: blobs, Logger: logger})
	require.NoError(t, err)
	searchServer := grpctest.Serve(t, search.Register)
	search.Start(context.Background())
	t.Cleanup(search.Stop)
	md, _ := metadata.FromOutgoingContext(searchServer.As(t, "memoryd/context-assembly", []auth.Role{auth.RoleService}, "*"))
	client := serviceSearch{SearchIndexServiceClient: memoryv1.NewSearchIndexServiceClient(searchServer.Conn), md: md}

	svc, err := New(Deps{RepoPath: repo.Path(), Blobs: blobs, Logger: logger, Search: client})
	require.NoError(t, err)
	server := grpctest.Serve(t, svc.Register)
	e := &hintEnv{env: &env{t: t, repo: repo, client: memoryv1.NewContextAssemblyServiceClient(server.Conn), server: server,
		when: time.Date(2026, 2, 17, 9, 0, 0, 0, time.UTC)}, blobs: blobs, search: client}
	seedAgent(e.env)

	for key, text := range map[string]string{
		"agents/cur/sources/session-1.md": "# Session 1\n\nCaroline said she would rather stay near the sea.\n",
		"agents/cur/sources/session-2.md": "# Session 2\n\nMelanie planned the move to Lisbon because of the new job.\n",
		"agents/cur/sources/session-3.md": "# Session 3\n\nThe garden needs watering twice a week.\n",
	} {
		_, err := blob.PutBytes(context.Background(), blobs, key, []byte(text), blob.PutOptions{})
		require.NoError(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, search.WaitCurrent(ctx))
	require.Eventually(t, func() bool {
		r, err := client.Search(context.Background(), &memoryv1.SearchRequest{Query: "session", AgentId: "cur"})
		return err == nil && len(r.GetResults()) == 3
	}, 10*time.Second, 10*time.Millisecond, "sources indexed")
	return e
}

// evidence is what the hint brought: every section with a search score,
// by file.
func (e *hintEnv) evidence(hint string) (map[string]float64, []string) {
	e.t.Helper()
	resp, err := e.client.AssembleContext(e.svc(), &memoryv1.AssembleContextRequest{AgentId: "cur", QueryHint: hint})
	require.NoError(e.t, err, hint)
	out := map[string]float64{}
	for _, s := range resp.GetSections() {
		if s.GetScore() > 0 {
			out[s.GetFile()] = s.GetScore()
		}
	}
	return out, resp.GetWarnings()
}

// The hint is an agent's words, not query syntax: quotes, operators and
// field:value neither require nor filter anything (issue #24, point 4).
func TestQueryHintIsNaturalLanguage(t *testing.T) {
	e := newHintEnv(t)

	plain, _ := e.evidence(`what did Caroline say about the move -- and why?`)
	require.Contains(t, plain, "agents/cur/sources/session-1.md")
	require.Contains(t, plain, "agents/cur/sources/session-2.md")
	require.NotContains(t, plain, "agents/cur/sources/session-3.md")

	quoted, _ := e.evidence(`what did "Caroline" say about the move -- and why?`)
	require.Equal(t, plain, quoted, "quotes in a hint are words, not a required phrase")
	for _, hint := range []string{
		`what did "Caroline say" about the "move -- and why?`,
		`what did +Caroline say about -the move* AND (why?) NOT OR`,
	} {
		got, _ := e.evidence(hint)
		require.Equal(t, plain, got, hint)
	}

	// field:value is a word like any other: it filters nothing.
	fields, _ := e.evidence(`agent:someone-else kind:decisions layer:2 path:memory/other/ the move`)
	require.Contains(t, fields, "agents/cur/sources/session-2.md")

	// Operators alone are no words: no hits, a warning, no error.
	none, warnings := e.evidence(`AND OR NOT`)
	require.Empty(t, none)
	require.Contains(t, warnings, "query hint has no searchable words")
	none, _ = e.evidence(`"" - + * ( ) :`)
	require.Empty(t, none)
}

// waitFor waits until search finds query in agent cur's files.
func (s serviceSearch) waitFor(t *testing.T, query string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := s.Search(context.Background(), &memoryv1.SearchRequest{Query: query, AgentId: "cur"})
		if err == nil && len(r.GetResults()) > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("search never found %q: %w", query, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
