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
// a fresh data dir works before the first start).
func TokenCommand(args []string, lookupEnv func(string) (string, bool), out io.Writer) error {
	fs := flag.NewFlagSet("memoryd token", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "./data", "data directory whose auth.secret signs the token")
	secretFile := fs.String("auth-secret-file", "", "secret file (default <data-dir>/auth.secret)")
	sub := fs.String("sub", "", "subject: who the token is for (required)")
	ttl := fs.Duration("ttl", time.Hour, "lifetime of the token")
	var roles, agents listFlag
	fs.Var(&roles, "role", "role: agent | reviewer | admin | service (repeatable)")
	fs.Var(&agents, "agent", `agent id the token may access, or "*" (repeatable)`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, name := range []string{"data-dir", "auth-secret-file"} {
		if v, ok := lookupEnv(EnvName(name)); ok && !set[name] {
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
	signer, err := auth.NewSigner(secret)
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
