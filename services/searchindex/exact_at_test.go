package searchindex

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/memrepo"
)

// commitAt commits changes with committer time when.
func (e *env) commitAt(when time.Time, changes ...memrepo.Change) plumbing.Hash {
	ctx := context.Background()
	head, err := e.repo.Head(ctx)
	require.NoError(e.t, err)
	sig := memrepo.Signature{Name: "t", Email: "t@x", When: when}
	h, err := e.repo.Commit(ctx, memrepo.CommitRequest{Parent: head, Message: "test commit", Changes: changes, Author: sig, Committer: sig})
	require.NoError(e.t, err)
	return h
}

// "As of a commit" is exact for search too: at=<sha> searches the agent's
// files right after that commit, even when the next one is in the same second,
// and answers in exactly the shape of a search of the head.
func TestSearchAtShaIsExactWithinOneSecond(t *testing.T) {
	e := newEnv(t)
	when := time.Date(2026, 2, 17, 9, 0, 0, 0, time.UTC)
	base := e.commitAt(when.Add(-time.Hour),
		put("memory/cur/snapshot.md", "# Snapshot: cur\n\n## Role\nKeeps the walrus fed.\n"),
		put("logic/cur/current.pseudo.md", "# Logic\n\n1. feed the walrus\n"))
	first := e.commitAt(when, put("memory/cur/facts.md", "# Facts: cur\n\n## Zoo\n- The walrus sleeps at noon\n- alpha pen\n"))
	e.current()
	// What a head search said while the first commit was the head.
	req := func(at string) *memoryv1.SearchRequest {
		return &memoryv1.SearchRequest{Query: "walrus", AgentId: "cur", At: at}
	}
	atHead, err := e.client.Search(e.svcCtx(), req(""))
	require.NoError(t, err)
	require.Len(t, atHead.GetResults(), 3)
	require.Equal(t, first.String(), atHead.GetIndexCommit())

	second := e.commitAt(when, put("memory/cur/facts.md", "# Facts: cur\n\n## Zoo\n- The walrus moved out\n- beta pen\n"),
		memrepo.Change{Path: "logic/cur/current.pseudo.md", Delete: true})
	e.current()

	search := func(q, at string) *memoryv1.SearchResponse {
		r, err := e.client.Search(e.svcCtx(), &memoryv1.SearchRequest{Query: q, AgentId: "cur", At: at})
		require.NoError(t, err, q+" at "+at)
		return r
	}
	files := func(r *memoryv1.SearchResponse) (out []string) {
		for _, x := range r.GetResults() {
			out = append(out, x.GetFile())
		}
		return out
	}
	require.Equal(t, []string{"memory/cur/facts.md"}, files(search("alpha", first.String())))
	require.Empty(t, files(search("beta", first.String())))
	require.Empty(t, files(search("alpha", second.String())))
	require.Equal(t, []string{"memory/cur/facts.md"}, files(search("beta", second.String())))
	require.Empty(t, files(search("alpha", "")), "the head is the second commit")
	require.ElementsMatch(t, []string{"memory/cur/facts.md", "memory/cur/snapshot.md", "logic/cur/current.pseudo.md"}, files(search("walrus", first.String())))
	require.ElementsMatch(t, []string{"memory/cur/facts.md", "memory/cur/snapshot.md"}, files(search("walrus", second.String())))
	require.Empty(t, files(search("alpha", base.String())))
	// A time is the newest commit at or before it: the second.
	require.Empty(t, files(search("alpha", when.Format(time.RFC3339))))
	require.Equal(t, []string{"memory/cur/facts.md"}, files(search("beta", when.Format(time.RFC3339))))
	require.Empty(t, files(search("beta", when.Add(-time.Second).Format(time.RFC3339))))

	// The same answer, field for field, as the head search at that commit
	// (one agent in the repository, so the same corpus statistics). Only
	// the time it took differs, and each hit's commit: the requested one,
	// where the head index says where it indexed the file.
	past, err := e.client.Search(e.svcCtx(), req(first.String()))
	require.NoError(t, err)
	past.Took, atHead.Took = nil, nil
	for _, r := range past.GetResults() {
		require.Equal(t, first.String(), r.GetCommit())
		r.Commit = ""
	}
	for _, r := range atHead.GetResults() {
		r.Commit = ""
	}
	// Equal scores rank in the order the files were indexed, which differs.
	for _, r := range []*memoryv1.SearchResponse{past, atHead} {
		slices.SortStableFunc(r.Results, func(a, b *memoryv1.SearchResult) int {
			return cmp.Or(cmp.Compare(b.GetScore(), a.GetScore()), strings.Compare(a.GetFile(), b.GetFile()))
		})
	}
	require.True(t, proto.Equal(atHead, past), "at=%s\n%v\nhead then\n%v", first, past, atHead)

	// Filters apply as on the head.
	require.Equal(t, []string{"memory/cur/snapshot.md"}, files(func() *memoryv1.SearchResponse {
		r, err := e.client.Search(e.svcCtx(), &memoryv1.SearchRequest{Query: "walrus", AgentId: "cur", At: first.String(), Kinds: []string{"snapshot"}})
		require.NoError(t, err)
		return r
	}()))
	bare, err := e.client.Search(e.svcCtx(), &memoryv1.SearchRequest{Query: "alpha", AgentId: "cur", At: first.String(), OmitExcerpts: true})
	require.NoError(t, err)
	require.Empty(t, bare.GetResults()[0].GetExcerpt())

	// at needs an agent (unless it is the head); bad values are rejected.
	_, err = e.client.Search(e.svcCtx(), &memoryv1.SearchRequest{Query: "walrus", At: first.String()})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	_, err = e.client.Search(e.svcCtx(), &memoryv1.SearchRequest{Query: "walrus", AgentId: "cur", At: "not-a-commit"})
	require.Contains(t, []codes.Code{codes.InvalidArgument, codes.NotFound}, status.Code(err))
	_, err = e.client.Search(e.svcCtx(), &memoryv1.SearchRequest{Query: "walrus", AgentId: "cur", At: "2001-01-01T00:00:00Z"})
	require.Contains(t, []codes.Code{codes.InvalidArgument, codes.NotFound}, status.Code(err))
	// Access is checked as for head searches.
	_, err = e.client.Search(e.as([]auth.Role{auth.RoleAgent}, "other"), &memoryv1.SearchRequest{Query: "walrus", AgentId: "cur", At: first.String()})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	own, err := e.client.Search(e.as([]auth.Role{auth.RoleAgent}, "cur"), &memoryv1.SearchRequest{Query: "alpha", AgentId: "cur", At: first.String()})
	require.NoError(t, err)
	require.Len(t, own.GetResults(), 1)
}
