package invariants

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The model: what an agent's memory must hold, by the specs. Facts, loops
// and decisions carry unique tags (F000001, L000001, D000001) in their text
// so they can be found in the files whatever else the service writes.

type factState int

const (
	factInFile  factState = iota // in facts.md
	factEvicted                  // in decisions.md § "Evicted facts"
	factRemoved                  // removed on purpose by a proposal
	factDropped                  // not in a restored snapshot (on purpose)
	factLost                     // nowhere: reported once, then forgotten
)

func (s factState) String() string {
	return [...]string{"in facts.md", "evicted", "removed", "dropped by restore", "lost"}[s]
}

// factInfo is what never changes about a fact, plus its last use.
type factInfo struct {
	id, text, section string
	step              int // the step (commit) that appended it
	addedAt, lastUsed time.Time
	// restoredStep/At: the last restore that put the fact's line back.
	restoredStep int
	restoredAt   time.Time
}

type loopState int

const (
	loopOpen loopState = iota
	loopClosed
	loopFrozen  // in decisions.md § "Frozen loops"
	loopRemoved // closed, then dropped after 7 days
	loopDropped // not in a restored snapshot
	loopLost
)

func (s loopState) String() string {
	return [...]string{"open", "closed", "frozen", "removed (closed > 7 days)", "dropped by restore", "lost"}[s]
}

type loop struct {
	tag, text          string
	id                 string // loop_NNN as last seen in open_loops.md
	low                bool
	priority           string
	openedAt, closedAt time.Time
	step               int
	state              loopState
}

// memState is the restorable part of an agent's memory (a snapshot saves it).
type memState struct {
	facts       map[string]factState
	loops       map[string]loop
	decisions   []string          // tags of live ADR entries, in order
	snapshotTag string            // tag of the current snapshot.md
	runs        map[string]string // runs/… path -> content
}

func newMemState() memState {
	return memState{facts: map[string]factState{}, loops: map[string]loop{}, runs: map[string]string{}}
}

func (m memState) clone() memState {
	return memState{facts: maps.Clone(m.facts), loops: maps.Clone(m.loops), decisions: slices.Clone(m.decisions),
		snapshotTag: m.snapshotTag, runs: maps.Clone(m.runs)}
}

