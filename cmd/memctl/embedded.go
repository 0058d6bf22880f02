package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/garden-bloom/memory/cmd/memoryd/app"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/telemetry"
)

// The embedded store (--data-dir DIR): DIR is an ordinary memoryd data dir
// (memory.git, objects/, auth.secret, …). For the duration of one command
// memctl runs the whole suite (--target=all) inside its own process on
// loopback ports chosen by the kernel, talks to it over gRPC like to any
// server, and stops it gracefully at the end. Nothing listens once the
// command has returned, and the folder can later be served by a real
// memoryd (memoryd --data-dir DIR) unchanged.

// embeddedConfigName is the memoryd config file of an embedded store,
// written by `memctl init` and read by every later command (memoryd's own
// YAML format: flag names as keys).
const embeddedConfigName = "memoryd.yaml"

// embeddedConfig is what init writes: a single user's local store
// applies what they propose without a reviewer.
const embeddedConfig = `# memoryd settings of this embedded store (memctl --data-dir); keys are memoryd flags.
# memctl always listens on loopback ports of its own choosing.
auto-approve-default: true
log-level: warn
`

// initDataDir creates DIR and its memoryd.yaml unless they exist.
func initDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("--data-dir: %w", err)
	}
	path := filepath.Join(dir, embeddedConfigName)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := os.WriteFile(path, []byte(embeddedConfig), 0o600); err != nil {
		return fmt.Errorf("--data-dir: %w", err)
	}
	return nil
}

// embedded is a memoryd running inside memctl.
type embedded struct {
	addr   string
	token  string
	cancel context.CancelFunc
	done   chan error
}

// startEmbedded runs memoryd --target=all on dir and waits until it is
// ready; its token (every role, every agent) is signed with dir's secret.
func startEmbedded(ctx context.Context, dir string) (*embedded, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("--data-dir: %w", err)
	}
	args := []string{"--data-dir", dir, "--target", "all", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}
	cfgPath := filepath.Join(dir, embeddedConfigName)
	if _, err := os.Stat(cfgPath); err == nil {
		args = append(args, "--config", cfgPath)
	} else if errors.Is(err, fs.ErrNotExist) {
		args = append(args, "--auto-approve-default", "--log-level", "warn")
	}
	// The environment is not read: MEMORYD_* variables meant for a server
	// on this machine must not change (or move) the embedded one.
	cfg, flags, err := app.LoadConfig(args, func(string) (string, bool) { return "", false })
	if err != nil {
		return nil, fmt.Errorf("embedded memoryd: %w", err)
	}
	secret, err := auth.LoadOrCreateSecret(cfg.SecretPath())
	if err != nil {
		return nil, fmt.Errorf("embedded memoryd: %w", err)
	}
	signer, err := auth.NewSigner(secret, cfg.Auth.SignerOptions()...)
	if err != nil {
		return nil, fmt.Errorf("embedded memoryd: %w", err)
	}
	token, err := signer.Mint("memctl-embedded", []auth.Role{auth.RoleAdmin, auth.RoleReviewer, auth.RoleService, auth.RoleAgent},
		[]string{auth.AllAgents}, 24*time.Hour)
	if err != nil {
		return nil, fmt.Errorf("embedded memoryd: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	a, err := app.New(runCtx, cfg, flags, telemetry.NewLogger(io.Discard, slog.LevelError))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("embedded memoryd on %s: %w", dir, err)
	}
	e := &embedded{addr: a.GRPCAddr(), token: token, cancel: cancel, done: make(chan error, 1)}
	go func() { e.done <- a.Run(runCtx) }()
	if err := e.ready(ctx, a.HTTPAddr()); err != nil {
		_ = e.stop()
		return nil, err
	}
	return e, nil
}

// ready waits for GET /health to answer 200: every module started and the
// read plane caught up with the repository.
func (e *embedded) ready(ctx context.Context, httpAddr string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/health", http.NoBody)
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-e.done:
			e.done <- err
			return fmt.Errorf("embedded memoryd stopped while starting: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("embedded memoryd did not become ready: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop shuts memoryd down gracefully and waits for it.
func (e *embedded) stop() error {
	e.cancel()
	select {
	case err := <-e.done:
		if err != nil {
			return fmt.Errorf("embedded memoryd: %w", err)
		}
		return nil
	case <-time.After(time.Minute):
		return errors.New("embedded memoryd did not stop within a minute")
	}
}
