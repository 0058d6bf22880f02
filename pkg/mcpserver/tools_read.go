package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
)

// RouteContextInput are route_context's arguments (memory-bridge §7
// rlm_route_context).
type RouteContextInput struct {
	AgentID      string `json:"agent_id,omitempty" jsonschema:"The agent whose memory this is about (a slug such as garden-bloom-curator). Omit it to use the server's default agent (memctl mcp --agent, or /mcp?agent=<id>)."`
	Query        string `json:"query" jsonschema:"What you are about to do, in natural language; memory matching it (BM25 search) is added after the agent's Layer 1 files."`
	MaxTokens    int32  `json:"max_tokens,omitempty" jsonschema:"Token budget of the whole answer (default 2000). Layer 1 comes first and is cut at section boundaries to fit; search hits fill what is left."`
	IncludeStale bool   `json:"include_stale,omitempty" jsonschema:"Also list the agent's facts whose TTL has run out, to review or refresh them (default false)."`
}

// ContextSectionOutput is one piece of an assembled context.
type ContextSectionOutput struct {
	Kind      string  `json:"kind" jsonschema:"layer1, source or search_hit."`
	File      string  `json:"file"`
	Lines     string  `json:"lines,omitempty" jsonschema:"Line range of the file, e.g. 12-20."`
	Layer     int32   `json:"layer" jsonschema:"1 or 2 for memory files, 0 for sources and logic."`
	Tokens    int32   `json:"tokens"`
	Score     float64 `json:"score,omitempty" jsonschema:"BM25 score of a search hit."`
	Truncated bool    `json:"truncated"`
	Content   string  `json:"content"`
}

// RouteContextOutput is route_context's answer.
type RouteContextOutput struct {
	Status             string                 `json:"status" jsonschema:"success."`
	AgentID            string                 `json:"agent_id"`
	Commit             string                 `json:"commit" jsonschema:"The commit the context was read at."`
	Facts              []string               `json:"facts" jsonschema:"The fact lines of facts.md the context holds."`
	Context            string                 `json:"context" jsonschema:"Every section as one Markdown text, in load order."`
	Sections           []ContextSectionOutput `json:"sections"`
	RoutingExplanation string                 `json:"routing_explanation" jsonschema:"What was loaded and why."`
	TokensUsed         int32                  `json:"tokens_used"`
	MaxTokens          int32                  `json:"max_tokens"`
	Truncated          bool                   `json:"truncated" jsonschema:"Something was cut or left out to stay within max_tokens."`
	Warnings           []string               `json:"warnings,omitempty"`
	StaleFacts         []StaleFactOutput      `json:"stale_facts,omitempty" jsonschema:"With include_stale: the facts whose TTL has run out."`
}

func (o RouteContextOutput) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Context of %s at %s (%d of %d tokens). %s\n\n%s", o.AgentID, shortSHA(o.Commit), o.TokensUsed,
		o.MaxTokens, o.RoutingExplanation, o.Context)
	for _, w := range o.Warnings {
		b.WriteString("\nwarning: " + w)
	}
	if len(o.StaleFacts) > 0 {
		b.WriteString("\n\nStale facts:\n")
		staleFactsText(&b, o.StaleFacts)
	}
	return b.String()
}

