package benchharness

import (
	"cmp"
	"context"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/commitmsg"
	"github.com/garden-bloom/memory/pkg/mdops"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/temporalgraph"
	"github.com/garden-bloom/memory/pkg/tokens"
)

// genVersion changes whenever the generated content changes, so cached data
// sets of an older generator are rebuilt. 2: sources have the object store's
// ETag sidecars. 3: each path's newest version packed whole. 4: meta.json's
// token counts are the counter's, not estimates.
const genVersion = 4

// headEntityLabel is linked only by the last commit: once the entity graph
// knows it, the graph has replayed the whole history.
const headEntityLabel = "Bench Head Marker"

// HeadEntityID is the entity id of headEntityLabel.
var HeadEntityID = temporalgraph.Slug(headEntityLabel)

// genEpoch is the (fixed) time of the first commit; history then spans
// historySpan, so the data set is the same whenever it is generated.
var genEpoch = time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)

const historySpan = 60 * 24 * time.Hour

// GenConfig selects a synthetic monorepo.
type GenConfig struct {
	// Agents is the number of agents (N).
	Agents int
	// Commits is the number of history commits after the onboarding (M);
	// the repository holds 1 + Agents + Commits commits.
	Commits int
	Seed    int64
}

func (c GenConfig) key() string { return fmt.Sprintf("n%d-m%d-s%d", c.Agents, c.Commits, c.Seed) }

// Manifest describes a generated data set (manifest.json, written last).
type Manifest struct {
	Generator    int     `json:"generator"`
	Agents       int     `json:"agents"`
	Commits      int     `json:"commits"`
	Seed         int64   `json:"seed"`
	TotalCommits int     `json:"totalCommits"`
	Head         string  `json:"head"`
	HeadEntity   string  `json:"headEntity"`
	Sources      int     `json:"sources"`
	RepoBytes    int64   `json:"repoBytes"`
	GenSeconds   float64 `json:"genSeconds"`
}

// AgentID is the id of agent i of a generated data set.
func AgentID(i int) string { return fmt.Sprintf("agent-%05d", i) }

// Layout of a data set directory (a memoryd --data-dir minus auth and state).
const (
	repoDir     = "memory.git"
	objectsDir  = "objects"
	sourcesEach = 2
)

// Generate writes a data set into dir (which must not exist yet): the bare
// repository dir/memory.git (its init commit made by memrepo.Init, the rest
// written as one pack, see pack.go), the agents' sources under dir/objects
// (the folder object store's layout) and dir/manifest.json. logf reports
// progress.
func Generate(ctx context.Context, cfg GenConfig, dir string, logf func(string, ...any)) (*Manifest, error) {
	if cfg.Agents < 1 || cfg.Commits < 1 || cfg.Agents > 99999 {
		return nil, errors.New("generate: need 1..99,999 agents and at least one commit")
	}
	start := time.Now()
	repoPath := filepath.Join(dir, repoDir)
	repo, err := memrepo.Init(ctx, repoPath, memrepo.InitOptions{Now: func() time.Time { return genEpoch.Add(-time.Hour) }})
	if err != nil {
		return nil, err
	}
	initHead, err := repo.Head(ctx)
	if err != nil {
		return nil, err
	}
	initCommit, err := repo.Git().CommitObject(initHead)
	if err != nil {
		return nil, err
	}
	initTree, err := initCommit.Tree()
	if err != nil {
		return nil, err
	}
	counter, err := tokens.New(tokens.DefaultEncoding)
	if err != nil {
		return nil, err
	}
	g := &generator{cfg: cfg, m: newTextModel(cfg.Seed), counter: counter, objects: filepath.Join(dir, objectsDir)}
	copy(g.parent[:], initHead[:])
	for _, e := range initTree.Entries {
		var id oid
		copy(id[:], e.Hash[:])
		g.root = append(g.root, treeEntry{name: e.Name, dir: !e.Mode.IsFile(), id: id})
	}
	logf("generate %s: start", cfg.key())
	if g.pw, err = newPackWriter(repoPath); err != nil {
		return nil, err
	}
	// Fails (gone) once renamed into place; otherwise a best-effort cleanup
	// of a partial pack.
	defer func() { _ = os.Remove(g.pw.f.Name()) }()
	if err := g.write(ctx, logf); err != nil {
		_ = g.pw.f.Close()
		return nil, err
	}
	if err := g.pw.finish(); err != nil {
		return nil, err
	}
	// The ref goes last: a crash before leaves the init commit as main.
	if err := os.WriteFile(filepath.Join(repoPath, "refs", "heads", "main"), []byte(g.parent.String()+"\n"), 0o644); err != nil {
		return nil, err
	}
	m := &Manifest{Generator: genVersion, Agents: cfg.Agents, Commits: cfg.Commits, Seed: cfg.Seed, TotalCommits: 1 + len(g.sched),
		Head: g.parent.String(), HeadEntity: HeadEntityID, Sources: cfg.Agents * sourcesEach, RepoBytes: dirSize(repoPath),
		GenSeconds: time.Since(start).Seconds()}
	data, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), data, 0o644); err != nil {
		return nil, err
	}
	logf("generate %s: %d commits, %.0f MB pack in %.1fs", cfg.key(), m.TotalCommits, float64(m.RepoBytes)/1e6, m.GenSeconds)
	return m, nil
}

