package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/garden-bloom/memory/cmd/membench/internal/benchharness"
	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
)

// consolePage is one measured console page. Path may hold placeholders
// ({agent}, {page10}, {commit}, {proposal}, {entity}, {decision}) filled in from the seeded data
// set. An Optional page that the console does not serve yet (404 on the
// first request) is reported as absent rather than failed: the console
// grows pages (issue #28) and this table is meant to be extended.
type consolePage struct {
	Name     string
	Path     string
	Optional bool
}

// consolePages is what `membench console` measures, in order.
var consolePages = []consolePage{
	{Name: "Agents", Path: "/ui/"},
	{Name: "Agents, page 10", Path: "/ui/?page_token={page10}"},
	{Name: "Agents, filtered", Path: "/ui/?q=agent-0007"},
	{Name: "Agent: Snapshot", Path: "/ui/agents/{agent}?tab=snapshot"},
	{Name: "Agent: Facts", Path: "/ui/agents/{agent}?tab=facts"},
	{Name: "Agent: Loops", Path: "/ui/agents/{agent}?tab=loops"},
	{Name: "Agent: Decisions", Path: "/ui/agents/{agent}?tab=decisions"},
	{Name: "Agent: Timeline", Path: "/ui/agents/{agent}?tab=timeline"},
	{Name: "Agent: History", Path: "/ui/agents/{agent}?tab=history"},
	{Name: "Agent as of a commit", Path: "/ui/agents/{agent}?tab=snapshot&at={commit}"},
	{Name: "Commit diff, unified", Path: "/ui/agents/{agent}/commits/{commit}"},
	{Name: "Commit diff, side by side", Path: "/ui/agents/{agent}/commits/{commit}?view=split"},
	{Name: "Inbox", Path: "/ui/inbox"},
	{Name: "Proposal (dry-run diff)", Path: "/ui/proposals/{proposal}"},
	{Name: "Search", Path: "/ui/search?q=deploy", Optional: true},
	{Name: "Entities", Path: "/ui/entities", Optional: true},
	{Name: "Entity", Path: "/ui/entities/{entity}", Optional: true},
	{Name: "Decision chain", Path: "/ui/decisions?id={decision}", Optional: true},
}

// placeholder matches a {name} in a page path.
var placeholder = regexp.MustCompile(`\{[a-z0-9]+\}`)

// resolve fills p's placeholders from vars (values are path-escaped);
// it fails naming the first placeholder vars lacks.
func (p consolePage) resolve(vars map[string]string) (string, error) {
	var missing string
	out := placeholder.ReplaceAllStringFunc(p.Path, func(m string) string {
		v, ok := vars[strings.Trim(m, "{}")]
		if !ok && missing == "" {
			missing = m
		}
		return url.PathEscape(v)
	})
	if missing != "" {
		return "", fmt.Errorf("page %q: nothing to fill %s with", p.Name, missing)
	}
	return out, nil
}

// consoleOptions configure `membench console`.
type consoleOptions struct {
	agents, commits, proposals, requests, warmup int
	seed                                         int64
	budget, readyTimeout                         time.Duration
	memoryd, work, out                           string
	profile                                      bool
}

// ConsolePageResult is one page's measurement (milliseconds).
type ConsolePageResult struct {
	Name     string         `json:"name"`
	Path     string         `json:"path"`
	Absent   bool           `json:"absent,omitempty"` // optional page the console does not serve yet
	N        int            `json:"n"`
	P50      float64        `json:"p50Ms"`
	P95      float64        `json:"p95Ms"`
	P99      float64        `json:"p99Ms"`
	Max      float64        `json:"maxMs"`
	Statuses map[string]int `json:"statuses"`
	Bytes    int            `json:"bytes"` // body size of the last response
}

// ConsoleReport is what `membench console` measured
// (bench/results/console-latest.json).
type ConsoleReport struct {
	Started   time.Time `json:"started"`
	Commit    string    `json:"commit"`
	CPUs      int       `json:"cpus"`
	OS        string    `json:"os"`
	GoVersion string    `json:"goVersion"`
	LoadStart string    `json:"loadStart"`
	Agents    int       `json:"agents"`
	Commits   int       `json:"historyCommits"`
	Proposals int       `json:"pendingProposals"`
	Requests  int       `json:"requestsPerPage"`
	Warmup    int       `json:"warmupPerPage"`
	BudgetMs  float64   `json:"budgetP95Ms"`
	// Timing says what a latency is: the console's Server-Timing header
	// when it sends one, else the loopback client's time to the whole body.
	Timing      string              `json:"timing"`
	SeedSeconds float64             `json:"seedSeconds"`
	ReadySecs   float64             `json:"readySeconds"`
	Pages       []ConsolePageResult `json:"pages"`
	Profiles    []ConsoleProfile    `json:"profiles,omitempty"`
	Pass        bool                `json:"pass"`
	Failures    []string            `json:"failures,omitempty"`
}

