package benchharness

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"
)

// SoakReport is what a soak measured (bench/results/soak-latest.json).
type SoakReport struct {
	Started     time.Time   `json:"started"`
	WallSeconds float64     `json:"wallSeconds"`
	Host        Host        `json:"host"`
	Options     SoakOptions `json:"options"`
	// OnboardSeconds is how long onboarding the agents took (before the load).
	OnboardSeconds float64 `json:"onboardSeconds"`
	WarmupSeconds  float64 `json:"warmupSeconds"`
	// LoadSeconds is the time of the last sample, after the requests in
	// flight at the end finished.
	LoadSeconds float64 `json:"loadSeconds"`
	// Proposals were accepted by Propose; Applied were seen committed;
	// AutoApproved by policy, Approved by the reviewer, Rejected by it.
	Proposals    int64 `json:"proposals"`
	Applied      int64 `json:"applied"`
	AutoApproved int64 `json:"autoApproved"`
	Approved     int64 `json:"approved"`
	Rejected     int64 `json:"rejected"`
	Reads        int64 `json:"reads"`
	// LoopsFull counts loop proposals that became facts because the
	// agent's open_loops.md was near its limit.
	LoopsFull int64 `json:"loopsFull"`
	// MissedWrites and MissedReads are ticks of the open-loop load that
	// found every worker busy (the machine did not sustain the rate).
	MissedWrites int64            `json:"missedWrites"`
	MissedReads  int64            `json:"missedReads"`
	Errors       int64            `json:"errors"`
	ErrorsByKind map[string]int64 `json:"errorsByKind,omitempty"`
	FirstErrors  []string         `json:"firstErrors,omitempty"`
	Samples      []SoakSample     `json:"samples"`
	Requests     []SoakRequests   `json:"requests"`
	Trends       []Trend          `json:"trends"`
	Pass         bool             `json:"pass"`
	Failures     []string         `json:"failures,omitempty"`
	// Note says why the run ended early, if it did.
	Note string `json:"note,omitempty"`
}

// SoakSample is one reading of memoryd.
type SoakSample struct {
	// Seconds since the load started.
	Seconds   float64 `json:"t"`
	Proposals int64   `json:"proposals"`
	Applied   int64   `json:"applied"`
	Reads     int64   `json:"reads"`
	// RSSMB is VmRSS; AnonMB (RssAnon) and FileMB (RssFile: mapped
	// files, the search index segments among them) split it.
	RSSMB  float64 `json:"rssMB"`
	AnonMB float64 `json:"anonRssMB"`
	FileMB float64 `json:"fileRssMB"`
	// HeapMB is the heap the last GC found live (liveHeapMetric).
	HeapMB     float64 `json:"heapAfterGcMB"`
	Goroutines int     `json:"goroutines"`
	Threads    int     `json:"threads"`
	FDs        int     `json:"openFds"`
	CPUSeconds float64 `json:"cpuSeconds"`
	// CacheMB is the sum of memoryd's memory_cache_size_bytes (its own
	// accounting of what its bounded caches hold; 0 when not exported),
	// CacheMaxMB the sum of their memory_cache_max_size_bytes, Caches the
	// size of each.
	CacheMB    float64            `json:"cacheMB"`
	CacheMaxMB float64            `json:"cacheMaxMB"`
	Caches     map[string]float64 `json:"caches,omitempty"`
	// Errors so far.
	Errors int64 `json:"errors"`
	// Latency per request kind over the interval since the previous sample.
	Latency map[string]Latency `json:"latency,omitempty"`

	lat map[string][]time.Duration
}

// SoakRequests sums up one request kind.
type SoakRequests struct {
	Kind     string  `json:"kind"`
	Requests int     `json:"requests"`
	Errors   int64   `json:"errors"`
	Latency  Latency `json:"latency"`
	// P95Early and P95Late are the p95 of the first and the second half of
	// the time after warm-up: stable latencies keep them close.
	P95Early float64 `json:"p95EarlyMs"`
	P95Late  float64 `json:"p95LateMs"`
}

