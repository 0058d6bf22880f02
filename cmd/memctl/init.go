package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// onboardSpec is what a new agent starts with: from a template, a file
// (--from-file, YAML or JSON of this shape) and flags, in that order.
type onboardSpec struct {
	Role     string     `yaml:"role" json:"role"`
	Focus    string     `yaml:"focus" json:"focus"`
	Snapshot string     `yaml:"snapshot" json:"snapshot"`
	Facts    []factSpec `yaml:"facts" json:"facts"`
	Loops    []loopSpec `yaml:"loops" json:"loops"`
	// About describes a template (not read from files).
	About string `yaml:"-" json:"about,omitempty"`
}

// factSpec is a fact under a section of facts.md; a plain string in a file
// is "Section: text" or just text (section "General").
type factSpec struct {
	Section string `yaml:"section" json:"section"`
	Text    string `yaml:"text" json:"text"`
}

// loopSpec is an open loop; a plain string is its text.
type loopSpec struct {
	Text     string `yaml:"text" json:"text"`
	Priority string `yaml:"priority" json:"priority"`
}

func (f *factSpec) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*f = parseFact(n.Value)
		return nil
	}
	type plain factSpec
	return n.Decode((*plain)(f))
}

func (l *loopSpec) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		l.Text = n.Value
		return nil
	}
	type plain loopSpec
	return n.Decode((*plain)(l))
}

// parseFact reads "Section: text" (a short first part without spaces
// around the colon is a section) or a bare text.
func parseFact(s string) factSpec {
	if sec, text, ok := strings.Cut(s, ": "); ok && sec != "" && len(sec) <= 40 && !strings.ContainsAny(sec, ".!?") {
		return factSpec{Section: strings.TrimSpace(sec), Text: strings.TrimSpace(text)}
	}
	return factSpec{Section: "General", Text: strings.TrimSpace(s)}
}

// templates are the built-in starting points of `memctl init --template`.
var templates = map[string]onboardSpec{
	"blank": {About: "the server's skeleton: empty Role and Current focus"},
	"coding-agent": {About: "an agent that changes code: conventions, build, tests",
		Role:  "Writes and reviews code in this repository; proposes memory after each task.",
		Focus: "Learn the build, the test suite and the conventions before changing code.",
		Facts: []factSpec{{Section: "Conventions", Text: "Run the tests touched by a change before proposing it"}},
		Loops: []loopSpec{{Text: "Map the repository: entry points, build, tests", Priority: "normal"}}},
	"research-agent": {About: "an agent that reads and summarises sources",
		Role:  "Finds, reads and summarises sources; keeps claims with their evidence.",
		Focus: "Collect sources for the current question and record what each one supports.",
		Facts: []factSpec{{Section: "Method", Text: "Every claim in memory names its source"}},
		Loops: []loopSpec{{Text: "List the open questions of the current topic", Priority: "normal"}}},
	"ops-agent": {About: "an agent that runs and repairs services",
		Role:  "Operates services: deploys, watches alerts, repairs incidents, writes runbooks.",
		Focus: "Know the services, their dashboards and their failure modes.",
		Facts: []factSpec{{Section: "Runbooks", Text: "Every incident ends with a fix recorded as a fact or a decision"}},
		Loops: []loopSpec{{Text: "Inventory the services and who owns them", Priority: "high"}}},
}

