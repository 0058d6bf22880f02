package benchharness

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// profileScenario takes a CPU profile of every memoryd process while a
// scenario runs (GET /debug/pprof/profile with an admin token) and writes
// <dir>/<run>-<scenario>-<process>.pprof. It returns a wait for the files;
// failures are logged, never fatal: profiles are a diagnosis aid.
func (h *harness) profileScenario(ctx context.Context, d *deployment, run, scenario string, length time.Duration) func() {
	if h.opts.ProfileDir == "" {
		return func() {}
	}
	var wg sync.WaitGroup
	for _, p := range d.procs {
		name := fmt.Sprintf("%s-%s-%s.pprof", slug(run), slug(scenario), p.name)
		wg.Go(func() {
			secs := max(1, int(length.Round(time.Second)/time.Second))
			if err := fetchProfile(ctx, p.httpAddr, d.adminToken, fmt.Sprintf("profile?seconds=%d", secs), filepath.Join(h.opts.ProfileDir, name)); err != nil {
				h.logf("warning: profile %s: %v", name, err)
			}
		})
	}
	return wg.Wait
}

// profileColdStart takes a CPU profile of the first Options.ColdProfile of
// every process's start (from when it answers /health), then a heap profile.
func (h *harness) profileColdStart(ctx context.Context, d *deployment, run string) func() {
	if h.opts.ProfileDir == "" {
		return func() {}
	}
	var wg sync.WaitGroup
	for _, p := range d.procs {
		name := fmt.Sprintf("%s-cold-start-%s.pprof", slug(run), p.name)
		wg.Go(func() {
			for deadline := time.Now().Add(10 * time.Second); !healthOK(ctx, http.DefaultClient, "http://"+p.httpAddr+"/health"); {
				if time.Now().After(deadline) {
					h.logf("warning: profile %s: /health never answered", name)
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
			query := fmt.Sprintf("profile?seconds=%d", max(1, int(h.opts.ColdProfile/time.Second)))
			if err := fetchProfile(ctx, p.httpAddr, d.adminToken, query, filepath.Join(h.opts.ProfileDir, name)); err != nil {
				h.logf("warning: profile %s: %v", name, err)
			}
			heap := fmt.Sprintf("%s-cold-start-heap-%s.pprof", slug(run), p.name)
			if err := fetchProfile(ctx, p.httpAddr, d.adminToken, "heap", filepath.Join(h.opts.ProfileDir, heap)); err != nil {
				h.logf("warning: profile %s: %v", heap, err)
			}
		})
	}
	return wg.Wait
}

// heapProfiles writes every memoryd's heap profile after run.
func (h *harness) heapProfiles(ctx context.Context, d *deployment, run string) {
	if h.opts.ProfileDir == "" {
		return
	}
	for _, p := range d.procs {
		name := fmt.Sprintf("%s-heap-%s.pprof", slug(run), p.name)
		if err := fetchProfile(ctx, p.httpAddr, d.adminToken, "heap", filepath.Join(h.opts.ProfileDir, name)); err != nil {
			h.logf("warning: profile %s: %v", name, err)
		}
	}
}

// fetchProfile GETs /debug/pprof/<query> into path.
func fetchProfile(ctx context.Context, addr, token, query, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/debug/pprof/%s", addr, query), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close() // the copy's error is the one to report
		return err
	}
	return f.Close()
}

// slug makes a file-name piece of a run or scenario name.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}
