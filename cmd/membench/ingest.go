package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/garden-bloom/memory/pkg/auth"
)

// ingestOptions configure `membench ingest`.
type ingestOptions struct {
	episodes, agents, runs, parallel int
	target                           float64
	memoryd, memctl, work            string
	seed                             uint64
}

// ingestBench is issue #27's done-when line as a benchmark: "Ingesting
// 1,000 episodes through memctl ingest shows progress and finishes at
// ≥ 100 episodes/s". Each run starts the real memoryd (--target=all, a
// fresh data dir, auto-approval on, as a team's own server would be set
// up for bulk ingestion) and times the real memctl binary ingesting one
// JSONL file of generated, varied episodes spread over --agents agents
// with --wait: the clock runs from starting memctl until it exits with
// every episode's commit applied. The median of --runs is the figure.
func ingestBench(ctx context.Context, args []string, out io.Writer) error {
	o := ingestOptions{}
	fs := flag.NewFlagSet("membench ingest", flag.ContinueOnError)
	fs.IntVar(&o.episodes, "episodes", 1000, "episodes per run")
	fs.IntVar(&o.agents, "agents", 10, "agents the episodes are spread over (1 = one agent's whole history)")
	fs.IntVar(&o.runs, "runs", 3, "runs; the median is reported")
	fs.IntVar(&o.parallel, "parallel", 8, "memctl ingest --parallel")
	fs.Float64Var(&o.target, "target", 100, "budget: median episodes/s at least this")
	fs.StringVar(&o.memoryd, "memoryd", "", "memoryd binary (default: go build into the work dir)")
	fs.StringVar(&o.memctl, "memctl", "", "memctl binary (default: go build into the work dir)")
	fs.StringVar(&o.work, "work", "", "work dir (default: a temporary dir, removed)")
	fs.Uint64Var(&o.seed, "seed", 27, "seed of the episode generator")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.episodes < 1 || o.agents < 1 || o.runs < 1 || o.parallel < 1 {
		return errors.New("--episodes, --agents, --runs and --parallel must be positive")
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "ingest: "+format+"\n", a...) }

	work, cleanup, err := workDir(o.work, "membench-ingest-")
	if err != nil {
		return err
	}
	defer cleanup()
	for name, bin := range map[string]*string{"memoryd": &o.memoryd, "memctl": &o.memctl} {
		if *bin != "" {
			continue
		}
		logf("building %s", name)
		*bin = filepath.Join(work, name)
		build := exec.CommandContext(ctx, "go", "build", "-o", *bin, "github.com/garden-bloom/memory/cmd/"+name)
		if b, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %w\n%s", name, err, b)
		}
	}
	file := filepath.Join(work, "episodes.jsonl")
	if err := os.WriteFile(file, generateEpisodes(o.episodes, o.agents, o.seed), 0o644); err != nil {
		return err
	}

	var rates []float64
	var rows []string
	for run := 1; run <= o.runs; run++ {
		r, err := ingestRun(ctx, o, work, file, run)
		if err != nil {
			return fmt.Errorf("run %d: %w", run, err)
		}
		logf("run %d: %d episodes in %.2fs = %.1f episodes/s", run, o.episodes, r.seconds, r.rate)
		rates = append(rates, r.rate)
		rows = append(rows, fmt.Sprintf("| %d | %d | %.2f | %.1f | %d |", run, o.episodes, r.seconds, r.rate, r.applied))
	}
	sorted := slices.Clone(rates)
	slices.Sort(sorted)
	median := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		median = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	pass := median >= o.target
	verdict := "PASS"
	if !pass {
		verdict = "FAIL"
	}
	report := fmt.Sprintf("## membench ingest\n\n%d episodes over %d agents through `memctl ingest --wait --parallel %d` against memoryd --target=all (fresh data dir each run)\n\n",
		o.episodes, o.agents, o.parallel) +
		fmt.Sprintf("| run | episodes | seconds | episodes/s | applied |\n|---|---|---|---|---|\n%s\n\n", strings.Join(rows, "\n")) +
		fmt.Sprintf("median: **%.1f episodes/s** (budget ≥ %.0f): %s\n", median, o.target, verdict)
	if _, err := io.WriteString(out, report); err != nil {
		return err
	}
	if !pass {
		return errors.New("the ingest budget failed")
	}
	return nil
}

