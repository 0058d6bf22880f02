package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"
)

// defaultAddr is memoryd's default --grpc-addr (cmd/memoryd/app/config.go).
const defaultAddr = "127.0.0.1:9090"

// Environment variables memctl reads.
const (
	envAddr    = "MEMCTL_ADDR"
	envToken   = "MEMCTL_TOKEN"
	envDataDir = "MEMCTL_DATA_DIR"
	envConfig  = "MEMCTL_CONFIG"
	envAgent   = "MEMCTL_AGENT"
)

// fileConfig is the config file `memctl login` writes (mode 0600: it holds
// a bearer token).
type fileConfig struct {
	Addr    string `yaml:"addr,omitempty"`
	Token   string `yaml:"token,omitempty"`
	DataDir string `yaml:"data_dir,omitempty"`
	TLS     bool   `yaml:"tls,omitempty"`
	TLSCA   string `yaml:"tls_ca,omitempty"`
	// Agent is the default agent of commands that take --agent (ingest,
	// search, export-onboarding, mcp); init sets it when none is set.
	Agent string `yaml:"agent,omitempty"`
}

// configPath is where the config file lives: --config, else $MEMCTL_CONFIG,
// else <user config dir>/memctl/config.yaml.
func configPath(flagValue string, lookupEnv func(string) (string, bool)) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if v, ok := lookupEnv(envConfig); ok && v != "" {
		return v, nil
	}
	// os.UserConfigDir reads the process environment; the same rule with
	// lookupEnv keeps in-process runs (tests) away from the real home.
	if v, ok := lookupEnv("XDG_CONFIG_HOME"); ok && filepath.IsAbs(v) {
		return filepath.Join(v, "memctl", "config.yaml"), nil
	}
	if v, ok := lookupEnv("HOME"); ok && v != "" {
		return filepath.Join(v, ".config", "memctl", "config.yaml"), nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no config file location: set %s or --config: %w", envConfig, err)
	}
	return filepath.Join(dir, "memctl", "config.yaml"), nil
}

// loadConfig reads the config file; a missing file is an empty config.
func loadConfig(path string) (fileConfig, error) {
	var c fileConfig
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("reading config %s: %w", path, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// saveConfig writes c to path with mode 0600 (its folder 0700), replacing
// the file atomically; an existing file gets mode 0600 too.
func saveConfig(path string, c fileConfig) error {
	b, err := yaml.Marshal(c)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating config folder: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*.yaml")
	if err != nil {
		return fmt.Errorf("writing config: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("writing config: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("writing config: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing config: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing config: %w", err)
	}
	return nil
}

// target is where commands go, resolved from flags, environment and the
// config file (in that order of precedence).
type target struct {
	// Addr is the gRPC address of a memoryd (remote mode).
	Addr string
	// DataDir, when set, is an embedded store: memoryd runs inside memctl
	// for the duration of the command.
	DataDir string
	Token   string
	TLS     bool
	TLSCA   string
	// From says where Addr or DataDir came from ("flag", "env", "config"
	// or "default"), for `memctl status` and error messages.
	From string
}

// settingLevel is one source of settings, from the highest precedence down.
type settingLevel struct {
	name                  string
	addr, token, dataDir  string
	tls                   *bool
	tlsCA                 string
	addrSet, tokenSet, ds bool
}

// resolveTarget applies the precedence flag > env > config file > default:
// the first level that names a server (--addr) or a store (--data-dir)
// decides the mode; naming both on one level is a usage error. The token
// is taken the same way, independently.
func resolveTarget(levels []settingLevel) (target, error) {
	var t target
	decided := false
	for _, l := range levels {
		if l.addrSet && l.ds {
			return t, usagef("%s sets both an address and a data dir: pick one", l.name)
		}
		if !decided && (l.addrSet || l.ds) {
			t.Addr, t.DataDir, t.From, decided = l.addr, l.dataDir, l.name, true
		}
	}
	if !decided {
		t.Addr, t.From = defaultAddr, "default"
	}
	for _, l := range levels {
		if l.tokenSet {
			t.Token = l.token
			break
		}
	}
	for _, l := range levels {
		if l.tls != nil {
			t.TLS = *l.tls
			break
		}
	}
	for _, l := range levels {
		if l.tlsCA != "" {
			t.TLSCA = l.tlsCA
			t.TLS = true
			break
		}
	}
	return t, nil
}
