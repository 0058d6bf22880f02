package benchharness

import (
	"context"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// ScenarioResult is one scenario's figures.
type ScenarioResult struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	// Concurrency is the number of workers issuing requests.
	Concurrency int     `json:"concurrency"`
	Requests    int     `json:"requests"`
	Errors      int     `json:"errors"`
	FirstError  string  `json:"firstError,omitempty"`
	Seconds     float64 `json:"seconds"`
	RPS         float64 `json:"rps"`
	Latency     Latency `json:"latency"`
	// RespBytes is the median response size (serialized protobuf, or the
	// JSON body for REST).
	RespBytes int `json:"respBytes,omitempty"`
	// Floor compares the latency with the gRPC no-op floor of the same read
	// (reads only; REST rows too, so they show the edge's cost over gRPC).
	Floor *FloorRatio `json:"floor,omitempty"`
	Procs []ProcStats `json:"procs,omitempty"`
	Note  string      `json:"note,omitempty"`
}

// FloorRatio is a read's latency over its floor's.
type FloorRatio struct {
	Floor    string  `json:"floor"`
	P50Ratio float64 `json:"p50Ratio"`
	P95Ratio float64 `json:"p95Ratio"`
}

// op issues one request and returns the response size.
type op func(ctx context.Context, r *rand.Rand) (int, error)

// loadSpec is a closed-loop load: Concurrency workers each issue op back to
// back; the first Warmup is not measured.
type loadSpec struct {
	name, transport  string
	concurrency      int
	warmup, duration time.Duration
	seed             int64
	procs            []*process // measured for CPU and RSS
}

// requestTimeout bounds one request of a scenario.
const requestTimeout = 30 * time.Second

type workerResult struct {
	lat    []time.Duration
	sizes  []int
	errors int
	first  string
}

// runLoad runs spec's load with op and summarises it.
func runLoad(ctx context.Context, spec loadSpec, fn op) ScenarioResult {
	if spec.warmup > 0 {
		phase(ctx, spec, fn, spec.warmup, 1<<20)
	}
	m := startMeter(spec.procs)
	t0 := time.Now()
	results := phase(ctx, spec, fn, spec.duration, 0)
	wall := time.Since(t0)
	res := ScenarioResult{Name: spec.name, Transport: spec.transport, Concurrency: spec.concurrency, Seconds: secs(wall)}
	res.Procs = m.stop()
	var lat []time.Duration
	var sizes []int
	for _, w := range results {
		lat = append(lat, w.lat...)
		sizes = append(sizes, w.sizes...)
		res.Errors += w.errors
		if res.FirstError == "" {
			res.FirstError = w.first
		}
	}
	res.Requests = len(lat)
	res.RPS = round3(float64(len(lat)) / wall.Seconds())
	res.Latency = summarize(lat)
	if len(sizes) > 0 {
		slices.Sort(sizes)
		res.RespBytes = sizes[len(sizes)/2]
	}
	return res
}

// phase runs the workers for d; salt separates the warm-up's random
// streams from the measurement's.
func phase(ctx context.Context, spec loadSpec, fn op, d time.Duration, salt uint64) []workerResult {
	h := fnv.New64a()
	h.Write([]byte(spec.name + "/" + spec.transport))
	base := h.Sum64() ^ salt
	ctx, cancel := context.WithTimeout(ctx, d+requestTimeout)
	defer cancel()
	end := time.Now().Add(d)
	out := make([]workerResult, spec.concurrency)
	var wg sync.WaitGroup
	for w := range spec.concurrency {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(spec.seed), base+uint64(w)))
			res := &out[w]
			for time.Now().Before(end) && ctx.Err() == nil {
				c, cancel := context.WithTimeout(ctx, requestTimeout)
				t := time.Now()
				n, err := fn(c, r)
				el := time.Since(t)
				cancel()
				if err != nil {
					if ctx.Err() != nil {
						break
					}
					res.errors++
					if res.first == "" {
						res.first = err.Error()
					}
					continue
				}
				res.lat = append(res.lat, el)
				res.sizes = append(res.sizes, n)
			}
		})
	}
	wg.Wait()
	return out
}
