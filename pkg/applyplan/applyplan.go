// Package applyplan turns an approved proposal into the complete content of
// the one commit that applies it (spec DiffMem §8.1, §11.3): the changed
// files, Layer 1 eviction, meta.json, a changelog entry and a timeline entry.
// It is pure: files come in through a reader, time through a parameter.
package applyplan

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/commitmsg"
	"github.com/garden-bloom/memory/pkg/mdops"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/restjson"
	"github.com/garden-bloom/memory/pkg/tokens"
)

// ErrInvalid wraps failures caused by the proposal itself (a loop that does
// not exist, a fact to remove that is not there, a limit eviction cannot
// meet); the proposal fails and nothing is written.
var ErrInvalid = errors.New("proposal cannot be applied")

// Reader returns a file of the agent by its name relative to the agent
// folder ("facts.md"); ok=false when the file does not exist.
type Reader func(rel string) (content string, ok bool, err error)

// Input is what Build needs.
type Input struct {
	Proposal *memoryv1.Proposal
	Read     Reader
	Now      time.Time
	Counter  *tokens.Counter
	// FactTime orders facts for eviction: when a fact was added or last used.
	FactTime func(text string) time.Time
}

// Plan is the content of the commit.
type Plan struct {
	// Changes maps agent-relative names to their new content.
	Changes map[string]string
	// Deleted are agent-relative names the commit removes.
	Deleted []string
	Meta    memlayout.Meta
	Message string
	// Files are the proposal's files, as listed in the commit message.
	Files []string
	// AddedFacts are fact texts this commit added (for the fact index).
	AddedFacts   []string
	EvictedFacts []string
	FrozenLoops  []string
}

// workspace holds the files being edited.
type workspace struct {
	read    Reader
	files   map[string]string
	changed map[string]bool
	deleted map[string]bool
}

func (w *workspace) get(rel string) (string, error) {
	if w.deleted[rel] {
		return "", nil
	}
	if s, ok := w.files[rel]; ok {
		return s, nil
	}
	s, _, err := w.read(rel)
	if err != nil {
		return "", err
	}
	w.files[rel] = s
	return s, nil
}

func (w *workspace) set(rel, content string) {
	w.files[rel] = content
	w.changed[rel] = true
	delete(w.deleted, rel)
}

func (w *workspace) remove(rel string) {
	delete(w.files, rel)
	delete(w.changed, rel)
	w.deleted[rel] = true
}

