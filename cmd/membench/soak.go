package main

import (
	"context"
	"flag"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/garden-bloom/memory/cmd/membench/internal/benchharness"
)

// soak runs the endurance test (cmd/membench/internal/benchharness, RunSoak): the curve and
// the verdict go to out, progress to stderr; a failed soak is an error.
func soak(ctx context.Context, args []string, out io.Writer) error {
	d := benchharness.DefaultSoakOptions()
	fs := flag.NewFlagSet("membench soak", flag.ContinueOnError)
	o := d
	fs.DurationVar(&o.Duration, "duration", d.Duration, "time under load (after onboarding)")
	fs.IntVar(&o.Agents, "agents", d.Agents, "agents onboarded and written to")
	fs.Int64Var(&o.Seed, "seed", d.Seed, "PRNG seed of the load")
	fs.Float64Var(&o.Rate, "rate", d.Rate, "proposals per second across the agents (open loop)")
	fs.Float64Var(&o.ReadRate, "read-rate", d.ReadRate, "reads per second across the read kinds (open loop)")
	fs.IntVar(&o.WriteWorkers, "write-workers", d.WriteWorkers, "most proposals in flight (one per agent at a time)")
	fs.IntVar(&o.ReadWorkers, "read-workers", d.ReadWorkers, "most reads in flight")
	fs.DurationVar(&o.SampleEvery, "sample-every", 0, "sampling period (default: duration/120, at least 5s)")
	fs.Float64Var(&o.WarmupFraction, "warmup-fraction", d.WarmupFraction, "share of the duration left out of the fit (warm-up)")
	fs.DurationVar(&o.MinWarmup, "min-warmup", d.MinWarmup, "shortest warm-up")
	fs.Float64Var(&o.MaxGrowth, "max-growth", d.MaxGrowth, "fail when anonymous RSS or heap after GC grows more than this share of its level after warm-up (fitted)")
	fs.Float64Var(&o.AnonFloorMB, "anon-floor-mb", d.AnonFloorMB, "anonymous RSS growth (MB) allowed whatever --max-growth says")
	fs.Float64Var(&o.HeapFloorMB, "heap-floor-mb", d.HeapFloorMB, "heap-after-GC growth (MB) allowed whatever --max-growth says")
	fs.BoolVar(&o.Strict, "strict", false, "no allowance for memoryd's bounded caches still filling after warm-up (their unfilled memory_cache_max_size_bytes)")
	fs.StringVar(&o.Work, "work", "", "work dir: memoryd binary (when built) and the run's data dir (default: a temporary dir, removed)")
	fs.StringVar(&o.Out, "out", "bench/results", "where soak-latest.json, soak-latest.md and dated copies go (\"\" = none)")
	fs.StringVar(&o.Memoryd, "memoryd", "", "prebuilt memoryd binary (default: go build ./cmd/memoryd into the work dir)")
	extra := fs.String("memoryd-flags", "", "extra memoryd flags, space-separated")
	fs.StringVar(&o.ProfileDir, "profile", "", "write heap profiles (after GC) at the end of warm-up, at 60% of the run and at the end into this dir (go tool pprof -diff_base)")
	fs.BoolVar(&o.Keep, "keep", false, "keep the data dir and the memoryd log in the work dir")
	fs.IntVar(&o.MaxRSSMB, "max-rss-mb", 0, "kill memoryd above this RSS and fail (0 = 60% of the machine's memory)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.ExtraFlags = strings.Fields(*extra)
	o.Log, o.Stdout = os.Stderr, out
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, err := benchharness.RunSoak(ctx, o)
	return err
}
