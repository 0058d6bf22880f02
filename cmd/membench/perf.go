package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/garden-bloom/memory/cmd/membench/internal/benchharness"
)

// perf runs the load benchmark (cmd/membench/internal/benchharness) and prints its Markdown
// report; progress goes to stderr.
func perf(ctx context.Context, args []string, out io.Writer) error {
	d := benchharness.DefaultOptions()
	fs := flag.NewFlagSet("membench perf", flag.ContinueOnError)
	o := d
	fs.IntVar(&o.Agents, "agents", d.Agents, "agents in the synthetic monorepo (N)")
	fs.IntVar(&o.Commits, "commits", d.Commits, "history commits after the agents' onboarding (M)")
	fs.Int64Var(&o.Seed, "seed", d.Seed, "PRNG seed of the data set and the load")
	fs.IntVar(&o.Concurrency, "concurrency", d.Concurrency, "workers per read scenario (C)")
	fs.IntVar(&o.WriteConcurrency, "write-concurrency", d.WriteConcurrency, "proposals in flight in the propose → applied scenario")
	fs.DurationVar(&o.Duration, "duration", d.Duration, "measured time per scenario of the main runs")
	fs.DurationVar(&o.Warmup, "warmup", d.Warmup, "unmeasured time before each scenario")
	fs.DurationVar(&o.ScaleDuration, "scale-duration", d.ScaleDuration, "measured time per scenario of the scaling runs and the floors")
	fs.DurationVar(&o.ReadyTimeout, "ready-timeout", d.ReadyTimeout, "longest wait for a deployment to serve (index and entity graph caught up); scenarios run anyway after it")
	fs.DurationVar(&o.TimeBudget, "time-budget", d.TimeBudget, "bound on the whole run: a deployment waits to serve at most what is left of it (less 90 s); the largest data sets run last (0 = no bound)")
	fs.DurationVar(&o.PrimeTimeout, "prime-timeout", d.PrimeTimeout, "longest pass reading every agent once (ReadMemory wide, AssembleContext) before the scenarios")
	deployments := fs.String("deployments", strings.Join(d.Deployments, ","), "main runs: all (one process), split (write + read processes), or none")
	fs.StringVar(&o.Scales, "scales", d.Scales, "scaling runs: none | n (N = --scale-agents at M) | m (M = --scale-commits at N) | all")
	scaleAgents := fs.String("scale-agents", ints(d.ScaleAgents), "N values of --scales=n")
	scaleCommits := fs.String("scale-commits", ints(d.ScaleCommits), "M values of --scales=m")
	fs.StringVar(&o.Work, "work", "", "work dir: data set cache (by N, M, seed), memoryd binary, run data dirs (default: a temporary dir, removed)")
	fs.StringVar(&o.Out, "out", "bench/results", "where latest.json, latest.md and dated copies go (\"\" = none)")
	fs.StringVar(&o.Memoryd, "memoryd", "", "prebuilt memoryd binary (default: go build ./cmd/memoryd into the work dir)")
	extra := fs.String("memoryd-flags", "", "extra flags for every memoryd, space-separated (e.g. \"--log-level=warn\")")
	fs.StringVar(&o.ProfileDir, "profile", "", "write a CPU profile of every memoryd per scenario of the main runs, and heap profiles, into this dir")
	fs.DurationVar(&o.ColdProfile, "cold-profile", d.ColdProfile, "with --profile: how much of each start (from /health) the cold-start CPU profile covers")
	fs.BoolVar(&o.Keep, "keep", false, "keep the runs' data dirs and memoryd logs in the work dir")
	fs.IntVar(&o.MaxRSSMB, "max-rss-mb", 0, "kill a memoryd whose RSS goes above this and report it (0 = 60% of the machine's memory)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.Deployments = []string{}
	if *deployments != "none" {
		o.Deployments = append(o.Deployments, split(*deployments)...)
	}
	o.ExtraFlags = strings.Fields(*extra)
	var err error
	if o.ScaleAgents, err = parseInts(*scaleAgents); err != nil {
		return fmt.Errorf("--scale-agents: %w", err)
	}
	if o.ScaleCommits, err = parseInts(*scaleCommits); err != nil {
		return fmt.Errorf("--scale-commits: %w", err)
	}
	o.Log, o.Stdout = os.Stderr, out
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, err = benchharness.Run(ctx, o)
	return err
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func ints(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func parseInts(s string) ([]int, error) {
	out := []int{}
	for _, f := range split(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}
