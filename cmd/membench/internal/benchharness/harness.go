// Package benchharness is `membench perf`: it generates a synthetic memory
// monorepo (N agents with Layer 1 near its limits, M commits of history,
// sources in the object store), starts the real memoryd binary on a copy of
// it — all-in-one and split into write and read planes — and drives load
// over gRPC and REST: latency percentiles, throughput, CPU and RSS per
// process, cold start, commit → visible lags, a no-op gRPC floor for every
// read, and the key figures at other N and M. See docs/performance.md.
package benchharness

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// Options configure a run; zero fields take the defaults of DefaultOptions
// (except Warmup, where 0 means none).
type Options struct {
	Agents  int   `json:"agents"`
	Commits int   `json:"commits"`
	Seed    int64 `json:"seed"`
	// Concurrency is the number of workers of each read scenario.
	Concurrency int `json:"concurrency"`
	// WriteConcurrency is the number of proposals in flight in the
	// propose → applied scenario (each for a random agent).
	WriteConcurrency int           `json:"writeConcurrency"`
	Duration         time.Duration `json:"duration"`
	Warmup           time.Duration `json:"warmup"`
	// ScaleDuration is the duration of each scenario of a scaling point
	// and of each floor.
	ScaleDuration time.Duration `json:"scaleDuration"`
	// ReadyTimeout bounds the wait for a deployment to serve; scenarios run
	// anyway after it (and say so).
	ReadyTimeout time.Duration `json:"readyTimeout"`
	// PrimeTimeout bounds the pass that reads every agent once before the
	// scenarios.
	PrimeTimeout time.Duration `json:"primeTimeout"`
	// TimeBudget bounds the whole run (0 = none): a deployment waits to
	// serve at most what is left of it, less budgetReserve for what comes
	// after the wait. The scaling runs go from the smallest data set to
	// the largest, so on a slow machine it is the largest whose wait is
	// cut short, the one that would have waited longest.
	TimeBudget time.Duration `json:"timeBudget"`
	// Deployments to run the full scenario set on: "all", "split".
	Deployments []string `json:"deployments"`
	// Scales: none | n | m | all.
	Scales       string `json:"scales"`
	ScaleAgents  []int  `json:"scaleAgents"`
	ScaleCommits []int  `json:"scaleCommits"`
	// Work holds the data set cache, the memoryd binary and the runs'
	// data dirs ("" = a temporary directory, removed at the end).
	Work string `json:"work"`
	// Out is where the JSON and Markdown reports go ("" = none).
	Out string `json:"out"`
	// Memoryd is a prebuilt binary ("" = go build ./cmd/memoryd).
	Memoryd string `json:"memoryd,omitempty"`
	// ExtraFlags are added to every memoryd command line.
	ExtraFlags []string `json:"extraFlags,omitempty"`
	// ProfileDir, when set, receives a CPU profile of every memoryd process
	// per scenario of the main runs and a heap profile after the reads.
	ProfileDir string `json:"profileDir,omitempty"`
	// ColdProfile is how much of each start the cold-start CPU profile
	// covers, from /health answering (--profile only).
	ColdProfile time.Duration `json:"coldProfile,omitempty"`
	// Keep leaves the runs' data dirs and logs in Work.
	Keep bool `json:"keep"`
	// MaxRSSMB: a memoryd process above it is killed and its run reported
	// as such (0 = 60% of the machine's memory).
	MaxRSSMB int `json:"maxRssMB"`

	Log    io.Writer `json:"-"` // progress (stderr)
	Stdout io.Writer `json:"-"` // the Markdown report
}

