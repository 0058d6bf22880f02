package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// envConsoleURL is the console's base URL (memctl console --url).
const envConsoleURL = "MEMCTL_CONSOLE_URL"

// defaultHTTPPort is memoryd's default --http-addr port
// (cmd/memoryd/app/config.go): the console's default URL is the gRPC
// address's host on it.
const defaultHTTPPort = "8080"

func (c *cli) consoleCommand() *cobra.Command {
	var consoleURL string
	var noBrowser bool
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Open the review console in a browser, signed in with memctl's token",
		Long: `Open memoryd's review console (/ui/ on its HTTP address) signed in as
memctl's token, without pasting it: memctl asks the console for a one-time
sign-in code and opens its link ($BROWSER, else the system's opener). The
page says who the code signs in as and waits for a click; the link works
once, for a minute.

--url is the console's base URL (env ` + envConsoleURL + `; default: the host of
--addr on port ` + defaultHTTPPort + `, https with --tls).`,
		Example: `  memctl console
  memctl console --url https://memory.example.com
  memctl console --no-browser    # print the link to open elsewhere`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if changed(cmd.Flags(), "url") && consoleURL == "" {
				return usagef("--url must not be empty")
			}
			if consoleURL == "" {
				consoleURL, _ = c.lookupEnv(envConsoleURL)
			}
			return c.openConsole(cmd.Context(), consoleURL, noBrowser)
		},
	}
	cmd.Flags().StringVar(&consoleURL, "url", "", "the console's base URL, e.g. http://127.0.0.1:8080 (env "+envConsoleURL+")")
	cmd.Flags().BoolVar(&noBrowser, "no-browser", false, "print the sign-in link instead of opening a browser")
	return cmd
}

// consoleLink is what memctl console prints.
type consoleLink struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expiresAt"`
	// Opened: a browser was started on the link.
	Opened bool `json:"opened"`
}

func (c *cli) openConsole(ctx context.Context, base string, noBrowser bool) error {
	if c.target.DataDir != "" {
		return usagef("memctl console needs a running memoryd: --data-dir runs one only for a command's duration (run memoryd --data-dir DIR, then memctl console --url http://127.0.0.1:%s)", defaultHTTPPort)
	}
	if c.target.Token == "" {
		return usagef("memctl console signs in with memctl's token: give --token, set %s or run memctl login", envToken)
	}
	if base == "" {
		host, _, err := net.SplitHostPort(c.target.Addr)
		if err != nil || host == "" {
			host = "127.0.0.1"
		}
		scheme := "http"
		if c.target.TLS {
			scheme = "https"
		}
		base = scheme + "://" + net.JoinHostPort(host, defaultHTTPPort)
	}
	base = strings.TrimSuffix(base, "/")
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return usagef("--url %q: want an http:// or https:// URL", base)
	}
	code, err := c.signInCode(ctx, base)
	if err != nil {
		return err
	}
	link := consoleLink{URL: base + code.Path, ExpiresAt: code.ExpiresAt}
	if !noBrowser {
		if err := c.browse(ctx, link.URL); err != nil {
			_, _ = fmt.Fprintf(c.err, "memctl: could not open a browser (%v): open the link below\n", err)
		} else {
			link.Opened = true
		}
	}
	return c.printer.value(link, func(t *table) {
		if link.Opened {
			t.text("Opened the console in your browser; confirm there who you sign in as:\n")
		}
		// Whole, on a line of its own: a table cell would clip it.
		t.text(link.URL + "\n")
		t.text("The link works once, until " + link.ExpiresAt.Local().Format(time.TimeOnly) + ".\n")
	})
}

// signInCode is the console's answer to a request for a sign-in code.
type signInCode struct {
	Path      string    `json:"path"`
	ExpiresAt time.Time `json:"expiresAt"`
	Error     string    `json:"error"`
}

// signInCode asks the console at base for a one-time sign-in code for
// memctl's token (services/console signincode.go).
func (c *cli) signInCode(ctx context.Context, base string) (*signInCode, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/ui/api/sign-in-codes", nil)
	if err != nil {
		return nil, usagef("--url %q: %v", base, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.target.Token)
	client, err := c.httpClient()
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, &codedError{code: exitUnavailable, msg: fmt.Sprintf("UNAVAILABLE: the console at %s did not answer: %v", base, err)}
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var code signInCode
	decodeErr := json.Unmarshal(body, &code)
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return nil, &codedError{code: exitDenied, msg: "UNAUTHENTICATED: the console refused the token: " + code.Error}
	case resp.StatusCode == http.StatusNotFound:
		return nil, &codedError{code: exitNotFound, msg: fmt.Sprintf("NOT_FOUND: no console at %s: is that memoryd's HTTP address (--http-addr), with --console on?", base)}
	case resp.StatusCode != http.StatusOK || decodeErr != nil || !strings.HasPrefix(code.Path, "/ui/login?"):
		return nil, &codedError{code: exitError, msg: fmt.Sprintf("the console at %s answered %s: %s", base, resp.Status, strings.TrimSpace(string(body)))}
	}
	return &code, nil
}

// httpClient trusts --tls-ca when given, else the system's roots.
func (c *cli) httpClient() (*http.Client, error) {
	cfg, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	return &http.Client{Transport: tr}, nil
}

// browse opens url with $BROWSER (its first entry; "%s" stands for the
// URL, as Python's webbrowser reads it), else the system's opener.
func (c *cli) browse(ctx context.Context, url string) error {
	var name string
	var args []string
	if b, ok := c.lookupEnv("BROWSER"); ok && strings.TrimSpace(b) != "" {
		fields := strings.Fields(strings.Split(b, string(os.PathListSeparator))[0])
		name, args = fields[0], fields[1:]
		replaced := false
		for i, a := range args {
			if strings.Contains(a, "%s") {
				args[i], replaced = strings.ReplaceAll(a, "%s", url), true
			}
		}
		if !replaced {
			args = append(args, url)
		}
	} else {
		switch runtime.GOOS {
		case "darwin":
			name, args = "open", []string{url}
		case "windows":
			name, args = "rundll32", []string{"url.dll,FileProtocolHandler", url}
		default:
			name, args = "xdg-open", []string{url}
		}
	}
	// A browser may stay in the foreground: give the opener a moment to
	// fail (no such program, no display), then leave it running.
	var out strings.Builder
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			if msg := strings.TrimSpace(out.String()); msg != "" {
				return fmt.Errorf("%s: %w: %s", name, err, msg)
			}
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	case <-time.After(browserGrace):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// browserGrace is how long memctl console waits for the opener to fail.
const browserGrace = 2 * time.Second