func (s *server) routeContext(ctx context.Context, c Caller, in RouteContextInput) (RouteContextOutput, error) {
	agentID, err := agent(in.AgentID, c)
	if err != nil {
		return RouteContextOutput{}, err
	}
	if strings.TrimSpace(in.Query) == "" {
		return RouteContextOutput{}, apierr.InvalidArgument("query", "query is required: say what you are about to do")
	}
	resp, err := s.clients.ContextAssembly.AssembleContext(ctx, &memoryv1.AssembleContextRequest{
		AgentId: agentID, QueryHint: in.Query, Budget: in.MaxTokens})
	if err != nil {
		return RouteContextOutput{}, err
	}
	out := RouteContextOutput{Status: "success", AgentID: resp.GetAgentId(), Commit: resp.GetCommit(),
		Facts: []string{}, Sections: []ContextSectionOutput{}, TokensUsed: resp.GetTotalTokens(), MaxTokens: resp.GetBudget(),
		Truncated: resp.GetTruncated(), Warnings: resp.GetWarnings()}
	var text strings.Builder
	counts := map[string]int{}
	for _, sec := range resp.GetSections() {
		out.Sections = append(out.Sections, ContextSectionOutput{Kind: sec.GetKind(), File: sec.GetFile(), Lines: lines(sec.GetSpan()),
			Layer: sec.GetLayer(), Tokens: sec.GetTokens(), Score: sec.GetScore(), Truncated: sec.GetTruncated(), Content: sec.GetContent()})
		counts[sec.GetKind()]++
		fmt.Fprintf(&text, "### %s", sec.GetFile())
		if l := lines(sec.GetSpan()); l != "" {
			fmt.Fprintf(&text, " (lines %s)", l)
		}
		text.WriteString("\n\n" + strings.TrimRight(sec.GetContent(), "\n") + "\n\n")
		if strings.HasSuffix(sec.GetFile(), "facts.md") {
			for line := range strings.SplitSeq(sec.GetContent(), "\n") {
				if t := strings.TrimSpace(line); strings.HasPrefix(t, "- ") && !slices.Contains(out.Facts, t) {
					out.Facts = append(out.Facts, t)
				}
			}
		}
	}
	out.Context = strings.TrimRight(text.String(), "\n")
	out.RoutingExplanation = routingExplanation(counts, resp.GetTokensByLayer(), in.Query)
	if in.IncludeStale {
		stale, err := s.clients.ContextAssembly.GetStaleFacts(ctx, &memoryv1.GetStaleFactsRequest{AgentId: agentID})
		if err != nil {
			return RouteContextOutput{}, err
		}
		out.StaleFacts = staleFactOutputs(stale.GetFacts())
	}
	return out, nil
}

// routingExplanation says in one sentence what the context holds.
func routingExplanation(counts map[string]int, tokens map[string]int32, query string) string {
	var parts []string
	if n := counts["layer1"]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d Layer 1 file(s) (%d tokens)", n, tokens["layer1"]))
	}
	if n := counts["search_hit"]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d search hit(s) for %q (%d tokens)", n, apierr.Clip(query), tokens["search"]))
	}
	if n := counts["source"]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d source(s) (%d tokens)", n, tokens["sources"]))
	}
	if len(parts) == 0 {
		return "The agent has nothing within the budget."
	}
	return "Loaded " + strings.Join(parts, ", ") + "."
}

// ReadMemoryInput are read_memory's arguments (DiffMem §4.1 read-memory).
type ReadMemoryInput struct {
	AgentID      string   `json:"agent_id,omitempty" jsonschema:"The agent whose memory this is about (a slug such as garden-bloom-curator). Omit it to use the server's default agent (memctl mcp --agent, or /mcp?agent=<id>)."`
	Mode         string   `json:"mode,omitempty" jsonschema:"What to load (default basic): basic = snapshot.md + open_loops.md (at most ~4,100 tokens); wide = basic + facts.md + the last 5 decisions (~13,000); deep = every current-state file incl. changelog and the last 7 days of timeline (~32,000); temporal = snapshot.md + the git diffs between from and to."`
	MaxTokens    int32    `json:"max_tokens,omitempty" jsonschema:"Upper bound on the tokens returned; 0 = the mode's maximum. Files are cut at section boundaries to fit."`
	IncludeFiles []string `json:"include_files,omitempty" jsonschema:"Only these files of the mode, relative to the agent folder (e.g. facts.md); empty = all of the mode's files."`
	At           string   `json:"at,omitempty" jsonschema:"Read the memory as it was at a commit sha or an RFC 3339 time; empty = now."`
	From         string   `json:"from,omitempty" jsonschema:"temporal mode: start of the range (commit sha or RFC 3339 time)."`
	To           string   `json:"to,omitempty" jsonschema:"temporal mode: end of the range; empty = at, or now."`
}