// consoleBench is issue #28's done-when line as a benchmark: "Every page
// answers in ≤ 50 ms p95 server-side with 1,000 agents". It generates the
// perf scenario's synthetic monorepo (benchharness.Generate: 1,000 agents
// with Layer 1 files and history, written as one pack), starts the real
// memoryd --target=all on it with auto-approval off, proposes a few dozen
// updates so the inbox has rows, signs in to the console like a browser
// (the login form's CSRF field and cookies), and times sequential GETs of
// every page in consolePages.
func consoleBench(ctx context.Context, args []string, out io.Writer) error {
	o := consoleOptions{}
	fs := flag.NewFlagSet("membench console", flag.ContinueOnError)
	fs.IntVar(&o.agents, "agents", 1000, "agents in the synthetic monorepo")
	fs.IntVar(&o.commits, "commits", 5000, "history commits after the agents' onboarding")
	fs.Int64Var(&o.seed, "seed", 1, "seed of the data set")
	fs.IntVar(&o.proposals, "proposals", 36, "pending proposals put in the inbox (auto-approval is off)")
	fs.IntVar(&o.requests, "n", 200, "measured sequential requests per page")
	fs.IntVar(&o.warmup, "warmup", 20, "unmeasured requests per page before the measured ones")
	fs.DurationVar(&o.budget, "budget", 50*time.Millisecond, "budget: p95 of every page at most this")
	fs.DurationVar(&o.readyTimeout, "ready-timeout", 5*time.Minute, "longest wait for the index and entity graph to catch up before measuring")
	fs.StringVar(&o.memoryd, "memoryd", "", "memoryd binary (default: go build into the work dir)")
	fs.StringVar(&o.work, "work", "", "work dir (default: a temporary dir, removed)")
	fs.BoolVar(&o.profile, "profile", true, "for each page over budget, take a 10 s CPU profile of memoryd while requesting it and report its top lines")
	fs.StringVar(&o.out, "out", "bench/results", "where console-latest.json, console-latest.md and dated copies go (\"\" = none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.agents < 1 || o.commits < 1 || o.proposals < 1 || o.requests < 1 || o.warmup < 0 || o.budget <= 0 {
		return errors.New("--agents, --commits, --proposals, -n and --budget must be positive, --warmup not negative")
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "console: "+format+"\n", a...) }

	work, cleanup, err := workDir(o.work, "membench-console-")
	if err != nil {
		return err
	}
	defer cleanup()
	if o.memoryd == "" {
		logf("building memoryd")
		o.memoryd = filepath.Join(work, "memoryd")
		build := exec.CommandContext(ctx, "go", "build", "-o", o.memoryd, "github.com/garden-bloom/memory/cmd/memoryd")
		if b, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("go build memoryd: %w\n%s", err, b)
		}
	}

	rep := &ConsoleReport{Started: time.Now().UTC(), Commit: gitHead(), CPUs: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH,
		GoVersion: runtime.Version(), LoadStart: loadAverage(), Agents: o.agents, Commits: o.commits, Proposals: o.proposals,
		Requests: o.requests, Warmup: o.warmup, BudgetMs: ms(o.budget)}

	dataDir := filepath.Join(work, "data")
	_ = os.RemoveAll(dataDir)
	seedStart := time.Now()
	m, err := benchharness.Generate(ctx, benchharness.GenConfig{Agents: o.agents, Commits: o.commits, Seed: o.seed}, dataDir, logf)
	if err != nil {
		return fmt.Errorf("generate the data set: %w", err)
	}
	rep.SeedSeconds = time.Since(seedStart).Seconds()
	logf("data set: %d agents, %d commits in %.1fs", m.Agents, m.TotalCommits, rep.SeedSeconds)

	secretFile := filepath.Join(dataDir, "auth.secret")
	signer, err := dataDirSigner(dataDir)
	if err != nil {
		return err
	}
	// The person at the console: a reviewer who is also an operator (admin
	// is not rate-limited, and may read /debug/pprof/ for a profile).
	personTok, err := signer.Mint("membench-console", []auth.Role{auth.RoleAdmin, auth.RoleReviewer}, []string{auth.AllAgents}, 24*time.Hour)
	if err != nil {
		return err
	}
	serviceTok, err := signer.Mint("membench-agents", []auth.Role{auth.RoleService}, []string{auth.AllAgents}, 24*time.Hour)
	if err != nil {
		return err
	}

	grpcAddr, err := freeLoopback()
	if err != nil {
		return err
	}
	httpAddr, err := freeLoopback()
	if err != nil {
		return err
	}
	logPath := filepath.Join(work, "memoryd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer func() { _ = logFile.Close() }()
	// Auto-approval stays off (the default): the proposals wait in the inbox.
	cmd := exec.Command(o.memoryd, "--target=all", "--data-dir", dataDir, "--auth-secret-file", secretFile,
		"--grpc-addr", grpcAddr, "--http-addr", httpAddr, "--rate-limit=0", "--rotate-runs-every=0", "--log-level=warn")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT=")
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start memoryd: %w", err)
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
	base := "http://" + httpAddr
	readyStart := time.Now()
	if err := waitHealthy(ctx, &http.Client{Timeout: 5 * time.Second}, base, exited); err != nil {
		return fmt.Errorf("%w (log: %s)", err, logPath)
	}
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	// Measuring while the index and the entity graph still ingest 1,000
	// agents' history would time the catch-up, not the pages.
	if err := waitCaughtUp(ctx, conn, personTok, m, o.readyTimeout); err != nil {
		logf("measuring anyway: %v", err)
	}
	rep.ReadySecs = time.Since(readyStart).Seconds()
	logf("memoryd serving after %.1fs", rep.ReadySecs)

	// The Agents page is paged by ListAgents' tokens (the last id of the
	// page before, 50 to a page, ids sorted): page 10 follows the 450th.
	vars := map[string]string{"agent": benchharness.AgentID(7), "page10": benchharness.AgentID(449), "entity": m.HeadEntity}
	if id := firstDecision(ctx, conn, personTok); id != "" {
		vars["decision"] = id
	}
	if vars["proposal"], err = proposeInbox(ctx, conn, serviceTok, o.proposals, o.agents); err != nil {
		return err
	}
	b, err := signInConsole(ctx, base, personTok)
	if err != nil {
		return err
	}
	if vars["commit"], err = firstCommit(ctx, b, vars["agent"]); err != nil {
		return err
	}

	rep.Timing = "loopback client (no Server-Timing header)"
	for _, p := range consolePages {
		path, err := p.resolve(vars)
		if err != nil && p.Optional {
			logf("%s: skipped: %v", p.Name, err)
			rep.Pages = append(rep.Pages, ConsolePageResult{Name: p.Name, Path: p.Path, Absent: true})
			continue
		}
		if err != nil {
			return err
		}
		r, serverTimed, err := measurePage(ctx, b, p, path, o.warmup, o.requests)
		if err != nil {
			return err
		}
		if serverTimed {
			rep.Timing = "Server-Timing header"
		}
		logf("%-28s p50 %6.1f ms  p95 %6.1f ms  max %6.1f ms", p.Name, r.P50, r.P95, r.Max)
		rep.Pages = append(rep.Pages, r)
	}
	rep.judge()
	if o.profile {
		profDir := cmp.Or(o.out, work) // the work dir may be a temporary one
		for _, p := range rep.Pages {
			if !p.Absent && p.P95 > rep.BudgetMs {
				rep.Profiles = append(rep.Profiles, profilePage(ctx, b, base, personTok, o.memoryd, profDir, p, logf))
			}
		}
	}
	if err := rep.write(o.out, out); err != nil {
		return err
	}
	if !rep.Pass {
		return fmt.Errorf("the console budget failed: %s", strings.Join(rep.Failures, "; "))
	}
	return nil
}