type ingestRunResult struct {
	seconds, rate float64
	applied       int
}

// ingestRun starts memoryd on a fresh data dir and times one memctl ingest.
func ingestRun(ctx context.Context, o ingestOptions, work, file string, run int) (ingestRunResult, error) {
	dataDir := filepath.Join(work, fmt.Sprintf("data-%d", run))
	_ = os.RemoveAll(dataDir)
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return ingestRunResult{}, err
	}
	signer, err := dataDirSigner(dataDir)
	if err != nil {
		return ingestRunResult{}, err
	}
	// An operator's token: admin (not rate-limited) and reviewer.
	tok, err := signer.Mint("membench-ingest", []auth.Role{auth.RoleAdmin, auth.RoleReviewer}, []string{auth.AllAgents}, 24*time.Hour)
	if err != nil {
		return ingestRunResult{}, err
	}
	grpcAddr, err := freeLoopback()
	if err != nil {
		return ingestRunResult{}, err
	}
	httpAddr, err := freeLoopback()
	if err != nil {
		return ingestRunResult{}, err
	}
	logPath := filepath.Join(work, fmt.Sprintf("memoryd-%d.log", run))
	logFile, err := os.Create(logPath)
	if err != nil {
		return ingestRunResult{}, err
	}
	defer func() { _ = logFile.Close() }()
	cmd := exec.Command(o.memoryd, "--target=all", "--data-dir", dataDir, "--grpc-addr", grpcAddr, "--http-addr", httpAddr,
		"--auto-approve-default", "--log-level=warn")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT=")
	if err := cmd.Start(); err != nil {
		return ingestRunResult{}, fmt.Errorf("start memoryd: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	if err := waitHealthy(ctx, &http.Client{Timeout: 5 * time.Second}, "http://"+httpAddr, exited); err != nil {
		return ingestRunResult{}, fmt.Errorf("%w (log: %s)", err, logPath)
	}

	ingest := exec.CommandContext(ctx, o.memctl, "ingest", file, "--wait", "--parallel", fmt.Sprint(o.parallel), "-o", "json")
	ingest.Env = append(os.Environ(), "MEMCTL_ADDR="+grpcAddr, "MEMCTL_TOKEN="+tok, "MEMCTL_CONFIG="+filepath.Join(work, "memctl.yaml"), "MEMCTL_DATA_DIR=")
	var stdout bytes.Buffer
	ingest.Stdout = &stdout
	ingest.Stderr = os.Stderr // the progress line, when a terminal, and the summary
	start := time.Now()
	err = ingest.Run()
	took := time.Since(start)
	if err != nil {
		return ingestRunResult{}, fmt.Errorf("memctl ingest: %w", err)
	}
	var sum struct {
		Episodes int `json:"episodes"`
		Applied  int `json:"applied"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		return ingestRunResult{}, fmt.Errorf("memctl ingest -o json: %w", err)
	}
	if sum.Applied != o.episodes {
		return ingestRunResult{}, fmt.Errorf("%d of %d episodes applied", sum.Applied, o.episodes)
	}
	return ingestRunResult{seconds: took.Seconds(), rate: float64(o.episodes) / took.Seconds(), applied: sum.Applied}, nil
}

// generateEpisodes writes n varied episodes as JSONL, each naming its agent
// ({"agent_id", "episode"}): successes, failures with errors and fixes,
// partial outcomes; skills, artifacts, tests, environments and context
// paths drawn from pools, facts on some, decisions on a few. Deterministic
// for a seed.
func generateEpisodes(n, agents int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	pick := func(pool []string) string { return pool[rng.IntN(len(pool))] }
	some := func(pool []string, max int) []string {
		var out []string
		for range 1 + rng.IntN(max) {
			if s := pick(pool); !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
		return out
	}
	skills := []string{"go-testing", "sql-migrations", "debugging", "api-design", "ci-pipelines", "refactoring", "observability",
		"perf-profiling", "docs", "security-review", "kubernetes", "incident-response", "data-modeling", "caching", "code-review"}
	areas := []string{"payments", "ledger", "search", "auth", "notifications", "billing", "reports", "gateway"}
	verbs := []string{"Add", "Fix", "Refactor", "Speed up", "Document", "Harden", "Migrate", "Test", "Review", "Instrument"}
	things := []string{"retry logic", "the cache layer", "pagination", "the export job", "rate limiting", "the webhook handler",
		"input validation", "the nightly report", "error messages", "the schema", "connection pooling", "the CLI"}
	files := []string{"handler.go", "store.go", "service.go", "client.go", "config.yaml", "migrations/0042.sql", "README.md", "Makefile"}
	contexts := []string{"backend/%s", "backend/%s/api", "backend/%s/storage", "infra/ci", "infra/deploy", "docs/%s"}
	errorsPool := []string{
		"dial tcp 10.0.%d.7:5432: connect: connection refused",
		"context deadline exceeded after %ds",
		"panic: runtime error: index out of range [%d] with length 3",
		"pq: duplicate key value violates unique constraint \"idx_%d\"",
		"expected 200, got 5%02d from upstream",
		"test timed out after %dm0s",
	}
	fixes := []string{"Add a retry with backoff", "Raise the timeout and log the slow query", "Check the slice length before indexing",
		"Make the migration idempotent", "Return 503 with Retry-After from the upstream client", "Split the slow test and run it nightly"}
	envs := []map[string]any{{"os": "linux", "runtime": "go1.26"}, {"os": "linux", "runtime": "node20", "tooling": []string{"npm"}},
		{"os": "darwin", "runtime": "go1.26", "tooling": []string{"docker"}}, {"os": "linux", "runtime": "github-actions"}}

	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	t0 := time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)
	for i := range n {
		area := pick(areas)
		ep := map[string]any{
			"episode_id":  fmt.Sprintf("ep-bench-%05d", i),
			"timestamp":   t0.Add(time.Duration(i) * 17 * time.Minute).Format(time.RFC3339),
			"task_text":   fmt.Sprintf("%s %s in %s (#%d)", pick(verbs), pick(things), area, i),
			"summary":     fmt.Sprintf("Worked on %s in the %s service; %s.", pick(things), area, pick([]string{"merged", "needs review", "rolled back", "shipped behind a flag"})),
			"used_skills": some(skills, 3),
			"context":     strings.ReplaceAll(pick(contexts), "%s", area),
			"environment": envs[rng.IntN(len(envs))],
			"duration":    fmt.Sprintf("%ds", 60+rng.IntN(3600)),
		}
		var touched []string
		for _, f := range some(files, 3) {
			touched = append(touched, "services/"+area+"/"+f)
		}
		ep["touched_artifacts"] = touched
		switch r := rng.IntN(10); {
		case r < 7:
			ep["outcome"] = map[string]any{"status": "success"}
			ep["tests"] = []map[string]any{{"name": fmt.Sprintf("Test%s%d", strings.ToUpper(area[:1])+area[1:], rng.IntN(50)), "result": "pass", "duration_ms": rng.IntN(900)}}
		case r < 9:
			k := rng.IntN(len(errorsPool))
			ep["outcome"] = map[string]any{"status": "failure", "severity": pick([]string{"low", "medium", "high"})}
			ep["errors"] = []string{fmt.Sprintf(errorsPool[k], 1+rng.IntN(9))}
			ep["fix"] = fixes[k]
			ep["tests"] = []map[string]any{{"name": fmt.Sprintf("Test%sIntegration", strings.ToUpper(area[:1])+area[1:]), "result": "fail"}}
		default:
			ep["outcome"] = map[string]any{"status": "partial", "notes": "half done"}
		}
		if rng.IntN(4) == 0 {
			ep["facts"] = []string{fmt.Sprintf("The %s service keeps %s behind a feature flag (episode %d)", area, pick(things), i)}
		}
		if rng.IntN(20) == 0 {
			ep["decisions"] = []map[string]any{{"title": fmt.Sprintf("Own %s in the %s team (%d)", pick(things), area, i),
				"decision": "The team that runs the service owns it.", "rationale": "Fewer hand-offs."}}
		}
		line := map[string]any{"agent_id": fmt.Sprintf("bench-agent-%02d", i%agents), "episode": ep}
		_ = enc.Encode(line) // maps of strings and numbers always encode
	}
	return b.Bytes()
}