// FileOutput is one file of a read.
type FileOutput struct {
	File       string `json:"file" jsonschema:"Path relative to the agent folder."`
	Content    string `json:"content"`
	TokenCount int32  `json:"token_count"`
	Layer      int32  `json:"layer" jsonschema:"1 (auto-loaded) or 2 (explicit request only)."`
	Truncated  bool   `json:"truncated" jsonschema:"Cut at a section boundary to fit the budget."`
}

// ReadMemoryOutput is read_memory's answer.
type ReadMemoryOutput struct {
	AgentID    string            `json:"agent_id"`
	Version    int32             `json:"version" jsonschema:"The agent's meta.json version: pass it as expected_version to propose_memory_update."`
	Commit     string            `json:"commit" jsonschema:"The commit the read was served from."`
	LoadedAt   string            `json:"loaded_at" jsonschema:"Commit time of commit."`
	Mode       string            `json:"mode"`
	TokenCount int32             `json:"token_count"`
	Files      []FileOutput      `json:"files"`
	Truncated  bool              `json:"truncated" jsonschema:"Something was cut or left out to stay within max_tokens."`
	Warnings   []string          `json:"warnings,omitempty"`
	Diffs      map[string]string `json:"diffs,omitempty" jsonschema:"temporal mode: unified diff per file over the range."`
}

func (o ReadMemoryOutput) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Memory of %s, version %d at %s (%s, %d tokens)\n", o.AgentID, o.Version, shortSHA(o.Commit), o.Mode, o.TokenCount)
	for _, f := range o.Files {
		fmt.Fprintf(&b, "\n## %s\n\n%s\n", f.File, strings.TrimRight(f.Content, "\n"))
	}
	for f, d := range o.Diffs {
		fmt.Fprintf(&b, "\n## diff %s\n\n%s\n", f, d)
	}
	for _, w := range o.Warnings {
		b.WriteString("\nwarning: " + w)
	}
	return strings.TrimRight(b.String(), "\n")
}

func (s *server) readMemory(ctx context.Context, c Caller, in ReadMemoryInput) (ReadMemoryOutput, error) {
	agentID, err := agent(in.AgentID, c)
	if err != nil {
		return ReadMemoryOutput{}, err
	}
	mode, err := parseEnum(memoryv1.ReadMode(0).Descriptor(), "mode", in.Mode)
	if err != nil {
		return ReadMemoryOutput{}, err
	}
	resp, err := s.clients.ContextAssembly.ReadMemory(ctx, &memoryv1.ReadMemoryRequest{AgentId: agentID,
		Mode: memoryv1.ReadMode(mode), MaxTokens: in.MaxTokens, IncludeFiles: in.IncludeFiles, At: in.At, From: in.From, To: in.To})
	if err != nil {
		return ReadMemoryOutput{}, err
	}
	out := ReadMemoryOutput{AgentID: resp.GetAgentId(), Version: resp.GetVersion(), Commit: resp.GetCommit(),
		LoadedAt: timeString(resp.GetLoadedAt()), Mode: name(resp.GetMode()), TokenCount: resp.GetTokenCount(),
		Files: []FileOutput{}, Truncated: resp.GetTruncated(), Warnings: resp.GetWarnings(), Diffs: resp.GetDiffs()}
	for _, f := range resp.GetFiles() {
		out.Files = append(out.Files, FileOutput{File: f.GetFile(), Content: f.GetContent(), TokenCount: f.GetTokenCount(),
			Layer: f.GetLayer(), Truncated: f.GetTruncated()})
	}
	return out, nil
}

