package invariants

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// Spec limits (DiffMem §11.2, §3.2; integration §2.1).
const (
	snapshotLimit        = 2000
	factsLimit           = 8000
	openLoopsLimit       = 2000
	layer1Limit          = 12000
	runLimit             = 8000
	changelogKeep        = 30
	staleAfter           = 30 * 24 * time.Hour
	closedKeep           = 7 * 24 * time.Hour
	lowLoopFreeze        = 14 * 24 * time.Hour
	defaultProposals     = 300
	defaultProposalsRace = 120
	// retireAfterBytes: see doStep.
	retireAfterBytes = 1 << 20
	// keepSnapshots: the model remembers this many snapshots per agent.
	keepSnapshots   = 8
	ownFactsValid   = 7000 // appends up to this many tokens must be accepted
	ownFactsRefused = 8600 // appends over this must be refused at Propose
)

// TestModel drives the real services with random proposals and checks the
// spec's invariants after every commit. INVARIANT_PROPOSALS sets how many
// proposals it makes (snapshots, restores and usage reports come between
// them), INVARIANT_SEED the seed.
func TestModel(t *testing.T) {
	def := defaultProposals
	if raceEnabled {
		def = defaultProposalsRace
	}
	proposals := envInt("INVARIANT_PROPOSALS", def)
	seed := envSeed()
	t.Logf("seed=%d proposals=%d — replay: INVARIANT_SEED=%d INVARIANT_PROPOSALS=%d go test ./services/invariants -run TestModel -count=1 -v",
		seed, proposals, seed, proposals)
	h := newHarness(t, os.Getenv("INVARIANT_TOKEN_ENCODING"))
	rng := newRand(seed)
	r := &runner{t: t, h: h, rng: rng, g: &gen{rng: rng, counter: h.counter},
		v:     &violations{t: t, seed: seed, counts: map[string]int{}, first: map[string]string{}},
		facts: map[string]*factInfo{}, stats: map[string]int{}}
	for _, id := range []string{"inv-curator", "inv-scout"} {
		r.agents = append(r.agents, &agent{id: id, st: newMemState()})
	}
	start := time.Now()
	for r.step = 1; r.stats["proposals"] < proposals; r.step++ {
		r.doStep()
		if t.Failed() && os.Getenv("INVARIANT_FAILFAST") != "" {
			break
		}
		if r.step%500 == 0 {
			t.Logf("step %d, %d/%d proposals, %s, clock %s, stats %v", r.step, r.stats["proposals"], proposals, time.Since(start).Round(time.Second), h.clock.Now().Format(time.RFC3339), r.stats)
		}
	}
	t.Logf("done in %s; clock reached %s; stats %v", time.Since(start).Round(time.Millisecond), h.clock.Now().Format(time.RFC3339), r.stats)
	if len(r.flagged) > 0 {
		t.Logf("%d proposals were held for a person and approved by the test; first: %s", len(r.flagged), r.flagged[0])
	}
	r.v.summary()
}

type runner struct {
	t      *testing.T
	h      *harness
	g      *gen
	rng    *rand.Rand
	v      *violations
	agents []*agent
	facts  map[string]*factInfo
	step   int
	stats  map[string]int

	generation           int
	artifactsUnsupported bool
	flagged              []string
	savedReads           []savedRead
}

// plan is a proposal and what the model expects of it.
type plan struct {
	req          *memoryv1.ProposeRequest
	appended     []*factInfo
	removed      []string
	opened       []loop
	closed       []string
	decisions    []string
	snapshotTag  string
	runs         map[string]string
	appendTokens int
	mustRefuse   string // why the spec says Propose must refuse it
	mayRefuse    bool   // near a limit: either answer is fine
	staleVersion bool
	hasArtifact  bool
	restore      *savedSnapshot
}

// trace logs every step when INVARIANT_TRACE is set (to follow a replay).
func (r *runner) trace(format string, args ...any) {
	if os.Getenv("INVARIANT_TRACE") != "" {
		r.t.Logf("step %d @%s: %s", r.step, r.h.clock.Now().Format(time.RFC3339), fmt.Sprintf(format, args...))
	}
}

func (r *runner) advanceClock() {
	var d time.Duration
	switch x := r.rng.IntN(100); {
	case x < 35: // many commits in one second
	case x < 60:
		d = time.Duration(1+r.rng.IntN(59)) * time.Second
	case x < 82:
		d = time.Duration(1+r.rng.IntN(600)) * time.Minute
	case x < 95:
		d = time.Duration(1+r.rng.IntN(72)) * time.Hour
	default: // days: the 7-, 14- and 30-day rules fire
		d = time.Duration(3+r.rng.IntN(14)) * 24 * time.Hour
	}
	r.h.clock.Advance(d)
}

func (r *runner) doStep() {
	r.advanceClock()
	i := 0
	if r.rng.IntN(10) < 3 {
		i = 1
	}
	a := r.agents[i]
	if a.decisionsBytes > retireAfterBytes {
		// decisions.md grows without bound by design (Layer 2); a long run
		// moves on to a fresh agent so that a step's cost stays bounded.
		r.generation++
		r.stats["agents-retired"]++
		a = &agent{id: fmt.Sprintf("%s-%d", strings.SplitN(a.id, "-g", 2)[0], r.generation), st: newMemState()}
		a.id = strings.Replace(a.id, fmt.Sprintf("-%d", r.generation), fmt.Sprintf("-g%d", r.generation), 1)
		r.agents[i] = a
	}
	x := r.rng.IntN(100)
	switch {
	case a.exists && x < 4:
		r.createSnapshot(a)
	case a.exists && len(a.snapshots) > 0 && x < 7:
		r.restoreSnapshot(a)
	case a.exists && x < 11:
		r.reportUsage(a)
	default:
		r.propose(a, r.plan(a))
	}
	if r.step%7 == 0 {
		r.recheckSavedReads()
	}
}

// ---------------------------------------------------------------------------
// Planning proposals.