// DefaultOptions are `make bench`'s.
func DefaultOptions() Options {
	return Options{
		Agents: 1000, Commits: 20000, Seed: 1, Concurrency: 8, WriteConcurrency: 32,
		Duration: 5 * time.Second, Warmup: time.Second, ScaleDuration: 3 * time.Second, ReadyTimeout: 5 * time.Minute,
		PrimeTimeout: 20 * time.Second, ColdProfile: 20 * time.Second, TimeBudget: 14*time.Minute + 30*time.Second,
		Deployments: []string{DeployAll, DeploySplit}, Scales: "all",
		ScaleAgents: []int{100, 1000, 10000}, ScaleCommits: []int{1000, 20000, 100000},
	}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	o.Agents, o.Commits = cmp.Or(o.Agents, d.Agents), cmp.Or(o.Commits, d.Commits)
	o.Concurrency, o.WriteConcurrency = cmp.Or(o.Concurrency, d.Concurrency), cmp.Or(o.WriteConcurrency, d.WriteConcurrency)
	o.Seed, o.Scales = cmp.Or(o.Seed, d.Seed), cmp.Or(o.Scales, d.Scales)
	o.Duration, o.ScaleDuration = cmp.Or(o.Duration, d.Duration), cmp.Or(o.ScaleDuration, d.ScaleDuration)
	o.ReadyTimeout, o.PrimeTimeout = cmp.Or(o.ReadyTimeout, d.ReadyTimeout), cmp.Or(o.PrimeTimeout, d.PrimeTimeout)
	o.ColdProfile = cmp.Or(o.ColdProfile, d.ColdProfile)
	// Warmup stays as given: 0 means no warm-up. Empty but non-nil lists
	// are kept too (--deployments none).
	if o.Deployments == nil {
		o.Deployments = d.Deployments
	}
	if o.ScaleAgents == nil {
		o.ScaleAgents = d.ScaleAgents
	}
	if o.ScaleCommits == nil {
		o.ScaleCommits = d.ScaleCommits
	}
	if o.Log == nil {
		o.Log = os.Stderr
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	return o
}

type harness struct {
	opts     Options
	maxRSS   int64    // bytes
	entities []string // of the main data set, for the floors
	bin      string
	work     string
	start    time.Time
}

func (h *harness) logf(format string, args ...any) {
	_, _ = fmt.Fprintf(h.opts.Log, "membench perf %6.1fs  %s\n", time.Since(h.start).Seconds(), fmt.Sprintf(format, args...))
}

// Run runs the benchmark and returns (and, with Out, writes) its report.
func Run(ctx context.Context, opts Options) (*Report, error) {
	opts = opts.withDefaults()
	if opts.Scales != "none" && opts.Scales != "n" && opts.Scales != "m" && opts.Scales != "all" {
		return nil, fmt.Errorf("--scales=%q: want none, n, m or all", opts.Scales)
	}
	for _, k := range opts.Deployments {
		if k != DeployAll && k != DeploySplit {
			return nil, fmt.Errorf("deployment %q: want all or split", k)
		}
	}
	h := &harness{opts: opts, start: time.Now(), work: opts.Work, maxRSS: int64(opts.MaxRSSMB) << 20}
	if h.maxRSS == 0 {
		h.maxRSS = memTotal() / 10 * 6
	}
	if h.maxRSS == 0 {
		h.maxRSS = 8 << 30
	}
	if h.work == "" {
		dir, err := os.MkdirTemp("", "membench-perf-")
		if err != nil {
			return nil, err
		}
		h.work = dir
		if !opts.Keep {
			defer func() {
				if err := os.RemoveAll(dir); err != nil {
					h.logf("work directory not removed: %v", err)
				}
			}()
		}
	}
	if err := os.MkdirAll(h.work, 0o755); err != nil {
		return nil, err
	}
	h.bin = opts.Memoryd
	if h.bin == "" {
		h.logf("building memoryd")
		bin, err := BuildMemoryd(ctx, filepath.Join(h.work, "bin"))
		if err != nil {
			return nil, err
		}
		h.bin = bin
	}

	rep := newReport(opts)
	main := GenConfig{Agents: opts.Agents, Commits: opts.Commits, Seed: opts.Seed}
	ds, man, err := h.dataset(ctx, rep, main)
	if err != nil {
		return nil, err
	}
	var payloads map[string][]byte
	for _, kind := range opts.Deployments {
		run, p, err := h.mainRun(ctx, kind, ds, man, payloads == nil)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// A process that died (or was killed over --max-rss-mb) ends
			// this run, not the benchmark.
			h.logf("%s: %v", run.Name, err)
			run.Note = err.Error()
		}
		if payloads == nil {
			payloads = p
		}
		rep.Runs = append(rep.Runs, run)
	}
	if payloads != nil {
		if err := h.floors(ctx, rep, payloads, man); err != nil {
			return nil, err
		}
	}
	if err := h.scaling(ctx, rep); err != nil {
		return nil, err
	}
	rep.finish(time.Since(h.start))
	if err := rep.write(opts.Out, opts.Stdout); err != nil {
		return rep, err
	}
	h.logf("done in %.0fs", time.Since(h.start).Seconds())
	return rep, nil
}

