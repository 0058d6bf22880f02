package main

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// chromium finds the browser the tests drive: $CHROMIUM, or Debian's
// chromium (.ci/run installs it). Without one the test is skipped, never
// faked.
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("CI must install Debian's chromium (see .ci/run)")
	}
	t.Skip("no chromium on this machine: apt-get install chromium")
	return ""
}

// browser starts headless Chromium with the flags this machine needs (as
// root, no network but loopback) and a fresh profile.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)), chromedp.NoSandbox, chromedp.Headless,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-first-run", true),
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "profile")))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	ctx, stop := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(stop)
	return ctx
}

// Issue #24: a browsable API reference at /docs, from embedded assets, no
// CDN. Opened in a real browser, as a person would: the page renders every
// operation of the contract and loads nothing from anywhere but memoryd.
func TestDocsInABrowser(t *testing.T) {
	ctx := browser(t)
	d := startInProcessWith(t)
	base := "http://" + d.httpAddr

	var mu sync.Mutex
	var requested []string
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			requested = append(requested, e.Request.URL)
			mu.Unlock()
		}
	}))
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/docs")))
	title, err := chromedp.Run(ctx, chromedp.Title())
	require.NoError(t, err)
	require.Contains(t, title, "Garden Bloom Memory API")
	ops, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("section.op[id]:not([id^='schema-'])").length`))
	require.NoError(t, err)
	require.GreaterOrEqual(t, ops, 30, "every REST operation of the contract is on the page")
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	require.NoError(t, err)
	for _, want := range []string{"/memory/{agentId}/propose", "/memory/{agentId}/read", "/proposals/{proposalId}:approve", "/health", "ErrorInfo"} {
		require.Contains(t, text, want)
	}
	// A link of the table of contents leads to its operation.
	anchor, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("nav a[href^='#']").getAttribute("href")`))
	require.NoError(t, err)
	found, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById(`+"`"+strings.TrimPrefix(anchor, "#")+"`"+`) !== null`))
	require.NoError(t, err)
	require.True(t, found, "the link %s has its target", anchor)

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, requested)
	for _, r := range requested {
		u, err := url.Parse(r)
		require.NoError(t, err)
		require.Equal(t, d.httpAddr, u.Host, "the page loads nothing from elsewhere: %s", r)
	}
}