func (r *runner) plan(a *agent) *plan {
	p := &plan{req: &memoryv1.ProposeRequest{AgentId: a.id, RunId: fmt.Sprintf("run_s%d", r.step),
		Reasoning: fmt.Sprintf("invariant step %d", r.step)}, runs: map[string]string{}}
	if a.exists {
		switch x := r.rng.IntN(100); {
		case x < 3 && a.version > 0:
			p.staleVersion = true
			p.req.ExpectedVersion = ptr(a.version - 1)
		case x < 25:
			p.req.ExpectedVersion = ptr(a.version)
		}
	}
	removedNow, closedNow := map[string]bool{}, map[string]bool{}
	n := 1 + r.rng.IntN(3)
	if !a.exists {
		r.addSnapshot(p, a, false)
		n = 1
	}
	for range n {
		x := r.rng.IntN(100)
		switch {
		case x < 36:
			r.addAppend(p)
		case x < 44:
			r.addRemove(p, a, removedNow)
		case x < 60:
			r.addOpen(p, a)
		case x < 74:
			r.addClose(p, a, closedNow)
		case x < 81:
			r.addDecision(p)
		case x < 88:
			r.addSnapshot(p, a, r.rng.IntN(100) < 5)
		case x < 94:
			r.addRun(p, r.rng.IntN(100) < 4)
		default:
			if r.artifactsUnsupported {
				r.addAppend(p)
			} else {
				r.addArtifact(p)
			}
		}
	}
	switch {
	case p.appendTokens > ownFactsRefused:
		p.mustRefuse = fmt.Sprintf("the proposal's own appended facts are %d tokens, over the 8,000 facts.md limit", p.appendTokens)
	case p.appendTokens > ownFactsValid:
		p.mayRefuse = true
	}
	return p
}

func ptr[T any](v T) *T { return &v }

func (r *runner) addAppend(p *plan) {
	var n int
	switch x := r.rng.IntN(100); {
	case x < 55:
		n = 1 + r.rng.IntN(8)
	case x < 88:
		n = 10 + r.rng.IntN(40)
	case x < 98:
		n = 80 + r.rng.IntN(100)
	default:
		n = 330 + r.rng.IntN(60) // over 8,000 tokens on its own: must be refused
	}
	section := factSections[r.rng.IntN(len(factSections))]
	if r.rng.IntN(10) == 0 {
		section = fmt.Sprintf("Topic %d", r.rng.IntN(20))
	}
	var lines []string
	now := r.h.clock.Now()
	for range n {
		id := r.g.tag("F")
		text := r.g.factText(id)
		lines = append(lines, "- "+text)
		p.appended = append(p.appended, &factInfo{id: id, text: text, section: section, step: r.step, addedAt: now, lastUsed: now})
	}
	content := strings.Join(lines, "\n") + "\n"
	tok := r.h.counter.Count(content)
	if p.appendTokens+tok > ownFactsValid && p.appendTokens+tok <= ownFactsRefused+600 && n < 300 {
		// Keep valid appends clearly valid: trim the batch.
		for len(lines) > 1 && p.appendTokens+r.h.counter.Count(strings.Join(lines, "\n")+"\n") > ownFactsValid {
			lines = lines[:len(lines)-1]
			p.appended = p.appended[:len(p.appended)-1]
		}
		content = strings.Join(lines, "\n") + "\n"
		tok = r.h.counter.Count(content)
	}
	p.appendTokens += tok
	p.req.Updates = append(p.req.Updates, &memoryv1.FileUpdate{File: "facts.md", Operation: memoryv1.Operation_OPERATION_APPEND,
		Section: section, Content: content})
}

func (r *runner) addRemove(p *plan, a *agent, removedNow map[string]bool) {
	ids := a.st.inFile()
	if len(ids) == 0 {
		r.addAppend(p)
		return
	}
	for range 1 + r.rng.IntN(3) {
		id := ids[r.rng.IntN(len(ids))]
		if removedNow[id] {
			continue
		}
		removedNow[id] = true
		p.removed = append(p.removed, id)
		p.req.Updates = append(p.req.Updates, &memoryv1.FileUpdate{File: "facts.md", Operation: memoryv1.Operation_OPERATION_REMOVE,
			Content: "- " + r.facts[id].text})
	}
}

var loopPriorities = []struct {
	p    memoryv1.LoopPriority
	name string
	w    int
}{
	{memoryv1.LoopPriority_LOOP_PRIORITY_LOW, "low", 40},
	{memoryv1.LoopPriority_LOOP_PRIORITY_NORMAL, "normal", 30},
	{memoryv1.LoopPriority_LOOP_PRIORITY_HIGH, "high", 15},
	{memoryv1.LoopPriority_LOOP_PRIORITY_CRITICAL, "critical", 15},
}

func (r *runner) addOpen(p *plan, a *agent) {
	now := r.h.clock.Now()
	for range 1 + r.rng.IntN(4) {
		x := r.rng.IntN(100)
		pr := loopPriorities[0]
		for _, c := range loopPriorities {
			if x < c.w {
				pr = c
				break
			}
			x -= c.w
		}
		tag := r.g.tag("L")
		text := tag + " follow up on " + r.g.sentence(6+r.rng.IntN(22))
		section := ""
		if r.rng.IntN(10) < 6 {
			section = []string{"Open", "Waiting", "Critical"}[r.rng.IntN(3)]
		}
		p.opened = append(p.opened, loop{tag: tag, text: text, low: pr.name == "low", priority: pr.name, openedAt: now, step: r.step})
		p.req.Updates = append(p.req.Updates, &memoryv1.FileUpdate{File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_OPEN,
			Content: text, Section: section, LoopPriority: pr.p})
	}
}

func (r *runner) addClose(p *plan, a *agent, closedNow map[string]bool) {
	var open []string
	for tag, l := range a.st.loops {
		if l.state == loopOpen && l.id != "" && !closedNow[tag] {
			open = append(open, tag)
		}
	}
	if len(open) == 0 {
		r.addOpen(p, a)
		return
	}
	sort.Strings(open)
	for range 1 + r.rng.IntN(3) {
		tag := open[r.rng.IntN(len(open))]
		if closedNow[tag] {
			continue
		}
		closedNow[tag] = true
		p.closed = append(p.closed, tag)
		p.req.Updates = append(p.req.Updates, &memoryv1.FileUpdate{File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_CLOSE,
			LoopId: a.st.loops[tag].id, Resolution: "resolved in step " + fmt.Sprint(r.step)})
	}
}

func (r *runner) addDecision(p *plan) {
	tag := r.g.tag("D")
	p.decisions = append(p.decisions, tag)
	p.req.Updates = append(p.req.Updates, &memoryv1.FileUpdate{File: "decisions.md", Operation: memoryv1.Operation_OPERATION_ADD_DECISION,
		Decision: &memoryv1.Decision{Title: tag + " " + r.g.sentence(3+r.rng.IntN(4)), Context: r.g.sentence(12), Decision: r.g.sentence(8),
			Rationale: r.g.sentence(10), Consequences: r.g.sentence(6), RunId: p.req.GetRunId()}})
}

