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
	"strconv"
	"strings"
	"time"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/commitmsg"
	"github.com/garden-bloom/memory/pkg/enumname"
	"github.com/garden-bloom/memory/pkg/factttl"
	"github.com/garden-bloom/memory/pkg/mdops"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/tokens"
)

// ErrInvalid wraps failures caused by the proposal itself (a loop that does
// not exist, a fact to remove that is not there, a limit eviction cannot
// meet); the proposal fails and nothing is written. Every such error is an
// *Invalid.
var ErrInvalid = errors.New("proposal cannot be applied")

// Invalid says precisely why a proposal cannot be applied, in the terms of
// the API's error details, so propose can refuse it with the same words the
// apply would fail with.
type Invalid struct {
	Reason memoryv1.ErrorReason
	// Field names the request field at fault ("updates[2].loopId"), if one is.
	Field string
	Msg   string
	// Metadata carries the figures (tokens, limit, file) where there are any.
	Metadata map[string]string
}

func (e *Invalid) Error() string { return ErrInvalid.Error() + ": " + e.Msg }
func (e *Invalid) Unwrap() error { return ErrInvalid }

// FactRecord is what the fact index knows of a fact (spec DiffMem §11.3).
type FactRecord struct {
	// Added is when the fact was added (for facts the index never saw: when
	// it first saw the agent); Used when a read last returned it.
	Added, Used time.Time
	// Version is the agent's meta.json version of the commit that added the
	// fact; 0 when unknown (added before versions were recorded, by a
	// person, or lost with an unflushed index).
	Version int32
}

// Reader returns a file of the agent by its name relative to the agent
// folder ("facts.md"); ok=false when the file does not exist.
type Reader func(rel string) (content string, ok bool, err error)