// SearchMemoryInput are search_memory's arguments.
type SearchMemoryInput struct {
	Query      string   `json:"query" jsonschema:"Words to find (BM25). A phrase in double quotes must appear as written."`
	AgentID    string   `json:"agent_id,omitempty" jsonschema:"Only this agent's memory. Omitted: the server's default agent if it has one, else every agent your token may read."`
	TopK       int32    `json:"top_k,omitempty" jsonschema:"Most results to return, 1 to 100 (default 10)."`
	Layer      int32    `json:"layer,omitempty" jsonschema:"1 = Layer 1 only, 2 = Layer 2 only, 0 = Layer 1, logic and sources (Layer 2 is never searched unasked)."`
	Kinds      []string `json:"kinds,omitempty" jsonschema:"Only these kinds of file: snapshot, facts, open_loops, decisions, source, logic, …"`
	PathPrefix string   `json:"path_prefix,omitempty" jsonschema:"Only files under this path prefix."`
	At         string   `json:"at,omitempty" jsonschema:"Search the memory as it was at a commit sha or RFC 3339 time (needs an agent)."`
}

// SearchResultOutput is one search hit.
type SearchResultOutput struct {
	Score   float64 `json:"score"`
	AgentID string  `json:"agent_id"`
	File    string  `json:"file"`
	Lines   string  `json:"lines,omitempty" jsonschema:"Line range of the matching chunk, e.g. 12-20."`
	Layer   int32   `json:"layer"`
	Kind    string  `json:"kind"`
	Excerpt string  `json:"excerpt" jsonschema:"The matching fragment; matches marked with «»."`
	Commit  string  `json:"commit"`
}

// SearchMemoryOutput is search_memory's answer.
type SearchMemoryOutput struct {
	Results     []SearchResultOutput `json:"results"`
	TotalHits   int32                `json:"total_hits"`
	IndexCommit string               `json:"index_commit" jsonschema:"The commit the index is at."`
	Stale       bool                 `json:"stale" jsonschema:"The index is behind the newest commit; results may miss it."`
}

func (o SearchMemoryOutput) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d hit(s), index at %s", o.TotalHits, shortSHA(o.IndexCommit))
	if o.Stale {
		b.WriteString(" (behind the newest commit)")
	}
	for i, r := range o.Results {
		fmt.Fprintf(&b, "\n%d. %s", i+1, r.File)
		if r.Lines != "" {
			b.WriteString(":" + r.Lines)
		}
		fmt.Fprintf(&b, " (score %.2f, layer %d)\n   %s", r.Score, r.Layer, strings.ReplaceAll(strings.TrimSpace(r.Excerpt), "\n", "\n   "))
	}
	return b.String()
}

func (s *server) searchMemory(ctx context.Context, c Caller, in SearchMemoryInput) (SearchMemoryOutput, error) {
	agentID := in.AgentID
	if agentID == "" {
		agentID = c.Agent // "" searches every agent the token may read
	}
	resp, err := s.clients.SearchIndex.Search(ctx, &memoryv1.SearchRequest{Query: in.Query, TopK: in.TopK, AgentId: agentID,
		Layer: in.Layer, Kinds: in.Kinds, PathPrefix: in.PathPrefix, At: in.At})
	if err != nil {
		return SearchMemoryOutput{}, err
	}
	out := SearchMemoryOutput{Results: []SearchResultOutput{}, TotalHits: resp.GetTotalHits(), IndexCommit: resp.GetIndexCommit(), Stale: resp.GetStale()}
	for _, r := range resp.GetResults() {
		out.Results = append(out.Results, SearchResultOutput{Score: r.GetScore(), AgentID: r.GetAgentId(), File: r.GetFile(),
			Lines: lines(r.GetSpan()), Layer: r.GetLayer(), Kind: r.GetKind(), Excerpt: r.GetExcerpt(), Commit: r.GetCommit()})
	}
	return out, nil
}

// MemoryDiffInput are memory_diff's arguments (DiffMem §4.3 memory-diff).
type MemoryDiffInput struct {
	AgentID   string   `json:"agent_id,omitempty" jsonschema:"The agent whose memory this is about (a slug such as garden-bloom-curator). Omit it to use the server's default agent (memctl mcp --agent, or /mcp?agent=<id>)."`
	From      string   `json:"from,omitempty" jsonschema:"Start: a commit sha, HEAD~5 or an RFC 3339 time; default the agent's first commit."`
	To        string   `json:"to,omitempty" jsonschema:"End: a commit sha or RFC 3339 time; default now."`
	Files     []string `json:"files,omitempty" jsonschema:"Only these files, relative to the agent folder; empty = all."`
	Format    string   `json:"format,omitempty" jsonschema:"unified = a unified diff per file (default); facts = the facts, loops and decisions added, removed and changed."`
	MaxTokens int32    `json:"max_tokens,omitempty" jsonschema:"Upper bound on the tokens returned; 0 = no bound."`
}