// firstDecision is a decision entity of the graph ("" when it has none).
func firstDecision(ctx context.Context, conn *grpc.ClientConn, tok string) string {
	call := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
	c, cancel := context.WithTimeout(call, 10*time.Second)
	defer cancel()
	resp, err := memoryv1.NewEntityGraphServiceClient(conn).ListEntities(c, &memoryv1.ListEntitiesRequest{Type: memoryv1.EntityType_ENTITY_TYPE_DECISION, PageSize: 1})
	if err != nil || len(resp.GetEntities()) == 0 {
		return ""
	}
	return resp.GetEntities()[0].GetEntityId()
}

// ConsoleProfile is a CPU profile of memoryd taken while one page over
// budget was requested again and again.
type ConsoleProfile struct {
	Page string `json:"page"`
	File string `json:"file"`
	Top  string `json:"top"`
}

// profilePage asks memoryd for a 10 s CPU profile (/debug/pprof/, admin
// token) while requesting p sequentially, keeps it in the work dir and
// returns `go tool pprof -top`'s first lines.
func profilePage(ctx context.Context, b *browser, base, adminTok, memoryd, dir string, p ConsolePageResult, logf func(string, ...any)) ConsoleProfile {
	res := ConsoleProfile{Page: p.Name, File: filepath.Join(dir, "console-profile-"+strings.ToLower(strings.NewReplacer(" ", "-", ":", "", ",", "").Replace(p.Name))+".pb.gz")}
	done := make(chan error, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/debug/pprof/profile?seconds=10", nil)
		if err != nil {
			done <- err
			return
		}
		req.Header.Set("Authorization", "Bearer "+adminTok)
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			done <- err
			return
		}
		defer func() { _ = resp.Body.Close() }()
		data, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("/debug/pprof/profile: status %d", resp.StatusCode)
		}
		if err == nil {
			err = os.WriteFile(res.File, data, 0o644)
		}
		done <- err
	}()
	for {
		select {
		case err := <-done:
			if err != nil {
				res.Top = "no profile: " + err.Error()
				return res
			}
			top, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-cum", "-nodecount=80", memoryd, res.File).CombinedOutput()
			if err != nil {
				res.Top = "go tool pprof: " + err.Error() + "\n" + string(top)
				return res
			}
			res.Top = ownFrames(string(top), 15)
			logf("profile of %s (%s):\n%s", p.Name, res.File, res.Top)
			return res
		default:
			_, _, _, _ = b.get(ctx, p.Path)
		}
	}
}