type generator struct {
	cfg     GenConfig
	m       *textModel
	counter *tokens.Counter
	objects string
	pw      *packWriter
	enc     *encoder // the commit phase's
	sched   []slot   // every commit after init, in order
	// files[j] and msgs[j] are commit j's files and message.
	files [][]fileVersion
	msgs  []string

	// The commit phase's state: the current trees and the last commit.
	parent oid
	root   []treeEntry // README.md and memory/
	memory memoryTree
	agents []agentTree
	rootP  *placed
	rootB  []byte
}

// slot is one commit of the schedule: which agent, which kind of change.
type slot struct {
	agent int32
	op    int8 // -1 = onboarding, else 0..99 or opLast (see historyChange)
	at    time.Time
}

// fileVersion is a file of a commit, relative to the agent folder.
type fileVersion struct {
	rel string
	id  oid
}

// write builds the schedule, then the blobs agent by agent (in parallel:
// agents' histories are independent, each with its own PRNG, so the result
// does not depend on the interleaving), then the trees and commits in
// history order.
func (g *generator) write(ctx context.Context, logf func(string, ...any)) error {
	n := g.cfg.Agents
	at := genEpoch
	for i := range n {
		g.sched = append(g.sched, slot{agent: int32(i), op: -1, at: at})
		at = at.Add(time.Second)
	}
	r := rand.New(rand.NewPCG(uint64(g.cfg.Seed), 0xc0ffee))
	step := max((historySpan / time.Duration(g.cfg.Commits)).Truncate(time.Second), time.Second)
	for j := range g.cfg.Commits {
		at = at.Add(step)
		op := int8(r.IntN(100))
		if j == g.cfg.Commits-1 {
			op = opLast
		}
		g.sched = append(g.sched, slot{agent: int32(r.IntN(n)), op: op, at: at})
	}
	byAgent := make([][]int32, n)
	for j, s := range g.sched {
		byAgent[s.agent] = append(byAgent[s.agent], int32(j))
	}
	g.files = make([][]fileVersion, len(g.sched))
	g.msgs = make([]string, len(g.sched))

	// Workers build agents' chunks; the writer places them in agent order.
	workers := max(runtime.GOMAXPROCS(0), 1)
	// Sources are written alongside, by goroutines of their own: creating
	// many small files is latency-bound, not CPU-bound.
	srcErr := make(chan error, 1)
	go func() { srcErr <- g.writeAllSources(ctx) }()
	results := make([]chan agentChunk, n)
	for i := range results {
		results[i] = make(chan agentChunk, 1)
	}
	next := make(chan int)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			est, enc := newEstimator(g.counter), newEncoder()
			for i := range next {
				results[i] <- g.buildAgent(i, byAgent[i], est, enc)
			}
		})
	}
	// At most a few agents' chunks wait for the writer (memory).
	slots := make(chan struct{}, 4*workers)
	go func() {
		defer close(next)
		for i := range n {
			select {
			case slots <- struct{}{}:
			case <-wctx.Done():
				return
			}
			select {
			case next <- i:
			case <-wctx.Done():
				return
			}
		}
	}()
	var werr error
	for i := range n {
		c := <-results[i]
		<-slots
		werr = g.placeChunk(c)
		if werr == nil {
			werr = ctx.Err()
		}
		if werr != nil {
			cancel()
			break
		}
		if (i+1)%2000 == 0 {
			logf("generate %s: %d/%d agents", g.cfg.key(), i+1, n)
		}
	}
	cancel()
	go func() {
		for range next { // drain so workers can finish
		}
	}()
	wg.Wait()
	if err := <-srcErr; werr == nil {
		werr = err
	}
	if werr != nil {
		return werr
	}
	logf("generate %s: files of %d agents packed; writing %d commits", g.cfg.key(), n, len(g.sched))
	g.agents = make([]agentTree, n)
	g.enc = newEncoder()
	for j, s := range g.sched {
		if err := g.commit(j, s); err != nil {
			return err
		}
		if (j+1)%50000 == 0 {
			logf("generate %s: %d/%d commits", g.cfg.key(), j+1, len(g.sched))
		}
	}
	return nil
}

// agentChunk is one agent's blobs, ready to place, and its commits.
type agentChunk struct {
	entries []entry
	commits []chunkCommit
}

type chunkCommit struct {
	j     int32
	msg   string
	files []chunkFile
}

type chunkFile struct {
	rel string
	idx int // into entries
}

// buildAgent replays agent i's commits (js, in order) and packs its file
// versions as git's repack does: each path's newest version whole and every
// older one as a delta against the next newer one. Reads of the head, which
// are most reads, then decode one object, as on a repository the engine
// wrote (its commits' objects are whole); deltas against the previous
// version put the head at the end of a chain of ten.
func (g *generator) buildAgent(i int, js []int32, est *estimator, enc *encoder) agentChunk {
	st := newAgentState(g.m, est, g.cfg.Seed, i)
	var out agentChunk
	// versions holds each path's contents, oldest first (a commit that
	// leaves a file as it was shares its version).
	versions := map[string][]string{}
	type version struct {
		rel string
		v   int
	}
	var uses [][]version // per commit, the file versions it has
	for _, j := range js {
		s := g.sched[j]
		var c *change
		if s.op < 0 {
			c = g.onboardChange(st, s.at)
		} else {
			c = g.historyChange(st, s.op, s.at)
		}
		st.finish(c, s.at)
		out.commits = append(out.commits, chunkCommit{j: j, msg: commitmsg.Format(commitmsg.Update{AgentID: st.id, RunID: c.runID,
			ProposalID: c.proposalID, Files: c.listed, Reason: c.reason, AutoApproved: true, Evicted: c.evicted,
			EntityRefs: dedupe(c.entityRefs)})})
		var used []version
		for _, rel := range slices.Sorted(maps.Keys(c.files)) {
			vs := versions[rel]
			if len(vs) == 0 || vs[len(vs)-1] != c.files[rel] {
				vs = append(vs, c.files[rel])
				versions[rel] = vs
			}
			used = append(used, version{rel, len(vs) - 1})
		}
		uses = append(uses, used)
	}
	// Per path, newest first, so that every delta's base precedes it.
	entryOf := map[string][]int{}
	for _, rel := range slices.Sorted(maps.Keys(versions)) {
		vs := versions[rel]
		at := make([]int, len(vs))
		for v := len(vs) - 1; v >= 0; v-- {
			depth, base, newer := -1, -1, ""
			if v+1 < len(vs) {
				base, newer = at[v+1], vs[v+1]
				depth = out.entries[base].depth
			}
			e, isDelta := enc.delta(objBlob, []byte(vs[v]), []byte(newer), depth)
			if isDelta {
				e.baseIdx = base
			}
			out.entries = append(out.entries, e)
			at[v] = len(out.entries) - 1
		}
		entryOf[rel] = at
	}
	for k, used := range uses {
		for _, u := range used {
			out.commits[k].files = append(out.commits[k].files, chunkFile{rel: u.rel, idx: entryOf[u.rel][u.v]})
		}
	}
	return out
}

