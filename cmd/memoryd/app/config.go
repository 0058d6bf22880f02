package app

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/grpcserver"
	"github.com/garden-bloom/memory/pkg/httplimit"
	"github.com/garden-bloom/memory/pkg/membudget"
	"github.com/garden-bloom/memory/pkg/ratelimit"
	"github.com/garden-bloom/memory/services/console"
	"github.com/garden-bloom/memory/services/contextassembly"
	"github.com/garden-bloom/memory/services/gateway"
	"github.com/garden-bloom/memory/services/proposalapply"
	"github.com/garden-bloom/memory/services/searchindex"
)

// EnvPrefix prefixes the environment variable of every flag:
// --data-dir is MEMORYD_DATA_DIR.
const EnvPrefix = "MEMORYD_"

// Config is memoryd's whole configuration, one struct per concern.
// Precedence: defaults < YAML file (--config) < environment < flags.
type Config struct {
	Target     string
	ConfigFile string
	LogLevel   string

	// MemoryBudget is the bytes the process's caches share
	// (--memory-budget, membudget).
	MemoryBudget int64

	Storage       StorageConfig
	Server        ServerConfig
	Peers         PeersConfig
	Auth          AuthConfig
	RateLimit     ratelimit.Config
	HTTP          httplimit.Config  // --http-* timeouts and connection cap
	GRPC          grpcserver.Limits // --grpc-max-* connection limits
	Gateway       gateway.Config
	Console       console.Config
	Retrieval     contextassembly.Retrieval
	ProposalApply proposalapply.Config
	FactTTL       proposalapply.TTLConfig // --ttl-interval
	SearchIndex   searchindex.Config
}

// StorageConfig says where the embedded default keeps its state.
type StorageConfig struct {
	DataDir string
	// MirrorURL, for a read plane on another host than the writer: keep a
	// read-only mirror of this remote instead of opening memory.git. The
	// write plane serves one at http://<its --http-addr>/git/memory.git.
	MirrorURL  string
	MirrorPoll time.Duration
	// ObjectsURL is the object store: file:///path (default <data-dir>/objects)
	// or s3://bucket[/prefix]?endpoint=host:port&secure=false with
	// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY in the environment.
	ObjectsURL string
	// ReadStateEvery is how often a read replica publishes its entity graph
	// snapshot and a copy of its search index to the object store, so new
	// replicas start from them instead of all of history (0 = never).
	ReadStateEvery time.Duration
	// ReadStatePublishTimeout bounds the publish at shutdown (0:
	// readstate.StopTimeout, to fit a pod's grace period); not a flag:
	// the one-off job publish-read-state sets it (PublishReadState).
	ReadStatePublishTimeout time.Duration
}

// RegisterFlags adds the storage flags.
func (c *StorageConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.DataDir, "data-dir", "./data", "directory of the embedded default: memory.git, objects/, auth.secret")
	fs.StringVar(&c.MirrorURL, "repo-mirror-url", "", "read targets only: follow this remote in <data-dir>/mirror.git instead of opening <data-dir>/memory.git; "+
		"usually the write plane's read-only git endpoint http://<its --http-addr>/git/memory.git, fetched with short-lived service tokens signed with the shared auth secret "+
		"(only a URL ending in /git/memory.git is sent tokens), or any git remote the writer pushes to")
	fs.DurationVar(&c.MirrorPoll, "repo-mirror-poll", time.Second, "how often the mirror fetches from --repo-mirror-url")
	fs.DurationVar(&c.ReadStateEvery, "read-state-every", 10*time.Minute, "read targets: publish the entity graph snapshot and a copy of the search index to the object store this often (and at shutdown) when they moved, "+
		"so a replica starting with an empty data dir loads them and replays only newer commits (0 = never publish or load)")
	fs.StringVar(&c.ObjectsURL, "objects-url", "", "object store: file:///path (default <data-dir>/objects) or s3://bucket[/prefix]?endpoint=host:port&secure=false (credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)")
}

// RepoPath is the canonical bare repository.
func (c *StorageConfig) RepoPath() string { return filepath.Join(c.DataDir, "memory.git") }

// ReadRepoPath is the repository the read services open: the canonical one,
// or the mirror when --repo-mirror-url is set.
func (c *StorageConfig) ReadRepoPath() string {
	if c.MirrorURL != "" {
		return filepath.Join(c.DataDir, "mirror.git")
	}
	return c.RepoPath()
}

// ProposalIndexPath is the write plane's local proposal index: a view of
// the proposal log in the object store, rebuilt from it when missing.
func (c *StorageConfig) ProposalIndexPath() string { return filepath.Join(c.DataDir, "proposals.db") }

