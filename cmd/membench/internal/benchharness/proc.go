package benchharness

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// BuildMemoryd builds cmd/memoryd into dir and returns the binary's path.
func BuildMemoryd(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "memoryd")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/garden-bloom/memory/cmd/memoryd")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build memoryd: %w\n%s", err, out)
	}
	return bin, nil
}

// process is one running memoryd.
type process struct {
	name     string // "all", "write", "read", "harness"
	pid      int
	cmd      *exec.Cmd // nil for the harness itself
	grpcAddr string
	httpAddr string
	logPath  string
	started  time.Time
	done     chan struct{} // closed when the process has exited
	exitErr  error

	mu sync.Mutex
	// peakRSS is the largest VmHWM seen before a peak reset.
	peakRSS int64
	// killed says why the harness killed the process, if it did.
	killed string
}

// freeAddr returns a loopback address nothing listens on right now.
func freeAddr() (string, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := lis.Addr().String()
	return addr, lis.Close()
}

// startProcess starts memoryd with args; its log goes to <logDir>/<name>.log.
func startProcess(bin, name, logDir string, args []string) (*process, error) {
	p := &process{name: name, logPath: filepath.Join(logDir, name+".log"), done: make(chan struct{})}
	for i, a := range args {
		switch a {
		case "--grpc-addr":
			p.grpcAddr = args[i+1]
		case "--http-addr":
			p.httpAddr = args[i+1]
		}
	}
	// Appending: a restarted process continues its log.
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT=")
	if err := p.cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("start memoryd %s: %w", name, err)
	}
	p.pid, p.started = p.cmd.Process.Pid, time.Now()
	go func() {
		p.exitErr = p.cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	return p, nil
}

// stop sends SIGTERM and waits (then kills) the process.
func (p *process) stop(timeout time.Duration) error {
	if p == nil || p.cmd == nil || p.cmd.Process == nil {
		return nil
	}
	if err := p.alive(); err != nil {
		return err
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("memoryd %s did not stop on SIGTERM within %s; killed", p.name, timeout)
	}
}

// guardRSS kills p (SIGKILL) if its RSS goes over limit bytes, so a
// runaway process cannot take the machine down; it stops with ctx.
func (p *process) guardRSS(ctx context.Context, limit int64) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.done:
			return
		case <-t.C:
		}
		s, err := p.sample()
		if err == nil && s.rss > limit {
			p.mu.Lock()
			p.peakRSS = max(p.peakRSS, s.rss) // reported after the kill
			p.killed = fmt.Sprintf("killed by the harness: RSS %.0f MB over --max-rss-mb %.0f", mb(s.rss), mb(limit))
			p.mu.Unlock()
			_ = p.cmd.Process.Kill()
			return
		}
	}
}

// memTotal is the machine's memory in bytes (0 if unknown).
func memTotal() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// self is the harness's own process, measured like memoryd's: it shares
// the machine's cores with them.
var self = &process{name: "harness", pid: os.Getpid()}

// alive reports an error if the process has exited.
func (p *process) alive() error {
	if p.cmd == nil {
		return nil
	}
	select {
	case <-p.done:
		err := p.exitErr
		p.mu.Lock()
		killed := p.killed
		p.mu.Unlock()
		if killed != "" {
			return fmt.Errorf("memoryd %s: %s", p.name, killed)
		}
		return fmt.Errorf("memoryd %s exited: %w; log tail:\n%s", p.name, err, p.logTail(20))
	default:
		return nil
	}
}

// logTail returns the last n lines of the process's log.
func (p *process) logTail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ProcStats are one process's resource figures over a scenario.
type ProcStats struct {
	Process    string  `json:"process"`
	CPUSeconds float64 `json:"cpuSeconds"`
	// CPUCores is CPUSeconds over the scenario's wall time.
	CPUCores float64 `json:"cpuCores"`
	RSSMB    float64 `json:"rssMB"`
	PeakMB   float64 `json:"peakRssMB"`
}

// procSample is a reading of /proc/<pid>.
type procSample struct {
	cpu      float64 // utime+stime, seconds
	rss, hwm int64   // bytes
	// anon and file split rss: anonymous memory (heap, stacks) and mapped
	// files (the search index segments, which the kernel may drop).
	anon, file int64
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

func (p *process) sample() (procSample, error) {
	pid := p.pid
	var s procSample
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// Fields after the command (which may hold spaces) in parentheses.
	rest := stat[bytes.LastIndexByte(stat, ')')+2:]
	f := strings.Fields(string(rest))
	if len(f) < 13 {
		return s, errors.New("short /proc stat")
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	s.cpu = (ut + st) / clockTicks
	status, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	defer func() { _ = status.Close() }() // read only
	sc := bufio.NewScanner(status)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			s.rss = kb << 10
		case "VmHWM":
			s.hwm = kb << 10
		case "RssAnon":
			s.anon = kb << 10
		case "RssFile":
			s.file = kb << 10
		}
	}
	p.mu.Lock()
	p.peakRSS = max(p.peakRSS, s.hwm)
	p.mu.Unlock()
	return s, nil
}

// resetPeak starts a new VmHWM period (clear_refs 5); the lifetime peak
// stays in p.peakRSS. It is best effort.
func (p *process) resetPeak() {
	if _, err := p.sample(); err != nil {
		return
	}
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.pid), []byte("5"), 0)
}

// rss returns the current RSS and the lifetime peak, in MB.
func (p *process) rss() (float64, float64) {
	s, err := p.sample()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		return 0, mb(p.peakRSS)
	}
	return mb(s.rss), mb(p.peakRSS)
}

// rssSplit returns the current anonymous and file-backed RSS, in MB.
func (p *process) rssSplit() (anon, file float64) {
	s, err := p.sample()
	if err != nil {
		return 0, 0
	}
	return mb(s.anon), mb(s.file)
}

// meter measures processes over a period.
type meter struct {
	procs []*process
	start []procSample
	t0    time.Time
}

func startMeter(procs []*process) *meter {
	m := &meter{procs: procs, t0: time.Now()}
	for _, p := range procs {
		p.resetPeak()
		s, _ := p.sample()
		m.start = append(m.start, s)
	}
	return m
}

func (m *meter) stop() []ProcStats {
	wall := time.Since(m.t0).Seconds()
	var out []ProcStats
	for i, p := range m.procs {
		s, err := p.sample()
		if err != nil {
			continue
		}
		cpu := s.cpu - m.start[i].cpu
		out = append(out, ProcStats{Process: p.name, CPUSeconds: round3(cpu), CPUCores: round3(cpu / wall),
			RSSMB: mb(s.rss), PeakMB: mb(s.hwm)})
	}
	return out
}

// waitIdle waits until every process uses less than 0.15 cores over a
// second (background work after catching up: index merges, snapshots, GC),
// at most max, and returns how long that took.
func waitIdle(ctx context.Context, procs []*process, max time.Duration) time.Duration {
	start := time.Now()
	for time.Since(start) < max && ctx.Err() == nil {
		before := make([]float64, len(procs))
		for i, p := range procs {
			s, _ := p.sample()
			before[i] = s.cpu
		}
		time.Sleep(time.Second)
		idle := true
		for i, p := range procs {
			s, err := p.sample()
			if err == nil && s.cpu-before[i] >= 0.15 {
				idle = false
			}
		}
		if idle {
			break
		}
	}
	return time.Since(start)
}

func mb(b int64) float64 { return round3(float64(b) / (1 << 20)) }
