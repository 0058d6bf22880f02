// Command membench measures Garden Bloom Memory.
//
//	membench quality --data ../shared/data   retrieval quality on public data sets
//	membench perf                            latency, throughput and resources of memoryd under load
//	membench soak --duration 10m             memory of memoryd under a long mixed load (fails on growth or errors)
//	membench slowclients                     2,000 slow-body connections cut in time while reads stay fast
//	membench ingest                          1,000 episodes through memctl ingest --wait (episodes/s, median of runs)
//	membench console                         every review console page's p95 with 1,000 agents (budget 50 ms)
//
// The data sets are not part of the product: when --data has no data set the
// command says so and exits 0, so `make bench-quality` is safe anywhere.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "membench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: membench quality --data DIR | membench perf [flags] | membench soak [flags] | membench slowclients [flags] | membench ingest [flags] | membench console [flags]")
	}
	switch args[0] {
	case "quality":
		fs := flag.NewFlagSet("membench quality", flag.ContinueOnError)
		data := fs.String("data", "../shared/data", "directory holding scifact/ (BEIR) and locomo/")
		work := fs.String("work", "", "working directory for the repository and index (default: a temporary one)")
		agentmem := fs.String("agentmem", "cmd/membench/testdata/agentmem", "our own agent-memory question set")
		only := fs.String("only", "", "measure only these sets, comma-separated: scifact, locomo, agentmem (default: all)")
		ablation := fs.Bool("ablation", true, "also measure each context-assembly component switched alone (false: the defaults only)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return quality(ctx, qualityOptions{data: *data, work: *work, agentMemory: *agentmem, only: *only, ablation: *ablation}, out)
	case "perf":
		return perf(ctx, args[1:], out)
	case "soak":
		return soak(ctx, args[1:], out)
	case "slowclients":
		return slowClients(ctx, args[1:], out)
	case "ingest":
		return ingestBench(ctx, args[1:], out)
	case "console":
		return consoleBench(ctx, args[1:], out)
	default:
		return fmt.Errorf("unknown command %q (want quality or perf)", args[0])
	}
}
