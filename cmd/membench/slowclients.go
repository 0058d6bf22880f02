package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/httplimit"
)

// slowClientsOptions configure `membench slowclients`.
type slowClientsOptions struct {
	conns       int
	interval    time.Duration
	bodyTimeout time.Duration
	margin      time.Duration
	sources     int
	readers     int
	baseline    time.Duration
	memoryd     string
	work        string
	extra       []string
}

// slowClients is issue #25's done-when line as a benchmark: "2,000
// slow-body connections are all cut within the configured timeout while
// reads stay under 5 ms p95". It starts the real memoryd (--target=all,
// default flags but --http-body-timeout), reads one agent's memory over
// REST for a baseline, then opens --conns connections that each send a
// propose's headers and one body byte every --interval, and reads on
// until every one of them is cut. The slow connections come from
// --sources loopback addresses (127.0.0.2, …), so the default
// --http-max-conns-per-ip stays in force.
func slowClients(ctx context.Context, args []string, out io.Writer) error {
	o := slowClientsOptions{}
	fs := flag.NewFlagSet("membench slowclients", flag.ContinueOnError)
	fs.IntVar(&o.conns, "conns", 2000, "slow-body connections")
	fs.DurationVar(&o.interval, "interval", time.Second, "one body byte per connection this often")
	fs.DurationVar(&o.bodyTimeout, "body-timeout", httplimit.DefaultBodyTimeout, "memoryd's --http-body-timeout")
	fs.DurationVar(&o.margin, "margin", 2*time.Second, "budget: every connection cut within --body-timeout plus this")
	fs.IntVar(&o.sources, "sources", 10, "loopback source addresses the slow connections come from (127.0.0.2 …); each stays under --http-max-conns-per-ip (256)")
	fs.IntVar(&o.readers, "readers", 4, "concurrent ReadMemory REST readers")
	fs.DurationVar(&o.baseline, "baseline", 5*time.Second, "reads measured before the slow connections open")
	fs.StringVar(&o.memoryd, "memoryd", "", "prebuilt memoryd binary (default: go build ./cmd/memoryd into the work dir)")
	fs.StringVar(&o.work, "work", "", "work dir: memoryd binary, data dir, memoryd.log (default: a temporary dir, removed)")
	extra := fs.String("memoryd-flags", "", "extra memoryd flags, space-separated")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.extra = strings.Fields(*extra)
	if o.conns < 1 || o.sources < 1 || o.readers < 1 || o.interval <= 0 || o.bodyTimeout <= 0 {
		return errors.New("--conns, --sources, --readers, --interval and --body-timeout must be positive")
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runSlowClients(ctx, o, out)
}

func runSlowClients(ctx context.Context, o slowClientsOptions, out io.Writer) error {
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "slowclients: "+format+"\n", a...) }
	// Two file descriptors per connection in this process at most (the
	// connection, and none other): raise the soft limit to what it needs.
	if err := raiseNoFile(uint64(o.conns + 512)); err != nil {
		return err
	}
	work, cleanup, err := workDir(o.work, "membench-slowclients-")
	if err != nil {
		return err
	}
	defer cleanup()
	bin := o.memoryd
	if bin == "" {
		logf("building memoryd")
		bin = filepath.Join(work, "memoryd")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/garden-bloom/memory/cmd/memoryd")
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("go build memoryd: %w\n%s", err, out)
		}
	}
	dataDir := filepath.Join(work, "data")
	_ = os.RemoveAll(dataDir)
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	secretFile := filepath.Join(dataDir, "auth.secret")
	signer, err := dataDirSigner(dataDir)
	if err != nil {
		return err
	}
	tok, err := signer.Mint("membench-slowclients", []auth.Role{auth.RoleService}, []string{auth.AllAgents}, 24*time.Hour)
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
	defer func() { _ = logFile.Close() }() // memoryd writes it through its own descriptor
	cmd := exec.Command(bin, append([]string{"--target=all", "--data-dir", dataDir, "--auth-secret-file", secretFile,
		"--grpc-addr", grpcAddr, "--http-addr", httpAddr, "--rate-limit=0", "--auto-approve-default", "--log-level=warn",
		"--http-body-timeout", o.bodyTimeout.String()}, o.extra...)...)
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
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: o.readers * 2, MaxIdleConns: o.readers * 2}}
	if err := waitHealthy(ctx, client, base, exited); err != nil {
		return fmt.Errorf("%w (log: %s)", err, logPath)
	}
	const agent = "bench-slow-reader"
	if err := seedAgent(ctx, client, base, tok, agent); err != nil {
		return err
	}
	readURL := base + "/memory/" + agent + "/read?mode=basic"

	logf("baseline: %d readers for %s", o.readers, o.baseline)
	baseline := readLoad(ctx, client, readURL, tok, o.readers, timeoutChan(o.baseline))

	logf("opening %d slow-body connections from %d addresses", o.conns, o.sources)
	results := make([]slowResult, o.conns)
	var (
		wg     sync.WaitGroup
		opened atomic.Int64
		done   = make(chan struct{})
	)
	sem := make(chan struct{}, 64) // connects in flight
	openStart := time.Now()
	for i := range o.conns {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := net.IPv4(127, 0, 0, byte(2+i%o.sources))
			results[i] = slowConn(src, httpAddr, tok, o.interval, o.bodyTimeout+o.margin+30*time.Second, func() { opened.Add(1); <-sem })
		}()
	}
	logf("%d connections opened in %s; reading while they trickle", opened.Load(), time.Since(openStart).Round(time.Millisecond))
	go func() { wg.Wait(); close(done) }()
	during := readLoad(ctx, client, readURL, tok, o.readers, done)
	cutsMetric, metricErr := scrapeCuts(client, base, "body")
	rss := peakRSS(cmd.Process.Pid)

	r := summarize(o, results, baseline, during, cutsMetric, metricErr, rss)
	if _, err := io.WriteString(out, r.markdown()); err != nil {
		return err
	}
	if !r.pass {
		return errors.New("a budget failed")
	}
	return nil
}

