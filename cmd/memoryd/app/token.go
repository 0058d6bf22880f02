package app

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/garden-bloom/memory/pkg/auth"
)

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// TokenCommand implements `memoryd token`: it prints an HS256 bearer token
// signed with the same secret the servers use (creating it on first use, so
// a fresh data dir works before the first start). iss and aud default to the
// configured --auth-issuer and --auth-audience, so the token passes servers
// that check them.
func TokenCommand(args []string, lookupEnv func(string) (string, bool), out io.Writer) error {
	fs := flag.NewFlagSet("memoryd token", flag.ContinueOnError)
	configFile := fs.String("config", "", "memoryd YAML config file to take data-dir, auth-secret-file, auth-issuer and auth-audience from")
	dataDir := fs.String("data-dir", "./data", "data directory whose auth.secret signs the token")
	secretFile := fs.String("auth-secret-file", "", "secret file (default <data-dir>/auth.secret)")
	iss := fs.String("iss", "", "iss claim (default: the configured --auth-issuer; empty leaves it out)")
	aud := fs.String("aud", "", "aud claim (default: the configured --auth-audience; empty leaves it out)")
	sub := fs.String("sub", "", "subject: who the token is for (required)")
	ttl := fs.Duration("ttl", time.Hour, "lifetime of the token")
	var roles, agents listFlag
	fs.Var(&roles, "role", "role: agent | reviewer | admin | service (repeatable)")
	fs.Var(&agents, "agent", `agent id the token may access, or "*" (repeatable)`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("token: unexpected arguments: %v", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if v, ok := lookupEnv(EnvName("config")); ok && !set["config"] {
		*configFile = v
	}
	fromFile := map[string]string{}
	if *configFile != "" {
		// Read the file the way the server does, so a key it would refuse
		// is refused here too.
		serverFlags := flag.NewFlagSet("memoryd", flag.ContinueOnError)
		(&Config{}).RegisterFlags(serverFlags)
		var err error
		if fromFile, err = readYAMLFlags(*configFile, serverFlags); err != nil {
			return fmt.Errorf("token: %w", err)
		}
	}
	// Each option not given on the command line takes the server's setting:
	// its environment variable, else its key in the config file.
	for name, serverFlag := range map[string]string{
		"data-dir": "data-dir", "auth-secret-file": "auth-secret-file", "iss": "auth-issuer", "aud": "auth-audience",
	} {
		if set[name] {
			continue
		}
		v, ok := lookupEnv(EnvName(serverFlag))
		if !ok {
			v, ok = fromFile[serverFlag]
		}
		if ok {
			_ = fs.Set(name, v)
		}
	}
	if *sub == "" {
		return errors.New("token: --sub is required")
	}
	if len(roles) == 0 {
		return errors.New("token: at least one --role is required")
	}
	var rs []auth.Role
	for _, r := range roles {
		role, err := auth.ParseRole(r)
		if err != nil {
			return fmt.Errorf("token: %w", err)
		}
		rs = append(rs, role)
	}
	path := *secretFile
	if path == "" {
		path = filepath.Join(*dataDir, "auth.secret")
	}
	secret, err := auth.LoadOrCreateSecret(path)
	if err != nil {
		return fmt.Errorf("token: %w", err)
	}
	signer, err := auth.NewSigner(secret, auth.WithSignerIssuer(*iss), auth.WithSignerAudience(*aud))
	if err != nil {
		return fmt.Errorf("token: %w", err)
	}
	tok, err := signer.Mint(*sub, rs, agents, *ttl)
	if err != nil {
		return fmt.Errorf("token: %w", err)
	}
	_, err = fmt.Fprintln(out, tok)
	return err
}
