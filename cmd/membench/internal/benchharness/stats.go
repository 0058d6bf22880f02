package benchharness

import (
	"math"
	"slices"
	"time"
)

// Latency summarises latency samples in milliseconds.
type Latency struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50Ms"`
	P95   float64 `json:"p95Ms"`
	P99   float64 `json:"p99Ms"`
	Max   float64 `json:"maxMs"`
	Mean  float64 `json:"meanMs"`
}

// percentile returns the q-quantile (0..1) of sorted samples, linearly
// interpolated between the two nearest ranks (numpy's default, R type 7).
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	frac := pos - float64(lo)
	return sorted[lo] + time.Duration(math.Round(frac*float64(sorted[hi]-sorted[lo])))
}

// summarize sorts samples in place and summarises them.
func summarize(samples []time.Duration) Latency {
	if len(samples) == 0 {
		return Latency{}
	}
	slices.Sort(samples)
	var sum time.Duration
	for _, s := range samples {
		sum += s
	}
	return Latency{
		Count: len(samples),
		P50:   ms(percentile(samples, 0.50)),
		P95:   ms(percentile(samples, 0.95)),
		P99:   ms(percentile(samples, 0.99)),
		Max:   ms(samples[len(samples)-1]),
		Mean:  ms(sum / time.Duration(len(samples))),
	}
}

func ms(d time.Duration) float64 { return round3(float64(d) / float64(time.Millisecond)) }

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// ratio is a/b rounded, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return math.Round(a/b*100) / 100
}