// slowResult is one slow-body connection.
type slowResult struct {
	err      error         // could not connect or send the headers
	cut      time.Duration // headers sent → connection closed by memoryd
	answered bool          // a 408 arrived before the close
	status   string        // the status line, when an answer arrived
	open     bool          // still open when the client gave up
}

// slowConn sends a propose's headers with a Content-Length from src, then
// one body byte every interval, and waits for memoryd to close the
// connection (at most limit). connected is called once the headers are
// sent (or the attempt failed).
func slowConn(src net.IP, addr, tok string, interval, limit time.Duration, connected func()) slowResult {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: src}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		connected()
		return slowResult{err: err}
	}
	defer func() { _ = c.Close() }()
	head := "POST /memory/propose HTTP/1.1\r\nHost: memoryd\r\nAuthorization: Bearer " + tok +
		"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
	_, err = io.WriteString(c, head)
	start := time.Now()
	connected()
	if err != nil {
		return slowResult{err: err}
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if _, err := io.WriteString(c, " "); err != nil {
					return
				}
			}
		}
	}()
	_ = c.SetReadDeadline(start.Add(limit))
	br := bufio.NewReader(c)
	line, _ := br.ReadString('\n')
	_, err = io.Copy(io.Discard, br)
	r := slowResult{cut: time.Since(start), status: strings.TrimSpace(line)}
	r.answered = strings.HasPrefix(line, "HTTP/1.1 408 ")
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		r.open = true
	}
	return r
}

// latencies of one read phase.
type readPhase struct {
	ok, failed int
	firstErr   string
	lat        []time.Duration
	took       time.Duration
}

func (p readPhase) pct(q float64) float64 {
	if len(p.lat) == 0 {
		return 0
	}
	return ms(p.lat[min(len(p.lat)-1, int(q*float64(len(p.lat))))])
}

// readLoad reads url with n closed-loop workers until stop closes.
func readLoad(ctx context.Context, client *http.Client, url, tok string, n int, stop <-chan struct{}) readPhase {
	var (
		mu    sync.Mutex
		phase readPhase
		wg    sync.WaitGroup
	)
	start := time.Now()
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				t0 := time.Now()
				resp, err := client.Do(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
					if err == nil && resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				d := time.Since(t0)
				mu.Lock()
				if err != nil {
					phase.failed++
					if phase.firstErr == "" {
						phase.firstErr = err.Error()
					}
				} else {
					phase.ok++
					phase.lat = append(phase.lat, d)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	phase.took = time.Since(start)
	slices.Sort(phase.lat)
	return phase
}

// slowReport is the benchmark's result.
type slowReport struct {
	o                    slowClientsOptions
	connected, failed    int
	firstErr             string
	answered, closedOnly int
	stillOpen            int
	cutMedian, cutP95    time.Duration
	cutMin, cutMax       time.Duration
	baseline, during     readPhase
	metric               int
	metricErr            error
	rssMB                float64
	budgets              []string
	pass                 bool
}

func summarize(o slowClientsOptions, results []slowResult, baseline, during readPhase, metric int, metricErr error, rssMB float64) slowReport {
	r := slowReport{o: o, baseline: baseline, during: during, metric: metric, metricErr: metricErr, rssMB: rssMB, pass: true}
	var cuts []time.Duration
	for _, s := range results {
		switch {
		case s.err != nil:
			r.failed++
			if r.firstErr == "" {
				r.firstErr = s.err.Error()
			}
			continue
		case s.open:
			r.stillOpen++
		case s.answered:
			r.answered++
		default:
			r.closedOnly++
		}
		r.connected++
		if !s.open {
			cuts = append(cuts, s.cut)
		}
	}
	slices.Sort(cuts)
	if len(cuts) > 0 {
		r.cutMin, r.cutMax = cuts[0], cuts[len(cuts)-1]
		r.cutMedian, r.cutP95 = cuts[len(cuts)/2], cuts[min(len(cuts)-1, len(cuts)*95/100)]
	}
	budget := func(ok bool, name, value string) {
		status := "PASS"
		if !ok {
			status, r.pass = "FAIL", false
		}
		r.budgets = append(r.budgets, fmt.Sprintf("- %s %s: %s", status, name, value))
	}
	limit := o.bodyTimeout + o.margin
	budget(r.failed == 0 && r.stillOpen == 0 && r.cutMax <= limit,
		fmt.Sprintf("%s slow-body connections all cut within --http-body-timeout %s + %s", commas(o.conns), o.bodyTimeout, o.margin),
		fmt.Sprintf("%d cut, max %s, %d still open, %d not connected", len(cuts), r.cutMax.Round(time.Millisecond), r.stillOpen, r.failed))
	budget(during.ok > 0 && during.failed == 0 && during.pct(0.95) < 5,
		"ReadMemory REST p95 < 5 ms while they are held",
		fmt.Sprintf("%.2f ms over %d reads (%d failed; baseline %.2f ms)", during.pct(0.95), during.ok, during.failed, baseline.pct(0.95)))
	budget(metricErr == nil && metric == len(cuts),
		`every cut counted in memory_http_slow_client_cuts_total{kind="body"}`,
		fmt.Sprintf("%d counted, %d cut", metric, len(cuts)))
	return r
}

func (r slowReport) markdown() string {
	var b strings.Builder
	o := r.o
	fmt.Fprintf(&b, "# membench slowclients\n\n")
	fmt.Fprintf(&b, "memoryd --target=all, --http-body-timeout %s (other limits at their defaults); %s connections from %d loopback addresses, "+
		"each a POST /memory/propose with Content-Length: 1000 sending one body byte every %s; %d ReadMemory REST readers.\n\n",
		o.bodyTimeout, commas(o.conns), o.sources, o.interval, o.readers)
	fmt.Fprintf(&b, "| slow connections | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| connected / failed to connect | %d / %d |\n", r.connected, r.failed)
	fmt.Fprintf(&b, "| answered 408 then closed / closed without an answer / still open | %d / %d / %d |\n", r.answered, r.closedOnly, r.stillOpen)
	fmt.Fprintf(&b, "| cut after (headers → close): min / median / p95 / max | %s / %s / %s / %s (timeout %s) |\n",
		r.cutMin.Round(time.Millisecond), r.cutMedian.Round(time.Millisecond), r.cutP95.Round(time.Millisecond), r.cutMax.Round(time.Millisecond), o.bodyTimeout)
	metric := strconv.Itoa(r.metric)
	if r.metricErr != nil {
		metric = r.metricErr.Error()
	}
	fmt.Fprintf(&b, "| memory_http_slow_client_cuts_total{kind=\"body\"} | %s |\n", metric)
	fmt.Fprintf(&b, "| memoryd peak RSS (VmHWM) | %.0f MB |\n\n", r.rssMB)
	fmt.Fprintf(&b, "| ReadMemory REST (basic) | reads | failed | p50 ms | p95 ms | p99 ms | max ms |\n|---|---|---|---|---|---|---|\n")
	for _, p := range []struct {
		name  string
		phase readPhase
	}{{"baseline", r.baseline}, {"while slow clients are held", r.during}} {
		mx := 0.0
		if n := len(p.phase.lat); n > 0 {
			mx = ms(p.phase.lat[n-1])
		}
		fmt.Fprintf(&b, "| %s (%s) | %d | %d | %.2f | %.2f | %.2f | %.2f |\n", p.name, p.phase.took.Round(100*time.Millisecond),
			p.phase.ok, p.phase.failed, p.phase.pct(0.5), p.phase.pct(0.95), p.phase.pct(0.99), mx)
	}
	if r.firstErr != "" {
		fmt.Fprintf(&b, "\nfirst connection error: %s\n", r.firstErr)
	}
	if r.during.firstErr != "" {
		fmt.Fprintf(&b, "\nfirst read error: %s\n", r.during.firstErr)
	}
	b.WriteString("\n## Budgets\n\n")
	for _, l := range r.budgets {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// seedAgent proposes a fact for agent (auto-approved) and waits until its
// memory reads back.
func seedAgent(ctx context.Context, client *http.Client, base, tok, agent string) error {
	body := `{"runId":"run_slowclients","updates":[{"file":"facts.md","operation":"append","section":"Bench","content":"- slow clients are cut"}],"reasoning":"membench slowclients"}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/memory/"+agent+"/propose", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	raw, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("propose: %d %s", resp.StatusCode, raw)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/memory/"+agent+"/read?mode=basic", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("agent %s did not become readable", agent)
}

func waitHealthy(ctx context.Context, client *http.Client, base string, exited <-chan struct{}) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("memoryd exited before serving")
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if resp, err := client.Get(base + "/health"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("memoryd did not become healthy within 60 s")
}

// scrapeCuts reads memory_http_slow_client_cuts_total{kind} from /metrics.
func scrapeCuts(client *http.Client, base, kind string) (int, error) {
	resp, err := client.Get(base + "/metrics")
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	m := regexp.MustCompile(`(?m)^memory_http_slow_client_cuts_total\{[^}]*kind="` + kind + `"[^}]*\} (\d+)$`).FindSubmatch(raw)
	if m == nil {
		return 0, nil
	}
	return strconv.Atoi(string(m[1]))
}

// peakRSS is a process's VmHWM in MB (0 when unknown).
func peakRSS(pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// raiseNoFile raises this process's soft open-files limit to at least
// need (within the hard limit; Go already raises it to the hard limit on
// Linux, this says so when that is not enough).
func raiseNoFile(need uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	if lim.Cur >= need {
		return nil
	}
	if lim.Max < need {
		return fmt.Errorf("open-files limit %d (hard) is below the %d needed: raise ulimit -n", lim.Max, need)
	}
	lim.Cur = need
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
}

func freeLoopback() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

func timeoutChan(d time.Duration) <-chan struct{} {
	c := make(chan struct{})
	time.AfterFunc(d, func() { close(c) })
	return c
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