// ItemChangeOutput is one entry of a facts-format diff.
type ItemChangeOutput struct {
	Item    string `json:"item" jsonschema:"fact, loop or decision."`
	Change  string `json:"change" jsonschema:"added, removed or changed."`
	File    string `json:"file"`
	Section string `json:"section,omitempty"`
	Before  string `json:"before,omitempty"`
	After   string `json:"after,omitempty"`
}

// DiffStatsOutput are a diff's figures.
type DiffStatsOutput struct {
	Commits   int32 `json:"commits"`
	Files     int32 `json:"files"`
	Additions int32 `json:"additions"`
	Deletions int32 `json:"deletions"`
}

// MemoryDiffOutput is memory_diff's answer.
type MemoryDiffOutput struct {
	AgentID    string             `json:"agent_id"`
	From       string             `json:"from" jsonschema:"Resolved commit sha."`
	To         string             `json:"to" jsonschema:"Resolved commit sha."`
	FromDate   string             `json:"from_date,omitempty"`
	ToDate     string             `json:"to_date,omitempty"`
	Summary    string             `json:"summary" jsonschema:"N commits, M files, +a −d."`
	Stats      DiffStatsOutput    `json:"stats"`
	Diff       map[string]string  `json:"diff,omitempty" jsonschema:"unified format: file -> unified diff."`
	Changes    []ItemChangeOutput `json:"changes,omitempty" jsonschema:"facts format: what changed."`
	TokenCount int32              `json:"token_count"`
	Truncated  bool               `json:"truncated"`
}

func (o MemoryDiffOutput) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Diff of %s %s..%s: %s", o.AgentID, shortSHA(o.From), shortSHA(o.To), o.Summary)
	files := make([]string, 0, len(o.Diff))
	for f := range o.Diff {
		files = append(files, f)
	}
	slices.Sort(files)
	for _, f := range files {
		fmt.Fprintf(&b, "\n\n```diff\n%s\n```", strings.TrimRight(o.Diff[f], "\n"))
	}
	for _, ch := range o.Changes {
		fmt.Fprintf(&b, "\n- %s %s in %s", ch.Item, ch.Change, ch.File)
		if ch.Before != "" {
			fmt.Fprintf(&b, "\n  before: %s", ch.Before)
		}
		if ch.After != "" {
			fmt.Fprintf(&b, "\n  after: %s", ch.After)
		}
	}
	return b.String()
}

func (s *server) memoryDiff(ctx context.Context, c Caller, in MemoryDiffInput) (MemoryDiffOutput, error) {
	agentID, err := agent(in.AgentID, c)
	if err != nil {
		return MemoryDiffOutput{}, err
	}
	format, err := parseEnum(memoryv1.DiffFormat(0).Descriptor(), "format", in.Format)
	if err != nil {
		return MemoryDiffOutput{}, err
	}
	resp, err := s.clients.ContextAssembly.DiffMemory(ctx, &memoryv1.DiffMemoryRequest{AgentId: agentID, From: in.From, To: in.To,
		Files: in.Files, Format: memoryv1.DiffFormat(format), MaxTokens: in.MaxTokens})
	if err != nil {
		return MemoryDiffOutput{}, err
	}
	st := resp.GetStats()
	out := MemoryDiffOutput{AgentID: resp.GetAgentId(), From: resp.GetFrom(), To: resp.GetTo(), FromDate: timeString(resp.GetFromDate()),
		ToDate: timeString(resp.GetToDate()), Summary: resp.GetSummary(), Diff: resp.GetDiff(), TokenCount: resp.GetTokenCount(),
		Truncated: resp.GetTruncated(), Stats: DiffStatsOutput{Commits: st.GetCommits(), Files: st.GetFiles(),
			Additions: st.GetAdditions(), Deletions: st.GetDeletions()}}
	for _, ch := range resp.GetChanges() {
		out.Changes = append(out.Changes, ItemChangeOutput{Item: ch.GetItem(), Change: name(ch.GetChange()), File: ch.GetFile(),
			Section: ch.GetSection(), Before: ch.GetBefore(), After: ch.GetAfter()})
	}
	return out, nil
}