// Trend is a least-squares line through one metric after warm-up.
type Trend struct {
	Metric  string `json:"metric"`
	Unit    string `json:"unit"`
	Samples int    `json:"samples"`
	// From and To are the window (seconds since the load started); Start
	// and End the fitted values there.
	From        float64 `json:"fromSeconds"`
	To          float64 `json:"toSeconds"`
	Start       float64 `json:"start"`
	End         float64 `json:"end"`
	SlopePerMin float64 `json:"slopePerMinute"`
	// Growth is End - Start; GrowthPct relative to Start.
	Growth    float64 `json:"growth"`
	GrowthPct float64 `json:"growthPct"`
	Min       float64 `json:"min"`
	Max       float64 `json:"max"`
	// Limit is the largest Growth allowed (criteria only) and LimitWhy
	// how it was set.
	Limit    float64 `json:"limit,omitempty"`
	LimitWhy string  `json:"limitWhy,omitempty"`
	// Status is PASS or FAIL for a criterion, INFO otherwise.
	Status string `json:"status"`
}

func newSoakReport(o SoakOptions) *SoakReport {
	return &SoakReport{Started: time.Now().UTC(), Options: o, WarmupSeconds: secs(o.warmup()),
		Host: Host{CPUs: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH, GoVersion: runtime.Version(), LoadStart: loadAvg()}}
}

