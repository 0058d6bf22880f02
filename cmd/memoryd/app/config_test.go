package app

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func env(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

func TestLoadConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "memoryd.yaml")
	require.NoError(t, os.WriteFile(file, []byte("data-dir: /from/file\ngrpc-addr: 127.0.0.1:7000\nhttp-addr: 127.0.0.1:7001\nshutdown-timeout: 3s\n"), 0o600))

	tests := []struct {
		name                            string
		args                            []string
		env                             map[string]string
		wantDataDir, wantGRPC, wantHTTP string
		wantShutdown                    time.Duration
	}{
		{name: "defaults", wantDataDir: "./data", wantGRPC: "127.0.0.1:9090", wantHTTP: "127.0.0.1:8080", wantShutdown: 15 * time.Second},
		{name: "file over defaults", args: []string{"--config", file},
			wantDataDir: "/from/file", wantGRPC: "127.0.0.1:7000", wantHTTP: "127.0.0.1:7001", wantShutdown: 3 * time.Second},
		{name: "env over file", args: []string{"--config", file}, env: map[string]string{"MEMORYD_DATA_DIR": "/from/env"},
			wantDataDir: "/from/env", wantGRPC: "127.0.0.1:7000", wantHTTP: "127.0.0.1:7001", wantShutdown: 3 * time.Second},
		{name: "flag over env and file", args: []string{"--config", file, "--data-dir", "/from/flag", "--grpc-addr=127.0.0.1:1"},
			env:         map[string]string{"MEMORYD_DATA_DIR": "/from/env", "MEMORYD_GRPC_ADDR": "127.0.0.1:2"},
			wantDataDir: "/from/flag", wantGRPC: "127.0.0.1:1", wantHTTP: "127.0.0.1:7001", wantShutdown: 3 * time.Second},
		{name: "config file from env", env: map[string]string{"MEMORYD_CONFIG": file},
			wantDataDir: "/from/file", wantGRPC: "127.0.0.1:7000", wantHTTP: "127.0.0.1:7001", wantShutdown: 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, err := LoadConfig(tt.args, env(tt.env))
			require.NoError(t, err)
			require.Equal(t, tt.wantDataDir, cfg.Storage.DataDir)
			require.Equal(t, tt.wantGRPC, cfg.Server.GRPCAddr)
			require.Equal(t, tt.wantHTTP, cfg.Server.HTTPAddr)
			require.Equal(t, tt.wantShutdown, cfg.Server.ShutdownTimeout)
		})
	}
}

func TestLoadConfigErrors(t *testing.T) {
	dir := t.TempDir()
	typo := filepath.Join(dir, "typo.yaml")
	require.NoError(t, os.WriteFile(typo, []byte("data_dir: /x\n"), 0o600))
	nested := filepath.Join(dir, "nested.yaml")
	require.NoError(t, os.WriteFile(nested, []byte("data-dir:\n  a: b\n"), 0o600))

	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{"unknown target", []string{"--target", "reader"}, nil, `unknown target "reader"`},
		{"unknown yaml key", []string{"--config", typo}, nil, `unknown key "data_dir"`},
		{"nested yaml value", []string{"--config", nested}, nil, "must be a scalar"},
		{"missing config file", []string{"--config", filepath.Join(dir, "nope.yaml")}, nil, "no such file"},
		{"bad env duration", nil, map[string]string{"MEMORYD_SHUTDOWN_TIMEOUT": "soon"}, "shutdown-timeout"},
		{"bad address", []string{"--grpc-addr", "nohost"}, nil, "--grpc-addr"},
		{"edge without peer", []string{"--target", "gateway"}, nil, "--proposal-apply-addr"},
		{"read without write peer", []string{"--target", "read"}, nil, "set --proposal-apply-addr"},
		{"stray argument", []string{"serve"}, nil, "unexpected arguments"},
		{"git credentials on the read plane", []string{"--target", "read", "--proposal-apply-addr", "127.0.0.1:1", "--git-remote-url", "https://git.example.org/m.git"}, nil, "must not be given --git-remote-url"},
		{"git credentials file on search-index", []string{"--target", "search-index", "--git-credentials-file", "/run/secrets/git"}, nil, "must not be given"},
		{"credentials without remote", []string{"--git-credentials-file", "/run/secrets/git"}, nil, "needs --git-remote-url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := LoadConfig(tt.args, env(tt.env))
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestParseTarget(t *testing.T) {
	tests := []struct {
		target string
		want   Modules
	}{
		{"all", Modules{ModuleProposalApply, ModuleEntityGraph, ModuleSearchIndex, ModuleContextAssembly, ModuleGateway, ModuleMCP, ModuleConsole}},
		{"read", Modules{ModuleEntityGraph, ModuleSearchIndex, ModuleContextAssembly, ModuleGateway, ModuleMCP, ModuleConsole}},
		{"mcp", Modules{ModuleMCP}},
		{"console", Modules{ModuleConsole}},
		{"write", Modules{ModuleProposalApply}},
		{"gateway, search-index", Modules{ModuleSearchIndex, ModuleGateway}},
		{"write,read", Modules{ModuleProposalApply, ModuleEntityGraph, ModuleSearchIndex, ModuleContextAssembly, ModuleGateway, ModuleMCP, ModuleConsole}},
		{"entity-graph,entity-graph", Modules{ModuleEntityGraph}},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			got, err := ParseTarget(tt.target)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
	_, err := ParseTarget("")
	require.Error(t, err)
}

func TestRedact(t *testing.T) {
	require.Equal(t, "https://***@git.example.org/m.git", redact("https://user:secret@git.example.org/m.git"))
	require.Equal(t, "./data", redact("./data"))
}

func TestEnvName(t *testing.T) {
	require.Equal(t, "MEMORYD_PROPOSAL_APPLY_ADDR", EnvName("proposal-apply-addr"))
}