// plumbing is the request path every call shares (edge limits, gRPC
// interceptors, generated handlers): no answer to where a page's time goes.
var plumbing = regexp.MustCompile(`/gen/go/|pkg/grpcserver\.|pkg/auth\.Unary|pkg/ratelimit\.|pkg/httplimit\.`)

// ownFrames keeps, of `pprof -top -cum`, the header and the first n frames
// of this module that are not plumbing: the functions a page spends on.
func ownFrames(top string, n int) string {
	var keep []string
	for _, l := range strings.Split(strings.TrimSpace(top), "\n") {
		switch {
		case strings.Contains(l, "flat%") || strings.HasPrefix(l, "Duration:"):
			keep = append(keep, l)
		case n > 0 && strings.Contains(l, "github.com/garden-bloom/memory/") && !plumbing.MatchString(l):
			keep = append(keep, l)
			n--
		}
	}
	return strings.Join(keep, "\n")
}

// waitCaughtUp waits until the search index has indexed the data set's
// head and the entity graph knows its head entity.
func waitCaughtUp(ctx context.Context, conn *grpc.ClientConn, tok string, m *benchharness.Manifest, timeout time.Duration) error {
	si, eg := memoryv1.NewSearchIndexServiceClient(conn), memoryv1.NewEntityGraphServiceClient(conn)
	call := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
	var indexed, graphed bool
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err := ctx.Err(); err != nil {
			return err
		}
		c, cancel := context.WithTimeout(call, 5*time.Second)
		if !indexed {
			st, err := si.GetIndexStatus(c, &memoryv1.GetIndexStatusRequest{})
			indexed = err == nil && st.GetLastCommit() == m.Head
		}
		if !graphed {
			_, err := eg.GetEntity(c, &memoryv1.GetEntityRequest{EntityId: m.HeadEntity})
			graphed = err == nil
		}
		cancel()
		if indexed && graphed {
			return nil
		}
	}
	return fmt.Errorf("not caught up after %s (index %v, graph %v)", timeout, indexed, graphed)
}

// proposeInbox proposes n updates spread over the first agents as an agent
// would (auto-approval off, so they wait for a person) and returns the
// first one's id.
func proposeInbox(ctx context.Context, conn *grpc.ClientConn, tok string, n, agents int) (string, error) {
	pa := memoryv1.NewProposalApplyServiceClient(conn)
	call := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
	var first string
	for i := range n {
		agent := benchharness.AgentID(i % min(agents, 12))
		c, cancel := context.WithTimeout(call, 30*time.Second)
		resp, err := pa.Propose(c, &memoryv1.ProposeRequest{
			AgentId: agent, RunId: fmt.Sprintf("run_console_%03d", i),
			Updates: []*memoryv1.FileUpdate{{File: "facts.md", Operation: memoryv1.Operation_OPERATION_APPEND, Section: "Review console benchmark",
				Content: fmt.Sprintf("- The deploy pipeline of service %d now waits for the canary before promoting", i)}},
			Reasoning: "membench console: a proposal that waits in the inbox",
		})
		cancel()
		if err != nil {
			return "", fmt.Errorf("propose %d: %w", i, err)
		}
		if resp.GetStatus() != memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING {
			return "", fmt.Errorf("proposal %s is %s, not pending (is auto-approval on?)", resp.GetProposalId(), resp.GetStatus())
		}
		if first == "" {
			first = resp.GetProposalId()
		}
	}
	return first, nil
}

// browser is a signed-in console client: it keeps cookies itself, since
// the console's cookies are Secure and a loopback http URL is a secure
// context to browsers but not to net/http/cookiejar.
type browser struct {
	base    string
	client  *http.Client
	cookies map[string]string
}

func newBrowser(base string) *browser {
	return &browser{base: base, cookies: map[string]string{}, client: &http.Client{Timeout: 30 * time.Second,
		// Redirects are looked at, not followed: a page that sends to the
		// sign-in form is a failure, not a 200.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends a request with the jar's cookies and keeps the answer's.
func (b *browser) do(req *http.Request) (*http.Response, error) {
	for name, v := range b.cookies {
		req.AddCookie(&http.Cookie{Name: name, Value: v})
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, err
	}
	for _, c := range resp.Cookies() {
		if c.MaxAge < 0 || c.Value == "" {
			delete(b.cookies, c.Name)
		} else {
			b.cookies[c.Name] = c.Value
		}
	}
	return resp, nil
}

// get fetches path and returns status, headers and body.
func (b *browser) get(ctx context.Context, path string) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.base+path, nil)
	if err != nil {
		return 0, nil, nil, err
	}
	resp, err := b.do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, body, err
}

// csrfField is the sign-in form's anti-forgery field.
var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// signInConsole signs in as a person does: opens the sign-in form (which
// sets the form's cookie and carries its CSRF field), posts the token from
// this origin, and follows to the Agents page.
func signInConsole(ctx context.Context, base, token string) (*browser, error) {
	b := newBrowser(base)
	code, _, body, err := b.get(ctx, "/ui/login")
	if err != nil {
		return nil, fmt.Errorf("sign-in form: %w", err)
	}
	m := csrfField.FindSubmatch(body)
	if code != http.StatusOK || m == nil {
		return nil, fmt.Errorf("sign-in form: status %d, csrf field found: %v", code, m != nil)
	}
	form := url.Values{"token": {token}, "csrf": {string(m[1])}, "next": {"/ui/"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/ui/login", strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := b.do(req)
	if err != nil {
		return nil, fmt.Errorf("sign in: %w", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		return nil, fmt.Errorf("sign in: status %d, want 303 to the Agents page", resp.StatusCode)
	}
	code, _, _, err = b.get(ctx, "/ui/")
	if err != nil {
		return nil, fmt.Errorf("after sign-in: %w", err)
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("after sign-in the Agents page answers %d", code)
	}
	return b, nil
}

// firstCommit is the newest commit on agent's History tab.
func firstCommit(ctx context.Context, b *browser, agent string) (string, error) {
	code, _, body, err := b.get(ctx, "/ui/agents/"+url.PathEscape(agent)+"?tab=history")
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`/ui/agents/` + regexp.QuoteMeta(agent) + `/commits/([0-9a-f]{7,64})`).FindSubmatch(body)
	if code != http.StatusOK || m == nil {
		return "", fmt.Errorf("history of %s: status %d, no commit link", agent, code)
	}
	return string(m[1]), nil
}

// measurePage warms a page up, then times n sequential GETs of it. An
// optional page answering 404 to its first request is marked absent.
func measurePage(ctx context.Context, b *browser, p consolePage, path string, warmup, n int) (ConsolePageResult, bool, error) {
	r := ConsolePageResult{Name: p.Name, Path: path, Statuses: map[string]int{}}
	var serverTimed bool
	took := make([]float64, 0, n)
	for i := range warmup + n {
		start := time.Now()
		code, h, body, err := b.get(ctx, path)
		elapsed := ms(time.Since(start))
		if err != nil {
			return r, false, fmt.Errorf("%s: %w", p.Name, err)
		}
		if i == 0 && p.Optional && code == http.StatusNotFound {
			r.Absent = true
			return r, false, nil
		}
		if d, ok := serverTiming(h.Get("Server-Timing")); ok {
			elapsed, serverTimed = d, true
		}
		if i < warmup {
			continue
		}
		r.Statuses[strconv.Itoa(code)]++
		r.Bytes = len(body)
		took = append(took, elapsed)
	}
	r.N = len(took)
	slices.Sort(took)
	r.P50, r.P95, r.P99, r.Max = percentile(took, 50), percentile(took, 95), percentile(took, 99), took[len(took)-1]
	return r, serverTimed, nil
}

// serverTiming is the largest dur= of a Server-Timing header, in ms.
func serverTiming(h string) (float64, bool) {
	best, ok := 0.0, false
	for _, metric := range strings.Split(h, ",") {
		for _, param := range strings.Split(metric, ";") {
			if v, found := strings.CutPrefix(strings.TrimSpace(param), "dur="); found {
				if d, err := strconv.ParseFloat(v, 64); err == nil && (!ok || d > best) {
					best, ok = d, true
				}
			}
		}
	}
	return best, ok
}

// percentile is the nearest-rank q-th percentile of sorted values.
func percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(q/100*float64(len(sorted)) + 0.999999)
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// judge sets Pass and Failures: every present page within the p95 budget
// and every measured answer a 200.
func (r *ConsoleReport) judge() {
	r.Failures = nil
	for _, p := range r.Pages {
		if p.Absent {
			continue
		}
		if p.P95 > r.BudgetMs {
			r.Failures = append(r.Failures, fmt.Sprintf("%s: p95 %.1f ms > %.0f ms", p.Name, p.P95, r.BudgetMs))
		}
		if other := p.N - p.Statuses["200"]; other > 0 {
			r.Failures = append(r.Failures, fmt.Sprintf("%s: %d of %d answers not 200 (%s)", p.Name, other, p.N, statusList(p.Statuses)))
		}
	}
	r.Pass = len(r.Failures) == 0
}

func statusList(s map[string]int) string {
	var parts []string
	for code, n := range s {
		parts = append(parts, fmt.Sprintf("%s×%d", code, n))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// Markdown renders the report.
func (r *ConsoleReport) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## membench console — %s\n\n", r.Started.Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "commit %s · %d CPUs, %s, %s · load at start %s · %d agents, %d history commits, %d pending proposals · "+
		"%d sequential requests per page after %d warm-ups · latency: %s\n\n",
		r.Commit, r.CPUs, r.OS, r.GoVersion, r.LoadStart, r.Agents, r.Commits, r.Proposals, r.Requests, r.Warmup, r.Timing)
	b.WriteString("| page | path | n | p50 ms | p95 ms | p99 ms | max ms | status codes |\n|---|---|---|---|---|---|---|---|\n")
	for _, p := range r.Pages {
		if p.Absent {
			fmt.Fprintf(&b, "| %s | `%s` | – | – | – | – | – | not served yet (404) |\n", p.Name, p.Path)
			continue
		}
		fmt.Fprintf(&b, "| %s | `%s` | %d | %.1f | %.1f | %.1f | %.1f | %s |\n", p.Name, p.Path, p.N, p.P50, p.P95, p.P99, p.Max, statusList(p.Statuses))
	}
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL: " + strings.Join(r.Failures, "; ")
	}
	fmt.Fprintf(&b, "\nbudget: every page p95 ≤ %.0f ms and every answer 200: **%s**\n", r.BudgetMs, verdict)
	for _, p := range r.Profiles {
		fmt.Fprintf(&b, "\nCPU profile of memoryd while requesting %s (`%s`):\n\n```\n%s\n```\n", p.Page, p.File, p.Top)
	}
	return b.String()
}

// write prints the Markdown and, unless dir is "", writes
// console-latest.{json,md} and dated copies into dir.
func (r *ConsoleReport) write(dir string, stdout io.Writer) error {
	return benchharness.WriteReport(dir, stdout, "console-latest", "console-", r.Started, r.Markdown(), r)
}

// gitHead is the short commit of the working tree ("" outside a checkout).
func gitHead() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// loadAverage is /proc/loadavg's 1, 5 and 15 minute figures.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return ""
}