// Build computes the plan for in.Proposal on top of the files Read returns.
func Build(in Input) (*Plan, error) {
	p := in.Proposal
	agent := p.GetAgentId()
	runID := memlayout.RunRef(p.GetRunId())
	date := in.Now.UTC()
	w := &workspace{read: in.Read, files: map[string]string{}, changed: map[string]bool{}, deleted: map[string]bool{}}
	plan := &Plan{}
	var summary []string
	files := map[string]bool{}

	for i, u := range p.GetUpdates() {
		rel := u.GetFile()
		files[rel] = true
		cur, err := w.get(rel)
		if err != nil {
			return nil, err
		}
		var next, what string
		switch u.GetOperation() {
		case memoryv1.Operation_OPERATION_RESTORE:
			// Byte for byte what a snapshot (or an onboarding skeleton) holds.
			next, what = u.GetContent(), "written exactly as given"
		case memoryv1.Operation_OPERATION_DELETE:
			if _, ok, err := in.Read(rel); err != nil {
				return nil, err
			} else if !ok {
				return nil, invalidf("updates[%d]: %s does not exist", i, rel)
			}
			w.remove(rel)
			summary = append(summary, fmt.Sprintf("- **%s:** removed", rel))
			continue
		case memoryv1.Operation_OPERATION_REPLACE, memoryv1.Operation_OPERATION_WRITE_RUN:
			next, what = ensureNewline(u.GetContent()), "replaced"
			if u.GetOperation() == memoryv1.Operation_OPERATION_WRITE_RUN {
				what = "written"
			}
		case memoryv1.Operation_OPERATION_APPEND:
			section := u.GetSection()
			if strings.TrimSpace(section) == "" {
				section = "General"
			}
			before := mdops.ParseFacts(cur)
			var added int
			next, added, err = mdops.AppendFacts(cur, agent, section, u.GetContent())
			if err != nil {
				return nil, invalidf("updates[%d]: %v", i, err)
			}
			plan.AddedFacts = append(plan.AddedFacts, newFacts(before, mdops.ParseFacts(next))...)
			what = fmt.Sprintf("%d fact(s) added to %q", added, section)
		case memoryv1.Operation_OPERATION_REMOVE:
			next, err = mdops.RemoveFact(cur, u.GetContent())
			if err != nil {
				return nil, invalidf("updates[%d]: fact %q: %v", i, firstLine(u.GetContent()), err)
			}
			what = "1 fact removed"
		case memoryv1.Operation_OPERATION_OPEN:
			var id string
			next, id, err = mdops.OpenLoop(cur, agent, u.GetSection(), strings.TrimSpace(u.GetContent()), loopPriority(u.GetLoopPriority()), date)
			if err != nil {
				return nil, invalidf("updates[%d]: %v", i, err)
			}
			what = "opened " + id
		case memoryv1.Operation_OPERATION_CLOSE:
			next, err = mdops.CloseLoop(cur, u.GetLoopId(), u.GetResolution(), runID, date)
			if err != nil {
				return nil, invalidf("updates[%d]: loop %q: %v", i, u.GetLoopId(), err)
			}
			what = "closed " + u.GetLoopId()
		case memoryv1.Operation_OPERATION_ADD_DECISION:
			d := u.GetDecision()
			if d.GetRunId() == "" {
				d.RunId = runID
			}
			next, err = mdops.AddDecision(cur, agent, mdops.Decision{
				Title: d.GetTitle(), Status: d.GetStatus(), Context: d.GetContext(), Decision: d.GetDecision(),
				Rationale: d.GetRationale(), Consequences: d.GetConsequences(), RunID: d.GetRunId(),
			}, date)
			if err != nil {
				return nil, invalidf("updates[%d]: %v", i, err)
			}
			what = fmt.Sprintf("decision %q added", d.GetTitle())
		default:
			return nil, invalidf("updates[%d]: unsupported operation %v", i, u.GetOperation())
		}
		w.set(rel, next)
		summary = append(summary, fmt.Sprintf("- **%s:** %s", rel, what))
	}

	// One count per distinct text: eviction counts facts.md as it is and as
	// it would be kept, and the limits below count the kept text again.
	counted := map[string]int{}
	count := func(text string) int {
		n, ok := counted[text]
		if !ok {
			n = in.Counter.Count(text)
			counted[text] = n
		}
		return n
	}
	if err := evict(in, count, w, plan, date); err != nil {
		return nil, err
	}
	for _, line := range evictionSummary(plan) {
		summary = append(summary, line)
	}

	// Layer 1 limits hold after every apply, whatever eviction could do.
	counts := map[string]int{}
	for rel, limit := range map[string]int{memlayout.SnapshotFile: memlayout.SnapshotLimit,
		memlayout.FactsFile: memlayout.FactsLimit, memlayout.OpenLoopsFile: memlayout.OpenLoopsLimit} {
		s, err := w.get(rel)
		if err != nil {
			return nil, err
		}
		counts[rel] = count(s)
		if counts[rel] > limit {
			return nil, invalidf("%s would be %d tokens, over its hard limit of %d, and eviction cannot bring it under", rel, counts[rel], limit)
		}
	}

	for rel := range files {
		plan.Files = append(plan.Files, rel)
	}
	slices.Sort(plan.Files)

	// meta.json, changelog and timeline ride in the same commit.
	metaRaw, err := w.get(memlayout.MetaFile)
	if err != nil {
		return nil, err
	}
	old, err := memlayout.ParseMeta([]byte(metaRaw))
	if err != nil {
		return nil, invalidf("%v", err)
	}
	snap, _ := w.get(memlayout.SnapshotFile)
	facts, _ := w.get(memlayout.FactsFile)
	loops, _ := w.get(memlayout.OpenLoopsFile)
	decisions, err := w.get(memlayout.DecisionsFile)
	if err != nil {
		return nil, err
	}
	openLoops := 0
	for _, l := range mdops.ParseLoops(loops) {
		if !l.Closed {
			openLoops++
		}
	}
	sum := sha256.Sum256([]byte(snap + "\x00" + facts + "\x00" + loops))
	plan.Meta = memlayout.Meta{
		AgentID: agent, Version: old.Version + 1, LastUpdate: date, LastRunID: runID,
		LastProposalID:      p.GetProposalId(),
		SnapshotTokenCount:  counts[memlayout.SnapshotFile],
		FactsTokenCount:     counts[memlayout.FactsFile],
		OpenLoopsTokenCount: counts[memlayout.OpenLoopsFile],
		Layer1TokenCount:    counts[memlayout.SnapshotFile] + counts[memlayout.FactsFile] + counts[memlayout.OpenLoopsFile],
		OpenLoopsCount:      openLoops,
		DecisionsCount:      len(mdops.ParseDecisions(decisions)),
		SchemaVersion:       memlayout.SchemaVersion,
		TokenEncoding:       in.Counter.Encoding(),
		Layer1SHA256:        hex.EncodeToString(sum[:]),
	}
	w.set(memlayout.MetaFile, string(plan.Meta.Encode()))

	changelog, err := w.get(memlayout.ChangelogFile)
	if err != nil {
		return nil, err
	}
	w.set(memlayout.ChangelogFile, mdops.AddChangelogEntry(changelog, agent, date, runID, p.GetProposalId(), summary, memlayout.ChangelogKeep))

	tl := memlayout.TimelineFile(date.Format("2006-01-02"))
	timeline, err := w.get(tl)
	if err != nil {
		return nil, err
	}
	w.set(tl, mdops.AddTimelineEntry(timeline, agent, date, mdops.TimelineEntry{
		RunID: runID, ProposalID: p.GetProposalId(), Status: "applied",
		Task:   firstLine(p.GetReasoning()),
		Result: "updated " + strings.Join(plan.Files, ", "),
	}))

	plan.Changes = map[string]string{}
	for rel := range w.changed {
		plan.Changes[rel] = w.files[rel]
	}
	for rel := range w.deleted {
		plan.Deleted = append(plan.Deleted, rel)
	}
	slices.Sort(plan.Deleted)
	plan.Message = commitmsg.Format(commitmsg.Update{
		AgentID: agent, RunID: runID, ProposalID: p.GetProposalId(), Files: plan.Files,
		Reason: p.GetReasoning(), AutoApproved: p.GetAutoApproved(),
		Evicted: len(plan.EvictedFacts) > 0 || len(plan.FrozenLoops) > 0, EntityRefs: p.GetEntityRefs(),
	})
	return plan, nil
}

