package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// streams are the command's standard streams (the process's, or a test's).
type streams struct {
	in       io.Reader
	out, err io.Writer
}

// cli is one run of memctl: its global flags, where it talks to, and the
// connection, opened on the first call a command makes.
type cli struct {
	streams
	lookupEnv func(string) (string, bool)

	// Global flags.
	addr, token, dataDir, configFlag, output, tlsCA string
	tls                                             bool
	timeout                                         time.Duration

	target  target
	cfgPath string
	// fileCfg is the config file as read; defaultAgent is MEMCTL_AGENT,
	// else the file's agent.
	fileCfg      fileConfig
	defaultAgent string
	printer      *printer
	conn         *grpc.ClientConn
	embedded     *embedded
}

// run executes memctl with args and returns the exit code.
func run(ctx context.Context, args []string, s streams, lookupEnv func(string) (string, bool)) int {
	c := &cli{streams: s, lookupEnv: lookupEnv}
	root := c.rootCommand()
	root.SetArgs(args)
	root.SetIn(s.in)
	root.SetOut(s.out)
	root.SetErr(s.err)
	err := root.ExecuteContext(ctx)
	if cerr := c.close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return report(s.err, classify(err))
	}
	return exitOK
}

// classify turns cobra's own argument errors into usage errors.
func classify(err error) error {
	var ue *usageError
	if errors.As(err, &ue) {
		return err
	}
	msg := err.Error()
	for _, prefix := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "invalid argument",
		"flag needs an argument", "required flag", "accepts ", "requires at least", "requires at most", "if any flags in the group"} {
		if strings.HasPrefix(msg, prefix) {
			return &usageError{msg: msg}
		}
	}
	return err
}

func (c *cli) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "memctl",
		Short: "Command-line client of Garden Bloom Memory",
		Long: `memctl talks to a memoryd over its gRPC API: onboard agents, ingest episodes,
search, review proposals, read and diff memory, take snapshots.

Where it connects: --addr/--token, else $MEMCTL_ADDR/$MEMCTL_TOKEN, else the
config file 'memctl login' writes, else 127.0.0.1:9090. With --data-dir DIR it
runs an embedded memoryd on DIR for the duration of the command instead.

Exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 auth/permission,
5 conflict, 6 unavailable/timeout.`,
		Example: `  memctl login --addr 127.0.0.1:9090 --token "$TOKEN"
  memctl init my-agent --template coding-agent
  memctl ingest examples/episodes.jsonl --agent my-agent --wait
  memctl search "flaky test" --agent my-agent --expand
  memctl proposals list --status pending -o json`,
		SilenceErrors:     true,
		SilenceUsage:      true,
		PersistentPreRunE: c.setup,
		// A bare `memctl` prints help and exits 0, as gh does.
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q for \"memctl\"", args[0])
			}
			return cmd.Help()
		},
		Args: cobra.ArbitraryArgs,
	}
	f := root.PersistentFlags()
	f.StringVar(&c.addr, "addr", "", "gRPC address of memoryd (env "+envAddr+"; default "+defaultAddr+")")
	f.StringVar(&c.token, "token", "", "bearer token (env "+envToken+")")
	f.StringVar(&c.dataDir, "data-dir", "", "use an embedded store in this folder instead of a server (env "+envDataDir+")")
	f.StringVar(&c.configFlag, "config", "", "config file (env "+envConfig+"; default <user config dir>/memctl/config.yaml)")
	f.StringVarP(&c.output, "output", "o", formatTable, "output format: table | json | yaml")
	f.BoolVar(&c.tls, "tls", false, "connect with TLS (system roots), e.g. through a TLS-terminating proxy")
	f.StringVar(&c.tlsCA, "tls-ca", "", "connect with TLS, trusting this PEM CA file (implies --tls)")
	f.DurationVar(&c.timeout, "timeout", 30*time.Second, "deadline of each call to the server")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{msg: err.Error()} })

	root.AddCommand(
		c.loginCommand(), c.initCommand(), c.ingestCommand(), c.searchCommand(), c.exportOnboardingCommand(),
		c.readCommand(), c.contextCommand(), c.diffCommand(), c.logCommand(),
		c.proposalsCommand(), c.entitiesCommand(), c.snapshotCommand(), c.backupCommand(),
		c.statusCommand(), c.staleCommand(), c.mcpCommand(), c.consoleCommand(), c.versionCommand(),
	)
	root.InitDefaultCompletionCmd()
	for _, sub := range root.Commands() {
		if sub.Name() == "completion" {
			sub.Example = `  source <(memctl completion bash)
  memctl completion zsh > "${fpath[1]}/_memctl"
  memctl completion fish > ~/.config/fish/completions/memctl.fish`
			for _, shell := range sub.Commands() {
				shell.Example = "  memctl completion " + shell.Name() + " --help"
			}
		}
	}
	root.SetHelpCommand(&cobra.Command{
		Use:     "help [command]",
		Short:   "Help about any command",
		Example: "  memctl help ingest",
		RunE: func(cmd *cobra.Command, args []string) error {
			target, _, err := cmd.Root().Find(args)
			if err != nil || target == nil {
				return usagef("unknown help topic %q", strings.Join(args, " "))
			}
			return target.Help()
		},
	})
	return root
}