// Input is what Build needs.
type Input struct {
	Proposal *memoryv1.Proposal
	Read     Reader
	Now      time.Time
	Counter  *tokens.Counter
	// Facts orders facts for eviction; nil treats every fact as unknown.
	Facts func(text string) FactRecord
	// CheckOnly stops once the proposal is known to apply or not (Propose's
	// dry run): the same refusals, warnings, evictions and Layer 1 files as
	// the full plan, but none of what only the commit needs — the eviction
	// records in decisions.md, meta.json, changelog, timeline and message.
	// decisions.md grows all an agent's life; reading, parsing and
	// rewriting it at every dry run as well as at the apply was the larger
	// part of planning a long-lived agent's proposals.
	CheckOnly bool
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
	// AddedFacts are fact texts this commit added (for the fact index,
	// which drops the records of facts gone from facts.md by itself).
	AddedFacts []string
	// EvictedFacts are the facts moved to decisions.md § "Evicted facts",
	// verbatim, in eviction order.
	EvictedFacts []string
	// FrozenLoops are the ids (or texts) of loops frozen into decisions.md;
	// RemovedClosedLoops those of closed loops dropped after 7 days.
	FrozenLoops        []string
	RemovedClosedLoops []string
	// Warnings are what the plan accepts but a caller should know.
	Warnings []string
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

// changes maps the files changed so far to their new content.
func (w *workspace) changes() map[string]string {
	out := make(map[string]string, len(w.changed))
	for rel := range w.changed {
		out[rel] = w.files[rel]
	}
	return out
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
	metaRaw, err := w.get(memlayout.MetaFile)
	if err != nil {
		return nil, err
	}
	old, err := memlayout.ParseMeta([]byte(metaRaw))
	if err != nil {
		return nil, &Invalid{Reason: memoryv1.ErrorReason_ERROR_REASON_MEMORY_CORRUPTED, Msg: err.Error()}
	}

	b := &builder{in: in, agent: agent, runID: runID, date: date, old: old, w: w, plan: plan}
	for i, u := range p.GetUpdates() {
		rel := u.GetFile()
		files[rel] = true
		cur, err := w.get(rel)
		if err != nil {
			return nil, err
		}
		op, ok := operations[u.GetOperation()]
		if !ok {
			return nil, invalidUpdate(i, "operation", memoryv1.ErrorReason_ERROR_REASON_INVALID_OPERATION, "unsupported operation %v", u.GetOperation())
		}
		e, err := op(b, i, u, cur)
		if err != nil {
			return nil, err
		}
		if e.removed {
			w.remove(rel)
		} else {
			if f, _ := memlayout.Resolve(agent, rel); f.Layer == 2 && strings.Contains(e.next, mdops.AlwaysLoadOpen) && !strings.Contains(cur, mdops.AlwaysLoadOpen) {
				plan.Warnings = append(plan.Warnings, fmt.Sprintf("updates[%d]: %s is Layer 2: its ALWAYS_LOAD block is kept but never auto-loaded (spec DiffMem §11.4); put it in snapshot.md, facts.md or open_loops.md", i, rel))
			}
			w.set(rel, e.next)
		}
		summary = append(summary, fmt.Sprintf("- **%s:** %s", rel, e.what))
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
	records, err := evict(in, count, w, plan, date)
	if err != nil {
		return nil, err
	}
	summary = append(summary, evictionSummary(plan)...)

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
			return nil, tokenLimit(rel, counts[rel], limit, in.Counter.Encoding(),
				"%s would be %d tokens, over its hard limit of %d, and eviction cannot bring it under: what this proposal adds does not fit", rel, counts[rel], limit)
		}
	}

	for rel := range files {
		plan.Files = append(plan.Files, rel)
	}
	slices.Sort(plan.Files)
	if in.CheckOnly {
		plan.Changes = w.changes()
		return plan, nil
	}
	if err := records(); err != nil {
		return nil, err
	}

	// meta.json, changelog and timeline ride in the same commit.
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
		DecisionsCount:      mdops.CountDecisions(decisions),
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
	timeline = mdops.AddTimelineEntry(timeline, agent, date, mdops.TimelineEntry{
		RunID: runID, ProposalID: p.GetProposalId(), Status: "applied",
		Task:     firstLine(p.GetReasoning()),
		Result:   "updated " + strings.Join(plan.Files, ", "),
		Duration: p.GetRunDuration().AsDuration(),
	})
	w.set(tl, mdops.FoldTimeline(timeline, memlayout.TimelineDayLimit, count))

	plan.Changes = w.changes()
	for rel := range w.deleted {
		plan.Deleted = append(plan.Deleted, rel)
	}
	slices.Sort(plan.Deleted)
	plan.Message = commitmsg.Format(commitmsg.Update{
		AgentID: agent, RunID: runID, ProposalID: p.GetProposalId(), Files: plan.Files,
		Reason: p.GetReasoning(), AutoApproved: p.GetAutoApproved(),
		Evicted:      len(plan.EvictedFacts)+len(plan.FrozenLoops) > 0,
		EvictedFacts: plan.EvictedFacts, FrozenLoops: plan.FrozenLoops, EntityRefs: p.GetEntityRefs(),
	})
	return plan, nil
}

// evict keeps facts.md and open_loops.md under their hard limits, moving
// what leaves Layer 1 into decisions.md (spec DiffMem §11.3, integration
// §2.3). Facts go stale first, then oldest by the commit that added them,
// then by position; the proposal's own facts never go, nor its loops (only
// loops opened more than 14 days ago are frozen). When the
// proposal's own additions alone do not fit, nothing is evicted and the
// limit check after this refuses the proposal.
//
// Writing the records into decisions.md is left to the returned records,
// which a check (Input.CheckOnly) never calls.
func evict(in Input, count func(string) int, w *workspace, plan *Plan, date time.Time) (records func() error, err error) {
	agent := in.Proposal.GetAgentId()
	var decisionLines, frozenLines []string

	facts, err := w.get(memlayout.FactsFile)
	if err != nil {
		return nil, err
	}
	own := make(map[string]bool, len(plan.AddedFacts))
	for _, f := range plan.AddedFacts {
		own[f] = true
	}
	record := in.Facts
	if record == nil {
		record = func(string) FactRecord { return FactRecord{Added: date} }
	}
	rank := func(f mdops.Fact) mdops.FactRank {
		if own[f.Text] {
			return mdops.FactRank{Keep: true}
		}
		r := factRank(record(f.Text), date)
		// A fact past its TTL, or marked stale when it ran out
		// (memory-bridge §4), is stale whatever its use says.
		r.Stale = r.Stale || factttl.Lapsed(f.Text, date)
		return r
	}
	// EvictFacts and EvictLoops count the file first and return it as it
	// is when it fits: counting it here as well counted every apply's
	// facts.md twice.
	kept, evicted, _ := mdops.EvictFacts(facts, memlayout.FactsLimit, count, rank)
	if len(evicted) > 0 {
		w.set(memlayout.FactsFile, kept)
		for _, f := range evicted {
			plan.EvictedFacts = append(plan.EvictedFacts, f.Text)
			r := record(f.Text)
			why := mdops.WhyOverLimit
			if rank(f).Stale {
				why = mdops.WhyStaleFact
			}
			added := r.Added
			if r.Version == 0 {
				added = time.Time{} // unknown: the index only saw it later
			}
			decisionLines = append(decisionLines, mdops.EvictedFactLine(f, added, date, why))
		}
	}

	loops, err := w.get(memlayout.OpenLoopsFile)
	if err != nil {
		return nil, err
	}
	if kept, removed, frozen := mdops.EvictLoops(loops, memlayout.OpenLoopsLimit, count, date); kept != loops || len(removed)+len(frozen) > 0 {
		w.set(memlayout.OpenLoopsFile, kept)
		for _, l := range removed {
			plan.RemovedClosedLoops = append(plan.RemovedClosedLoops, loopName(l))
		}
		for _, l := range frozen {
			plan.FrozenLoops = append(plan.FrozenLoops, loopName(l))
			frozenLines = append(frozenLines, mdops.FrozenLoopLine(l, date))
		}
	}

	return func() error {
		if len(decisionLines)+len(frozenLines) == 0 {
			return nil
		}
		decisions, err := w.get(memlayout.DecisionsFile)
		if err != nil {
			return err
		}
		if len(decisionLines) > 0 {
			decisions = mdops.AppendToDecisionsSection(decisions, agent, mdops.SectionEvictedFacts, decisionLines)
		}
		if len(frozenLines) > 0 {
			decisions = mdops.AppendToDecisionsSection(decisions, agent, mdops.SectionFrozenLoops, frozenLines)
		}
		w.set(memlayout.DecisionsFile, decisions)
		return nil
	}, nil
}

// factRank places a fact in the eviction order: stale when neither added
// nor used for mdops.StaleFactAge; then by the commit that added it. Facts
// the index knows by version are newer than every fact it knows only by
// time (those predate versions being recorded), which are ordered by that
// time, to the second.
func factRank(r FactRecord, now time.Time) mdops.FactRank {
	latest := r.Added
	if r.Used.After(latest) {
		latest = r.Used
	}
	rank := mdops.FactRank{Stale: now.Sub(latest) > mdops.StaleFactAge}
	if r.Version > 0 {
		rank.Added = 1<<62 + int64(r.Version)
	} else if !r.Added.IsZero() {
		rank.Added = r.Added.Unix()
	}
	return rank
}

// loopName is how a commit and a proposal's result name a loop: its id, or
// its text when a person wrote it without one.
func loopName(l mdops.Loop) string {
	if l.ID != "" {
		return l.ID
	}
	return l.Text
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
	return enumname.Name(p)
}

// invalidUpdate is an *Invalid about updates[i].field.
func invalidUpdate(i int, field string, reason memoryv1.ErrorReason, format string, args ...any) error {
	f := fmt.Sprintf("updates[%d].%s", i, field)
	return &Invalid{Reason: reason, Field: f, Msg: f + ": " + fmt.Sprintf(format, args...), Metadata: map[string]string{"field": f}}
}

// mdopsInvalid maps an mdops error about updates[i] to the API's reasons.
func mdopsInvalid(i int, field string, err error) error {
	reason := memoryv1.ErrorReason_ERROR_REASON_INVALID_CONTENT
	if errors.Is(err, mdops.ErrNotFound) {
		reason = memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT
	}
	return invalidUpdate(i, field, reason, "%v", err)
}

// tokenLimit is the *Invalid of a Layer 1 file over its hard limit, with
// the counts a caller needs to fix the proposal.
func tokenLimit(file string, tokens, limit int, encoding, format string, args ...any) error {
	return &Invalid{Reason: memoryv1.ErrorReason_ERROR_REASON_TOKEN_LIMIT_EXCEEDED, Msg: fmt.Sprintf(format, args...),
		Metadata: map[string]string{"file": file, "tokens": strconv.Itoa(tokens), "limit": strconv.Itoa(limit), "encoding": encoding}}
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