// GetEntityInput are get_entity's arguments.
type GetEntityInput struct {
	EntityID  string `json:"entity_id" jsonschema:"The entity's id: a slug such as minio, or typed as in wiki links, e.g. person:alice, skill:git-rebase."`
	AgentID   string `json:"agent_id,omitempty" jsonschema:"Only this agent's refs and evidence; omitted = every agent your token may read (the default agent does not apply)."`
	At        string `json:"at,omitempty" jsonschema:"The entity as it was at a commit sha or RFC 3339 time; empty = now."`
	PageToken string `json:"page_token,omitempty" jsonschema:"next_page_token of the previous answer, for the next page of relations."`
}

// GetEntityOutput is get_entity's answer.
type GetEntityOutput struct {
	Entity        EntityOutput `json:"entity"`
	Edges         []EdgeOutput `json:"edges" jsonschema:"One page of its relations (100), with when they held and where they were seen (20 places each at most)."`
	Refs          []string     `json:"refs,omitempty" jsonschema:"Files that mention it."`
	TotalEdges    int32        `json:"total_edges" jsonschema:"Its relations on all pages."`
	NextPageToken string       `json:"next_page_token,omitempty" jsonschema:"Pass as page_token for the next page; absent on the last."`
}

func (o GetEntityOutput) text() string {
	var b strings.Builder
	e := o.Entity
	fmt.Fprintf(&b, "%s (%s) %q, %d ref(s)", e.EntityID, e.Type, e.Label, len(o.Refs))
	if len(e.Aliases) > 0 {
		fmt.Fprintf(&b, ", aliases %s", strings.Join(e.Aliases, ", "))
	}
	b.WriteString("\n")
	for _, r := range o.Refs {
		b.WriteString("ref: " + r + "\n")
	}
	edgesText(&b, o.Edges)
	if o.NextPageToken != "" {
		fmt.Fprintf(&b, "%d of %d relations; more with page_token %s\n", len(o.Edges), o.TotalEdges, o.NextPageToken)
	}
	return strings.TrimRight(b.String(), "\n")
}

func (s *server) getEntity(ctx context.Context, _ Caller, in GetEntityInput) (GetEntityOutput, error) {
	resp, err := s.clients.EntityGraph.GetEntity(ctx, &memoryv1.GetEntityRequest{EntityId: in.EntityID, AgentId: in.AgentID, At: in.At, PageToken: in.PageToken})
	if err != nil {
		return GetEntityOutput{}, err
	}
	return GetEntityOutput{Entity: entityOutput(resp.GetEntity()), Edges: edgeOutputs(resp.GetEdges()), Refs: resp.GetRefs(),
		TotalEdges: resp.GetTotalEdges(), NextPageToken: resp.GetNextPageToken()}, nil
}

// CausalChainInput are get_causal_chain's arguments (memory-bridge §7
// rlm_get_causal_chain).
type CausalChainInput struct {
	Query      string `json:"query,omitempty" jsonschema:"Words that find the decision (its title, what it decided). Give this or decision_id."`
	DecisionID string `json:"decision_id,omitempty" jsonschema:"The decision's entity id, e.g. decision-2026-02-17-use-minio. Give this or query."`
	MaxDepth   int32  `json:"max_depth,omitempty" jsonschema:"How many earlier decisions to follow back (default 5)."`
}