// ObjectsPath is the local object-store folder of the embedded default.
func (c *StorageConfig) ObjectsPath() string { return filepath.Join(c.DataDir, "objects") }

// Objects is the effective object-store URL.
func (c *StorageConfig) Objects() string {
	if c.ObjectsURL != "" {
		return c.ObjectsURL
	}
	return c.ObjectsPath()
}

// Validate checks the storage flags.
func (c *StorageConfig) Validate() error {
	if strings.TrimSpace(c.DataDir) == "" {
		return errors.New("--data-dir must not be empty")
	}
	if c.ReadStateEvery < 0 {
		return errors.New("--read-state-every must not be negative")
	}
	return nil
}

// ServerConfig holds the listeners and their limits.
type ServerConfig struct {
	GRPCAddr        string
	HTTPAddr        string
	MaxRecvMsgBytes int
	MaxSendMsgBytes int
	ShutdownTimeout time.Duration
}

// RegisterFlags adds the server flags.
func (c *ServerConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.GRPCAddr, "grpc-addr", "127.0.0.1:9090", "gRPC listen address of this process's services")
	fs.StringVar(&c.HTTPAddr, "http-addr", "127.0.0.1:8080", "HTTP listen address: REST edge (gateway target), read-only git endpoint /git/memory.git (proposal-apply), /health, /metrics, /status/config")
	fs.IntVar(&c.MaxRecvMsgBytes, "grpc-max-recv-bytes", 8<<20, "largest gRPC request message accepted")
	fs.IntVar(&c.MaxSendMsgBytes, "grpc-max-send-bytes", 16<<20, "largest gRPC response message sent")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 15*time.Second, "how long in-flight calls may drain on SIGTERM before they are cut")
}

// Validate checks the server flags.
func (c *ServerConfig) Validate() error {
	for name, addr := range map[string]string{"--grpc-addr": c.GRPCAddr, "--http-addr": c.HTTPAddr} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return fmt.Errorf("%s %q: %w", name, addr, err)
		}
	}
	if c.MaxRecvMsgBytes <= 0 || c.MaxSendMsgBytes <= 0 {
		return errors.New("--grpc-max-recv-bytes and --grpc-max-send-bytes must be positive")
	}
	if c.ShutdownTimeout <= 0 {
		return errors.New("--shutdown-timeout must be positive")
	}
	return nil
}

// PeersConfig gives the gRPC addresses of services this process does not run
// itself (split deployment). A service this process runs is reached through
// its own --grpc-addr, still over gRPC.
type PeersConfig struct {
	ContextAssemblyAddr string
	SearchIndexAddr     string
	EntityGraphAddr     string
	ProposalApplyAddr   string
}

// RegisterFlags adds the peer flags.
func (c *PeersConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.ContextAssemblyAddr, "context-assembly-addr", "", "gRPC address of context-assembly when this process does not run it")
	fs.StringVar(&c.SearchIndexAddr, "search-index-addr", "", "gRPC address of search-index when this process does not run it")
	fs.StringVar(&c.EntityGraphAddr, "entity-graph-addr", "", "gRPC address of entity-graph when this process does not run it")
	fs.StringVar(&c.ProposalApplyAddr, "proposal-apply-addr", "", "gRPC address of proposal-apply when this process does not run it")
}

// Addr returns the configured peer address of module m.
func (c *PeersConfig) Addr(m Module) string {
	switch m {
	case ModuleContextAssembly:
		return c.ContextAssemblyAddr
	case ModuleSearchIndex:
		return c.SearchIndexAddr
	case ModuleEntityGraph:
		return c.EntityGraphAddr
	case ModuleProposalApply:
		return c.ProposalApplyAddr
	}
	return ""
}

// AuthConfig configures bearer-token authentication.
type AuthConfig struct {
	SecretFile string
	// JWKSFile, when set, also accepts RS256/ES256 tokens of an external
	// issuer verified with the keys of this RFC 7517 JWK Set file.
	JWKSFile  string
	Issuer    string
	Audience  string
	ClockSkew time.Duration
}

// RegisterFlags adds the auth flags.
func (c *AuthConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.SecretFile, "auth-secret-file", "", "HS256 secret for bearer JWTs (default <data-dir>/auth.secret, generated with mode 0600 on first start); also signs the suite's own service tokens")
	fs.StringVar(&c.JWKSFile, "auth-jwks-file", "", "also accept RS256/ES256 tokens verified with the public keys of this JWK Set file ({\"keys\":[...]}, the kid header picks the key); re-read when it changes, so keys rotate without a restart")
	fs.StringVar(&c.Issuer, "auth-issuer", "", "when set, every token's iss must equal it (internal service tokens are minted with it)")
	fs.StringVar(&c.Audience, "auth-audience", "", "when set, every token's aud (string or array) must contain it (internal service tokens are minted with it)")
	fs.DurationVar(&c.ClockSkew, "auth-clock-skew", auth.DefaultLeeway, fmt.Sprintf("clock skew tolerated on exp, nbf and iat (at most %s)", auth.MaxLeeway))
}

