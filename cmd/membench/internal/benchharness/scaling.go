package benchharness

import (
	"context"
	"fmt"
	"slices"
)

// ScalePoint holds the key figures at one data set size (split deployment).
type ScalePoint struct {
	Axis    string `json:"axis"` // "n", "m" or "n,m"
	Agents  int    `json:"agents"`
	Commits int    `json:"commits"`
	// Source: "split run" (the main run's figures) or "scale run".
	Source    string    `json:"source"`
	ColdStart ColdStart `json:"coldStart"`
	// Restart: serving again after a restart with the state on disk
	// (measured when the first start caught up).
	Restart *ColdStart `json:"restart,omitempty"`
	// NewReplica: a read plane with an empty state dir, from the state
	// published to the object store.
	NewReplica *ColdStart `json:"newReplica,omitempty"`
	// Published: the first start booted from the read state the one-off
	// job published at main~Tail (the largest M; nil: nothing published,
	// the first start built everything).
	Published     *PublishedState `json:"published,omitempty"`
	ReadBasicP95  float64         `json:"readBasicP95Ms"`
	AssembleP95   float64         `json:"assembleP95Ms"`
	SearchP95     float64         `json:"searchP95Ms"`
	ReadRSSMB     float64         `json:"readPlaneRssMB"`
	ReadPeakRSSMB float64         `json:"readPlanePeakRssMB"`
	// ReadAnonMB and ReadFileMB split ReadRSSMB: anonymous memory (the
	// heap and stacks) and mapped files (the search index's segments,
	// the entity graph's file, git packs: page cache the kernel takes
	// back under pressure).
	ReadAnonMB float64 `json:"readPlaneAnonRssMB"`
	ReadFileMB float64 `json:"readPlaneFileRssMB"`
	Errors     int     `json:"errors"`
	Note       string  `json:"note,omitempty"`
}

// scalePoints lists the sizes to measure: N varies at the main M, M at
// the main N.
func (h *harness) scalePoints() []ScalePoint {
	o := h.opts
	var pts []ScalePoint
	add := func(axis string, n, m int) {
		for i := range pts {
			if pts[i].Agents == n && pts[i].Commits == m {
				pts[i].Axis += "," + axis
				return
			}
		}
		pts = append(pts, ScalePoint{Axis: axis, Agents: n, Commits: m})
	}
	if o.Scales == "n" || o.Scales == "all" {
		for _, n := range o.ScaleAgents {
			add("n", n, o.Commits)
		}
	}
	if o.Scales == "m" || o.Scales == "all" {
		for _, m := range o.ScaleCommits {
			add("m", o.Agents, m)
		}
	}
	return pts
}

var scaleScenarios = []string{ScReadBasic, ScAssemble, ScSearch}

func (h *harness) scaling(ctx context.Context, rep *Report) error {
	pts := h.scalePoints()
	// Smallest data set first: what --time-budget cuts short is then the
	// largest start, which would have waited longest.
	slices.SortStableFunc(pts, func(a, b ScalePoint) int { return a.Agents*a.Commits - b.Agents*b.Commits })
	for _, pt := range pts {
		if run := rep.run(DeploySplit, pt.Agents, pt.Commits); run != nil {
			pt.Source = "split run"
			pt.ColdStart, pt.Restart, pt.NewReplica = run.ColdStart, run.Restart, run.NewReplica
			pt.ReadBasicP95 = run.scenario(ScReadBasic, "grpc").Latency.P95
			pt.AssembleP95 = run.scenario(ScAssemble, "grpc").Latency.P95
			pt.SearchP95 = run.scenario(ScSearch, "grpc").Latency.P95
			pt.ReadRSSMB, pt.ReadPeakRSSMB = run.ReadPlane.RSSMB, run.ReadPlane.PeakMB
			pt.ReadAnonMB, pt.ReadFileMB = run.ReadPlane.AnonMB, run.ReadPlane.FileMB
			for _, name := range scaleScenarios {
				pt.Errors += run.scenario(name, "grpc").Errors
			}
			pt.Note = run.Note // a run that ended early fails the budgets here too
			rep.Scaling = append(rep.Scaling, pt)
			continue
		}
		got, err := h.scaleRun(ctx, rep, pt)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			h.logf("scale N=%d M=%d: %v", pt.Agents, pt.Commits, err)
			got.Note = err.Error()
		}
		rep.Scaling = append(rep.Scaling, got)
	}
	slices.SortStableFunc(rep.Scaling, func(a, b ScalePoint) int {
		if a.Agents != b.Agents {
			return a.Agents - b.Agents
		}
		return a.Commits - b.Commits
	})
	return nil
}

// scaleRun measures one point on a split deployment of its own.
func (h *harness) scaleRun(ctx context.Context, rep *Report, pt ScalePoint) (ScalePoint, error) {
	pt.Source = "scale run"
	ds, m, err := h.dataset(ctx, rep, GenConfig{Agents: pt.Agents, Commits: pt.Commits, Seed: h.opts.Seed})
	if err != nil {
		return pt, err
	}
	largestM := len(h.opts.ScaleCommits) > 0 && pt.Commits == slices.Max(h.opts.ScaleCommits)
	if largestM {
		// A new deployment of a long history boots from published state
		// (issue #30): the one-off job publishes it once per data set.
		if pt.Published, err = h.publishState(ctx, ds, m); err != nil {
			return pt, err
		}
	}
	d, cs, err := h.up(ctx, DeploySplit, ds, m)
	pt.ColdStart = cs
	if err != nil {
		return pt, err
	}
	defer h.down(d)
	w := &workload{m: newTextModel(m.Seed), seed: m.Seed, agents: m.Agents}
	t := readTarget{ca: d.ca, si: d.si, eg: d.eg}
	for _, name := range scaleScenarios {
		h.logf("scale N=%d M=%d: %s, %d workers, %s", pt.Agents, pt.Commits, name, h.opts.Concurrency, h.opts.ScaleDuration)
		res := runLoad(d.call, loadSpec{name: name, transport: "grpc", concurrency: h.opts.Concurrency, warmup: h.opts.Warmup,
			duration: h.opts.ScaleDuration, seed: m.Seed, procs: []*process{d.read, self}}, w.grpcOp(t, name))
		pt.Errors += res.Errors
		if err := d.alive(); err != nil {
			pt.ReadRSSMB, pt.ReadPeakRSSMB = d.read.rss()
			return pt, err
		}
		switch name {
		case ScReadBasic:
			pt.ReadBasicP95 = res.Latency.P95
		case ScAssemble:
			pt.AssembleP95 = res.Latency.P95
		case ScSearch:
			pt.SearchP95 = res.Latency.P95
		}
	}
	pt.ReadRSSMB, pt.ReadPeakRSSMB = d.read.rss()
	pt.ReadAnonMB, pt.ReadFileMB = d.read.rssSplit()
	if err := d.alive(); err != nil {
		return pt, fmt.Errorf("scale N=%d M=%d: %w", pt.Agents, pt.Commits, err)
	}
	// Restarts are measured where the budget is (the largest M): each
	// costs a shutdown that publishes the state, and the main runs have
	// them at the main size already.
	if cs.Ready && largestM {
		label := fmt.Sprintf("scale N=%d M=%d", pt.Agents, pt.Commits)
		var err error
		if pt.Restart, pt.NewReplica, err = h.restarts(ctx, d, label); err != nil {
			return pt, fmt.Errorf("%s restarts: %w", label, err)
		}
	}
	return pt, nil
}
