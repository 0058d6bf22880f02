package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/memdiff"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

func (c *cli) proposalsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "proposals",
		Aliases: []string{"proposal", "pr"},
		Short:   "List, show and review proposals",
		Example: `  memctl proposals list --status pending
  memctl proposals show proposal_01j…
  memctl proposals approve proposal_01j… --comment "ok"
  memctl proposals reject proposal_01j… --reason "duplicates a fact"`,
		Args: exactArgs(0, "a subcommand"),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(c.proposalsListCommand(), c.proposalsShowCommand(),
		c.reviewCommand("approve", "Approve a pending proposal (reviewer)", "comment"),
		c.reviewCommand("reject", "Reject a pending proposal with a reason (reviewer)", "reason"),
		c.reviewCommand("retry", "Retry a failed proposal (reviewer)", "comment"))
	return cmd
}

func (c *cli) proposalsListCommand() *cobra.Command {
	var agent, st, pageToken string
	var limit int32
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List proposals, newest first (ListProposals)",
		Example: `  memctl proposals list
  memctl proposals list --agent my-agent --status pending
  memctl proposals list --status failed -o json | jq -r '.proposals[].proposalId'`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := &memoryv1.ListProposalsRequest{AgentId: agent, PageSize: limit, PageToken: pageToken}
			if st != "" {
				n, err := parseEnum("status", st, memoryv1.ProposalStatus(0).Descriptor())
				if err != nil {
					return err
				}
				req.Status = memoryv1.ProposalStatus(n)
			}
			cl, err := c.clients(cmd.Context())
			if err != nil {
				return err
			}
			resp, err := cl.write.ListProposals(cmd.Context(), req)
			if err != nil {
				return err
			}
			return c.printer.message(resp, func(t *table) {
				t.header("proposal", "agent", "status", "reason", "created", "files", "reasoning")
				for _, p := range resp.GetProposals() {
					t.row(p.GetProposalId(), p.GetAgentId(), t.status(short(p.GetStatus())), reasonText(p.GetReason()), p.GetCreatedAt(),
						proposalFiles(p), p.GetReasoning())
				}
				t.more(resp.GetNextPageToken())
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&agent, "agent", "", "only this agent")
	f.StringVar(&st, "status", "", "pending | approved | rejected | applying | applied | failed | needs_human_review")
	f.Int32Var(&limit, "limit", 0, "page size (default 50, at most 500)")
	f.StringVar(&pageToken, "page-token", "", "the next page")
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(
		[]string{"pending", "approved", "rejected", "applying", "applied", "failed", "needs_human_review"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func proposalFiles(p *memoryv1.Proposal) []string {
	var files []string
	for _, u := range p.GetUpdates() {
		if !slices.Contains(files, u.GetFile()) {
			files = append(files, u.GetFile())
		}
	}
	return files
}

func (c *cli) proposalsShowCommand() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "show PROPOSAL_ID",
		Short: "Show a proposal and the diff it commits (GetProposal, PreviewProposal)",
		Long: `Show a proposal with the diff of its commit, as the write plane previews it
(PreviewProposal, GET /proposals/{id}:preview): for an applied proposal the
diff of the commit that applied it; for any other, the diff it would commit if
applied now — the apply's own planning (updates, eviction) on main's head —
or why applying it now would commit nothing (a version or section conflict).
meta.json, changelog.md and the timeline, which every commit updates, are
shown with --all. -o json prints the proposal as GET /proposals/{id} does.`,
		Example: `  memctl proposals show proposal_01j…
  memctl proposals show proposal_01j… --all
  memctl proposals show proposal_01j… -o yaml`,
		Args: exactArgs(1, "PROPOSAL_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			cl, err := c.clients(ctx)
			if err != nil {
				return err
			}
			resp, err := cl.write.GetProposal(ctx, &memoryv1.GetProposalRequest{ProposalId: args[0]})
			if err != nil {
				return err
			}
			p := resp.GetProposal()
			if c.printer.format != formatTable {
				return c.printer.message(p, nil)
			}
			diff, diffErr := c.proposalDiff(ctx, cl, p, all)
			return c.printer.table(func(t *table) {
				t.kv("proposal", p.GetProposalId())
				t.kv("agent", p.GetAgentId())
				t.kv("status", t.status(short(p.GetStatus())))
				t.kv("reason", reasonText(p.GetReason()))
				if p.GetMessage() != "" {
					t.kv("message", p.GetMessage())
				}
				t.kv("run", p.GetRunId())
				t.kv("created", p.GetCreatedAt())
				t.kv("proposed by", p.GetProposedBy())
				if p.GetReviewedBy() != "" {
					t.kv("reviewed by", p.GetReviewedBy()+" "+cell(p.GetReviewedAt())+" "+p.GetReviewComment())
				}
				if p.GetCommitSha() != "" {
					t.kv("commit", p.GetCommitSha())
				}
				if len(p.GetFlags()) > 0 {
					t.kv("flags", p.GetFlags())
				}
				if len(p.GetEntityRefs()) > 0 {
					t.kv("entity refs", p.GetEntityRefs())
				}
				t.kv("reasoning", p.GetReasoning())
				t.text("\n")
				t.header("#", "file", "operation", "section", "content")
				for i, u := range p.GetUpdates() {
					t.row(i, u.GetFile(), u.GetOperation(), u.GetSection(), updateSummary(u))
				}
				t.text("\n")
				if diffErr != nil {
					t.text(fmt.Sprintf("diff not available: %s\n", messageOf(diffErr)))
					return
				}
				t.text(diff)
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "also the bookkeeping files (meta.json, changelog.md, timeline)")
	return cmd
}

func updateSummary(u *memoryv1.FileUpdate) string {
	switch {
	case u.GetDecision() != nil:
		return u.GetDecision().GetTitle()
	case u.GetLoopId() != "":
		return u.GetLoopId() + " " + u.GetResolution()
	}
	return u.GetContent()
}

// proposalDiff renders the write plane's preview of p's commit
// (PreviewProposal): the diff of its commit when applied, else what
// applying it now would commit, or why it would commit nothing.
func (c *cli) proposalDiff(ctx context.Context, cl *clients, p *memoryv1.Proposal, all bool) (string, error) {
	pv, err := cl.write.PreviewProposal(ctx, &memoryv1.PreviewProposalRequest{ProposalId: p.GetProposalId()})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if pv.GetWouldFailReason() != memoryv1.StatusReason_STATUS_REASON_UNSPECIFIED {
		fmt.Fprintf(&b, "applying it now would commit nothing: %s: %s\n", reasonText(pv.GetWouldFailReason()), pv.GetWouldFailMessage())
		return b.String(), nil
	}
	switch p.GetStatus() {
	case memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED:
		var added, removed int
		for _, f := range pv.GetFiles() {
			added += int(f.GetAddedLines())
			removed += int(f.GetRemovedLines())
		}
		fmt.Fprintf(&b, "diff of commit %s (%s):\n", shortSHA(p.GetCommitSha()), memdiff.Summary(1, len(pv.GetFiles()), added, removed))
	case memoryv1.ProposalStatus_PROPOSAL_STATUS_REJECTED, memoryv1.ProposalStatus_PROPOSAL_STATUS_FAILED:
		fmt.Fprintf(&b, "diff this proposal would have committed (on the current files, %s):\n", shortSHA(pv.GetBaseCommit()))
	default:
		fmt.Fprintf(&b, "diff this proposal would commit if applied now (on %s):\n", shortSHA(pv.GetBaseCommit()))
	}
	hidden := 0
	for _, f := range pv.GetFiles() {
		if !all && memlayout.Bookkeeping(f.GetFile()) {
			hidden++
			continue
		}
		b.WriteString(withNewline(f.GetUnifiedDiff()))
	}
	for _, e := range pv.GetEvictedFacts() {
		fmt.Fprintf(&b, "evicts to Layer 2: %s\n", e)
	}
	for _, l := range pv.GetFrozenLoops() {
		fmt.Fprintf(&b, "freezes loop: %s\n", l)
	}
	for _, l := range pv.GetRemovedClosedLoops() {
		fmt.Fprintf(&b, "drops closed loop: %s\n", l)
	}
	for _, w := range pv.GetWarnings() {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	if hidden > 0 {
		fmt.Fprintf(&b, "(%d bookkeeping files not shown: --all)\n", hidden)
	}
	return b.String(), nil
}

func (c *cli) reviewCommand(verb, summary, textFlag string) *cobra.Command {
	var text string
	cmd := &cobra.Command{
		Use:     verb + " PROPOSAL_ID",
		Short:   summary,
		Example: fmt.Sprintf("  memctl proposals %s proposal_01j… --%s %q", verb, textFlag, map[string]string{"approve": "checked", "reject": "duplicates an existing fact", "retry": "object store is back"}[verb]),
		Args:    exactArgs(1, "PROPOSAL_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if verb == "reject" && strings.TrimSpace(text) == "" {
				return usagef("reject needs --reason")
			}
			cl, err := c.clients(cmd.Context())
			if err != nil {
				return err
			}
			var msg proto.Message
			var p *memoryv1.Proposal
			switch verb {
			case "approve":
				var r *memoryv1.ApproveProposalResponse
				r, err = cl.write.ApproveProposal(cmd.Context(), &memoryv1.ApproveProposalRequest{ProposalId: args[0], Comment: text})
				msg, p = r, r.GetProposal()
			case "reject":
				var r *memoryv1.RejectProposalResponse
				r, err = cl.write.RejectProposal(cmd.Context(), &memoryv1.RejectProposalRequest{ProposalId: args[0], Reason: text})
				msg, p = r, r.GetProposal()
			default:
				var r *memoryv1.RetryProposalResponse
				r, err = cl.write.RetryProposal(cmd.Context(), &memoryv1.RetryProposalRequest{ProposalId: args[0], Comment: text})
				msg, p = r, r.GetProposal()
			}
			if err != nil {
				return err
			}
			return c.printer.message(msg, func(t *table) {
				t.header("proposal", "agent", "status", "reason", "reviewed by")
				t.row(p.GetProposalId(), p.GetAgentId(), t.status(short(p.GetStatus())), reasonText(p.GetReason()), p.GetReviewedBy())
			})
		},
	}
	cmd.Flags().StringVar(&text, textFlag, "", map[string]string{"comment": "comment for the record", "reason": "why (required)"}[textFlag])
	return cmd
}
