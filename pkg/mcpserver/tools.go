package mcpserver

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// ToolNames are the names of the server's tools.
var ToolNames = []string{
	"route_context", "read_memory", "search_memory", "get_entity", "get_causal_chain", "memory_diff",
	"get_stale_facts", "propose_memory_update", "ingest_episode", "set_ttl",
}

// addTools registers every tool: its description (what a model needs to
// pick it), its argument rules and the service field names its errors
// may carry.
func (s *server) addTools(srv *mcp.Server) {
	addTool(s, srv, tool[RouteContextInput, RouteContextOutput]{
		name: "route_context", title: "Route context", readOnly: true, idempotent: true,
		description: "Load the memory relevant to a task within a token budget: the agent's Layer 1 memory " +
			"(snapshot, open loops, facts) first, then the search hits for your query. Call it at the start of a task.",
		rules:  map[string]rule{"max_tokens": {def: 2000, min: bound(1)}, "include_stale": {def: false}},
		fields: map[string]string{"budget": "max_tokens", "query_hint": "query", "agent": "agent_id"},
		run:    s.routeContext,
	})
	addTool(s, srv, tool[ReadMemoryInput, ReadMemoryOutput]{
		name: "read_memory", title: "Read memory", readOnly: true, idempotent: true,
		description: "Read an agent's memory files in a read mode (basic, wide, deep or temporal), within a token budget. " +
			"Its version is what propose_memory_update takes as expected_version.",
		rules: map[string]rule{
			"mode":       {enum: enumValues(memoryv1.ReadMode(0).Descriptor()), def: "basic"},
			"max_tokens": {min: bound(0)},
		},
		run: s.readMemory,
	})
	addTool(s, srv, tool[SearchMemoryInput, SearchMemoryOutput]{
		name: "search_memory", title: "Search memory", readOnly: true, idempotent: true,
		description: "Full-text (BM25) search over memory: Layer 1, logic and sources by default. " +
			"Returns ranked excerpts with file, line range and commit.",
		rules: map[string]rule{
			"top_k": {def: 10, min: bound(1), max: bound(100)},
			"layer": {enum: []any{0, 1, 2}},
		},
		fields: map[string]string{"q": "query", "k": "top_k"},
		run:    s.searchMemory,
	})
	addTool(s, srv, tool[GetEntityInput, GetEntityOutput]{
		name: "get_entity", title: "Get entity", readOnly: true, idempotent: true,
		description: "Look up an entity of the knowledge graph (a concept, person, project, skill, failure mode, …): " +
			"the files that mention it and its typed relations, each with when it held and where it was seen.",
		run: s.getEntity,
	})
	addTool(s, srv, tool[CausalChainInput, CausalChainOutput]{
		name: "get_causal_chain", title: "Get causal chain", readOnly: true, idempotent: true,
		description: "Explain a decision: find it by query (or decision_id) and follow the decisions it builds on, " +
			"newest first, with a Mermaid flowchart of the chain.",
		rules:  map[string]rule{"max_depth": {def: 5, min: bound(1)}},
		fields: map[string]string{"depth": "max_depth"},
		run:    s.getCausalChain,
	})
	addTool(s, srv, tool[MemoryDiffInput, MemoryDiffOutput]{
		name: "memory_diff", title: "Memory diff", readOnly: true, idempotent: true,
		description: "What changed in an agent's memory between two points (commits or times): " +
			"unified diffs per file, or the facts, loops and decisions added, removed and changed.",
		rules: map[string]rule{
			"format":     {enum: enumValues(memoryv1.DiffFormat(0).Descriptor()), def: "unified"},
			"max_tokens": {min: bound(0)},
		},
		run: s.memoryDiff,
	})
	addTool(s, srv, tool[GetStaleFactsInput, GetStaleFactsOutput]{
		name: "get_stale_facts", title: "Get stale facts", readOnly: true, idempotent: true,
		description: "List an agent's facts whose TTL has run out (or that are marked stale), to review or refresh them.",
		rules:       map[string]rule{"include_archived": {def: false}},
		run:         s.getStaleFacts,
	})
	addTool(s, srv, tool[ProposeInput, ProposalOutput]{
		name: "propose_memory_update", title: "Propose memory update",
		description: "Propose changes to an agent's memory: facts to add or remove, loops to open or close, a decision, " +
			"a new snapshot, a run record. They are applied together as one git commit once approved " +
			"(by the agent's policy at once, or by a person: the answer says which). Nothing is written otherwise.",
		rules: map[string]rule{
			"updates":                 {minItems: atLeast(1)},
			"updates[].operation":     {enum: enumValues(memoryv1.Operation(0).Descriptor(), "restore", "delete")},
			"updates[].loop_priority": {enum: enumValues(memoryv1.LoopPriority(0).Descriptor())},
			"priority":                {enum: enumValues(memoryv1.Priority(0).Descriptor()), def: "normal"},
			"expected_version":        {min: bound(0)},
		},
		run: s.propose,
	})
	addTool(s, srv, tool[IngestEpisodeInput, IngestEpisodeOutput]{
		name: "ingest_episode", title: "Ingest episode", idempotent: true,
		description: "Record an episode of your work (task, outcome, skills, artifacts, errors, failure mode, fix, tests, " +
			"environment, context) as one proposal: a run file, facts, decisions and typed entity-graph edges. " +
			"Ingesting the same episode again returns the same proposal.",
		rules: map[string]rule{
			"episode.outcome.status":   {enum: []any{"success", "failure", "partial"}},
			"episode.outcome.severity": {enum: []any{"low", "medium", "high", "critical"}},
			"episode.tests[].result":   {enum: []any{"pass", "fail", "skip"}},
			"episode.schema_version":   {enum: []any{"1"}},
		},
		run: s.ingestEpisode,
	})
	addTool(s, srv, tool[SetTTLInput, SetTTLOutput]{
		name: "set_ttl", title: "Set fact TTL",
		description: "Give a fact of facts.md a time to live and what happens when it runs out (mark_stale, archive to " +
			"Layer 2, delete). The TTL is written into facts.md by a proposal, so git shows it; 0 removes it.",
		rules: map[string]rule{
			"ttl_seconds": {min: bound(0)},
			"on_expire":   {enum: enumValues(memoryv1.TTLAction(0).Descriptor()), def: "mark_stale"},
		},
		fields: map[string]string{"ttl": "ttl_seconds"},
		run:    s.setTTL,
	})
}
