package main

import (
	"github.com/spf13/cobra"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

func (c *cli) entitiesCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "entities",
		Aliases: []string{"entity"},
		Short:   "Explore the entity graph: entities, neighbours, decision chains",
		Example: `  memctl entities list --type skill --agent my-agent
  memctl entities get minio
  memctl entities neighbors go-testing --depth 2 --relation used_skill
  memctl entities why --query "use minio"`,
		Args: exactArgs(0, "a subcommand"),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(c.entitiesListCommand(), c.entitiesGetCommand(), c.entitiesNeighborsCommand(), c.entitiesWhyCommand())
	return cmd
}

func (c *cli) entitiesListCommand() *cobra.Command {
	var typ, agent, query, at, pageToken string
	var limit int32
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List entities by type, agent and label prefix (ListEntities)",
		Example: `  memctl entities list --agent my-agent
  memctl entities list --type failure_mode --agent my-agent -o json
  memctl entities list --query mini`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := &memoryv1.ListEntitiesRequest{AgentId: agent, Query: query, At: at, PageSize: limit, PageToken: pageToken}
			if typ != "" {
				n, err := parseEnum("type", typ, memoryv1.EntityType(0).Descriptor())
				if err != nil {
					return err
				}
				req.Type = memoryv1.EntityType(n)
			}
			cl, err := c.clients(cmd.Context())
			if err != nil {
				return err
			}
			resp, err := cl.graph.ListEntities(cmd.Context(), req)
			if err != nil {
				return err
			}
			return c.printer.message(resp, func(t *table) {
				t.header("entity", "type", "label", "refs", "updated")
				for _, e := range resp.GetEntities() {
					t.row(e.GetEntityId(), e.GetType(), e.GetLabel(), len(e.GetRefs()), e.GetLastUpdated())
				}
				t.more(resp.GetNextPageToken())
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&typ, "type", "", "entity type: agent, concept, artifact, decision, person, project, skill, episode, outcome, failure_mode, fix, context, test, environment, task")
	f.StringVar(&agent, "agent", "", "entities referenced from this agent's memory")
	f.StringVar(&query, "query", "", "label or alias prefix")
	f.StringVar(&at, "at", "", "as of a commit or RFC 3339 time")
	f.Int32Var(&limit, "limit", 0, "page size (default 50, at most 500)")
	f.StringVar(&pageToken, "page-token", "", "the next page")
	return cmd
}

func (c *cli) entitiesGetCommand() *cobra.Command {
	var agent, at, pageToken string
	var limit, evidence int32
	cmd := &cobra.Command{
		Use:   "get ENTITY_ID",
		Short: "Show an entity with its edges and refs (GetEntity)",
		Example: `  memctl entities get minio
  memctl entities get minio --agent my-agent --at 2026-02-17T12:00:00Z -o json
  memctl entities get minio --limit 500 --page-token 100`,
		Args: exactArgs(1, "ENTITY_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.clients(cmd.Context())
			if err != nil {
				return err
			}
			resp, err := cl.graph.GetEntity(cmd.Context(), &memoryv1.GetEntityRequest{EntityId: args[0], AgentId: agent, At: at,
				PageSize: limit, PageToken: pageToken, EvidencePerEdge: evidence})
			if err != nil {
				return err
			}
			return c.printer.message(resp, func(t *table) {
				e := resp.GetEntity()
				t.kv("entity", e.GetEntityId())
				t.kv("type", e.GetType())
				t.kv("label", e.GetLabel())
				t.kv("aliases", e.GetAliases())
				t.kv("updated", e.GetLastUpdated())
				t.kv("refs", resp.GetRefs())
				t.kv("edges", resp.GetTotalEdges())
				edgeRows(t, resp.GetEdges())
				t.more(resp.GetNextPageToken())
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&agent, "agent", "", "only this agent's refs and evidence")
	f.StringVar(&at, "at", "", "as of a commit or RFC 3339 time")
	f.Int32Var(&limit, "limit", 0, "edges per page (default 100, at most 500)")
	f.StringVar(&pageToken, "page-token", "", "the next page")
	f.Int32Var(&evidence, "evidence", 0, "evidence listed per edge (default 20, at most 1000)")
	return cmd
}

func edgeRows(t *table, edges []*memoryv1.Edge) {
	if len(edges) == 0 {
		return
	}
	t.header("from", "relation", "to", "valid from", "valid to", "weight", "evidence")
	for _, e := range edges {
		var files []string
		for _, ev := range e.GetEvidence() {
			files = append(files, ev.GetFile())
		}
		t.row(e.GetFromEntityId(), e.GetRelation(), e.GetToEntityId(), e.GetValidFrom(), e.GetValidTo(), e.GetWeight(), files)
	}
}

func (c *cli) entitiesNeighborsCommand() *cobra.Command {
	var depth int32
	var relations []string
	var at string
	cmd := &cobra.Command{
		Use:   "neighbors ENTITY_ID",
		Short: "List the entities within a depth of an entity (GetNeighbors)",
		Example: `  memctl entities neighbors minio
  memctl entities neighbors go-testing --depth 2 --relation used_skill --relation resulted_in -o json`,
		Args: exactArgs(1, "ENTITY_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := &memoryv1.GetNeighborsRequest{EntityId: args[0], Depth: depth, At: at}
			for _, r := range relations {
				n, err := parseEnum("relation", r, memoryv1.Relation(0).Descriptor())
				if err != nil {
					return err
				}
				req.Relations = append(req.Relations, memoryv1.Relation(n))
			}
			cl, err := c.clients(cmd.Context())
			if err != nil {
				return err
			}
			resp, err := cl.graph.GetNeighbors(cmd.Context(), req)
			if err != nil {
				return err
			}
			return c.printer.message(resp, func(t *table) {
				t.header("entity", "type", "label")
				for _, e := range resp.GetEntities() {
					t.row(e.GetEntityId(), e.GetType(), e.GetLabel())
				}
				t.text("\n")
				edgeRows(t, resp.GetEdges())
			})
		},
	}
	cmd.Flags().Int32Var(&depth, "depth", 1, "1 to 3")
	cmd.Flags().StringArrayVar(&relations, "relation", nil, "only this relation (repeatable), e.g. used_skill, resulted_in, mentions")
	cmd.Flags().StringVar(&at, "at", "", "as of a commit or RFC 3339 time")
	return cmd
}

func (c *cli) entitiesWhyCommand() *cobra.Command {
	var query string
	var depth int32
	var mermaid bool
	cmd := &cobra.Command{
		Use:   "why [DECISION_ID]",
		Short: "Explain a decision: the chain of decisions it builds on (ExplainDecision)",
		Example: `  memctl entities why 2026-02-17-use-minio
  memctl entities why --query "use minio" --mermaid`,
		Args: rangeArgs(0, 1, "[DECISION_ID] or --query"),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := &memoryv1.ExplainDecisionRequest{Query: query, Depth: depth}
			if len(args) == 1 {
				req.DecisionId = args[0]
			}
			if req.DecisionId == "" && req.Query == "" {
				return usagef("want a DECISION_ID or --query")
			}
			cl, err := c.clients(cmd.Context())
			if err != nil {
				return err
			}
			resp, err := cl.graph.ExplainDecision(cmd.Context(), req)
			if err != nil {
				return err
			}
			return c.printer.message(resp, func(t *table) {
				t.header("decision", "date", "status", "title")
				for _, d := range resp.GetChain() {
					t.row(d.GetId(), d.GetDate(), d.GetStatus(), d.GetTitle())
				}
				if mermaid {
					t.text("\n" + withNewline(resp.GetMermaid()))
				}
			})
		},
	}
	cmd.Flags().StringVar(&query, "query", "", "free text to find the decision")
	cmd.Flags().Int32Var(&depth, "depth", 0, "how far back to follow (default 5)")
	cmd.Flags().BoolVar(&mermaid, "mermaid", false, "table output: print the Mermaid flowchart too")
	return cmd
}