// Validate checks the auth flags, including that --auth-jwks-file holds at
// least one usable key, so a bad key file stops the process at start.
func (c *AuthConfig) Validate() error {
	if c.ClockSkew < 0 || c.ClockSkew > auth.MaxLeeway {
		return fmt.Errorf("--auth-clock-skew %s: must be between 0 and %s", c.ClockSkew, auth.MaxLeeway)
	}
	if c.JWKSFile != "" {
		if _, err := auth.LoadJWKS(c.JWKSFile); err != nil {
			return fmt.Errorf("--auth-jwks-file: %w", err)
		}
	}
	return nil
}

// VerifierOptions configure the server's token verifier from the flags.
func (c *AuthConfig) VerifierOptions(logger *slog.Logger) []auth.VerifierOption {
	return []auth.VerifierOption{
		auth.WithLeeway(c.ClockSkew),
		auth.WithIssuer(c.Issuer),
		auth.WithAudience(c.Audience),
		auth.WithJWKSFile(c.JWKSFile),
		auth.WithLogger(logger),
	}
}

// SignerOptions configure the signer of internal service tokens, so they
// carry the iss and aud every verifier of the suite checks.
func (c *AuthConfig) SignerOptions() []auth.SignerOption {
	return []auth.SignerOption{auth.WithSignerIssuer(c.Issuer), auth.WithSignerAudience(c.Audience)}
}

// SecretPath is the effective secret file.
func (c *Config) SecretPath() string {
	if c.Auth.SecretFile != "" {
		return c.Auth.SecretFile
	}
	return filepath.Join(c.Storage.DataDir, "auth.secret")
}

// RegisterFlags adds every flag of the configuration to fs.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Target, "target", "all", "what this process runs: all | read | write | context-assembly | search-index | entity-graph | proposal-apply | gateway | mcp | console (comma lists allowed)")
	fs.StringVar(&c.ConfigFile, "config", "", "YAML file whose keys are flag names (e.g. data-dir: /var/lib/memoryd)")
	fs.StringVar(&c.LogLevel, "log-level", "info", "debug | info | warn | error")
	c.MemoryBudget = membudget.Default
	fs.Var((*byteSize)(&c.MemoryBudget), "memory-budget", "bytes every cache of this process shares (object, tree and commit caches, token counts, source texts, reads, verified tokens), in proportion to what each was measured to need: a number of bytes or with KiB, MiB, GiB")
	c.Storage.RegisterFlags(fs)
	c.Server.RegisterFlags(fs)
	c.Peers.RegisterFlags(fs)
	c.Auth.RegisterFlags(fs)
	c.RateLimit.RegisterFlags(fs)
	c.HTTP.RegisterFlags(fs)
	c.GRPC.RegisterFlags(fs)
	c.Gateway.RegisterFlags(fs)
	c.Console.RegisterFlags(fs)
	c.Retrieval.RegisterFlags(fs)
	c.ProposalApply.RegisterFlags(fs)
	c.FactTTL.RegisterFlags(fs)
	c.SearchIndex.RegisterFlags(fs)
}