// placeChunk appends an agent's blobs to the pack and records its commits.
func (g *generator) placeChunk(c agentChunk) error {
	placedAt := make([]*placed, len(c.entries))
	for k, e := range c.entries {
		if e.baseIdx >= 0 {
			e.base = placedAt[e.baseIdx]
		}
		p, err := g.pw.put(e)
		if err != nil {
			return err
		}
		placedAt[k] = p
	}
	for _, cc := range c.commits {
		fv := make([]fileVersion, len(cc.files))
		for k, f := range cc.files {
			fv[k] = fileVersion{rel: f.rel, id: c.entries[f.idx].id}
		}
		g.files[cc.j], g.msgs[cc.j] = fv, cc.msg
	}
	return nil
}

// opLast marks the last commit: a facts append linking the head marker.
const opLast = 100

// onboardChange is an OnboardAgent proposal: Layer 1 near its limits.
func (g *generator) onboardChange(st *agentState, at time.Time) *change {
	st.onboard(at)
	c := &change{runID: "run_onboard", proposalID: proposalID(st.w.r), reason: "onboard " + st.id,
		files: map[string]string{memlayout.SnapshotFile: st.snapshot, memlayout.FactsFile: st.renderFacts(),
			memlayout.OpenLoopsFile: st.renderLoops()},
		listed: []string{memlayout.FactsFile, memlayout.OpenLoopsFile, memlayout.SnapshotFile}}
	for _, f := range c.listed {
		c.summary = append(c.summary, fmt.Sprintf("- **%s:** written exactly as given", f))
	}
	return c
}

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

func randomID(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return strings.ToLower(idEncoding.EncodeToString(b))
}

func proposalID(r *rand.Rand) string { return "proposal_" + randomID(r, 16) }