func (r *runner) addSnapshot(p *plan, a *agent, oversize bool) {
	tag := r.g.tag("S")
	target := 100 + r.rng.IntN(1750)
	if oversize {
		target = 2300 + r.rng.IntN(800)
	}
	content := fmt.Sprintf("# Snapshot: %s\n\n## Role\n%s curator of the garden memory.\n\n## Active context\n%s", a.id, tag, r.g.paragraph(target))
	tok := r.h.counter.Count(content)
	switch {
	case tok > snapshotLimit:
		p.mustRefuse = fmt.Sprintf("snapshot.md of %d tokens, over the 2,000 hard limit (§11.3)", tok)
	case tok > snapshotLimit-60:
		p.mayRefuse = true
	}
	p.snapshotTag = tag
	p.req.Updates = append(p.req.Updates, &memoryv1.FileUpdate{File: "snapshot.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: content})
}

func (r *runner) addRun(p *plan, oversize bool) {
	name := fmt.Sprintf("runs/run_s%d_%d.md", r.step, len(p.req.Updates))
	target := 80 + r.rng.IntN(3000)
	if oversize {
		target = 8600 + r.rng.IntN(800)
	}
	content := fmt.Sprintf("# Run: run_s%d\n\n## Result\n%s", r.step, r.g.paragraph(target))
	tok := r.h.counter.Count(content)
	switch {
	case tok > runLimit:
		p.mustRefuse = fmt.Sprintf("%s of %d tokens, over the 8,000 run limit (§3.2)", name, tok)
	case tok > runLimit-60:
		p.mayRefuse = true
	}
	p.runs[name] = content
	p.req.Updates = append(p.req.Updates, &memoryv1.FileUpdate{File: name, Operation: memoryv1.Operation_OPERATION_WRITE_RUN, Content: content})
}

func (r *runner) addArtifact(p *plan) {
	name := fmt.Sprintf("runs/run_s%d/artifacts/out_%d.txt", r.step, len(p.req.Updates))
	content := r.g.paragraph(20 + r.rng.IntN(300))
	p.runs[name] = content
	p.hasArtifact = true
	p.req.Updates = append(p.req.Updates, &memoryv1.FileUpdate{File: name, Operation: memoryv1.Operation_OPERATION_WRITE_ARTIFACT, Content: content})
}

// ---------------------------------------------------------------------------
// Steps.

func (r *runner) headUnchanged(inv, before, what string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = r.h.pa.WaitIdle(ctx)
	if after := r.h.git.head(); after != before {
		parents, msg, files := r.h.git.commit(after)
		r.v.add(inv, r.step, "%s, yet main moved %s -> %s (parents %v, files %v, message %q)", what, short(before), short(after), parents, files, firstLine(msg, 200))
	}
}

func short(sha string) string {
	if len(sha) > 10 {
		return sha[:10]
	}
	return sha
}

func (r *runner) propose(a *agent, p *plan) {
	r.stats["proposals"]++
	desc := describe(p.req, r.h.counter)
	r.trace("propose %s", desc)
	before := r.h.git.head()
	t0 := time.Now()
	resp, err := r.h.pac.Propose(r.h.service(), p.req)
	r.stats["ms-propose"] += int(time.Since(t0).Milliseconds())
	if err != nil {
		r.stats["refused"]++
		r.headUnchanged("refused-changes-nothing", before, fmt.Sprintf("Propose refused %s with %v", desc, err))
		switch {
		case p.mustRefuse != "":
			r.stats["refused-as-required"]++
			if status.Code(err) != codes.InvalidArgument {
				r.v.add("refuse-with-invalid-argument", r.step, "%s must be refused with InvalidArgument (%s); got %s: %v", desc, p.mustRefuse, status.Code(err), err)
			}
		case p.mayRefuse:
		case p.hasArtifact && !r.artifactsUnsupported && strings.Contains(err.Error(), "/artifacts/"):
			r.artifactsUnsupported = true
			r.v.add("write-artifact-accepted", r.step, "a valid write_artifact to runs/run_<id>/artifacts/<name> (integration §1) was refused: %s: %v (no more artifacts are generated this run)", desc, err)
		case strings.Contains(err.Error(), "open_loops.md would be"):
			if est, ok := r.loopsCouldFit(a, p); ok {
				r.v.add("valid-proposal-accepted", r.step, "%s was refused (%v) though eviction by the spec's rules (closed > 7 days, low priority > 14 days) leaves open_loops.md at about %d tokens",
					desc, err, est)
			} else {
				r.stats["refused-loops-full"]++
			}
		default:
			r.v.add("valid-proposal-accepted", r.step, "a proposal within every limit was refused at Propose: %s: %v", desc, err)
		}
		return
	}
	if p.mustRefuse != "" && !p.staleVersion { // a stale version may be rejected first
		r.v.add("refuse-at-propose", r.step, "Propose accepted %s (status %s/%s %q), but the spec refuses it with InvalidArgument: %s", desc, resp.GetStatus(), resp.GetProposal().GetReason(), resp.GetProposal().GetMessage(), p.mustRefuse)
	}
	if p.staleVersion {
		if resp.GetStatus() != memoryv1.ProposalStatus_PROPOSAL_STATUS_REJECTED || resp.GetProposal().GetReason() != memoryv1.StatusReason_STATUS_REASON_VERSION_CONFLICT {
			r.v.add("version-conflict-rejected", r.step, "expected_version %d with meta.json at %d must be rejected with version_conflict; got %s/%s: %s",
				p.req.GetExpectedVersion(), a.version, resp.GetStatus(), resp.GetProposal().GetReason(), desc)
		}
	}
	t0 = time.Now()
	prop, err := r.h.settle(resp.GetProposalId(), &r.flagged)
	r.stats["ms-apply"] += int(time.Since(t0).Milliseconds())
	if err != nil {
		r.v.add("proposal-settles", r.step, "%s did not settle: %v", desc, err)
		return
	}
	defer func(t0 time.Time) { r.stats["ms-check"] += int(time.Since(t0).Milliseconds()) }(time.Now())
	switch prop.GetStatus() {
	case memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED:
		r.stats["applied"]++
		if p.staleVersion {
			r.v.add("version-conflict-rejected", r.step, "a stale expected_version was applied: %s", desc)
		}
		r.checkCommit(a, p, r.expected(a, p), prop, before, desc)
	default:
		r.stats[strings.ToLower(strings.TrimPrefix(prop.GetStatus().String(), "PROPOSAL_STATUS_"))]++
		r.headUnchanged("refused-changes-nothing", before, fmt.Sprintf("proposal %s ended %s/%s (%q): %s", prop.GetProposalId(), prop.GetStatus(), prop.GetReason(), prop.GetMessage(), desc))
		if p.staleVersion || p.mustRefuse != "" || p.mayRefuse {
			return
		}
		if prop.GetStatus() == memoryv1.ProposalStatus_PROPOSAL_STATUS_FAILED && strings.Contains(prop.GetMessage(), "open_loops.md") {
			if est, ok := r.loopsCouldFit(a, p); !ok {
				r.stats["failed-loops-full"]++
				return
			} else {
				r.v.add("valid-proposal-applied", r.step, "%s failed (%q) though eviction by the spec's rules (closed > 7 days, low priority > 14 days) leaves open_loops.md at about %d tokens",
					desc, prop.GetMessage(), est)
				return
			}
		}
		r.v.add("valid-proposal-applied", r.step, "a valid proposal ended %s/%s: %q: %s", prop.GetStatus(), prop.GetReason(), prop.GetMessage(), desc)
	}
}

// loopsCouldFit estimates open_loops.md after the plan and after every
// eviction the spec allows; ok=false when it could not get under 2,000.
func (r *runner) loopsCouldFit(a *agent, p *plan) (int, bool) {
	now := r.h.clock.Now()
	head := r.h.git.head()
	md, _ := r.h.git.file(head, "memory/"+a.id+"/open_loops.md")
	est := r.h.counter.Count(md)
	obs, _ := parseLoopsFile(md)
	for _, l := range p.opened {
		est += r.h.counter.Count("- [ ] loop_000: " + l.text + " — opened 2026-01-01 | priority: " + l.priority + "\n")
	}
	closing := map[string]bool{}
	for _, tag := range p.closed {
		closing[tag] = true
		est += 30
	}
	for tag, occ := range obs {
		l, ok := a.st.loops[tag]
		if !ok || len(occ) == 0 {
			continue
		}
		switch {
		case l.state == loopClosed && now.Sub(l.closedAt) > closedKeep+24*time.Hour:
		case l.state == loopOpen && l.low && !closing[tag] && now.Sub(l.openedAt) > lowLoopFreeze+24*time.Hour:
		default:
			continue
		}
		est -= r.h.counter.Count(occ[0].line + "\n")
	}
	return est, est <= openLoopsLimit-150
}

// expected is the agent's memory after the plan, before any eviction.
func (r *runner) expected(a *agent, p *plan) memState {
	now := r.h.clock.Now()
	exp := a.st.clone()
	for _, f := range p.appended {
		r.facts[f.id] = f
		exp.facts[f.id] = factInFile
	}
	for _, id := range p.removed {
		exp.facts[id] = factRemoved
	}
	for _, l := range p.opened {
		exp.loops[l.tag] = l
	}
	for _, tag := range p.closed {
		l := exp.loops[tag]
		l.state, l.closedAt = loopClosed, now
		exp.loops[tag] = l
	}
	exp.decisions = append(exp.decisions, p.decisions...)
	if p.snapshotTag != "" {
		exp.snapshotTag = p.snapshotTag
	}
	for k, v := range p.runs {
		exp.runs[k] = v
	}
	return exp
}

func (r *runner) createSnapshot(a *agent) {
	r.stats["snapshots"]++
	before := r.h.git.head()
	include := r.rng.IntN(2) == 0
	resp, err := r.h.pac.CreateSnapshot(r.h.admin(), &memoryv1.CreateSnapshotRequest{AgentId: a.id, Label: fmt.Sprintf("step-%d", r.step), IncludeRuns: include})
	if err != nil {
		r.v.add("snapshot-create", r.step, "CreateSnapshot(%s, include_runs=%v): %v", a.id, include, err)
		return
	}
	r.headUnchanged("snapshot-creates-no-commit", before, "CreateSnapshot made no proposal")
	if len(a.snapshots) >= keepSnapshots {
		a.snapshots = a.snapshots[1:]
	}
	r.trace("snapshot %s of %s (include_runs=%v)", resp.GetSnapshot().GetSnapshotId(), a.id, include)
	a.snapshots = append(a.snapshots, savedSnapshot{id: resp.GetSnapshot().GetSnapshotId(), state: a.st.clone(), includeRuns: include, step: r.step})
}

func (r *runner) restoreSnapshot(a *agent) {
	r.stats["restores"]++
	s := a.snapshots[r.rng.IntN(len(a.snapshots))]
	before := r.h.git.head()
	desc := fmt.Sprintf("{restore %s of %s taken at step %d, include_runs=%v}", s.id, a.id, s.step, s.includeRuns)
	r.trace("%s", desc)
	resp, err := r.h.pac.RestoreSnapshot(r.h.admin(), &memoryv1.RestoreSnapshotRequest{AgentId: a.id, SnapshotId: s.id, Reasoning: "invariant test"})
	if err != nil {
		r.headUnchanged("refused-changes-nothing", before, fmt.Sprintf("RestoreSnapshot refused %s: %v", desc, err))
		if status.Code(err) != codes.FailedPrecondition { // "nothing left to restore" is fine
			r.v.add("snapshot-restore", r.step, "%s: %v", desc, err)
		}
		return
	}
	prop, err := r.h.settle(resp.GetProposal().GetProposalId(), &r.flagged)
	if err != nil {
		r.v.add("proposal-settles", r.step, "%s did not settle: %v", desc, err)
		return
	}
	if prop.GetStatus() != memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED {
		r.headUnchanged("refused-changes-nothing", before, fmt.Sprintf("%s ended %s", desc, prop.GetStatus()))
		r.v.add("snapshot-restore", r.step, "%s ended %s/%s: %q", desc, prop.GetStatus(), prop.GetReason(), prop.GetMessage())
		return
	}
	exp := s.state.clone()
	for id, st := range a.st.facts {
		if _, ok := exp.facts[id]; !ok && st != factLost {
			exp.facts[id] = factDropped
		}
	}
	for tag, l := range a.st.loops {
		if _, ok := exp.loops[tag]; !ok {
			l.state = loopDropped
			exp.loops[tag] = l
		}
	}
	if !s.includeRuns {
		exp.runs = maps_clone(a.st.runs)
	}
	// A fact the restore puts back has two possible ages: its first append,
	// or the restore that added its line again. Order checks accept either.
	for id, st := range exp.facts {
		if st == factInFile && a.st.facts[id] != factInFile {
			r.facts[id].restoredStep, r.facts[id].restoredAt = r.step, r.h.clock.Now()
		}
	}
	r.checkCommit(a, &plan{restore: &s, req: &memoryv1.ProposeRequest{AgentId: a.id}}, exp, prop, before, desc)
}

func maps_clone(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (r *runner) reportUsage(a *agent) {
	ids := a.st.inFile()
	if len(ids) == 0 {
		return
	}
	now := r.h.clock.Now()
	var usages []*memoryv1.FactUsage
	var used []string
	seen := map[string]bool{}
	for range 1 + r.rng.IntN(6) {
		id := ids[r.rng.IntN(len(ids))]
		if seen[id] {
			continue
		}
		seen[id] = true
		used = append(used, id)
		usages = append(usages, &memoryv1.FactUsage{FactHash: factHash(r.facts[id].text), UsedAt: timestamppbNew(now)})
	}
	before := r.h.git.head()
	resp, err := r.h.pac.ReportFactUsage(r.h.service(), &memoryv1.ReportFactUsageRequest{AgentId: a.id, Usages: usages})
	if err != nil {
		r.v.add("fact-usage", r.step, "ReportFactUsage: %v", err)
		return
	}
	r.headUnchanged("usage-creates-no-commit", before, "ReportFactUsage is no proposal")
	if int(resp.GetAccepted()) != len(usages) {
		r.v.add("fact-usage", r.step, "ReportFactUsage accepted %d of %d usages of facts in facts.md", resp.GetAccepted(), len(usages))
		return
	}
	r.stats["usage-reports"]++
	r.trace("fact usage reported for %v", used)
	for _, id := range used {
		r.facts[id].lastUsed = now
	}
}

// ---------------------------------------------------------------------------
// The checks after a commit.

// metaFile is meta.json as the spec names its fields (§3.2).
type metaFile struct {
	AgentID             string    `json:"agentId"`
	Version             int32     `json:"version"`
	LastUpdate          time.Time `json:"lastUpdate"`
	LastRunID           string    `json:"lastRunId"`
	SnapshotTokenCount  *int      `json:"snapshotTokenCount"`
	FactsTokenCount     *int      `json:"factsTokenCount"`
	OpenLoopsTokenCount *int      `json:"openLoopsTokenCount"`
	OpenLoopsCount      *int      `json:"openLoopsCount"`
	DecisionsCount      *int      `json:"decisionsCount"`
}

func (r *runner) checkCommit(a *agent, p *plan, exp memState, prop *memoryv1.Proposal, before, desc string) {
	step, v, c := r.step, r.v, r.h.counter
	now := r.h.clock.Now()
	head := r.h.git.head()
	if head == before {
		v.add("one-commit-per-apply", step, "proposal %s is applied but main did not move: %s", prop.GetProposalId(), desc)
		return
	}
	parents, msg, files := r.h.git.commit(head)
	if len(parents) != 1 || parents[0] != before {
		n := strings.TrimSpace(r.h.git.run("rev-list", "--count", before+".."+head))
		v.add("one-commit-per-apply", step, "applying %s moved main by %s commits (head %s, parents %v, expected the single parent %s)", desc, n, short(head), parents, short(before))
	}
	if prop.GetCommitSha() != head {
		v.add("one-commit-per-apply", step, "proposal %s reports commit %q, main is at %s: %s", prop.GetProposalId(), prop.GetCommitSha(), short(head), desc)
	}
	dir := "memory/" + a.id + "/"
	touched := map[string]bool{}
	for _, f := range files {
		touched[f] = true
		if !strings.HasPrefix(f, dir) && !strings.HasPrefix(f, "logic/"+a.id+"/") {
			v.add("commit-stays-in-agent-folder", step, "commit %s of %s touches %s", short(head), desc, f)
		}
	}
	for _, want := range []string{dir + "meta.json", dir + "changelog.md", dir + "timeline/" + now.UTC().Format("2006-01-02") + ".md"} {
		if !touched[want] {
			v.add("commit-records-meta-changelog-timeline", step, "commit %s of %s does not change %s (files: %v)", short(head), desc, want, files)
		}
	}

	read := func(rel string) string { s, _ := r.h.git.file(head, dir+rel); return s }
	snapshotMD, factsMD, loopsMD, decisionsMD := read("snapshot.md"), read("facts.md"), read("open_loops.md"), read("decisions.md")
	snapTok, factsTok, loopsTok := c.Count(snapshotMD), c.Count(factsMD), c.Count(loopsMD)

	// Layer 1 hard limits.
	if snapTok > snapshotLimit || factsTok > factsLimit || loopsTok > openLoopsLimit || snapTok+factsTok+loopsTok > layer1Limit {
		v.add("layer1-hard-limits", step, "after %s (commit %s): snapshot %d/2000, facts %d/8000, open_loops %d/2000, total %d/12000 tokens",
			desc, short(head), snapTok, factsTok, loopsTok, snapTok+factsTok+loopsTok)
	}
	if exp.snapshotTag != "" && !strings.Contains(snapshotMD, exp.snapshotTag) {
		v.add("snapshot-replaced", step, "snapshot.md at %s does not hold the proposed snapshot %s: %s", short(head), exp.snapshotTag, desc)
	}

	// Facts.
	obs, untagged := parseFactsFile(factsMD)
	dv := parseDecisions(decisionsMD)
	if len(untagged) > 0 {
		v.add("no-invented-facts", step, "facts.md at %s has bullets no proposal appended: %q", short(head), untagged[:min(3, len(untagged))])
	}
	for id, occ := range obs {
		if len(occ) > 1 {
			v.add("no-duplicate-facts", step, "fact %s appears %d times in facts.md at %s (after %s)", id, len(occ), short(head), desc)
		}
		if info, ok := r.facts[id]; ok && occ[0].text != info.text {
			v.add("facts-verbatim", step, "fact %s reads %q in facts.md, appended as %q", id, occ[0].text, info.text)
		}
	}
	newFacts := map[string]bool{}
	for _, f := range p.appended {
		newFacts[f.id] = true
	}
	var evicted, newEvicted, lost []string
	for id, st := range exp.facts {
		info := r.facts[id]
		_, inFile := obs[id]
		switch st {
		case factInFile:
			switch {
			case inFile:
			case containsLine(dv.evicted[id], info.text):
				evicted = append(evicted, id)
			case len(dv.evicted[id]) > 0:
				v.add("evicted-facts-verbatim", step, "fact %s was evicted, but decisions.md § Evicted facts does not hold its text verbatim (%q)", id, info.text)
				evicted = append(evicted, id)
			default:
				lost = append(lost, id)
			}
			if !inFile && newFacts[id] {
				newEvicted = append(newEvicted, id)
			}
		case factEvicted:
			if inFile {
				v.add("no-unexpected-facts", step, "fact %s, evicted earlier, is back in facts.md at %s after %s", id, short(head), desc)
			}
			if !containsLine(dv.evicted[id], info.text) {
				v.add("evicted-facts-kept-in-layer2", step, "fact %s, evicted earlier, is no longer in decisions.md § Evicted facts at %s (after %s)", id, short(head), desc)
				exp.facts[id] = factLost
			}
		default:
			if inFile {
				v.add("no-unexpected-facts", step, "fact %s (%s) is in facts.md at %s after %s", id, st, short(head), desc)
			}
		}
	}
	for id := range obs {
		if _, ok := exp.facts[id]; !ok {
			v.add("no-unexpected-facts", step, "fact %s is in facts.md at %s but the model never had it there", id, short(head))
		}
	}
	sort.Strings(evicted)
	sort.Strings(lost)
	if len(lost) > 0 {
		v.add("nothing-silently-lost", step, "%d facts left facts.md at %s without a record in decisions.md § Evicted facts nor a removal: %s; proposal %s",
			len(lost), short(head), r.factList(lost), desc)
	}
	if len(newEvicted) > 0 {
		v.add("new-facts-not-evicted", step, "the apply of %s evicted %d of the facts it appended itself: %s (commit %s, facts.md now %d tokens)",
			desc, len(newEvicted), r.factList(newEvicted), short(head), factsTok)
	}
	r.checkEvictionOrder(a, p, exp, obs, evicted, newFacts, factsTok, desc, head, msg)
	r.checkListed(step, "result-lists-evicted-facts", desc, prop.GetEvictedFacts(), evicted, func(id string) string { return r.facts[id].text }, factTagRe)
	r.stats["commits-evicting-facts"] += b2i(len(evicted) > 0)
	r.stats["facts-evicted"] += len(evicted)
	if factsTok > r.stats["max-facts-tokens"] {
		r.stats["max-facts-tokens"] = factsTok
	}
	for _, id := range evicted {
		exp.facts[id] = factEvicted
	}
	for _, id := range lost {
		exp.facts[id] = factLost
	}

	// Loops.
	obsL, untaggedL := parseLoopsFile(loopsMD)
	if len(untaggedL) > 0 {
		v.add("no-unexpected-loops", step, "open_loops.md at %s has loops no proposal opened: %q", short(head), untaggedL[:min(3, len(untaggedL))])
	}
	opened := map[string]bool{}
	for _, l := range p.opened {
		opened[l.tag] = true
	}
	closedNow := map[string]bool{}
	for _, tag := range p.closed {
		closedNow[tag] = true
	}
	var frozen, removed, lostL []string
	openCount := 0
	for _, occ := range obsL {
		for _, o := range occ {
			if !o.closed {
				openCount++
			}
		}
	}
	tags := make([]string, 0, len(exp.loops))
	for tag := range exp.loops {
		tags = append(tags, tag)
	}
	sort.Strings(tags)
	for _, tag := range tags {
		l := exp.loops[tag]
		occ := obsL[tag]
		if len(occ) > 1 {
			v.add("no-duplicate-loops", step, "loop %s appears %d times in open_loops.md at %s", tag, len(occ), short(head))
		}
		switch l.state {
		case loopOpen:
			switch {
			case len(occ) > 0 && !occ[0].closed:
				l.id = occ[0].id
			case len(occ) > 0:
				v.add("loop-state", step, "loop %s is open in the model but closed in open_loops.md at %s: %q", tag, short(head), occ[0].line)
			case len(dv.frozen[tag]) > 0:
				frozen = append(frozen, tag)
				l.state = loopFrozen
				age := now.Sub(dayStart(l.openedAt))
				switch {
				case opened[tag]:
					v.add("new-loops-not-frozen", step, "the apply of %s froze loop %s that it opened itself (priority %s)", desc, tag, l.priority)
				case !l.low:
					v.add("frozen-loops-low-priority", step, "loop %s of priority %s was frozen by %s (only low-priority loops may be, §11.3)", tag, l.priority, desc)
				case age <= lowLoopFreeze:
					v.add("frozen-loops-older-than-14-days", step, "loop %s opened %s was frozen at %s, %.1f days later (only loops older than 14 days may be, §11.3): %s",
						tag, l.openedAt.Format(time.RFC3339), now.Format(time.RFC3339), now.Sub(l.openedAt).Hours()/24, desc)
				}
			default:
				lostL = append(lostL, tag)
				l.state = loopLost
			}
		case loopClosed:
			switch {
			case len(occ) > 0 && occ[0].closed:
				l.id = occ[0].id
			case len(occ) > 0:
				v.add("loop-state", step, "loop %s is closed in the model but open in open_loops.md at %s: %q", tag, short(head), occ[0].line)
			default:
				removed = append(removed, tag)
				l.state = loopRemoved
				if closedNow[tag] || now.Sub(dayStart(l.closedAt)) <= closedKeep {
					v.add("closed-loops-kept-7-days", step, "loop %s closed %s was dropped from open_loops.md at %s, %.1f days later (closed loops stay 7 days, §3.2): %s",
						tag, l.closedAt.Format(time.RFC3339), now.Format(time.RFC3339), now.Sub(l.closedAt).Hours()/24, desc)
				}
			}
		case loopFrozen:
			if len(occ) > 0 {
				v.add("no-unexpected-loops", step, "frozen loop %s is back in open_loops.md at %s", tag, short(head))
			}
			if len(dv.frozen[tag]) == 0 {
				v.add("frozen-loops-kept-in-layer2", step, "loop %s, frozen earlier, is no longer in decisions.md § Frozen loops at %s (after %s)", tag, short(head), desc)
				l.state = loopLost
			}
		default:
			if len(occ) > 0 {
				v.add("no-unexpected-loops", step, "loop %s (%s) is in open_loops.md at %s after %s", tag, l.state, short(head), desc)
			}
		}
		exp.loops[tag] = l
	}
	for tag := range obsL {
		if _, ok := exp.loops[tag]; !ok {
			v.add("no-unexpected-loops", step, "loop %s is in open_loops.md at %s but the model never had it", tag, short(head))
		}
	}
	if len(lostL) > 0 {
		v.add("nothing-silently-lost", step, "%d open loops left open_loops.md at %s without being closed or recorded in § Frozen loops: %v; proposal %s", len(lostL), short(head), lostL, desc)
	}
	if len(frozen) > 0 {
		freed := 0
		for _, tag := range frozen {
			l := exp.loops[tag]
			freed += c.Count("- [ ] loop_000: " + l.text + " — opened 2026-01-01 | priority: " + l.priority + "\n")
		}
		if loopsTok+freed <= openLoopsLimit-60 {
			v.add("freeze-only-over-limit", step, "%s froze %d loops (about %d tokens) though open_loops.md with them is about %d tokens, under the 2,000 limit",
				desc, len(frozen), freed, loopsTok+freed)
		}
	}
	r.checkLoopsListed(step, "result-lists-frozen-loops", desc, prop.GetFrozenLoops(), frozen, before, a.id)
	r.checkLoopsListed(step, "result-lists-removed-closed-loops", desc, prop.GetRemovedClosedLoops(), removed, before, a.id)
	r.stats["commits-freezing-loops"] += b2i(len(frozen) > 0)
	r.stats["loops-frozen"] += len(frozen)
	r.stats["closed-loops-removed"] += len(removed)

	// Decisions.
	if !slices.Equal(sortedCopy(dv.adrTags), sortedCopy(exp.decisions)) {
		v.add("decisions-kept", step, "decisions.md at %s has ADR entries %v, the model %v (after %s)", short(head), dv.adrTags, exp.decisions, desc)
	}

	// Runs and artifacts.
	for _, path := range sortedKeys(exp.runs) {
		got, ok := r.h.git.file(head, dir+path)
		switch {
		case !ok:
			v.add("runs-kept", step, "%s%s is missing at %s (after %s)", dir, path, short(head), desc)
		case strings.TrimSpace(got) != strings.TrimSpace(exp.runs[path]):
			v.add("runs-kept", step, "%s%s at %s differs from what was written (%d vs %d bytes)", dir, path, short(head), len(got), len(exp.runs[path]))
		}
		if strings.HasSuffix(path, ".md") && !strings.Contains(path, "/artifacts/") && c.Count(got) > runLimit {
			v.add("run-limit", step, "%s%s is %d tokens, over 8,000", dir, path, c.Count(got))
		}
	}
	for _, rel := range r.h.git.ls(head, dir+"runs/") {
		if _, ok := exp.runs["runs/"+rel]; !ok {
			v.add("runs-kept", step, "%sruns/%s exists at %s but the model does not have it (after %s)", dir, rel, short(head), desc)
		}
	}

	// Changelog rotation (DESIGN: last 30 entries).
	if n := strings.Count("\n"+read("changelog.md"), "\n### "); n > changelogKeep {
		v.add("changelog-keeps-30", step, "changelog.md at %s has %d entries, over 30", short(head), n)
	}

	// meta.json.
	var m metaFile
	metaRaw := read("meta.json")
	if len(metaRaw) >= 500 {
		v.add("meta-json-under-500-bytes", step, "meta.json at %s is %d bytes (%d tokens); §3.2 sizes it < 500 bytes (~100 tokens)", short(head), len(metaRaw), c.Count(metaRaw))
	}
	if err := json.Unmarshal([]byte(metaRaw), &m); err != nil {
		v.add("meta-json", step, "meta.json at %s: %v", short(head), err)
	} else {
		if m.Version != a.version+1 {
			v.add("meta-version", step, "meta.json version %d at %s, expected %d (+1 per commit) after %s", m.Version, short(head), a.version+1, desc)
		}
		if prop.GetAppliedVersion() != m.Version {
			v.add("meta-version", step, "proposal %s reports applied_version %d, meta.json has %d", prop.GetProposalId(), prop.GetAppliedVersion(), m.Version)
		}
		check := func(name string, got *int, want int) {
			if got == nil || *got != want {
				g := "absent"
				if got != nil {
					g = fmt.Sprint(*got)
				}
				v.add("meta-counts", step, "meta.json %s is %s at %s, the files say %d (after %s)", name, g, short(head), want, desc)
			}
		}
		check("snapshotTokenCount", m.SnapshotTokenCount, snapTok)
		check("factsTokenCount", m.FactsTokenCount, factsTok)
		check("openLoopsTokenCount", m.OpenLoopsTokenCount, loopsTok)
		check("openLoopsCount", m.OpenLoopsCount, openCount)
		check("decisionsCount", m.DecisionsCount, len(dv.adrTags))
		if p.restore == nil && m.LastRunID != p.req.GetRunId() {
			v.add("meta-last-run", step, "meta.json lastRunId %q, the proposal's run is %q", m.LastRunID, p.req.GetRunId())
		}
		if !m.LastUpdate.Equal(now.Truncate(time.Second)) && !m.LastUpdate.Equal(now) {
			v.add("meta-last-update", step, "meta.json lastUpdate %s, the apply ran at %s", m.LastUpdate.Format(time.RFC3339Nano), now.Format(time.RFC3339))
		}
		if m.AgentID != a.id {
			v.add("meta-json", step, "meta.json agentId %q, expected %q", m.AgentID, a.id)
		}
	}

	a.decisionsBytes = len(decisionsMD)
	a.st = exp
	a.version++
	if m.Version > 0 {
		a.version = m.Version // resynchronise after a reported mismatch
	}
	a.exists = true
	a.commits = append(a.commits, head)
	t0 := time.Now()
	r.checkReads(a, head)
	r.stats["ms-reads"] += int(time.Since(t0).Milliseconds())
}

// checkEvictionOrder: the facts a commit evicted are the oldest (by the
// commit that added them), stale ones (unused 30 days) possibly first, and
// only as many as needed to get under 8,000 tokens (§11.3).
func (r *runner) checkEvictionOrder(a *agent, p *plan, exp memState, obs map[string][]observedFact, evicted []string, newFacts map[string]bool, factsTok int, desc, head, msg string) {
	if len(evicted) == 0 {
		return
	}
	now := r.h.clock.Now()
	// definitelyStale: unused 30 days under every reading of its age;
	// definitelyFresh: used within 30 days under every reading.
	definitelyStale := func(id string) bool {
		f := r.facts[id]
		last := f.lastUsed
		if f.restoredAt.After(last) {
			last = f.restoredAt
		}
		return now.Sub(last) > staleAfter
	}
	definitelyFresh := func(id string) bool { return now.Sub(r.facts[id].lastUsed) <= staleAfter }
	oldestStep := func(id string) int {
		if f := r.facts[id]; f.restoredStep > 0 && f.restoredStep < f.step {
			return f.restoredStep
		}
		return r.facts[id].step
	}
	newestStep := func(id string) int { return max(r.facts[id].step, r.facts[id].restoredStep) }
	var kept []string
	for id, st := range exp.facts {
		if st == factInFile && len(obs[id]) > 0 && !newFacts[id] {
			kept = append(kept, id)
		}
	}
	sort.Strings(kept)
	var staleKept, olderKept []string
	anyStale := false
	var newestFresh string
	for _, e := range evicted {
		if newFacts[e] {
			continue
		}
		if definitelyStale(e) {
			anyStale = true
		}
		if !definitelyFresh(e) {
			continue
		}
		if newestFresh == "" || r.facts[e].step > r.facts[newestFresh].step {
			newestFresh = e
		}
		for _, k := range kept {
			switch {
			case definitelyStale(k):
				staleKept = append(staleKept, fmt.Sprintf("%s (last used %s) kept while %s (added step %d, last used %s) was evicted", k, r.facts[k].lastUsed.Format("2006-01-02"), e, r.facts[e].step, r.facts[e].lastUsed.Format("2006-01-02")))
			case definitelyFresh(k) && newestStep(k) < oldestStep(e):
				olderKept = append(olderKept, fmt.Sprintf("%s (added step %d) kept while %s (added step %d) was evicted", k, r.facts[k].step, e, r.facts[e].step))
			}
		}
	}
	if len(staleKept) > 0 {
		v := r.v
		v.add("evict-stale-first", r.step, "%d pairs, e.g. %s; proposal %s, commit %s", len(staleKept), strings.Join(staleKept[:min(2, len(staleKept))], "; "), desc, short(head))
	}
	if len(olderKept) > 0 {
		r.v.add("evict-oldest-first", r.step, "%d pairs, e.g. %s; proposal %s, commit %s", len(olderKept), strings.Join(olderKept[:min(2, len(olderKept))], "; "), desc, short(head))
	}
	if anyStale && !strings.Contains(msg, "evicted: stale-fact") {
		r.v.add("stale-eviction-commit-marked", r.step, "commit %s evicted stale facts but its message lacks \"evicted: stale-fact\": %q", short(head), firstLine(msg, 300))
	}
	c := r.h.counter
	evTok := 0
	for _, id := range evicted {
		evTok += c.Count("- " + r.facts[id].text + "\n")
	}
	if factsTok+evTok <= factsLimit-50 {
		r.v.add("evict-only-over-limit", r.step, "%s evicted %d facts (%d tokens) though facts.md with them is about %d tokens, under 8,000; commit %s",
			desc, len(evicted), evTok, factsTok+evTok, short(head))
	} else if newestFresh != "" {
		// Eviction goes oldest first and stops once the file fits, so the
		// last fact it took was needed. Facts of one commit are ordered by
		// position, which this model does not track: of the newest commit's
		// evicted fresh facts, the largest must not have fit.
		largest, t := newestFresh, 0
		for _, e := range evicted {
			if r.facts[e].step == r.facts[newestFresh].step && definitelyFresh(e) && !newFacts[e] {
				if n := c.Count("- " + r.facts[e].text + "\n"); n > t {
					largest, t = e, n
				}
			}
		}
		if factsTok+t <= factsLimit-50 {
			r.v.add("evict-no-more-than-needed", r.step, "%s evicted fresh fact %s (%d tokens), the largest of its commit's, though facts.md (%d tokens after the commit) had room for it; commit %s",
				desc, largest, t, factsTok, short(head))
		}
	}
}

// checkListed compares a proposal's result list (evicted facts, frozen
// loops, removed loops) with what the commit did, by tag.
func (r *runner) checkListed(step int, inv, desc string, listed []string, did []string, text func(string) string, tagRe interface{ FindString(string) string }) {
	got := map[string]string{}
	for _, l := range listed {
		got[tagRe.FindString(l)] = l
	}
	var missing, extra, notVerbatim []string
	for _, id := range did {
		l, ok := got[id]
		if !ok {
			missing = append(missing, id)
			continue
		}
		if text != nil && strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "- ")) != text(id) {
			notVerbatim = append(notVerbatim, fmt.Sprintf("%s listed as %q", id, l))
		}
		delete(got, id)
	}
	for id := range got {
		extra = append(extra, id)
	}
	if len(missing)+len(extra)+len(notVerbatim) > 0 {
		sort.Strings(extra)
		r.v.add(inv, step, "the commit did %d, the proposal lists %d; missing %v, extra %v, not verbatim %v; proposal %s",
			len(did), len(listed), firstN(missing, 8), firstN(extra, 8), firstN(notVerbatim, 2), desc)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkLoopsListed compares a proposal's frozen or removed loops with what
// the commit did. A loop is named in the list by its text (tag) or by the
// loop id it had in open_loops.md before the commit.
func (r *runner) checkLoopsListed(step int, inv, desc string, listed []string, did []string, before, agentID string) {
	prevMD, _ := r.h.git.file(before, "memory/"+agentID+"/open_loops.md")
	prev, _ := parseLoopsFile(prevMD)
	idRe := regexp.MustCompile(`\bloop_[0-9]+\b`)
	used := make([]bool, len(listed))
	var missing []string
	for _, tag := range did {
		id := ""
		if occ := prev[tag]; len(occ) > 0 {
			id = occ[0].id
		}
		found := false
		for i, l := range listed {
			if used[i] {
				continue
			}
			if strings.Contains(l, tag) || (id != "" && idRe.FindString(l) == id) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			missing = append(missing, tag+"/"+id)
		}
	}
	var extra []string
	for i, l := range listed {
		if !used[i] {
			extra = append(extra, l)
		}
	}
	if len(missing)+len(extra) > 0 {
		r.v.add(inv, step, "the commit did %d, the proposal lists %d; missing %v, extra %q; proposal %s",
			len(did), len(listed), firstN(missing, 8), firstN(extra, 4), desc)
	}
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("…%d more", len(s)-n))
	}
	return s
}

func (r *runner) factList(ids []string) string {
	var parts []string
	for _, id := range firstN(ids, 5) {
		if f, ok := r.facts[id]; ok {
			parts = append(parts, fmt.Sprintf("%s (step %d, %s)", id, f.step, f.addedAt.Format("2006-01-02")))
		} else {
			parts = append(parts, id)
		}
	}
	return strings.Join(parts, ", ")
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	sort.Strings(c)
	return c
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
