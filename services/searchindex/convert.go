package searchindex

import (
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/fulltext"
)

// Conversions between the API's messages and the index's types.

// searchQuery is the query a search request asks (before validation).
func searchQuery(req *memoryv1.SearchRequest) fulltext.Query {
	return fulltext.Query{Text: req.GetQuery(), TopK: int(req.GetTopK()), AgentID: req.GetAgentId(),
		Layer: int(req.GetLayer()), Kinds: req.GetKinds(), PathPrefix: req.GetPathPrefix(),
		OmitExcerpts: req.GetOmitExcerpts(), Expand: req.GetExpand()}
}

func searchResponse(res *searchResult) *memoryv1.SearchResponse {
	resp := &memoryv1.SearchResponse{TotalHits: int32(res.TotalHits), Took: durationpb.New(res.Took), IndexCommit: res.State.LastCommit,
		Stale: res.stale}
	for _, hit := range res.Hits {
		resp.Results = append(resp.Results, &memoryv1.SearchResult{
			Score: hit.Score, File: hit.Path, Excerpt: hit.Excerpt, Layer: int32(hit.Layer), AgentId: hit.AgentID,
			Span: &memoryv1.Span{StartLine: int32(hit.StartLine), EndLine: int32(hit.EndLine)}, Commit: hit.Version, Kind: hit.Kind,
		})
	}
	return resp
}

func statusResponse(st *indexStatus) *memoryv1.GetIndexStatusResponse {
	resp := &memoryv1.GetIndexStatusResponse{
		LastCommit: st.state.LastCommit, Documents: int32(st.state.Documents), Chunks: int32(st.state.Chunks),
		Reindexing: st.reindexing, HeadCommit: st.head, LagCommits: int32(st.lagCommits),
	}
	if !st.state.IndexedAt.IsZero() {
		resp.LastIndexedAt = timestamppb.New(st.state.IndexedAt)
	}
	if st.lag != nil {
		resp.Lag = durationpb.New(*st.lag)
	}
	return resp
}