// historyChange applies one proposal's worth of change of kind op to st:
// 0-49 a facts append (evicting into decisions.md above the target), 50-67
// a run file, 68-77 a decision, 78-89 a loop closed and one opened, 90-94 a
// snapshot replace, 95-99 facts and a run; opLast a facts append linking
// the head marker.
func (g *generator) historyChange(st *agentState, op int8, at time.Time) *change {
	w := &st.w
	r := w.r
	c := &change{runID: "run_" + randomID(r, 8), proposalID: proposalID(r), reason: w.sentence(), files: map[string]string{}}
	appendFacts := func() {
		sec := r.IntN(len(factSections))
		n := 1 + r.IntN(2)
		for k := range n {
			text, e := w.fact()
			if op == opLast && k == 0 {
				text += " (see [[" + headEntityLabel + "]])"
				c.entityRefs = append(c.entityRefs, HeadEntityID)
			}
			if e >= 0 {
				c.entityRefs = append(c.entityRefs, g.m.ids[e])
			}
			st.addFact(sec, text)
		}
		c.summary = append(c.summary, fmt.Sprintf("- **facts.md:** %d fact(s) added to %q", n, factSections[sec]))
		c.listed = append(c.listed, memlayout.FactsFile)
		if ev := st.evict(); len(ev) > 0 {
			var lines []string
			for _, f := range ev {
				lines = append(lines, mdops.EvictedFactLine(mdops.Fact{Text: f}, time.Time{}, at, mdops.WhyOverLimit))
			}
			st.decisions = mdops.AppendToDecisionsSection(st.decisions, st.id, "Evicted facts", lines)
			c.files[memlayout.DecisionsFile] = st.decisions
			c.summary = append(c.summary, fmt.Sprintf("- **facts.md:** %d fact(s) evicted to decisions.md (Layer 1 limit)", len(ev)))
			c.evicted = true
		}
		c.files[memlayout.FactsFile] = st.renderFacts()
	}
	writeRun := func() {
		rel := "runs/" + c.runID + ".md"
		c.files[rel] = st.runFile(c.runID, at, c.reason)
		c.listed = append(c.listed, rel)
		c.summary = append(c.summary, fmt.Sprintf("- **%s:** written", rel))
	}
	switch {
	case op < 50 || op == opLast:
		appendFacts()
	case op < 68:
		writeRun()
	case op < 78:
		title := fmt.Sprintf("Use the %s %s for %s", w.dw(), pick(r, nouns), w.dw())
		next, err := mdops.AddDecision(st.decisions, st.id, mdops.Decision{Title: title, Status: "accepted",
			Context: w.sentence(), Decision: w.sentence(), Rationale: w.sentence(), Consequences: w.sentence(), RunID: c.runID}, at)
		if err == nil && next != st.decisions {
			st.decisions = next
			st.decisionsCount++
		}
		c.files[memlayout.DecisionsFile] = st.decisions
		c.listed = append(c.listed, memlayout.DecisionsFile)
		c.summary = append(c.summary, fmt.Sprintf("- **decisions.md:** decision %q added", title))
	case op < 90:
		id := st.closeLoop(at, c.runID)
		st.openLoop(at)
		c.files[memlayout.OpenLoopsFile] = st.renderLoops()
		c.listed = append(c.listed, memlayout.OpenLoopsFile)
		c.summary = append(c.summary, "- **open_loops.md:** closed "+id, "- **open_loops.md:** opened "+st.open[len(st.open)-1].id)
	case op < 95:
		st.newSnapshot()
		c.files[memlayout.SnapshotFile] = st.snapshot
		c.listed = append(c.listed, memlayout.SnapshotFile)
		c.summary = append(c.summary, "- **snapshot.md:** replaced")
	default:
		appendFacts()
		writeRun()
	}
	slices.Sort(c.listed)
	return c
}

func dedupe(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// writeAllSources writes every agent's sources, 8 agents at a time.
func (g *generator) writeAllSources(ctx context.Context) error {
	store, err := blob.NewFS(g.objects)
	if err != nil {
		return err
	}
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			est := newEstimator(g.counter)
			for i := range next {
				if err := g.writeSources(ctx, store, i, est); err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range g.cfg.Agents {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return cmp.Or(first, ctx.Err())
}

// writeSources writes agent i's sources as the folder object store keeps
// them (objects/data/<key>), then has the store record their ETags as it
// does for every object put through it: otherwise memoryd's first listing
// would hash all of them, CPU a deployment whose sources came in through
// the store never spends, and the first start's figures would show it.
// Files and sidecars are written without fsync; the data set is a cache.
func (g *generator) writeSources(ctx context.Context, store *blob.FS, i int, est *estimator) error {
	// A writer of its own: sources do not depend on the history.
	src := &agentState{id: AgentID(i), est: est,
		w: writer{m: g.m, r: rand.New(rand.NewPCG(uint64(g.cfg.Seed)+7, uint64(i))), dom: g.m.domain(g.cfg.Seed, i)}}
	dir := filepath.Join(g.objects, "data", "agents", src.id, "sources")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for k := range sourcesEach {
		name, content := src.source(k)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
		if _, err := store.Stat(ctx, "agents/"+src.id+"/sources/"+name); err != nil {
			return err
		}
	}
	return nil
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n
}