func templateNames() []string {
	names := make([]string, 0, len(templates))
	for n := range templates {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

type initOptions struct {
	template, fromFile, snapshot, role, focus, reasoning, runID string
	facts, loops                                                []string
	approve                                                     bool
	waitTimeout                                                 time.Duration
	listTemplates                                               bool
}

func (c *cli) initCommand() *cobra.Command {
	o := &initOptions{}
	cmd := &cobra.Command{
		Use:   "init AGENT",
		Short: "Onboard an agent (OnboardAgent), optionally in an embedded store",
		Long: `Onboard an agent: one proposal creates its snapshot.md, facts.md and
open_loops.md (OnboardAgent); an agent that has memory already is a conflict
(exit code 5). Facts and loops given with --fact/--loop, a template or a file
follow in a second proposal once the first is applied.

The snapshot comes from --snapshot (the whole snapshot.md; @FILE reads a
file), else from --role and --focus filled into "# Snapshot: AGENT" with
"## Role" and "## Current focus", else from the template.

With the global --data-dir DIR, init creates an embedded memory store in DIR
(memoryd's data dir: memory.git, objects/, auth.secret, and memoryd.yaml with
auto-approval on) and onboards the agent there; every later
'memctl --data-dir DIR …' (or MEMCTL_DATA_DIR=DIR) runs memoryd inside memctl
on that folder for the duration of the command. Templates: ` + strings.Join(templateNames(), ", ") + `.`,
		Example: `  memctl init my-agent
  memctl init my-agent --template coding-agent --fact "Build: make build, then make test"
  memctl init my-agent --role "Curates the garden catalogue" --loop "Import the 2025 catalogue"
  memctl init my-agent --from-file onboarding.yaml
  memctl --data-dir ./memory init my-agent --template research-agent`,
		Args: func(cmd *cobra.Command, args []string) error {
			if o.listTemplates {
				return nil
			}
			return exactArgs(1, "AGENT")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.listTemplates {
				return c.printer.value(templates, func(t *table) {
					t.header("template", "about")
					for _, n := range templateNames() {
						t.row(n, templates[n].About)
					}
				})
			}
			return c.init(cmd.Context(), o, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.template, "template", "", "start from a built-in template ("+strings.Join(templateNames(), ", ")+")")
	f.StringVar(&o.fromFile, "from-file", "", "YAML or JSON file with role, focus, snapshot, facts and loops")
	f.StringVar(&o.snapshot, "snapshot", "", "the whole snapshot.md, or @FILE")
	f.StringVar(&o.role, "role", "", "text of the snapshot's Role section")
	f.StringVar(&o.focus, "focus", "", `text of the snapshot's "Current focus" section`)
	f.StringArrayVar(&o.facts, "fact", nil, `a fact, "Section: text" or text (repeatable)`)
	f.StringArrayVar(&o.loops, "loop", nil, "an open loop (repeatable)")
	f.StringVar(&o.reasoning, "reason", "", "reasoning of the proposals (default: onboarding by memctl)")
	f.StringVar(&o.runID, "run-id", "", "run id of the proposals")
	f.BoolVar(&o.approve, "approve", false, "approve the proposals if they wait for a reviewer (reviewer role); waits until the onboarding is applied")
	f.DurationVar(&o.waitTimeout, "wait-timeout", 2*time.Minute, "how long to wait for the onboarding to apply before adding facts and loops")
	f.BoolVar(&o.listTemplates, "list-templates", false, "list the built-in templates and exit")
	_ = cmd.RegisterFlagCompletionFunc("template", cobra.FixedCompletions(templateNames(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// initResult is the result of `memctl init` (-o json).
type initResult struct {
	AgentID string `json:"agentId"`
	// Onboarding is the proposal that creates the skeleton (REST body of
	// POST /v1/memory/{agent}/onboard).
	Onboarding json.RawMessage `json:"onboarding"`
	// Additions is the proposal of the facts and loops, when any.
	Additions json.RawMessage `json:"additions,omitempty"`
	DataDir   string          `json:"dataDir,omitempty"`
	// DefaultAgentSaved: the config file had no default agent, and now
	// this one is it.
	DefaultAgentSaved bool `json:"defaultAgentSaved"`
}

func (c *cli) buildSpec(o *initOptions, agent string) (onboardSpec, error) {
	var spec onboardSpec
	if o.template != "" {
		t, ok := templates[o.template]
		if !ok {
			return spec, usagef("--template %q: want one of %s", o.template, strings.Join(templateNames(), ", "))
		}
		spec = t
		spec.Facts = slices.Clone(t.Facts)
		spec.Loops = slices.Clone(t.Loops)
	}
	if o.fromFile != "" {
		b, err := os.ReadFile(o.fromFile)
		if err != nil {
			return spec, usagef("--from-file: %v", err)
		}
		var file onboardSpec
		dec := yaml.NewDecoder(bytes.NewReader(b)) // JSON is YAML
		dec.KnownFields(true)
		if err := dec.Decode(&file); err != nil {
			return spec, usagef("--from-file %s: %v", o.fromFile, err)
		}
		if file.Role != "" {
			spec.Role = file.Role
		}
		if file.Focus != "" {
			spec.Focus = file.Focus
		}
		if file.Snapshot != "" {
			spec.Snapshot = file.Snapshot
		}
		spec.Facts = append(spec.Facts, file.Facts...)
		spec.Loops = append(spec.Loops, file.Loops...)
	}
	if o.role != "" {
		spec.Role = o.role
	}
	if o.focus != "" {
		spec.Focus = o.focus
	}
	if o.snapshot != "" {
		spec.Snapshot = o.snapshot
		if path, ok := strings.CutPrefix(o.snapshot, "@"); ok {
			b, err := os.ReadFile(path)
			if err != nil {
				return spec, usagef("--snapshot: %v", err)
			}
			spec.Snapshot = string(b)
		}
	}
	for _, f := range o.facts {
		spec.Facts = append(spec.Facts, parseFact(f))
	}
	for _, l := range o.loops {
		spec.Loops = append(spec.Loops, loopSpec{Text: l})
	}
	if spec.Snapshot == "" && (spec.Role != "" || spec.Focus != "") {
		spec.Snapshot = fmt.Sprintf("# Snapshot: %s\n\n## Role\n\n%s\n\n## Current focus\n\n%s\n", agent, spec.Role, spec.Focus)
	}
	for _, f := range spec.Facts {
		if strings.TrimSpace(f.Text) == "" || strings.TrimSpace(f.Section) == "" {
			return spec, usagef("a fact needs a section and a text")
		}
	}
	for _, l := range spec.Loops {
		if strings.TrimSpace(l.Text) == "" {
			return spec, usagef("a loop needs a text")
		}
		if l.Priority != "" {
			if _, err := loopPriority(l.Priority); err != nil {
				return spec, err
			}
		}
	}
	return spec, nil
}

func loopPriority(s string) (memoryv1.LoopPriority, error) {
	switch strings.ToLower(s) {
	case "", "normal":
		return memoryv1.LoopPriority_LOOP_PRIORITY_NORMAL, nil
	case "critical":
		return memoryv1.LoopPriority_LOOP_PRIORITY_CRITICAL, nil
	case "high":
		return memoryv1.LoopPriority_LOOP_PRIORITY_HIGH, nil
	case "low":
		return memoryv1.LoopPriority_LOOP_PRIORITY_LOW, nil
	}
	return 0, usagef("loop priority %q: want critical, high, normal or low", s)
}

func (c *cli) init(ctx context.Context, o *initOptions, agent string) error {
	spec, err := c.buildSpec(o, agent)
	if err != nil {
		return err
	}
	if c.target.DataDir != "" {
		if err := initDataDir(c.target.DataDir); err != nil {
			return err
		}
	}
	cl, err := c.clients(ctx)
	if err != nil {
		return err
	}
	reasoning := o.reasoning
	if reasoning == "" {
		reasoning = "onboarding by memctl init"
	}
	runID := o.runID
	if runID == "" {
		// Propose needs a run; one per init keeps its commits together.
		runID = fmt.Sprintf("run_memctl-init-%d", time.Now().Unix())
	}
	resp, err := cl.write.OnboardAgent(ctx, &memoryv1.OnboardAgentRequest{AgentId: agent, Snapshot: spec.Snapshot, Reasoning: reasoning, RunId: runID})
	if err != nil {
		return err
	}
	onboard := resp.GetProposal()
	res := initResult{AgentID: agent, DataDir: c.target.DataDir}
	if res.Onboarding, err = restJSON.Marshal(onboard); err != nil {
		return err
	}
	var additions *memoryv1.ProposeResponse
	var applied *memoryv1.Proposal
	if o.approve || len(spec.Facts)+len(spec.Loops) > 0 {
		if applied, err = c.waitApplied(ctx, cl, onboard.GetProposalId(), o.approve, o.waitTimeout); err != nil {
			return err
		}
		onboard.Status, onboard.Reason = applied.GetStatus(), applied.GetReason()
		if res.Onboarding, err = restJSON.Marshal(onboard); err != nil {
			return err
		}
	}
	if len(spec.Facts)+len(spec.Loops) > 0 {
		var updates []*memoryv1.FileUpdate
		for _, f := range spec.Facts {
			updates = append(updates, &memoryv1.FileUpdate{File: "facts.md", Operation: memoryv1.Operation_OPERATION_APPEND,
				Section: f.Section, Content: "- " + strings.TrimPrefix(strings.TrimSpace(f.Text), "- ")})
		}
		for _, l := range spec.Loops {
			p, _ := loopPriority(l.Priority)
			updates = append(updates, &memoryv1.FileUpdate{File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_OPEN,
				Content: strings.TrimSpace(l.Text), LoopPriority: p})
		}
		version := applied.GetAppliedVersion()
		additions, err = cl.write.Propose(ctx, &memoryv1.ProposeRequest{AgentId: agent, RunId: runID, ExpectedVersion: &version,
			Updates: updates, Reasoning: reasoning + ": first facts and loops"})
		if err != nil {
			return err
		}
		if o.approve && additions.GetStatus() == memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING {
			approved, err := cl.write.ApproveProposal(ctx, &memoryv1.ApproveProposalRequest{ProposalId: additions.GetProposalId(), Comment: "memctl init --approve"})
			if err != nil {
				return err
			}
			additions.Status, additions.Reason = approved.GetProposal().GetStatus(), approved.GetProposal().GetReason()
		}
		if res.Additions, err = restJSON.Marshal(additions); err != nil {
			return err
		}
	}
	if c.defaultAgent == "" {
		// The first agent onboarded becomes the default of ingest, search,
		// export-onboarding and mcp, so the next commands need no --agent.
		fc := c.fileCfg
		fc.Agent = agent
		if err := saveConfig(c.cfgPath, fc); err == nil {
			res.DefaultAgentSaved = true
		}
	}
	return c.printer.value(res, func(t *table) {
		t.header("agent", "proposal", "status", "reason")
		t.row(agent, onboard.GetProposalId(), t.status(short(onboard.GetStatus())), reasonText(onboard.GetReason()))
		if additions != nil {
			t.row(agent, additions.GetProposalId(), t.status(short(additions.GetStatus())), reasonText(additions.GetReason()))
		}
		if res.DefaultAgentSaved {
			t.text(fmt.Sprintf("\n%s is now the default agent of ingest, search, export-onboarding and mcp (%s).\n", agent, c.cfgPath))
		}
		if c.target.DataDir != "" {
			dir, _ := filepath.Abs(c.target.DataDir)
			t.text(fmt.Sprintf("\nEmbedded store in %s. Use it with:\n  memctl --data-dir %s read %s\n  export %s=%s\n", dir, dir, agent, envDataDir, dir))
		}
	})
}

func reasonText(r memoryv1.StatusReason) string {
	if r == memoryv1.StatusReason_STATUS_REASON_UNSPECIFIED {
		return ""
	}
	return short(r)
}

// waitApplied polls a proposal until it is applied; one waiting for a
// reviewer is approved with approve, else it is an error saying so.
func (c *cli) waitApplied(ctx context.Context, cl *clients, id string, approve bool, timeout time.Duration) (*memoryv1.Proposal, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	approved := false
	for {
		resp, err := cl.write.GetProposal(ctx, &memoryv1.GetProposalRequest{ProposalId: id})
		if err != nil {
			return nil, err
		}
		p := resp.GetProposal()
		switch p.GetStatus() {
		case memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED:
			return p, nil
		case memoryv1.ProposalStatus_PROPOSAL_STATUS_FAILED, memoryv1.ProposalStatus_PROPOSAL_STATUS_REJECTED:
			return nil, &codedError{code: exitError, msg: fmt.Sprintf("PROPOSAL_%s: %s was %s: %s", strings.ToUpper(short(p.GetStatus())), id, short(p.GetStatus()), p.GetMessage())}
		case memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, memoryv1.ProposalStatus_PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW:
			if !approve {
				return nil, &codedError{code: exitError, msg: fmt.Sprintf("AWAITING_REVIEW: %s waits for a reviewer (%s); approve it (memctl proposals approve %s) or pass --approve, then add facts and loops",
					id, reasonText(p.GetReason()), id)}
			}
			if !approved {
				if _, err := cl.write.ApproveProposal(ctx, &memoryv1.ApproveProposalRequest{ProposalId: id, Comment: "memctl init --approve"}); err != nil {
					return nil, err
				}
				approved = true
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %s to apply: %w", id, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