// dataset returns a generated (or cached) data set and records it.
func (h *harness) dataset(ctx context.Context, rep *Report, cfg GenConfig) (string, *Manifest, error) {
	t := time.Now()
	dir, m, cached, err := ensureDataset(ctx, h.work, cfg, h.logf)
	if err != nil {
		return "", nil, err
	}
	rep.Datasets = append(rep.Datasets, DatasetInfo{Key: cfg.key(), Agents: m.Agents, Commits: m.Commits, Seed: m.Seed,
		TotalCommits: m.TotalCommits, Head: m.Head, RepoMB: mb(m.RepoBytes), GenSeconds: round3(m.GenSeconds),
		Cached: cached, ReadySeconds: secs(time.Since(t))})
	return dir, m, nil
}

// RunResult is the full scenario set on one deployment.
type RunResult struct {
	Name       string    `json:"name"`
	Deployment string    `json:"deployment"`
	Agents     int       `json:"agents"`
	Commits    int       `json:"commits"`
	ColdStart  ColdStart `json:"coldStart"`
	// Restart is the time to serving again after a restart at the end,
	// with the index and the entity graph snapshot on disk.
	Restart *ColdStart `json:"restart,omitempty"`
	// NewReplica is the time to serving of a read plane started with an
	// empty state dir after the restart, from the state published to the
	// object store.
	NewReplica *ColdStart       `json:"newReplica,omitempty"`
	Scenarios  []ScenarioResult `json:"scenarios"`
	// Note says why the run ended early, if it did.
	Note string `json:"note,omitempty"`
	// ReadPlane is the read plane process's memory after the reads: RSS now
	// and its lifetime peak (cold start included).
	ReadPlane struct {
		RSSMB  float64 `json:"rssMB"`
		PeakMB float64 `json:"peakRssMB"`
		// AnonMB and FileMB split RSSMB: anonymous memory and mapped files.
		AnonMB float64 `json:"anonRssMB"`
		FileMB float64 `json:"fileRssMB"`
	} `json:"readPlane"`
}

func (r *RunResult) scenario(name, transport string) ScenarioResult {
	for _, s := range r.Scenarios {
		if s.Name == name && s.Transport == transport {
			return s
		}
	}
	return ScenarioResult{}
}

// readScenarios run on every main deployment, in this order (then writes).
var readScenarios = []struct{ name, transport string }{
	{ScReadBasic, "grpc"}, {ScReadBasic, "rest"}, {ScReadWide, "grpc"}, {ScAssemble, "grpc"},
	{ScSearch, "grpc"}, {ScSearch, "rest"}, {ScGetEntity, "grpc"},
}

