package contextassembly

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/fulltext"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memread"
)

// Context assembly limits (spec integration §5).
const (
	DefaultBudget = 200_000
	MaxBudget     = 1_000_000
	DefaultTopK   = 20
	maxHintBytes  = 4096
)

// tokensBucket is the tokens_by_layer key of a packed section's kind.
var tokensBucket = map[string]string{"source": "sources", "search_hit": "search"}

// assembleRequest is a validated AssembleContext request: budget and topK
// are set (defaults applied).
type assembleRequest struct {
	agent, at      string
	budget, topK   int
	queryHint      string
	excludeSources bool
	// graph: graph-aware retrieval (the request's, else Retrieval.Graph).
	graph bool
}

// assemble builds a run's context at req.at: Layer 1 first, then the
// agent's sources and search hits for the query hint by score, within the
// budget.
func (s *Service) assemble(ctx context.Context, req assembleRequest) (*memoryv1.AssembleContextResponse, error) {
	budget := req.budget
	files, commit, err := s.at(ctx, req.agent, req.at)
	if err != nil {
		return nil, err
	}
	sha := files.commit.String()
	resp := &memoryv1.AssembleContextResponse{AgentId: req.agent, Commit: sha,
		AssembledAt: timestamppb.New(commit.Committer.When), Budget: int32(budget), TokensByLayer: map[string]int32{}}
	// A section costs its file name and content, a warning its text (see
	// budget.go); Layer 1 is read within the budget, warnings included.
	add := func(sec *memoryv1.ContextSection, bucket string) bool {
		n := int32(s.count(sec.File)) + sec.Tokens
		if int(resp.TotalTokens+n) > budget {
			return false
		}
		resp.Sections = append(resp.Sections, sec)
		resp.TotalTokens += n
		resp.TokensByLayer[bucket] += n
		return true
	}
	warn := func(w string) {
		n := int32(s.count(w))
		if int(resp.TotalTokens+n) > budget {
			resp.Truncated = true // no room left to say more
			return
		}
		resp.Warnings = append(resp.Warnings, w)
		resp.TotalTokens += n
	}

	// 1. Layer 1, always first, cut at section boundaries if the budget is tiny.
	dir := memlayout.AgentDir(req.agent)
	read, err := s.readFolder(ctx, files, memread.Request{Mode: memread.Wide, MaxTokens: budget,
		Include: []string{memlayout.SnapshotFile, memlayout.OpenLoopsFile, memlayout.FactsFile},
		Header:  func(rel string) string { return dir + strings.TrimPrefix(rel, memread.AlwaysLoadPrefix) }}, false, nil)
	if err != nil {
		return nil, budgetError("budget", err)
	}
	l1 := read.res
	inLayer1 := map[string]bool{}
	for _, f := range l1.Files {
		if rel, ok := strings.CutPrefix(f.Rel, memread.AlwaysLoadPrefix); ok {
			add(&memoryv1.ContextSection{Kind: "always_load", File: memlayout.AgentDir(req.agent) + rel, Commit: sha,
				Tokens: int32(f.Tokens), Content: f.Content, Layer: int32(f.Layer), Truncated: f.Truncated}, "layer1")
			continue
		}
		path := memlayout.AgentDir(req.agent) + f.Rel
		inLayer1[path] = true
		if f.Rel == memlayout.FactsFile {
			s.usage.record(req.agent, f.Content)
		}
		add(&memoryv1.ContextSection{Kind: "layer1", File: path, Commit: sha, Tokens: int32(f.Tokens), Content: f.Content, Layer: 1, Truncated: f.Truncated}, "layer1")
	}
	resp.Truncated = l1.Truncated
	for _, w := range l1.Warnings {
		warn(w)
	}
	if n := lapsedIn(l1.Files, commit.Committer.When); n > 0 { // stale.go
		warn(staleWarningText(req.agent, n))
	}

	// 2. The agent's sources (its documents in the object store).
	var srcs []*memoryv1.ContextSection
	if !req.excludeSources {
		srcs, err = s.sources(ctx, req.agent)
		if err != nil {
			s.logger.Warn("object store unavailable for context assembly", "err", err)
			warn("object store unavailable: sources left out")
		}
	}

	// 3. Search hits for the hint, as many as the budget left can use.
	var results, hits []*memoryv1.SearchResult
	if hint := strings.TrimSpace(req.queryHint); hint != "" {
		if s.deps.Search == nil {
			warn("search is not configured: no hits for the query hint")
		} else {
			// The hint is an agent's words, not query syntax: its quotes,
			// AND/OR/NOT, -word or field:value require and filter nothing.
			left := budget - int(resp.TotalTokens)
			sreq := &memoryv1.SearchRequest{Query: fulltext.NaturalQuery(hint), AgentId: req.agent,
				TopK:         int32(s.retrieval.topK(req.topK, left)),
				OmitExcerpts: true, // the packer reads the lines
				Expand:       s.retrieval.expand(left, sourceTokens(srcs))}
			if req.at != "" {
				sreq.At = sha // hits as of the very commit read, not the index's head
			}
			res, err := s.deps.Search.Search(ctx, sreq)
			switch {
			case apierr.Info(err).GetReason() == apierr.ReasonString(memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT):
				warn("query hint has no searchable words")
			case err != nil:
				s.logger.Warn("search for context assembly failed", "err", err)
				warn("search unavailable: no hits for the query hint")
			default:
				if res.GetStale() {
					warn("the search index is behind this commit; hits may miss the newest changes")
				}
				results = res.GetResults()
				for _, r := range results {
					if !inLayer1[r.GetFile()] { // already there in full
						hits = append(hits, r)
					}
				}
			}
		}
	}
	texts := fileTexts(ctx, files, srcs)

	// 4. What the entities the best hits link to bring (graph.go).
	if req.graph {
		switch {
		case s.deps.Graph == nil:
			warn(graphNotConfigured)
		case strings.TrimSpace(req.queryHint) == "":
			warn("graph=true follows the hits of a query hint, and there is none")
		case len(results) > 0:
			at := ""
			if req.at != "" {
				at = sha // the entities' refs as of the very commit read
			}
			more, w := s.graphHits(ctx, files, at, results, texts, inLayer1)
			hits = append(hits, more...)
			if w != "" {
				warn(w)
			}
		}
	}

	// 5. Hits and sources within the budget (pack.go).
	packed := s.packHits(files, texts, int(resp.TotalTokens), budget, hits, srcs)
	for _, sec := range packed.sections {
		resp.Sections = append(resp.Sections, sec)
		resp.TokensByLayer[tokensBucket[sec.Kind]] += int32(s.count(sec.File)) + sec.Tokens
	}
	resp.TotalTokens += int32(packed.spent)
	resp.Truncated = resp.Truncated || packed.truncated
	for _, w := range packed.warnings {
		warn(w)
	}
	if packed.leftOut > 0 {
		warn(fmt.Sprintf("%d of %d sources left out: over the budget", packed.leftOut, len(srcs)))
	}
	return resp, nil
}