// fitLine returns the least-squares slope and intercept of y over x.
func fitLine(xs, ys []float64) (slope, intercept float64) {
	n := float64(len(xs))
	if len(xs) == 0 {
		return 0, 0
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx, my = mx/n, my/n
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx == 0 {
		return 0, my
	}
	slope = sxy / sxx
	return slope, my - slope*mx
}

// allowance is growth a criterion tolerates on top of its share and floor
// (see cacheAllowance).
type allowance struct {
	mb  float64
	why string
}

// trend fits metric over the samples at or after warmup seconds. With
// maxGrowth > 0 it is a criterion: growth over the window may be at most
// max(maxGrowth × the fitted start, floor) + allow.
func trend(samples []SoakSample, warmup float64, metric, unit string, get func(SoakSample) float64, maxGrowth, floor float64, allow allowance) Trend {
	t := Trend{Metric: metric, Unit: unit, Status: "INFO", Min: math.Inf(1), Max: math.Inf(-1)}
	var xs, ys []float64
	for _, s := range samples {
		if s.Seconds < warmup {
			continue
		}
		v := get(s)
		xs, ys = append(xs, s.Seconds), append(ys, v)
		t.Min, t.Max = min(t.Min, v), max(t.Max, v)
	}
	t.Samples = len(xs)
	if len(xs) == 0 {
		t.Min, t.Max = 0, 0
		if maxGrowth > 0 {
			t.Status = "FAIL"
		}
		return t
	}
	slope, icept := fitLine(xs, ys)
	t.From, t.To = xs[0], xs[len(xs)-1]
	t.Start, t.End = slope*t.From+icept, slope*t.To+icept
	t.SlopePerMin = slope * 60
	t.Growth = t.End - t.Start
	if t.Start > 0 {
		t.GrowthPct = 100 * t.Growth / t.Start
	}
	if maxGrowth > 0 {
		t.Limit = max(maxGrowth*t.Start, floor) + allow.mb
		t.LimitWhy = fmt.Sprintf("max(%.0f %% of %.1f, %.0f)", 100*maxGrowth, t.Start, floor)
		if allow.mb > 0 {
			t.LimitWhy += " + " + allow.why
		}
		t.Status = check(t.Growth <= t.Limit)
	}
	return t
}

// Bounded caches still filling after warm-up are growth by design, not a
// leak: memoryd's caches (memory_cache_size_bytes) may hold up to their
// memory_cache_max_size_bytes, some 280 MB, and at 40 proposals/s over 100
// agents they take about 15 minutes to fill (make soak SOAK_DURATION=30m:
// full at 900 s). So the criteria allow the budget the caches had not
// filled at the start of the fitted window, in real bytes: their
// accounting counts keys and values, and a heap profile at the end of that
// run found the caches' allocations about cacheOverhead times what they
// account (about 1.2: LRU list and map entries, decoded trees, the pieces'
// strings). RSS gets gcHeadroom
// times that: with GOGC=100 the heap grows to twice the live heap before a
// collection, and RSS keeps the pages. The allowance fades as the caches
// fill: a 1-minute run tolerates nearly the whole budget (it cannot tell a
// leak smaller than that from the caches filling), a run whose warm-up
// outlasts the filling tolerates nearly nothing. --strict drops it.
const (
	cacheOverhead = 1.25
	gcHeadroom    = 2
)

// cacheAllowance is the allowance of the heap and of anonymous RSS for the
// caches' budget unfilled at the first sample after warm-up.
func cacheAllowance(samples []SoakSample, warmup float64, strict bool) (heap, anon allowance) {
	if strict {
		return
	}
	for _, s := range samples {
		if s.Seconds < warmup {
			continue
		}
		unfilled := max(0, s.CacheMaxMB-s.CacheMB)
		if unfilled == 0 {
			return
		}
		heap = allowance{cacheOverhead * unfilled, fmt.Sprintf("%.2f × %.1f MB of cache budget unfilled at %.0f s", cacheOverhead, unfilled, s.Seconds)}
		anon = allowance{gcHeadroom * heap.mb, fmt.Sprintf("%d × %.2f × %.1f MB of cache budget unfilled at %.0f s", gcHeadroom, cacheOverhead, unfilled, s.Seconds)}
		return
	}
	return
}

// minFitSamples is the fewest samples after warm-up a verdict rests on.
const minFitSamples = 5

// finish computes the trends, the per-kind summaries and the verdict.
func (r *SoakReport) finish(s *soak, note string, wall time.Duration) {
	o := s.o
	r.WallSeconds = secs(wall)
	r.Host.LoadEnd = loadAvg()
	r.Note = note
	r.Proposals, r.Applied, r.AutoApproved = s.proposals.Load(), s.applied.Load(), s.auto.Load()
	r.Approved, r.Rejected, r.Reads = s.approved.Load(), s.rejected.Load(), s.reads.Load()
	r.MissedWrites, r.MissedReads, r.LoopsFull = s.missedWrites.Load(), s.missedReads.Load(), s.loopsFull.Load()
	s.rec.mu.Lock()
	r.Errors, r.FirstErrors = s.rec.nErrs, slices.Clone(s.rec.first)
	if len(s.rec.errs) > 0 {
		r.ErrorsByKind = map[string]int64{}
		for k, v := range s.rec.errs {
			r.ErrorsByKind[k] = v
		}
	}
	s.rec.mu.Unlock()
	if n := len(r.Samples); n > 0 {
		r.LoadSeconds = r.Samples[n-1].Seconds
	}

	w := r.WarmupSeconds
	heapAllow, anonAllow := cacheAllowance(r.Samples, w, o.Strict)
	none := allowance{}
	r.Trends = []Trend{
		trend(r.Samples, w, "anonymous RSS (RssAnon)", "MB", func(s SoakSample) float64 { return s.AnonMB }, o.MaxGrowth, o.AnonFloorMB, anonAllow),
		trend(r.Samples, w, "heap after GC (live heap)", "MB", func(s SoakSample) float64 { return s.HeapMB }, o.MaxGrowth, o.HeapFloorMB, heapAllow),
		trend(r.Samples, w, "RSS (VmRSS)", "MB", func(s SoakSample) float64 { return s.RSSMB }, 0, 0, none),
		trend(r.Samples, w, "file-backed RSS (RssFile)", "MB", func(s SoakSample) float64 { return s.FileMB }, 0, 0, none),
		trend(r.Samples, w, "bounded caches (memory_cache_size_bytes)", "MB", func(s SoakSample) float64 { return s.CacheMB }, 0, 0, none),
		trend(r.Samples, w, "heap after GC less the caches", "MB", func(s SoakSample) float64 { return s.HeapMB - s.CacheMB }, 0, 0, none),
		trend(r.Samples, w, "goroutines", "", func(s SoakSample) float64 { return float64(s.Goroutines) }, 0, 0, none),
		trend(r.Samples, w, "open fds", "", func(s SoakSample) float64 { return float64(s.FDs) }, 0, 0, none),
	}

	// Per kind: the whole load, and p95 of each half of the window.
	mid := w + (r.LoadSeconds-w)/2
	for _, k := range soakKinds {
		var all, early, late []time.Duration
		for _, smp := range r.Samples {
			l := smp.lat[k.kind]
			all = append(all, l...)
			switch {
			case smp.Seconds <= w:
			case smp.Seconds <= mid:
				early = append(early, l...)
			default:
				late = append(late, l...)
			}
		}
		s.rec.mu.Lock()
		errs := s.rec.errs[k.kind]
		s.rec.mu.Unlock()
		if len(all) == 0 && errs == 0 {
			continue
		}
		r.Requests = append(r.Requests, SoakRequests{Kind: k.kind, Requests: len(all), Errors: errs, Latency: summarize(all),
			P95Early: summarize(early).P95, P95Late: summarize(late).P95})
	}

	r.Failures = nil
	if note != "" {
		r.Failures = append(r.Failures, "ended early: "+note)
	}
	if r.Errors > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("%d request errors (first: %s)", r.Errors, r.FirstErrors[0]))
	}
	for _, t := range r.Trends[:2] {
		switch {
		case t.Samples < minFitSamples:
			r.Failures = append(r.Failures, fmt.Sprintf("%s: %d samples after warm-up, at least %d needed", t.Metric, t.Samples, minFitSamples))
		case t.Status == "FAIL":
			r.Failures = append(r.Failures, fmt.Sprintf("%s grew %.1f %s (%+.1f %%) after warm-up, more than %.1f %s (%s)", t.Metric,
				t.Growth, t.Unit, t.GrowthPct, t.Limit, t.Unit, t.LimitWhy))
		}
	}
	r.Pass = len(r.Failures) == 0
}

