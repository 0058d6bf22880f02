package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/reflect/protoreflect"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/enumname"
)

// parseEnum reads an enum flag in any form the REST API accepts ("basic",
// "BASIC", "READ_MODE_BASIC"); the zero value is not a choice.
func parseEnum(flag, value string, ed protoreflect.EnumDescriptor) (protoreflect.EnumNumber, error) {
	n, ok := enumname.Parse(ed, value)
	if !ok || n == 0 {
		allowed := slices.DeleteFunc(enumname.Allowed(ed), func(s string) bool { return s == "unspecified" })
		return 0, usagef("--%s %q: want one of %s", flag, value, strings.Join(allowed, ", "))
	}
	return n, nil
}

func (c *cli) readCommand() *cobra.Command {
	var mode, at, from, to string
	var maxTokens int32
	var include, exclude []string
	cmd := &cobra.Command{
		Use:   "read AGENT",
		Short: "Read an agent's memory (ReadMemory)",
		Long: `Read an agent's memory in a mode (spec DiffMem §4.1): basic (snapshot and open
loops), wide (+ facts and the last 5 decisions), deep (every current-state
file) or temporal (snapshot + the diffs of --from..--to). Never more than
--max-tokens. The table output prints each file with its token count.`,
		Example: `  memctl read my-agent
  memctl read my-agent --mode wide --max-tokens 6000
  memctl read my-agent --mode deep --include runs/ -o json
  memctl read my-agent --at 2026-02-17T12:00:00Z
  memctl read my-agent --mode temporal --from HEAD~5`,
		Args: exactArgs(1, "AGENT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := parseEnum("mode", mode, memoryv1.ReadMode(0).Descriptor())
			if err != nil {
				return err
			}
			cl, err := c.clients(cmd.Context())
			if err != nil {
				return err
			}
			resp, err := cl.ca.ReadMemory(cmd.Context(), &memoryv1.ReadMemoryRequest{AgentId: args[0], Mode: memoryv1.ReadMode(m),
				MaxTokens: maxTokens, IncludeFiles: include, ExcludeFiles: exclude, At: at, From: from, To: to})
			if err != nil {
				return err
			}
			return c.printer.message(resp, func(t *table) {
				t.text(fmt.Sprintf("# %s — version %d, %s, %d tokens, commit %s\n", resp.GetAgentId(), resp.GetVersion(),
					short(resp.GetMode()), resp.GetTokenCount(), shortSHA(resp.GetCommit())))
				for _, f := range resp.GetFiles() {
					cut := ""
					if f.GetTruncated() {
						cut = ", truncated"
					}
					t.text(fmt.Sprintf("\n==> %s (%d tokens, layer %d%s) <==\n%s", f.GetFile(), f.GetTokenCount(), f.GetLayer(), cut, withNewline(f.GetContent())))
				}
				for _, file := range slices.Sorted(maps.Keys(resp.GetDiffs())) {
					t.text(fmt.Sprintf("\n==> diff %s <==\n%s", file, withNewline(resp.GetDiffs()[file])))
				}
				for _, w := range resp.GetWarnings() {
					t.text("warning: " + w + "\n")
				}
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&mode, "mode", "basic", "basic | wide | deep | temporal")
	f.Int32Var(&maxTokens, "max-tokens", 0, "upper bound on the tokens returned (0 = the mode's maximum)")
	f.StringArrayVar(&include, "include", nil, "only these files or folders, relative to the agent folder (repeatable)")
	f.StringArrayVar(&exclude, "exclude", nil, "never these files or folders (repeatable)")
	f.StringVar(&at, "at", "", "read as of a commit or RFC 3339 time")
	f.StringVar(&from, "from", "", "temporal mode: start of the range")
	f.StringVar(&to, "to", "", "temporal mode: end of the range")
	_ = cmd.RegisterFlagCompletionFunc("mode", cobra.FixedCompletions([]string{"basic", "wide", "deep", "temporal"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (c *cli) contextCommand() *cobra.Command {
	var query, at string
	var budget, topK int32
	var excludeSources, content bool
	cmd := &cobra.Command{
		Use:   "context AGENT",
		Short: "Assemble an agent's context within a token budget (AssembleContext)",
		Long: `Assemble the context an agent starts a run with (spec integration §5): Layer 1,
its sources from the object store and BM25 hits for --query, within --budget
tokens, each section stamped with its file, lines and commit. Warnings (e.g.
expired facts) follow the sections.`,
		Example: `  memctl context my-agent --query "flaky integration test"
  memctl context my-agent --budget 8000 --content
  memctl context my-agent --query minio -o json | jq '.sections[].file'`,
		Args: exactArgs(1, "AGENT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.clients(cmd.Context())
			if err != nil {
				return err
			}
			resp, err := cl.ca.AssembleContext(cmd.Context(), &memoryv1.AssembleContextRequest{AgentId: args[0], QueryHint: query,
				Budget: budget, At: at, TopK: topK, ExcludeSources: excludeSources})
			if err != nil {
				return err
			}
			return c.printer.message(resp, func(t *table) {
				t.header("kind", "file", "lines", "tokens", "score")
				for _, s := range resp.GetSections() {
					t.row(s.GetKind(), s.GetFile(), spanText(s.GetSpan()), s.GetTokens(), s.GetScore())
				}
				t.text(fmt.Sprintf("%d of %d tokens, commit %s\n", resp.GetTotalTokens(), resp.GetBudget(), shortSHA(resp.GetCommit())))
				if content {
					for _, s := range resp.GetSections() {
						t.text(fmt.Sprintf("\n==> %s %s %s <==\n%s", s.GetKind(), s.GetFile(), spanText(s.GetSpan()), withNewline(s.GetContent())))
					}
				}
				for _, w := range resp.GetWarnings() {
					t.text("warning: " + w + "\n")
				}
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&query, "query", "", "natural-language hint for BM25 hits")
	f.Int32Var(&budget, "budget", 0, "token budget (default 200,000)")
	f.Int32Var(&topK, "top-k", 0, "most search hits to consider (default 20)")
	f.StringVar(&at, "at", "", "assemble as of a commit")
	f.BoolVar(&excludeSources, "exclude-sources", false, "leave out the agent's sources")
	f.BoolVar(&content, "content", false, "table output: print each section's content too")
	return cmd
}

func (c *cli) diffCommand() *cobra.Command {
	var from, to, format string
	var files []string
	var maxTokens int32
	cmd := &cobra.Command{
		Use:   "diff AGENT",
		Short: "Show how an agent's memory changed (DiffMemory)",
		Long: `Show what changed in an agent's memory between two commits or times (spec
DiffMem §4.3): unified diffs per file, or --format facts for the facts, loops
and decisions added, removed and changed.`,
		Example: `  memctl diff my-agent --from HEAD~3
  memctl diff my-agent --from 2026-02-01T00:00:00Z --file facts.md
  memctl diff my-agent --format facts -o json`,
		Args: exactArgs(1, "AGENT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			fm, err := parseEnum("format", format, memoryv1.DiffFormat(0).Descriptor())
			if err != nil {
				return err
			}
			cl, err := c.clients(cmd.Context())
			if err != nil {
				return err
			}
			resp, err := cl.ca.DiffMemory(cmd.Context(), &memoryv1.DiffMemoryRequest{AgentId: args[0], From: from, To: to,
				Files: files, Format: memoryv1.DiffFormat(fm), MaxTokens: maxTokens})
			if err != nil {
				return err
			}
			return c.printer.message(resp, func(t *table) {
				if len(resp.GetChanges()) > 0 {
					t.header("item", "change", "file", "section", "before", "after")
					for _, ch := range resp.GetChanges() {
						t.row(ch.GetItem(), ch.GetChange(), ch.GetFile(), ch.GetSection(), ch.GetBefore(), ch.GetAfter())
					}
				}
				for _, file := range slices.Sorted(maps.Keys(resp.GetDiff())) {
					t.text(withNewline(resp.GetDiff()[file]))
				}
				t.text(fmt.Sprintf("%s..%s: %s\n", shortSHA(resp.GetFrom()), shortSHA(resp.GetTo()), resp.GetSummary()))
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "commit-ish or RFC 3339 time (default: the agent's first commit)")
	f.StringVar(&to, "to", "", "commit-ish or RFC 3339 time (default HEAD)")
	f.StringArrayVar(&files, "file", nil, "only this file, relative to the agent folder (repeatable)")
	f.StringVar(&format, "format", "unified", "unified | facts")
	f.Int32Var(&maxTokens, "max-tokens", 0, "upper bound on the diff's tokens (0 = none)")
	return cmd
}

func (c *cli) logCommand() *cobra.Command {
	var files []string
	var since, until, pageToken string
	var limit int32
	cmd := &cobra.Command{
		Use:   "log AGENT",
		Short: "List the commits of an agent's memory, newest first (ListHistory)",
		Example: `  memctl log my-agent
  memctl log my-agent --file facts.md --since 2026-02-01T00:00:00Z
  memctl log my-agent --limit 5 -o json | jq -r '.commits[].proposalId'`,
		Args: exactArgs(1, "AGENT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.clients(cmd.Context())
			if err != nil {
				return err
			}
			resp, err := cl.ca.ListHistory(cmd.Context(), &memoryv1.ListHistoryRequest{AgentId: args[0], Files: files,
				Since: since, Until: until, PageSize: limit, PageToken: pageToken})
			if err != nil {
				return err
			}
			return c.printer.message(resp, func(t *table) {
				t.header("commit", "time", "version", "proposal", "run", "subject")
				for _, ci := range resp.GetCommits() {
					subject, _, _ := strings.Cut(ci.GetMessage(), "\n")
					t.row(shortSHA(ci.GetSha()), ci.GetTime(), ci.GetVersion(), ci.GetProposalId(), ci.GetRunId(), subject)
				}
				t.more(resp.GetNextPageToken())
			})
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&files, "file", nil, "only commits touching this file (repeatable)")
	f.StringVar(&since, "since", "", "RFC 3339 time: commits at or after")
	f.StringVar(&until, "until", "", "RFC 3339 time: commits at or before")
	f.Int32Var(&limit, "limit", 0, "page size (default 50, at most 500)")
	f.StringVar(&pageToken, "page-token", "", "the next page (from the previous answer)")
	return cmd
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func spanText(s *memoryv1.Span) string {
	if s == nil || s.GetStartLine() == 0 {
		return "-"
	}
	if s.GetStartLine() == s.GetEndLine() {
		return fmt.Sprint(s.GetStartLine())
	}
	return fmt.Sprintf("%d-%d", s.GetStartLine(), s.GetEndLine())
}

func withNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}