func (m memState) inFile() []string {
	var ids []string
	for id, s := range m.facts {
		if s == factInFile {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

type savedSnapshot struct {
	id          string
	state       memState
	includeRuns bool
	step        int
}

type agent struct {
	id        string
	exists    bool
	version   int32
	st        memState
	snapshots []savedSnapshot
	commits   []string // this agent's commits, oldest first
	// decisionsBytes is the size of decisions.md at the last commit.
	decisionsBytes int
}

// ---------------------------------------------------------------------------
// Violations: every failure names the invariant, seed, step and proposal;
// the first few of each invariant fail the test at once, all are counted.

type violations struct {
	t      *testing.T
	seed   uint64
	counts map[string]int
	first  map[string]string
	order  []string
}

const reportPerInvariant = 3

func (v *violations) add(inv string, step int, format string, args ...any) {
	v.t.Helper()
	msg := fmt.Sprintf("INVARIANT %s violated (seed=%d step=%d): %s", inv, v.seed, step, fmt.Sprintf(format, args...))
	if v.counts[inv] == 0 {
		v.first[inv] = msg
		v.order = append(v.order, inv)
	}
	v.counts[inv]++
	if v.counts[inv] <= reportPerInvariant {
		v.t.Error(msg)
	}
}

func (v *violations) summary() {
	if len(v.order) == 0 {
		v.t.Logf("seed=%d: every invariant held", v.seed)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "seed=%d: %d invariants violated:\n", v.seed, len(v.order))
	for _, inv := range v.order {
		fmt.Fprintf(&b, "  %-36s %5d times; first: %s\n", inv, v.counts[inv], firstLine(v.first[inv], 600))
	}
	v.t.Log(b.String())
}

func firstLine(s string, max int) string {
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

// ---------------------------------------------------------------------------
// Parsing the files (our own reading of the spec's formats).

var (
	factTagRe     = regexp.MustCompile(`\bF[0-9]{6}\b`)
	loopTagRe     = regexp.MustCompile(`\bL[0-9]{6}\b`)
	decisionTagRe = regexp.MustCompile(`\bD[0-9]{6}\b`)
	loopLineRe    = regexp.MustCompile(`^[-*+] \[([ xX])\] (.*)$`)
	loopIDRe      = regexp.MustCompile(`^(loop_[0-9]+): `)
)

// observedFact is a top-level bullet of facts.md.
type observedFact struct {
	text    string
	section string
}

// parseFactsFile returns the tagged facts (id -> occurrences) and the
// untagged bullets.
func parseFactsFile(md string) (map[string][]observedFact, []string) {
	out := map[string][]observedFact{}
	var untagged []string
	section, fence := "", false
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "```") {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		if strings.HasPrefix(l, "## ") {
			section = strings.TrimSpace(l[3:])
			continue
		}
		if !strings.HasPrefix(l, "- ") && !strings.HasPrefix(l, "* ") && !strings.HasPrefix(l, "+ ") {
			continue
		}
		text := strings.TrimSpace(l[2:])
		id := factTagRe.FindString(text)
		if id == "" {
			untagged = append(untagged, l)
			continue
		}
		out[id] = append(out[id], observedFact{text: text, section: section})
	}
	return out, untagged
}

type observedLoop struct {
	id     string // loop_NNN
	closed bool
	line   string
}

func parseLoopsFile(md string) (map[string][]observedLoop, []string) {
	out := map[string][]observedLoop{}
	var untagged []string
	for _, l := range strings.Split(md, "\n") {
		m := loopLineRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		tag := loopTagRe.FindString(m[2])
		if tag == "" {
			untagged = append(untagged, l)
			continue
		}
		o := observedLoop{closed: m[1] != " ", line: l}
		if id := loopIDRe.FindStringSubmatch(m[2]); id != nil {
			o.id = id[1]
		}
		out[tag] = append(out[tag], o)
	}
	return out, untagged
}

// mdSections splits a Markdown file into its "## " sections: title -> body
// lines (several sections of one title are joined).
type mdSection struct {
	title string
	lines []string
}

func splitSections(md string) []mdSection {
	var out []mdSection
	cur := -1
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "## ") {
			out = append(out, mdSection{title: strings.TrimSpace(l[3:])})
			cur = len(out) - 1
			continue
		}
		if cur >= 0 {
			out[cur].lines = append(out[cur].lines, l)
		}
	}
	return out
}

type decisionsView struct {
	evictedLines []string            // lines of § "Evicted facts"
	frozenLines  []string            // lines of § "Frozen loops"
	evicted      map[string][]string // fact tag -> its lines in § "Evicted facts"
	frozen       map[string][]string // loop tag -> its lines in § "Frozen loops"
	adrTags      []string            // decision tags of ADR headings, in file order
	adrHeadings  int                 // "## " headings that are neither appendix
}

func parseDecisions(md string) decisionsView {
	v := decisionsView{evicted: map[string][]string{}, frozen: map[string][]string{}}
	defer func() {
		for _, l := range v.evictedLines {
			for _, tag := range factTagRe.FindAllString(l, -1) {
				v.evicted[tag] = append(v.evicted[tag], l)
			}
		}
		for _, l := range v.frozenLines {
			for _, tag := range loopTagRe.FindAllString(l, -1) {
				v.frozen[tag] = append(v.frozen[tag], l)
			}
		}
	}()
	for _, s := range splitSections(md) {
		switch strings.ToLower(s.title) {
		case "evicted facts":
			v.evictedLines = append(v.evictedLines, s.lines...)
		case "frozen loops":
			v.frozenLines = append(v.frozenLines, s.lines...)
		default:
			v.adrHeadings++
			if tag := decisionTagRe.FindString(s.title); tag != "" {
				v.adrTags = append(v.adrTags, tag)
			}
		}
	}
	return v
}

// containsLine reports whether some line contains s.
func containsLine(lines []string, s string) bool {
	for _, l := range lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

func dayStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// ---------------------------------------------------------------------------
// Configuration from the environment.

func envInt(name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err == nil {
			return n
		}
	}
	return def
}

// defaultSeed makes `make test` reproducible; INVARIANT_SEED=<n> replays a
// seed and INVARIANT_SEED=random picks one from the time (printed).
const defaultSeed = 20260217

func envSeed() uint64 {
	switch v := os.Getenv("INVARIANT_SEED"); v {
	case "":
		return defaultSeed
	case "random":
		return uint64(time.Now().UnixNano()) % 1_000_000_007
	default:
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			panic("INVARIANT_SEED: " + err.Error())
		}
		return n
	}
}

// newRand is the one random source of a run.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }
