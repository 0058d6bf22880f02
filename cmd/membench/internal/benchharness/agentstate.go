package benchharness

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/garden-bloom/memory/pkg/mdops"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/tokens"
)

// Targets of the generated Layer 1 files, in estimated tokens (the hard
// limits are 2,000 / 8,000 / 2,000).
const (
	snapshotTarget  = 1800
	factsTarget     = 7000
	factsEvictAbove = 7250
	openLoopsKept   = 20
	closedLoopsKept = 8
)

// agentState is one agent's memory as the generator evolves it. Facts and
// loops are kept structured (re-parsing a 30 KB facts.md per commit would
// dominate generation time) and rendered in mdops's format; the Layer 2
// files go through mdops itself, like the engine.
type agentState struct {
	id  string
	w   writer
	est *estimator

	snapshot string

	sections [][]string // facts per factSections entry
	factToks [][]int
	factTok  int

	open, closed []loopLine
	nextLoop     int

	decisions      string
	decisionsCount int
	changelog      string
	tlDay          string
	timeline       string
	version        int32

	// Exact counts of the Layer 1 files as last written, for meta.json,
	// which the engine fills from the counter: estimates there would make
	// the data set's meta.json disagree with its own files.
	snapCount, factsCount, loopsCount exactCount
}

// exactCount memoises the counter's count of a file's last content; a
// commit recounts only the files it changed.
type exactCount struct {
	text string
	n    int
}

func (e *exactCount) of(c *tokens.Counter, text string) int {
	if text != e.text { // the zero memo is right for ""
		e.text, e.n = text, c.Count(text)
	}
	return e.n
}

type loopLine struct {
	id, text, priority, opened string
	closedLine                 string // the whole "- [x] …" line once closed
}

func newAgentState(m *textModel, est *estimator, seed int64, i int) *agentState {
	st := &agentState{
		id:       AgentID(i),
		est:      est,
		w:        writer{m: m, r: rand.New(rand.NewPCG(uint64(seed), uint64(i)+1)), dom: m.domain(seed, i)},
		sections: make([][]string, len(factSections)),
		factToks: make([][]int, len(factSections)),
		nextLoop: 1,
	}
	return st
}

// onboard fills Layer 1 near its limits (the OnboardAgent commit).
func (st *agentState) onboard(day time.Time) {
	w := &st.w
	var b strings.Builder
	fmt.Fprintf(&b, "# Snapshot: %s\n\n## Role\n%s\n\n## Active context\n%s\n\n## Current focus\n", st.id,
		w.paragraph(st.est, 120), w.paragraph(st.est, 500))
	for st.est.count(b.String()) < snapshotTarget-250 {
		fmt.Fprintf(&b, "- %s\n", w.sentence())
	}
	fmt.Fprintf(&b, "\n## Working agreements\n%s\n", w.paragraph(st.est, 200))
	st.setSnapshot(b.String())

	st.factTok = st.est.count("# Facts: "+st.id) + 1
	for s := range factSections {
		st.factTok += st.est.count("## "+factSections[s]) + 2
	}
	for s := 0; st.factTok < factsTarget-200; s = (s + 1) % len(factSections) {
		text, _ := w.fact()
		st.addFact(s, text)
	}
	for range openLoopsKept {
		st.openLoop(day)
	}
	for range closedLoopsKept {
		st.closeLoop(day, "run_onboard")
		st.openLoop(day)
	}
}

func (st *agentState) setSnapshot(s string) { st.snapshot = s }

// newSnapshot rewrites the active context, as a run's snapshot replace does.
func (st *agentState) newSnapshot() {
	w := &st.w
	head, _, _ := strings.Cut(st.snapshot, "## Active context\n")
	_, tail, _ := strings.Cut(st.snapshot, "\n## Current focus\n")
	st.setSnapshot(head + "## Active context\n" + w.paragraph(st.est, 500) + "\n\n## Current focus\n" + tail)
}

func (st *agentState) addFact(section int, text string) {
	n := st.est.count("- "+text) + 1
	st.sections[section] = append(st.sections[section], text)
	st.factToks[section] = append(st.factToks[section], n)
	st.factTok += n
}

// evict drops the oldest fact of the longest section until facts.md is
// back at its target, returning the evicted facts (they go to decisions.md).
func (st *agentState) evict() []string {
	if st.factTok <= factsEvictAbove {
		return nil
	}
	var out []string
	for st.factTok > factsTarget {
		longest := 0
		for s := range st.sections {
			if len(st.sections[s]) > len(st.sections[longest]) {
				longest = s
			}
		}
		out = append(out, st.sections[longest][0])
		st.factTok -= st.factToks[longest][0]
		st.sections[longest] = st.sections[longest][1:]
		st.factToks[longest] = st.factToks[longest][1:]
	}
	return out
}

func (st *agentState) renderFacts() string {
	var b strings.Builder
	b.Grow(st.factTok * 5)
	b.WriteString("# Facts: " + st.id + "\n")
	for s, title := range factSections {
		b.WriteString("\n## " + title + "\n")
		for _, f := range st.sections[s] {
			b.WriteString("- " + f + "\n")
		}
	}
	return b.String()
}