// setup validates the global flags and resolves where commands go; it does
// not connect (commands that need the server do, on their first call).
func (c *cli) setup(cmd *cobra.Command, _ []string) error {
	switch c.output {
	case formatTable, formatJSON, formatYAML:
	default:
		return usagef("-o %q: want table, json or yaml", c.output)
	}
	if c.timeout <= 0 {
		return usagef("--timeout must be positive")
	}
	c.printer = &printer{format: c.output, out: c.out}
	if _, noColor := c.lookupEnv("NO_COLOR"); c.output == formatTable && !noColor && isTerminal(c.out) {
		c.printer.color = true
	}
	path, err := configPath(c.configFlag, c.lookupEnv)
	if err != nil {
		return err
	}
	c.cfgPath = path
	fc, err := loadConfig(path)
	if err != nil {
		return err
	}
	c.fileCfg, c.defaultAgent = fc, fc.Agent
	if v, ok := c.lookupEnv(envAgent); ok && v != "" {
		c.defaultAgent = v
	}
	flags := cmd.Flags()
	flagLevel := settingLevel{name: "flags",
		addr: c.addr, addrSet: changed(flags, "addr"),
		dataDir: c.dataDir, ds: changed(flags, "data-dir"),
		token: c.token, tokenSet: changed(flags, "token"), tlsCA: c.tlsCA}
	if changed(flags, "tls") {
		flagLevel.tls = &c.tls
	}
	envLevel := settingLevel{name: "environment"}
	if v, ok := c.lookupEnv(envAddr); ok && v != "" {
		envLevel.addr, envLevel.addrSet = v, true
	}
	if v, ok := c.lookupEnv(envDataDir); ok && v != "" {
		envLevel.dataDir, envLevel.ds = v, true
	}
	if v, ok := c.lookupEnv(envToken); ok && v != "" {
		envLevel.token, envLevel.tokenSet = v, true
	}
	fileLevel := settingLevel{name: "config file " + path,
		addr: fc.Addr, addrSet: fc.Addr != "", dataDir: fc.DataDir, ds: fc.DataDir != "",
		token: fc.Token, tokenSet: fc.Token != "", tlsCA: fc.TLSCA}
	if fc.TLS {
		fileLevel.tls = &fc.TLS
	}
	c.target, err = resolveTarget([]settingLevel{flagLevel, envLevel, fileLevel})
	return err
}

func changed(fs *pflag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	return f != nil && f.Changed
}

// agentFlag is a command's --agent: as given, else the default agent
// (MEMCTL_AGENT, else the config file's agent). Giving --agent "" asks for
// no agent.
func (c *cli) agentFlag(cmd *cobra.Command, value string) string {
	if changed(cmd.Flags(), "agent") {
		return value
	}
	return c.defaultAgent
}

// connect opens the connection on first use: to the server, or to an
// embedded memoryd it starts on the data dir.
func (c *cli) connect(ctx context.Context) (*grpc.ClientConn, error) {
	if c.conn != nil {
		return c.conn, nil
	}
	addr, token := c.target.Addr, c.target.Token
	creds := insecure.NewCredentials()
	if c.target.DataDir != "" {
		e, err := startEmbedded(ctx, c.target.DataDir)
		if err != nil {
			return nil, err
		}
		c.embedded = e
		addr = e.addr
		if token == "" {
			token = e.token
		}
	} else if c.target.TLS {
		cfg, err := c.tlsConfig()
		if err != nil {
			return nil, err
		}
		creds = credentials.NewTLS(cfg)
	}
	conn, err := dial(addr, token, creds, c.timeout)
	if err != nil {
		return nil, err
	}
	c.conn = conn
	return conn, nil
}

// tlsConfig trusts --tls-ca when given, else the system's roots.
func (c *cli) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.target.TLSCA != "" {
		pem, err := os.ReadFile(c.target.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, usagef("--tls-ca %s holds no PEM certificate", c.target.TLSCA)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// dial opens a client connection that sends token with every call that
// does not carry an authorization of its own, and gives every unary call
// without a deadline the timeout.
func dial(addr, token string, creds credentials.TransportCredentials, timeout time.Duration) (*grpc.ClientConn, error) {
	withToken := func(ctx context.Context) context.Context {
		if token == "" {
			return ctx
		}
		if md, ok := metadata.FromOutgoingContext(ctx); ok && len(md.Get("authorization")) > 0 {
			return ctx
		}
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		return invoker(withToken(ctx), method, req, reply, cc, opts...)
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		return streamer(withToken(ctx), desc, cc, method, opts...)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds),
		grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(16<<20)))
	if err != nil {
		return nil, usagef("address %q: %v", addr, err)
	}
	return conn, nil
}

// close closes the connection and stops an embedded memoryd.
func (c *cli) close() error {
	var err error
	if c.conn != nil {
		err = c.conn.Close()
		c.conn = nil
	}
	if c.embedded != nil {
		if serr := c.embedded.stop(); err == nil {
			err = serr
		}
		c.embedded = nil
	}
	return err
}

// clients are the API's four services on one connection.
type clients struct {
	ca     memoryv1.ContextAssemblyServiceClient
	search memoryv1.SearchIndexServiceClient
	graph  memoryv1.EntityGraphServiceClient
	write  memoryv1.ProposalApplyServiceClient
}

func (c *cli) clients(ctx context.Context) (*clients, error) {
	conn, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	return &clients{
		ca:     memoryv1.NewContextAssemblyServiceClient(conn),
		search: memoryv1.NewSearchIndexServiceClient(conn),
		graph:  memoryv1.NewEntityGraphServiceClient(conn),
		write:  memoryv1.NewProposalApplyServiceClient(conn),
	}, nil
}

// Argument validators that report usage errors (exit code 2).

func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("want %s, got %d argument(s)", names, len(args))
		}
		return nil
	}
}

func rangeArgs(lo, hi int, names string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) < lo || len(args) > hi {
			return usagef("want %s, got %d argument(s)", names, len(args))
		}
		return nil
	}
}