// mainRun deploys kind on the data set and runs every scenario. With
// capture it also returns the floor payloads, taken before any write.
func (h *harness) mainRun(ctx context.Context, kind, ds string, m *Manifest, capture bool) (RunResult, map[string][]byte, error) {
	o := h.opts
	run := RunResult{Name: fmt.Sprintf("%s, N=%d, M=%d", kind, m.Agents, m.Commits), Deployment: kind, Agents: m.Agents, Commits: m.Commits}
	d, cs, err := h.up(ctx, kind, ds, m)
	run.ColdStart = cs
	if err != nil {
		return run, nil, err
	}
	defer h.down(d)
	w := &workload{m: newTextModel(m.Seed), seed: m.Seed, agents: m.Agents}
	t := readTarget{ca: d.ca, si: d.si, eg: d.eg, rest: d.rest, base: d.base, tok: d.token}
	if err := w.findEntities(d.call, d.eg); err != nil {
		return run, nil, err
	}
	h.entities = w.entities

	var payloads map[string][]byte
	if capture {
		payloads = map[string][]byte{}
		for name := range floorMethods {
			if payloads[name], err = w.captureResponse(d.call, t, name, m.Seed); err != nil {
				return run, nil, err
			}
		}
	}
	readProcs := []*process{d.read, self}
	for _, sc := range readScenarios {
		h.logf("%s: %s (%s), %d workers, %s", run.Name, sc.name, sc.transport, o.Concurrency, o.Duration)
		fn := w.grpcOp(t, sc.name)
		if sc.transport == "rest" {
			fn = w.restOp(t, sc.name)
		}
		profiled := h.profileScenario(ctx, d, run.Name, sc.name+" "+sc.transport, o.Warmup+o.Duration)
		res := runLoad(d.call, loadSpec{name: sc.name, transport: sc.transport, concurrency: o.Concurrency, warmup: o.Warmup,
			duration: o.Duration, seed: m.Seed, procs: readProcs}, fn)
		profiled()
		run.Scenarios = append(run.Scenarios, res)
		if err := d.alive(); err != nil {
			return run, nil, err
		}
	}

	run.ReadPlane.RSSMB, run.ReadPlane.PeakMB = d.read.rss()
	run.ReadPlane.AnonMB, run.ReadPlane.FileMB = d.read.rssSplit()
	h.heapProfiles(ctx, d, run.Name)

	st, err := d.si.GetIndexStatus(d.call, &memoryv1.GetIndexStatusRequest{})
	if err != nil {
		return run, nil, err
	}
	cw, err := watchCommits(d.call, d.pa, st.GetHeadCommit())
	if err != nil {
		return run, nil, fmt.Errorf("WatchCommits: %w", err)
	}
	h.logf("%s: commit → searchable / readable lags, %s", run.Name, o.Duration)
	meter := startMeter(append(d.procs, self))
	lagStart := time.Now()
	lags := measureLags(d.call, d, w, cw, o.Duration, m.Seed) // finishes the probe in flight
	lagTook := time.Since(lagStart)
	procs := meter.stop()
	for _, l := range []struct {
		name    string
		samples []time.Duration
	}{{ScSearchLag, lags.searchable}, {ScReadLag, lags.readable}} {
		run.Scenarios = append(run.Scenarios, ScenarioResult{Name: l.name, Transport: "grpc", Concurrency: 1, Requests: len(l.samples),
			Errors: lags.errors, FirstError: lags.first, Seconds: secs(lagTook), Latency: summarize(l.samples), Procs: procs,
			Note: "from the commit's arrival on WatchCommits until the probe is found (polled every ~1 ms)"})
	}
	h.logf("%s: %s, %d proposals in flight, %s", run.Name, ScApply, o.WriteConcurrency, o.Duration)
	profiled := h.profileScenario(ctx, d, run.Name, ScApply, o.Warmup+o.Duration)
	res := runLoad(d.call, loadSpec{name: ScApply, transport: "grpc", concurrency: o.WriteConcurrency, warmup: o.Warmup,
		duration: o.Duration, seed: m.Seed, procs: append(d.procs, self)}, applyOp(d, w, cw))
	profiled()
	res.Note = "req/s = commits/s across agents; latency from Propose until the commit arrives on WatchCommits"
	run.Scenarios = append(run.Scenarios, res)
	if err := d.alive(); err != nil {
		return run, payloads, err
	}
	run.Restart, run.NewReplica, err = h.restarts(ctx, d, run.Name)
	return run, payloads, err
}

// restarts measures a restart with the state on disk and then, when that
// served, a new read replica that loads the published state.
func (h *harness) restarts(ctx context.Context, d *deployment, label string) (restart, newReplica *ColdStart, err error) {
	h.logf("%s: restart", label)
	rs, err := d.restart(ctx, h.opts.ReadyTimeout)
	h.logf("%s: serving again after %.1f s %s", label, rs.ServingSeconds, rs.Note)
	if err != nil || !rs.Ready {
		return &rs, nil, err
	}
	h.logf("%s: new read replica", label)
	nr, err := d.newReplica(ctx, h.opts.ReadyTimeout)
	h.logf("%s: new replica serving after %.1f s %s", label, nr.ServingSeconds, nr.Note)
	return &rs, &nr, err
}

// up deploys and waits until it serves (or ReadyTimeout).
func (h *harness) up(ctx context.Context, kind, ds string, m *Manifest) (*deployment, ColdStart, error) {
	runDir := filepath.Join(h.work, "runs", fmt.Sprintf("%s-%s-%s", time.Now().Format("150405"), kind, GenConfig{m.Agents, m.Commits, m.Seed}.key()))
	h.logf("%s N=%d M=%d: copying the data set and starting memoryd", kind, m.Agents, m.Commits)
	d, err := h.deploy(ctx, kind, ds, m, runDir)
	if err != nil {
		return nil, ColdStart{}, err
	}
	profiled := h.profileColdStart(ctx, d, fmt.Sprintf("%s N=%d M=%d", kind, m.Agents, m.Commits))
	timeout, capped := h.readyTimeout()
	if capped {
		h.logf("%s N=%d M=%d: waiting at most %s to serve: what is left of --time-budget", kind, m.Agents, m.Commits, timeout)
	}
	cs := d.waitServing(ctx, timeout)
	if capped && !cs.Ready {
		cs.Note += " (the wait was what was left of --time-budget)"
	}
	profiled()
	h.logf("%s N=%d M=%d: /health %.1fs, index %.1fs, entity graph %.1fs → serving %.1fs %s", kind, m.Agents, m.Commits,
		cs.HealthSeconds, cs.IndexSeconds, cs.GraphSeconds, cs.ServingSeconds, cs.Note)
	if cs.Ready {
		cs.IdleSeconds = secs(waitIdle(ctx, d.procs, 30*time.Second))
		h.logf("%s N=%d M=%d: idle %.1fs after serving", kind, m.Agents, m.Commits, cs.IdleSeconds)
	}
	n, took := h.prime(d, m)
	cs.PrimedAgents, cs.PrimeSeconds = n, secs(took)
	h.logf("%s N=%d M=%d: primed %d agents in %.1fs", kind, m.Agents, m.Commits, n, took.Seconds())
	if err := d.alive(); err != nil {
		h.down(d)
		return nil, cs, err
	}
	return d, cs, nil
}