// Validate checks the whole configuration, including that every service the
// REST edge routes to is either local or has a peer address.
func (c *Config) Validate() error {
	mods, err := ParseTarget(c.Target)
	if err != nil {
		return err
	}
	if err := c.Storage.Validate(); err != nil {
		return err
	}
	if err := c.Server.Validate(); err != nil {
		return err
	}
	if err := c.Auth.Validate(); err != nil {
		return err
	}
	if err := c.RateLimit.Validate(); err != nil {
		return err
	}
	if err := c.HTTP.Validate(); err != nil {
		return err
	}
	if err := c.GRPC.Validate(); err != nil {
		return err
	}
	if c.Storage.MirrorURL != "" && mods.Has(ModuleProposalApply) {
		return fmt.Errorf("--repo-mirror-url is for read targets; proposal-apply owns the canonical repository")
	}
	if c.Storage.MirrorPoll <= 0 {
		return errors.New("--repo-mirror-poll must be positive")
	}
	if mods.Has(ModuleProposalApply) {
		if err := c.ProposalApply.Validate(); err != nil {
			return err
		}
		if err := c.FactTTL.Validate(); err != nil {
			return err
		}
	} else if c.ProposalApply.GitRemoteURL != "" || c.ProposalApply.GitCredentialsFile != "" {
		// Only the write plane may hold git write credentials.
		return fmt.Errorf("target %q does not run proposal-apply: it must not be given --git-remote-url or --git-credentials-file", c.Target)
	}
	if mods.Has(ModuleSearchIndex) {
		if err := c.SearchIndex.Validate(); err != nil {
			return err
		}
		if c.SearchIndex.IndexDir == "" {
			c.SearchIndex.IndexDir = filepath.Join(c.Storage.DataDir, "search-index")
		}
	}
	if mods.Has(ModuleContextAssembly) {
		if err := c.Retrieval.Validate(); err != nil {
			return err
		}
	}
	if mods.Has(ModuleConsole) {
		if err := c.Console.Validate(); err != nil {
			return err
		}
	}
	if mods.Edge() { // the REST and MCP edges and the console share --rest-* limits
		if err := c.Gateway.Validate(); err != nil {
			return err
		}
		// A 504 at --rest-timeout must still be writable.
		if c.HTTP.WriteTimeout <= c.Gateway.Timeout {
			return fmt.Errorf("--http-write-timeout %s must be longer than --rest-timeout %s, or a timed-out call's 504 could not be written", c.HTTP.WriteTimeout, c.Gateway.Timeout)
		}
		// The edge must not accept what the services refuse: the request
		// messages hold strings, integers and enums, whose protobuf form is
		// smaller than their JSON, so a body that fits makes a message that
		// fits. (A gateway-only process checks its own --grpc-max-recv-bytes;
		// keep it equal to the services'.)
		if c.Gateway.MaxBodyBytes > int64(c.Server.MaxRecvMsgBytes) {
			return fmt.Errorf("--rest-max-body-bytes %d must not exceed --grpc-max-recv-bytes %d", c.Gateway.MaxBodyBytes, c.Server.MaxRecvMsgBytes)
		}
		for _, m := range ServiceModules {
			if !mods.Has(m) && c.Peers.Addr(m) == "" {
				return fmt.Errorf("target %q serves an HTTP edge (REST or MCP) but not %s: set --%s-addr", c.Target, m, m)
			}
		}
	}
	return nil
}

// LoadConfig parses args with precedence defaults < YAML < env < flags.
// lookupEnv is os.LookupEnv outside tests.
func LoadConfig(args []string, lookupEnv func(string) (string, bool)) (*Config, *flag.FlagSet, error) {
	cfg := &Config{}
	fs := flag.NewFlagSet("memoryd", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	if fs.NArg() > 0 {
		return nil, nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	setOnCommandLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { setOnCommandLine[f.Name] = true })

	configFile := cfg.ConfigFile
	if v, ok := lookupEnv(EnvName("config")); ok && !setOnCommandLine["config"] {
		configFile = v
	}
	fromFile := map[string]string{}
	if configFile != "" {
		var err error
		if fromFile, err = readYAMLFlags(configFile, fs); err != nil {
			return nil, nil, err
		}
	}
	// Each flag not given on the command line takes the environment's value,
	// else the file's; each is set once, so list flags never double up.
	var setErr error
	fs.VisitAll(func(f *flag.Flag) {
		if setOnCommandLine[f.Name] || setErr != nil {
			return
		}
		v, ok := lookupEnv(EnvName(f.Name))
		if !ok {
			v, ok = fromFile[f.Name]
		}
		if ok {
			if err := fs.Set(f.Name, v); err != nil {
				setErr = fmt.Errorf("%s: %w", f.Name, err)
			}
		}
	})
	if setErr != nil {
		return nil, nil, setErr
	}
	return cfg, fs, cfg.Validate()
}

// EnvName is the environment variable of a flag.
func EnvName(flagName string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// readYAMLFlags reads a flat YAML map of flag name to value; an unknown key is
// an error so that a typo never silently falls back to a default.
func readYAMLFlags(path string, fs *flag.FlagSet) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	out := make(map[string]string, len(raw))
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "config" || fs.Lookup(k) == nil {
			return nil, fmt.Errorf("--config %s: unknown key %q (keys are flag names)", path, k)
		}
		switch v := raw[k].(type) {
		case map[string]any, []any:
			return nil, fmt.Errorf("--config %s: key %q must be a scalar", path, k)
		default:
			out[k] = fmt.Sprint(v)
		}
	}
	return out, nil
}

// redact hides credentials embedded in a URL value (user:password@host);
// no flag holds a secret itself, only paths to secret files.
func redact(v string) string {
	u, err := url.Parse(v)
	if err != nil || u.User == nil {
		return v
	}
	u.User = nil
	return strings.Replace(u.String(), "://", "://***@", 1)
}

// byteSize is a flag of bytes written as a size ("256MiB").
type byteSize int64

func (b *byteSize) String() string { return membudget.FormatBytes(int64(*b)) }

func (b *byteSize) Set(s string) error {
	n, err := membudget.ParseBytes(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}