// CausalChainOutput is get_causal_chain's answer.
type CausalChainOutput struct {
	Status   string           `json:"status" jsonschema:"success."`
	Chain    []DecisionOutput `json:"chain" jsonschema:"The decision first, then the decisions it builds on."`
	Edges    []EdgeOutput     `json:"edges"`
	Mermaid  string           `json:"mermaid" jsonschema:"A Mermaid flowchart of the chain."`
	Entities []string         `json:"entities,omitempty" jsonschema:"Ids of the entities in the chain."`
}

func (o CausalChainOutput) text() string {
	var b strings.Builder
	for i, d := range o.Chain {
		if i == 0 {
			fmt.Fprintf(&b, "Decision %s: %s", d.ID, d.Title)
		} else {
			fmt.Fprintf(&b, "\nbuilds on %s: %s", d.ID, d.Title)
		}
		if d.Rationale != "" {
			fmt.Fprintf(&b, "\n  why: %s", d.Rationale)
		}
	}
	if o.Mermaid != "" {
		fmt.Fprintf(&b, "\n\n```mermaid\n%s\n```", strings.TrimRight(o.Mermaid, "\n"))
	}
	return b.String()
}

func (s *server) getCausalChain(ctx context.Context, _ Caller, in CausalChainInput) (CausalChainOutput, error) {
	if strings.TrimSpace(in.Query) == "" && in.DecisionID == "" {
		return CausalChainOutput{}, apierr.InvalidArgument("query", "give query (words that find the decision) or decision_id")
	}
	resp, err := s.clients.EntityGraph.ExplainDecision(ctx, &memoryv1.ExplainDecisionRequest{DecisionId: in.DecisionID,
		Query: in.Query, Depth: in.MaxDepth})
	if err != nil {
		return CausalChainOutput{}, err
	}
	out := CausalChainOutput{Status: "success", Chain: []DecisionOutput{}, Edges: edgeOutputs(resp.GetEdges()), Mermaid: resp.GetMermaid()}
	for _, d := range resp.GetChain() {
		out.Chain = append(out.Chain, decisionOutput(d))
	}
	for _, e := range resp.GetEntities() {
		out.Entities = append(out.Entities, e.GetEntityId())
	}
	return out, nil
}

// GetStaleFactsInput are get_stale_facts's arguments (memory-bridge §7
// rlm_get_stale_facts).
type GetStaleFactsInput struct {
	AgentID         string `json:"agent_id,omitempty" jsonschema:"The agent whose memory this is about (a slug such as garden-bloom-curator). Omit it to use the server's default agent (memctl mcp --agent, or /mcp?agent=<id>)."`
	IncludeArchived bool   `json:"include_archived,omitempty" jsonschema:"Also the expired facts already archived to decisions.md (default false)."`
}

// GetStaleFactsOutput is get_stale_facts's answer.
type GetStaleFactsOutput struct {
	AgentID string            `json:"agent_id"`
	Commit  string            `json:"commit" jsonschema:"The commit the answer was read at."`
	Facts   []StaleFactOutput `json:"facts" jsonschema:"Facts whose TTL has run out: refresh them (set_ttl, propose_memory_update) or let their expiry action run."`
}

func (o GetStaleFactsOutput) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d stale fact(s) of %s at %s\n", len(o.Facts), o.AgentID, shortSHA(o.Commit))
	staleFactsText(&b, o.Facts)
	return strings.TrimRight(b.String(), "\n")
}

func (s *server) getStaleFacts(ctx context.Context, c Caller, in GetStaleFactsInput) (GetStaleFactsOutput, error) {
	agentID, err := agent(in.AgentID, c)
	if err != nil {
		return GetStaleFactsOutput{}, err
	}
	resp, err := s.clients.ContextAssembly.GetStaleFacts(ctx, &memoryv1.GetStaleFactsRequest{AgentId: agentID, IncludeArchived: in.IncludeArchived})
	if err != nil {
		return GetStaleFactsOutput{}, err
	}
	return GetStaleFactsOutput{AgentID: agentID, Commit: resp.GetCommit(), Facts: staleFactOutputs(resp.GetFacts())}, nil
}