// budgetReserve is what a run needs after its wait to serve: idle wait,
// priming, the scaling scenarios, shutdown and the report.
const budgetReserve = 90 * time.Second

// minReadyTimeout is the shortest wait to serve, whatever the budget.
const minReadyTimeout = 30 * time.Second

// readyTimeout is how long a deployment may take to serve: ReadyTimeout,
// or less when the time budget has less left (capped).
func (h *harness) readyTimeout() (timeout time.Duration, capped bool) {
	if h.opts.TimeBudget <= 0 {
		return h.opts.ReadyTimeout, false
	}
	left := h.opts.TimeBudget - time.Since(h.start) - budgetReserve
	if left >= h.opts.ReadyTimeout {
		return h.opts.ReadyTimeout, false
	}
	return max(left, minReadyTimeout).Round(time.Second), true
}

// prime reads every agent once, ReadMemory wide and AssembleContext with
// a query (Concurrency workers, at most PrimeTimeout): the first read of an
// agent decodes its files from the pack and fills the caches, which 1 s of
// warm-up per scenario does not cover at 1,000 agents.
func (h *harness) prime(d *deployment, m *Manifest) (int, time.Duration) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(d.call, h.opts.PrimeTimeout)
	defer cancel()
	w := &workload{m: newTextModel(m.Seed), seed: m.Seed, agents: m.Agents}
	var next, done atomic.Int64
	var wg sync.WaitGroup
	for k := range h.opts.Concurrency {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(m.Seed), uint64(k)))
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= m.Agents {
					return
				}
				_, err1 := d.ca.ReadMemory(ctx, &memoryv1.ReadMemoryRequest{AgentId: AgentID(i), Mode: memoryv1.ReadMode_READ_MODE_WIDE})
				_, err2 := d.ca.AssembleContext(ctx, &memoryv1.AssembleContextRequest{AgentId: AgentID(i), QueryHint: w.query(r, i, 3), Budget: 200000})
				if err1 == nil && err2 == nil {
					done.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return int(done.Load()), time.Since(start)
}

func (h *harness) down(d *deployment) {
	if err := d.stop(); err != nil {
		h.logf("warning: %v", err)
	}
	if !h.opts.Keep {
		_ = os.RemoveAll(d.runDir)
	}
}

// floors runs every read against the no-op server answering its captured
// response.
func (h *harness) floors(ctx context.Context, rep *Report, payloads map[string][]byte, m *Manifest) error {
	w := &workload{m: newTextModel(m.Seed), seed: m.Seed, agents: m.Agents, entities: h.entities}
	names := make([]string, 0, len(payloads))
	for n := range payloads {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		f, err := startFloor(name, payloads[name])
		if err != nil {
			return err
		}
		h.logf("floor: %s (%d-byte response), %d workers, %s", name, len(payloads[name]), h.opts.Concurrency, h.opts.ScaleDuration)
		call := withToken(ctx, "floor")
		res := runLoad(call, loadSpec{name: name, transport: "grpc", concurrency: h.opts.Concurrency, warmup: h.opts.Warmup,
			duration: h.opts.ScaleDuration, seed: m.Seed, procs: []*process{self}}, w.grpcOp(f.target(), name))
		f.stop()
		rep.Floors = append(rep.Floors, FloorResult{Scenario: name, RespBytes: len(payloads[name]), Latency: res.Latency,
			RPS: res.RPS, Errors: res.Errors, FirstError: res.FirstError})
	}
	return nil
}