// evict keeps facts.md and open_loops.md under their hard limits, moving
// what leaves Layer 1 into decisions.md (spec integration §2.3).
func evict(in Input, count func(string) int, w *workspace, plan *Plan, date time.Time) error {
	agent := in.Proposal.GetAgentId()
	var decisionLines, frozenLines []string

	facts, err := w.get(memlayout.FactsFile)
	if err != nil {
		return err
	}
	// EvictFacts and EvictLoops count the file first and return it as it
	// is when it fits: counting it here as well counted every apply's
	// facts.md twice.
	factTime := in.FactTime
	if factTime == nil {
		factTime = func(string) time.Time { return date }
	}
	kept, evicted := mdops.EvictFacts(facts, memlayout.FactsLimit, count,
		func(f mdops.Fact) time.Time { return factTime(f.Text) }, date)
	if len(evicted) > 0 {
		w.set(memlayout.FactsFile, kept)
		for _, f := range evicted {
			plan.EvictedFacts = append(plan.EvictedFacts, f.Text)
			why := "oldest"
			if date.Sub(factTime(f.Text)) > 30*24*time.Hour {
				why = "stale-fact"
			}
			decisionLines = append(decisionLines, mdops.EvictedFactLine(f, date, why))
		}
	}

	loops, err := w.get(memlayout.OpenLoopsFile)
	if err != nil {
		return err
	}
	if kept, removed, frozen := mdops.EvictLoops(loops, memlayout.OpenLoopsLimit, count, date); kept != loops || len(removed)+len(frozen) > 0 {
		w.set(memlayout.OpenLoopsFile, kept)
		for _, l := range frozen {
			plan.FrozenLoops = append(plan.FrozenLoops, l.ID)
			frozenLines = append(frozenLines, mdops.FrozenLoopLine(l, date))
		}
	}

	if len(decisionLines)+len(frozenLines) == 0 {
		return nil
	}
	decisions, err := w.get(memlayout.DecisionsFile)
	if err != nil {
		return err
	}
	if len(decisionLines) > 0 {
		decisions = mdops.AppendToDecisionsSection(decisions, agent, "Evicted facts", decisionLines)
	}
	if len(frozenLines) > 0 {
		decisions = mdops.AppendToDecisionsSection(decisions, agent, "Frozen loops", frozenLines)
	}
	w.set(memlayout.DecisionsFile, decisions)
	return nil
}

func evictionSummary(p *Plan) []string {
	var out []string
	if n := len(p.EvictedFacts); n > 0 {
		out = append(out, fmt.Sprintf("- **facts.md:** %d fact(s) evicted to decisions.md (Layer 1 limit)", n))
	}
	if n := len(p.FrozenLoops); n > 0 {
		out = append(out, fmt.Sprintf("- **open_loops.md:** %d loop(s) frozen into decisions.md (Layer 1 limit)", n))
	}
	return out
}

// newFacts lists facts in after that were not in before.
func newFacts(before, after []mdops.Fact) []string {
	seen := map[string]bool{}
	for _, f := range before {
		seen[f.Text] = true
	}
	var out []string
	for _, f := range after {
		if !seen[f.Text] {
			out = append(out, f.Text)
		}
	}
	return out
}

// loopPriority is the loop's priority word; unspecified means normal.
func loopPriority(p memoryv1.LoopPriority) string {
	if p == memoryv1.LoopPriority_LOOP_PRIORITY_UNSPECIFIED {
		return "normal"
	}
	return restjson.EnumName(p)
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

func ensureNewline(s string) string {
	s = strings.TrimRight(s, "\n") + "\n"
	return s
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	return s
}
