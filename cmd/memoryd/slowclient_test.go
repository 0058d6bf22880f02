package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/garden-bloom/memory/cmd/memoryd/app"
	"github.com/garden-bloom/memory/pkg/auth"
)

// slowBodyResult is what one slow-body client saw.
type slowBodyResult struct {
	after  time.Duration // from the end of its headers to the server's close
	status int           // the answer's status, 0 when closed without one
	body   string
	err    error // the server did not close in time, or a client failure
}

// slowBody sends a propose's headers with a Content-Length, then one body
// byte a second (issue #25: "one byte every 2 s kept a propose open for
// ≥ 292 s"), and reads until the server closes the connection or limit
// passes.
func slowBody(addr, tok string, limit time.Duration) slowBodyResult {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return slowBodyResult{err: err}
	}
	defer func() { _ = c.Close() }()
	head := "POST /memory/propose HTTP/1.1\r\nHost: memoryd\r\nAuthorization: Bearer " + tok +
		"\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"
	if _, err := io.WriteString(c, head); err != nil {
		return slowBodyResult{err: err}
	}
	start := time.Now()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if _, err := io.WriteString(c, " "); err != nil {
					return
				}
			}
		}
	}()
	_ = c.SetReadDeadline(start.Add(limit))
	raw, err := io.ReadAll(c)
	r := slowBodyResult{after: time.Since(start)}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		r.err = fmt.Errorf("still open after %s (read %q)", limit, raw)
		return r
	}
	if len(raw) > 0 {
		resp, perr := http.ReadResponse(bufio.NewReader(strings.NewReader(string(raw))), nil)
		if perr != nil {
			r.err = fmt.Errorf("unparsable answer %q: %w", raw, perr)
			return r
		}
		b, _ := io.ReadAll(resp.Body)
		r.status, r.body = resp.StatusCode, string(b)
	}
	return r
}

// slowClientCuts reads memory_http_slow_client_cuts_total{kind} from
// /metrics.
func slowClientCuts(t *testing.T, d *deployment, kind string) int {
	return counterValue(t, d.httpAddr, "memory_http_slow_client_cuts_total", `kind="`+kind+`"`)
}

// counterValue reads the counter name with a label matching label (e.g.
// `kind="body"`) from the /metrics of the process at httpAddr; 0 when absent.
func counterValue(t *testing.T, httpAddr, name, label string) int {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\{[^}]*` + regexp.QuoteMeta(label) + `[^}]*\} (\d+)$`).FindStringSubmatch(string(raw))
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return n
}

// TestEdgeSlowClients: from issue #25, "a slow-body client is cut within
// the configured time and counted in a metric": slow proposals at the REST
// edge are each answered 408 (or closed) and closed within the body
// deadline — --http-body-timeout, or the request's --rest-timeout when it
// is sooner — nothing is proposed, other requests are served meanwhile,
// and every cut shows in memory_http_slow_client_cuts_total{kind="body"}.
func TestEdgeSlowClients(t *testing.T) {
	const conns = 100
	for _, tt := range []struct {
		name  string
		flags []string
		cut   time.Duration
	}{
		{"--http-body-timeout", []string{"--http-body-timeout", "2s", "--rest-timeout", "50s"}, 2 * time.Second},
		{"--rest-timeout sooner", []string{"--rest-timeout", "3s"}, 3 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := startInProcessWith(t, tt.flags...)
			svc := token(t, d, auth.RoleService)
			results := make([]slowBodyResult, conns)
			var wg sync.WaitGroup
			for i := range conns {
				wg.Go(func() { results[i] = slowBody(d.httpAddr, svc, tt.cut+15*time.Second) })
			}
			// Served while the slow clients are held.
			r := edgeCall(t, d, "GET", "/proposals?agent=slow-body", nil, svc)
			require.Equal(t, http.StatusOK, r.status, r.raw)
			wg.Wait()

			answered := 0
			for i, r := range results {
				require.NoError(t, r.err, "client %d", i)
				require.LessOrEqual(t, r.after, tt.cut+3*time.Second, "client %d cut too late", i)
				require.GreaterOrEqual(t, r.after, tt.cut-200*time.Millisecond, "client %d cut too soon", i)
				if r.status == 0 {
					continue // closed without an answer: acceptable
				}
				answered++
				require.Equal(t, http.StatusRequestTimeout, r.status, r.body)
				var e struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				}
				require.NoError(t, json.Unmarshal([]byte(r.body), &e), r.body)
				require.Equal(t, int(codes.DeadlineExceeded), e.Code, r.body)
			}
			require.Positive(t, answered, "the 408 reaches the clients")
			require.Equal(t, conns, slowClientCuts(t, d, "body"))

			r = edgeCall(t, d, "GET", "/proposals", nil, svc)
			require.Equal(t, http.StatusOK, r.status, r.raw)
			var list struct {
				Proposals []any `json:"proposals"`
			}
			require.NoError(t, json.Unmarshal([]byte(r.raw), &list))
			require.Empty(t, list.Proposals, "no slow body became a proposal")
		})
	}
}

// TestEdgeHTTPLimitFlags: every HTTP and gRPC connection limit has a flag
// with a production default, and contradictions are refused at start.
func TestEdgeHTTPLimitFlags(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	cfg, fs, err := app.LoadConfig([]string{"--data-dir", t.TempDir()}, noEnv)
	require.NoError(t, err)
	for name, want := range map[string]string{
		"http-read-header-timeout":      "10s",
		"http-body-read-timeout":        "10s",
		"http-body-timeout":             "30s",
		"http-idle-timeout":             "2m0s",
		"http-write-timeout":            "1m0s",
		"http-max-conns-per-ip":         "256",
		"grpc-max-concurrent-streams":   "1000",
		"grpc-max-connection-age":       "30m0s",
		"grpc-max-connection-age-grace": "5m0s",
		"grpc-max-connection-idle":      "15m0s",
		"grpc-max-conns-per-ip":         "128",
	} {
		f := fs.Lookup(name)
		require.NotNil(t, f, name)
		require.Equal(t, want, f.DefValue, name)
		require.NotEmpty(t, f.Usage, name)
	}
	require.Equal(t, 30*time.Second, cfg.HTTP.BodyTimeout)

	for _, args := range [][]string{
		{"--http-body-timeout", "0s"},
		{"--http-write-timeout", "20s"},                         // not after --rest-timeout (30s): a 504 could not be written
		{"--http-write-timeout", "25s", "--rest-timeout", "5s"}, // not after --http-body-timeout (30s): a 408 could not be written
		{"--grpc-max-concurrent-streams", "0"},
		{"--http-max-conns-per-ip", "-1"},
	} {
		_, _, err := app.LoadConfig(append([]string{"--data-dir", t.TempDir()}, args...), noEnv)
		require.Error(t, err, "%v", args)
	}
}