// sourceTokens is what the sources cost together.
func sourceTokens(srcs []*memoryv1.ContextSection) int {
	n := 0
	for _, src := range srcs {
		n += int(src.GetTokens())
	}
	return n
}

// sources reads agents/<agent>/sources/*.md, sorted by key: listed at
// most once a sourceListTTL (sourceList), a text fetched only when its
// version is not in sourceTexts.
func (s *Service) sources(ctx context.Context, agent string) ([]*memoryv1.ContextSection, error) {
	if s.deps.Blobs == nil {
		return nil, nil
	}
	infos, err := s.sourceList(ctx, agent)
	var out []*memoryv1.ContextSection
	for _, info := range infos {
		content, etag, err := s.sourceText(ctx, info)
		if errors.Is(err, blob.ErrNotFound) {
			continue
		}
		if err != nil {
			return out, err
		}
		out = append(out, &memoryv1.ContextSection{Kind: "source", File: info.Key, Commit: etag,
			Content: content, Tokens: int32(s.counts.source(info.Key, etag, content, s.count))})
	}
	return out, err
}

// sourceListTTL is how long an agent's listing of sources is used before
// the object store is listed again: every AssembleContext listed them, a
// round trip on MinIO and 9 % of the CPU on the folder store (issue #30).
// A source put in or taken out is seen within it — sooner than search
// hits follow, which wait for the index's own listing
// (--search-sources-poll, 10 s).
const sourceListTTL = time.Second

// sourceList is one listing of an agent's sources (Markdown only).
type sourceList struct {
	at    time.Time
	infos []blob.Info
}

// sourceList lists the agent's sources, or returns the listing made less
// than sourceListTTL ago. A listing that failed is not kept: what it
// found so far comes back with the error.
func (s *Service) sourceList(ctx context.Context, agent string) ([]blob.Info, error) {
	now := s.now()
	if l, ok := s.sourceLists.Get(agent); ok && now.Sub(l.at) < sourceListTTL && !now.Before(l.at) {
		return l.infos, nil
	}
	l := &sourceList{at: now}
	cost := int64(len(agent)) + contentEntryCost
	for info, err := range s.deps.Blobs.List(ctx, "agents/"+agent+"/sources/") {
		if err != nil {
			return l.infos, err
		}
		if strings.HasSuffix(info.Key, ".md") {
			l.infos = append(l.infos, info)
			cost += contentEntryCost + int64(len(info.Key)+len(info.ETag)+len(info.ContentType))
		}
	}
	s.sourceLists.Put(agent, l, cost)
	return l.infos, nil
}

// sourceText returns the text and ETag of the listed source: from
// sourceTexts when the listing's version is there (an ETag names a content,
// so its text never changes), else from the object store (a round trip per
// source on MinIO, a file open and read per source on the folder store).
func (s *Service) sourceText(ctx context.Context, info blob.Info) (text, etag string, err error) {
	if info.ETag != "" {
		if text, ok := s.sourceTexts.Get(contentKey{source: info.Key, etag: info.ETag}); ok {
			return text, info.ETag, nil
		}
	}
	data, got, err := blob.GetBytes(ctx, s.deps.Blobs, info.Key)
	if err != nil {
		return "", "", err
	}
	text = string(data)
	if got.ETag != "" {
		s.sourceTexts.Put(contentKey{source: info.Key, etag: got.ETag}, text, contentEntryCost+int64(len(info.Key)+len(got.ETag)+len(text)))
	}
	return text, got.ETag, nil
}