func (st *agentState) openLoop(day time.Time) {
	w := &st.w
	prio := []string{"critical", "high", "normal", "normal", "normal", "low"}[w.r.IntN(6)]
	text := fmt.Sprintf("%s the %s %s for %s", pick(w.r, []string{"Confirm", "Schedule", "Review", "Clean up"}), w.dw(), pick(w.r, nouns),
		w.m.link(w.r.IntN(len(w.m.entities))))
	st.open = append(st.open, loopLine{id: fmt.Sprintf("loop_%03d", st.nextLoop), text: text, priority: prio, opened: day.Format(time.DateOnly)})
	st.nextLoop++
}

func (st *agentState) closeLoop(day time.Time, runID string) string {
	l := st.open[0]
	st.open = st.open[1:]
	l.closedLine = fmt.Sprintf("- [x] %s: %s — closed %s | %s | opened %s | priority: %s | resolution: %s", l.id, l.text,
		day.Format(time.DateOnly), runID, l.opened, l.priority, st.w.sentence())
	st.closed = append(st.closed, l)
	if len(st.closed) > closedLoopsKept {
		st.closed = st.closed[len(st.closed)-closedLoopsKept:]
	}
	return l.id
}

func (st *agentState) renderLoops() string {
	var b strings.Builder
	b.WriteString("# Open Loops: " + st.id + "\n")
	for _, sec := range []struct {
		title    string
		critical bool
	}{{mdops.SectionCritical, true}, {mdops.SectionOpen, false}} {
		b.WriteString("\n## " + sec.title + "\n")
		for _, l := range st.open {
			if (l.priority == "critical") == sec.critical {
				fmt.Fprintf(&b, "- [ ] %s: %s — opened %s | priority: %s\n", l.id, l.text, l.opened, l.priority)
			}
		}
	}
	b.WriteString("\n## " + mdops.SectionClosed + "\n")
	for _, l := range st.closed {
		b.WriteString(l.closedLine + "\n")
	}
	return b.String()
}

// runFile is a runs/run_<id>.md of about 400 tokens.
func (st *agentState) runFile(runID string, at time.Time, task string) string {
	w := &st.w
	return fmt.Sprintf("# Run %s\n\n**Agent:** %s\n**Started:** %s\n**Task:** %s\n\n## Summary\n%s\n\n## Outcome\n%s\n",
		runID, st.id, at.UTC().Format(time.RFC3339), task, w.paragraph(st.est, 250), w.paragraph(st.est, 100))
}

// source is one object-store source of about 1,200 tokens.
func (st *agentState) source(n int) (name, content string) {
	w := &st.w
	title := w.dom[n%len(w.dom)]
	var b strings.Builder
	fmt.Fprintf(&b, "# %s handbook %d\n", capitalize(title), n+1)
	for s := range 4 {
		fmt.Fprintf(&b, "\n## %s %s\n\n%s\n", capitalize(w.dw()), pick(w.r, nouns), w.paragraph(st.est, 290))
		if s == 1 {
			fmt.Fprintf(&b, "\nSee %s for the %s %s.\n", w.m.link(w.r.IntN(len(w.m.entities))), w.dw(), pick(w.r, nouns))
		}
	}
	return fmt.Sprintf("%s-handbook-%d.md", title, n+1), b.String()
}

// change is what one commit does to an agent.
type change struct {
	runID, proposalID, reason string
	files                     map[string]string // agent-relative name -> content
	listed                    []string          // the proposal's files (commit message)
	summary                   []string          // changelog lines
	entityRefs                []string
	evicted                   bool
}

// finish adds what the engine adds to every commit: meta.json, the
// changelog entry and the timeline entry (see pkg/applyplan).
func (st *agentState) finish(c *change, at time.Time) {
	st.version++
	facts, loops := st.renderFacts(), st.renderLoops()
	sum := sha256.Sum256([]byte(st.snapshot + "\x00" + facts + "\x00" + loops))
	snapN, factsN, loopsN := st.snapCount.of(st.est.c, st.snapshot), st.factsCount.of(st.est.c, facts), st.loopsCount.of(st.est.c, loops)
	meta := memlayout.Meta{
		AgentID: st.id, Version: st.version, LastUpdate: at, LastRunID: c.runID, LastProposalID: c.proposalID,
		SnapshotTokenCount: snapN, FactsTokenCount: factsN, OpenLoopsTokenCount: loopsN,
		Layer1TokenCount: snapN + factsN + loopsN, OpenLoopsCount: len(st.open),
		DecisionsCount: st.decisionsCount, SchemaVersion: memlayout.SchemaVersion, TokenEncoding: tokens.DefaultEncoding,
		Layer1SHA256: hex.EncodeToString(sum[:]),
	}
	c.files[memlayout.MetaFile] = string(meta.Encode())
	st.changelog = mdops.AddChangelogEntry(st.changelog, st.id, at, c.runID, c.proposalID, c.summary, memlayout.ChangelogKeep)
	c.files[memlayout.ChangelogFile] = st.changelog
	day := at.UTC().Format(time.DateOnly)
	if day != st.tlDay {
		st.tlDay, st.timeline = day, ""
	}
	st.timeline = mdops.AddTimelineEntry(st.timeline, st.id, at, mdops.TimelineEntry{
		RunID: c.runID, ProposalID: c.proposalID, Status: "applied", Task: c.reason,
		Result: "updated " + strings.Join(c.listed, ", "),
	})
	c.files[memlayout.TimelineFile(day)] = st.timeline
}