// Summary is the one-line verdict.
func (r *SoakReport) Summary() string {
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "soak %s: %s of load, %d proposals (%.1f/s), %d reads, %d errors", verdict,
		(time.Duration(r.LoadSeconds) * time.Second).String(), r.Proposals, perSec(r.Proposals, r.LoadSeconds), r.Reads, r.Errors)
	for _, t := range r.Trends {
		if t.Status == "INFO" && !strings.HasPrefix(t.Metric, "file") {
			continue
		}
		name, _, _ := strings.Cut(t.Metric, " (")
		if t.Status == "INFO" {
			fmt.Fprintf(&b, "; %s %.1f → %.1f %s", name, t.Start, t.End, t.Unit)
			continue
		}
		fmt.Fprintf(&b, "; %s %.1f → %.1f %s (%+.1f %%, limit +%.1f)", name, t.Start, t.End, t.Unit, t.GrowthPct, t.Limit)
	}
	if !r.Pass {
		fmt.Fprintf(&b, " — %s", strings.Join(r.Failures, "; "))
	}
	return b.String()
}

func perSec(n int64, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return float64(n) / secs
}

// write saves soak-latest.{json,md} and dated copies in dir and prints the
// Markdown to stdout.
func (r *SoakReport) write(dir string, stdout io.Writer) error {
	return WriteReport(dir, stdout, "soak-latest", "soak-", r.Started, r.Markdown(), r)
}

// maxCurveRows bounds the printed curve: samples are grouped into rows
// (memory as at the row's last sample, latencies over the whole row).
const maxCurveRows = 30

// curveRows groups samples[1:] into at most maxCurveRows rows after the
// first sample (taken as the load started) alone.
func curveRows(samples []SoakSample) [][]SoakSample {
	if len(samples) == 0 {
		return nil
	}
	rows := [][]SoakSample{samples[:1]}
	rest := samples[1:]
	per := max(1, (len(rest)+maxCurveRows-1)/maxCurveRows)
	for len(rest) > 0 {
		n := min(per, len(rest))
		rows = append(rows, rest[:n])
		rest = rest[n:]
	}
	return rows
}

// Markdown renders the report.
func (r *SoakReport) Markdown() string {
	var b strings.Builder
	o := r.Options
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "# membench soak — %s\n\n", r.Started.Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "**%s** — memoryd all-in-one on an empty data dir, %d agents onboarded in %.1f s, then %s of mixed load: "+
		"%d proposals (%.1f/s, %.0f/s asked, %d ticks missed; %d applied: %d auto-approved by policy, %d approved by a reviewer; %d rejected; "+
		"%d loop proposals made facts as open_loops.md was full), "+
		"%d reads (%.1f/s, %.0f/s asked, %d ticks missed), %d errors. %d CPUs, %s/%s, %s; load average %s at the start, %s at the end. "+
		"A sample every %s; warm-up %s (not fitted); wall time %s.\n\n",
		verdict, o.Agents, r.OnboardSeconds, (time.Duration(r.LoadSeconds) * time.Second).String(),
		r.Proposals, perSec(r.Proposals, r.LoadSeconds), o.Rate, r.MissedWrites, r.Applied, r.AutoApproved, r.Approved, r.Rejected, r.LoopsFull,
		r.Reads, perSec(r.Reads, r.LoadSeconds), o.ReadRate, r.MissedReads, r.Errors,
		r.Host.CPUs, r.Host.OS, r.Host.Arch, r.Host.GoVersion, r.Host.LoadStart, r.Host.LoadEnd,
		o.SampleEvery, time.Duration(r.WarmupSeconds*float64(time.Second)), (time.Duration(r.WallSeconds) * time.Second).String())
	if r.Note != "" {
		fmt.Fprintf(&b, "**Ended early:** %s\n\n", r.Note)
	}
	for _, f := range r.Failures {
		fmt.Fprintf(&b, "- FAIL: %s\n", f)
	}
	if len(r.Failures) > 0 {
		b.WriteString("\n")
	}

	b.WriteString("## Trend after warm-up (least squares)\n\n")
	b.WriteString("| metric | samples | window s | fitted start | fitted end | slope /min | growth | growth % | limit | |\n")
	b.WriteString("|---|---:|---|---:|---:|---:|---:|---:|---|---|\n")
	for _, t := range r.Trends {
		limit := "—"
		if t.Limit > 0 {
			limit = fmt.Sprintf("%.1f = %s", t.Limit, t.LimitWhy)
		}
		name := t.Metric
		if t.Unit != "" {
			name += " " + t.Unit
		}
		fmt.Fprintf(&b, "| %s | %d | %.0f–%.0f | %.1f | %.1f | %+.2f | %+.1f | %+.1f | %s | %s |\n", name, t.Samples, t.From, t.To,
			t.Start, t.End, t.SlopePerMin, t.Growth, t.GrowthPct, limit, t.Status)
	}

	rows := curveRows(r.Samples)
	b.WriteString("\n## Curve\n\n")
	if len(rows) > 0 && len(rows) < len(r.Samples) {
		fmt.Fprintf(&b, "%d samples in %d rows: memory as at each row's last sample.\n\n", len(r.Samples), len(rows))
	}
	b.WriteString("| t s | proposals | reads | RSS MB | anon MB | file MB | heap after GC (live) MB | caches MB | goroutines | threads | fds | CPU s | errors |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, row := range rows {
		s := row[len(row)-1]
		mark := ""
		if s.Seconds < r.WarmupSeconds {
			mark = " (warm-up)"
		}
		fmt.Fprintf(&b, "| %.0f%s | %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %d | %d | %d | %.1f | %d |\n", s.Seconds, mark, s.Proposals, s.Reads,
			s.RSSMB, s.AnonMB, s.FileMB, s.HeapMB, s.CacheMB, s.Goroutines, s.Threads, s.FDs, s.CPUSeconds, s.Errors)
	}

	if n := len(r.Samples); n > 0 && len(r.Samples[n-1].Caches) > 0 {
		last := r.Samples[n-1]
		names := make([]string, 0, len(last.Caches))
		for name := range last.Caches {
			names = append(names, name)
		}
		slices.Sort(names)
		parts := make([]string, len(names))
		for i, name := range names {
			parts[i] = fmt.Sprintf("%s %.1f", name, last.Caches[name])
		}
		fmt.Fprintf(&b, "\nBounded caches at the end (memoryd's own accounting, memory_cache_size_bytes), MB: %s; %.1f in all of at most %.1f "+
			"(go-git's own object cache, 32 MB at most, is not in it).\n", strings.Join(parts, ", "), last.CacheMB, last.CacheMaxMB)
	}

	b.WriteString("\n## Latency per row, p50/p95 ms\n\n")
	var kinds []struct{ kind, short string }
	for _, k := range soakKinds {
		for _, q := range r.Requests {
			if q.Kind == k.kind {
				kinds = append(kinds, k)
			}
		}
	}
	b.WriteString("| t s |")
	for _, k := range kinds {
		b.WriteString(" " + k.short + " |")
	}
	b.WriteString("\n|---:|" + strings.Repeat("---:|", len(kinds)) + "\n")
	for _, row := range rows[min(1, len(rows)):] {
		n := 0
		for _, s := range row {
			for _, l := range s.lat {
				n += len(l)
			}
		}
		if n == 0 {
			continue // the last sample, after the requests in flight ended
		}
		fmt.Fprintf(&b, "| %.0f |", row[len(row)-1].Seconds)
		for _, k := range kinds {
			var lat []time.Duration
			for _, s := range row {
				lat = append(lat, s.lat[k.kind]...)
			}
			if len(lat) == 0 {
				b.WriteString(" — |")
				continue
			}
			l := summarize(lat)
			fmt.Fprintf(&b, " %s/%s |", msText(l.P50), msText(l.P95))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nColumns: %s. \"applied\" is from Propose (or the approval) until the commit is on WatchCommits.\n",
		kindLegend(kinds))

	b.WriteString("\n## Requests\n\n| request | count | errors | p50 ms | p95 ms | p99 ms | max ms | p95 1st half after warm-up | p95 2nd half |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, q := range r.Requests {
		fmt.Fprintf(&b, "| %s | %d | %d | %.2f | %.2f | %.2f | %.1f | %.2f | %.2f |\n", q.Kind, q.Requests, q.Errors, q.Latency.P50,
			q.Latency.P95, q.Latency.P99, q.Latency.Max, q.P95Early, q.P95Late)
	}
	if len(r.FirstErrors) > 0 {
		b.WriteString("\n## First errors\n\n")
		for _, e := range r.FirstErrors {
			fmt.Fprintf(&b, "- %s\n", e)
		}
	}
	fmt.Fprintf(&b, "\n%s\n", r.Summary())
	return b.String()
}

func kindLegend(kinds []struct{ kind, short string }) string {
	var s []string
	for _, k := range kinds {
		if k.short != k.kind {
			s = append(s, k.short+" = "+k.kind)
		}
	}
	return strings.Join(s, ", ")
}

// msText prints a latency compactly: two decimals under 10 ms.
func msText(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.0f", v)
}
