package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
)

// The screenshots' size (make screenshots): the README's pictures.
const (
	screenshotWidth  = 1280
	screenshotHeight = 800
)

// consoleBrowser is browser() with time for a whole review session.
func consoleBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)), chromedp.NoSandbox, chromedp.Headless,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-first-run", true),
		chromedp.WindowSize(screenshotWidth, screenshotHeight),
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "profile")))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	ctx, stop := context.WithTimeout(ctx, 4*time.Minute)
	t.Cleanup(stop)
	return ctx
}

// consoleFixture is a running memoryd with the memory and proposals a
// review session needs.
type consoleFixture struct {
	d    *deployment
	base string
	pa   memoryv1.ProposalApplyServiceClient
	// tokens
	admin, reviewer, agent, svc string
	// proposals waiting for a person: to approve, to reject, a policy change
	approve, reject, policy string
}

func asCaller(tok string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
}

// propose submits req as the service and returns the proposal id.
func (f *consoleFixture) propose(t *testing.T, req *memoryv1.ProposeRequest) string {
	t.Helper()
	resp, err := f.pa.Propose(asCaller(f.svc), req)
	require.NoError(t, err)
	return resp.GetProposalId()
}

// applied approves id as the admin and waits for its commit.
func (f *consoleFixture) applied(t *testing.T, id string) string {
	t.Helper()
	_, err := f.pa.ApproveProposal(asCaller(f.admin), &memoryv1.ApproveProposalRequest{ProposalId: id, Comment: "seed"})
	require.NoError(t, err)
	return f.waitApplied(t, id)
}

func (f *consoleFixture) waitApplied(t *testing.T, id string) string {
	t.Helper()
	var sha string
	require.Eventually(t, func() bool {
		p, err := f.pa.GetProposal(asCaller(f.admin), &memoryv1.GetProposalRequest{ProposalId: id})
		require.NoError(t, err)
		sha = p.GetProposal().GetCommitSha()
		return p.GetProposal().GetStatus() == memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED
	}, 20*time.Second, 20*time.Millisecond, "proposal %s is applied", id)
	return sha
}

func (f *consoleFixture) status(t *testing.T, id string) *memoryv1.Proposal {
	t.Helper()
	p, err := f.pa.GetProposal(asCaller(f.admin), &memoryv1.GetProposalRequest{ProposalId: id})
	require.NoError(t, err)
	return p.GetProposal()
}

func fact(section, text string) *memoryv1.FileUpdate {
	return &memoryv1.FileUpdate{File: "facts.md", Operation: memoryv1.Operation_OPERATION_APPEND, Section: section, Content: text}
}

// decisionID is the entity id the graph gives a decision added today.
func decisionID(title string) string {
	return "decision-" + time.Now().UTC().Format("2006-01-02") + "-" + strings.ReplaceAll(strings.ToLower(title), " ", "-")
}

func newConsoleFixture(t *testing.T) *consoleFixture {
	d := startInProcessWith(t, "--console-poll", "300ms")
	f := &consoleFixture{d: d, base: "http://" + d.httpAddr,
		pa:       memoryv1.NewProposalApplyServiceClient(dial(t, d.grpcAddr[serviceNames[3]])),
		admin:    mintAs(t, d, "ada", []string{"*"}, auth.RoleAdmin),
		reviewer: mintAs(t, d, "rita", []string{"*"}, auth.RoleReviewer),
		agent:    mintAs(t, d, "curator-run", []string{"curator"}, auth.RoleAgent),
		svc:      mintAs(t, d, "runtime", []string{"*"}, auth.RoleService),
	}
	f.applied(t, f.propose(t, &memoryv1.ProposeRequest{AgentId: "curator", RunId: "run_seed", Reasoning: "first memory", Updates: []*memoryv1.FileUpdate{
		{File: "snapshot.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "# Snapshot: curator\n\n## Role\nCurator of the garden's memory.\n"},
		fact("Technical", "- MinIO bucket mcpstorage has versioning on"),
		fact("Domain", "- The garden has three greenhouses"),
		{File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_OPEN, Content: "Confirm the backup schedule", LoopPriority: memoryv1.LoopPriority_LOOP_PRIORITY_HIGH},
		{File: "decisions.md", Operation: memoryv1.Operation_OPERATION_ADD_DECISION, Decision: &memoryv1.Decision{Title: "Use MinIO for sources",
			Context: "Sources need a store.", Decision: "Keep sources in MinIO.", Rationale: "It is already deployed.", Consequences: "One more bucket."}},
		{File: "decisions.md", Operation: memoryv1.Operation_OPERATION_ADD_DECISION, Decision: &memoryv1.Decision{Title: "Version every source bucket",
			Context: "Sources live in MinIO ([[" + decisionID("Use MinIO for sources") + "]]).", Decision: "Turn on bucket versioning.",
			Rationale: "A source must be readable as it was.", Consequences: "Old versions cost space."}},
	}}))
	f.applied(t, f.propose(t, &memoryv1.ProposeRequest{AgentId: "other", RunId: "run_o1", Updates: []*memoryv1.FileUpdate{
		{File: "snapshot.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "# Snapshot: other\n\n## Role\nSomeone else.\n"}}}))
	f.approve = f.propose(t, &memoryv1.ProposeRequest{AgentId: "curator", RunId: "run_a", Reasoning: "found while pruning",
		Updates: []*memoryv1.FileUpdate{fact("Technical", "- The compost heap is turned weekly")}})
	f.reject = f.propose(t, &memoryv1.ProposeRequest{AgentId: "curator", RunId: "run_b", Priority: memoryv1.Priority_PRIORITY_HIGH,
		Updates: []*memoryv1.FileUpdate{fact("Technical", "- MinIO bucket mcpstorage has versioning turned on")}})
	f.policy = f.propose(t, &memoryv1.ProposeRequest{AgentId: "curator", RunId: "run_p", Reasoning: "let me approve myself",
		Updates: []*memoryv1.FileUpdate{{File: "policy.json", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: `{"autoApprove": true, "reviewers": ["rita"]}`}}})
	return f
}

// consoleLog collects what pages write to the console: errors there, or
// CSP violations, are failures.
type consoleLog struct {
	mu   sync.Mutex
	msgs []chromedp.ConsoleMessage
}

func watchConsole(ctx context.Context) *consoleLog {
	l := &consoleLog{}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			l.mu.Lock()
			l.msgs = append(l.msgs, m)
			l.mu.Unlock()
		}
	}()
	return l
}

// problems are the messages that are not the browser noting the error
// pages this test asks for on purpose (a 403, a 404; a 401 of a poll cut
// short by signing out).
func (l *consoleLog) problems() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, m := range l.msgs {
		deliberate := m.Source == "network" && regexp.MustCompile(`status of 40[134]`).MatchString(m.Text)
		if strings.Contains(m.Text, "Content Security Policy") || m.IsException() ||
			((m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning) && !deliberate) {
			out = append(out, m.String()+" ("+m.URL+")")
		}
	}
	return out
}

// in is a small driver of one browser tab.
type in struct {
	t    *testing.T
	ctx  context.Context
	base string
}

func (b in) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	require.NoError(b.t, chromedp.Do(b.ctx, actions...))
}

func (b in) open(path string, waitFor string) {
	b.t.Helper()
	b.do(chromedp.Navigate(b.base+path), chromedp.WaitVisible(chromedp.CSS(waitFor)))
}

func (b in) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(b.t, err, sel)
	return s
}

func (b in) eval(js string) bool {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](js))
	require.NoError(b.t, err, js)
	return v
}

func (b in) location() string {
	b.t.Helper()
	l, err := chromedp.Run(b.ctx, chromedp.Location())
	require.NoError(b.t, err)
	return l
}

// signIn pastes tok into the sign-in form as a person would.
func (b in) signIn(tok string) {
	b.t.Helper()
	b.open("/ui/login", "#token")
	b.do(chromedp.SetValue(chromedp.CSS("#token"), tok), chromedp.Click(chromedp.CSS("form[action='/ui/login'] button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS("header nav")))
}

func (b in) signOut() {
	b.t.Helper()
	b.do(chromedp.Click(chromedp.CSS("form[action='/ui/logout'] button")), chromedp.WaitVisible(chromedp.CSS("#token")))
	require.Contains(b.t, b.text("main"), "You are signed out")
}

// mark puts a marker on the page's window: it survives everything but a
// reload, so a page that still has it updated itself.
func (b in) mark() { b.eval(`window.__noReload = true`) }
func (b in) markSurvived() {
	require.True(b.t, b.eval(`window.__noReload === true`), "the page updated itself, without a reload")
}

// screenshot writes what the window shows (1280×800, or the phone's
// viewport) to $CONSOLE_SCREENSHOTS/<name>.png when that is set (make
// screenshots): the README's pictures come from this test.
func (b in) screenshot(name string) {
	b.t.Helper()
	dir := os.Getenv("CONSOLE_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	require.NoError(b.t, err)
	require.NoError(b.t, os.MkdirAll(dir, 0o755))
	require.NoError(b.t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}

func (b in) sessionCookie() *network.Cookie {
	b.t.Helper()
	res, err := chromedp.Call(b.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{b.base + "/ui/"}})
	require.NoError(b.t, err)
	for _, c := range res.Cookies {
		if c.Name == "gbm_session" {
			return c
		}
	}
	return nil
}

// Issue #28: a person signs in with a pasted token, opens every page,
// approves a proposal and sees its commit, rejects one with a comment; a
// reviewer cannot approve a policy change; an agent token sees only its
// agent; a forged POST is refused. In Chromium, against a real memoryd.
func TestConsoleInABrowser(t *testing.T) {
	ctx := consoleBrowser(t)
	f := newConsoleFixture(t)
	b := in{t: t, ctx: ctx, base: f.base}
	log := watchConsole(ctx)
	b.do(chromedp.EmulateViewport(screenshotWidth, screenshotHeight))

	// The reviewUrl of a proposal is its console page; signed out, it
	// leads through sign-in and back.
	require.Equal(t, "http://127.0.0.1:8080/ui/proposals/"+f.approve, f.status(t, f.approve).GetReviewUrl())
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(f.base+"/ui/proposals/"+f.approve))
	require.NoError(t, err)
	require.Equal(t, "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
		resp.Headers["Content-Security-Policy"], "the sign-in page has the strict CSP")
	require.Contains(t, b.location(), "/ui/login?next=")
	// Pasted as make run prints it.
	b.do(chromedp.SetValue(chromedp.CSS("#token"), "export TOKEN="+f.admin), chromedp.Click(chromedp.CSS("form[action='/ui/login'] button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS("#approve")))
	require.Equal(t, f.base+"/ui/proposals/"+f.approve, b.location(), "back on the page the link named")

	t.Run("the session cookie", func(t *testing.T) {
		c := b.sessionCookie()
		require.NotNil(t, c, "Chromium keeps a Secure cookie from http://127.0.0.1")
		require.True(t, c.HTTPOnly)
		require.True(t, c.Secure)
		require.Equal(t, network.CookieSameSiteStrict, c.SameSite)
		require.Equal(t, "/ui/", c.Path)
		require.False(t, b.eval(`document.cookie.includes("gbm_session")`), "no script reads it")
	})

	t.Run("agents", func(t *testing.T) {
		b.open("/ui/", "ul.agents")
		b.screenshot("agents")
		require.True(t, b.eval(`document.querySelector('li[data-agent="curator"] meter') !== null`), "Layer 1 gauges")
		require.True(t, b.eval(`document.querySelector('li[data-agent="other"]') !== null`))
		require.Contains(t, b.text(`li[data-agent="curator"]`), "3 waiting")
		require.Contains(t, b.text(`li[data-agent="curator"]`), "1 open loop")
		require.Contains(t, b.text(`li[data-agent="curator"]`), "updated", "the age of meta.json's last update")
		require.Contains(t, b.text("main"), "2 agents with memory", "ListAgents' total")
		b.do(chromedp.SetValue(chromedp.CSS("#q"), "cur"), chromedp.Submit(chromedp.CSS("#q")), chromedp.WaitNotPresent(chromedp.CSS(`li[data-agent="other"]`)))
		require.True(t, b.eval(`document.querySelector('li[data-agent="curator"]') !== null`), "filtered, not emptied")
	})

	t.Run("every tab of an agent", func(t *testing.T) {
		for tab, want := range map[string]string{
			"snapshot":  "Curator of the garden's memory.",
			"facts":     "MinIO bucket mcpstorage has versioning on",
			"loops":     "Confirm the backup schedule",
			"decisions": "Use MinIO for sources",
			"timeline":  "run_seed",
			"history":   "memory-update: curator / run_seed",
		} {
			b.open("/ui/agents/curator?tab="+tab, "#tab-"+tab+"-body")
			require.Contains(t, b.text("#tab-"+tab+"-body"), want, tab)
			if tab == "facts" {
				b.screenshot("agent")
			}
		}
		b.open("/ui/agents/curator?tab=facts", "#tab-facts-body")
		require.Contains(t, b.text("#tab-facts-body h2"), "Technical", "facts by section")
		b.open("/ui/agents/curator?tab=loops", "#tab-loops-body")
		require.Contains(t, b.text("#tab-loops-body h2"), "high", "loops by priority")
	})

	t.Run("search, an entity and a decision chain", func(t *testing.T) {
		eg := memoryv1.NewEntityGraphServiceClient(dial(t, f.d.grpcAddr[serviceNames[2]]))
		si := memoryv1.NewSearchIndexServiceClient(dial(t, f.d.grpcAddr[serviceNames[1]]))
		decision, later := decisionID("Use MinIO for sources"), decisionID("Version every source bucket")
		require.Eventually(t, func() bool {
			hits, err := si.Search(asCaller(f.admin), &memoryv1.SearchRequest{Query: "greenhouses"})
			require.NoError(t, err)
			ents, err := eg.ListEntities(asCaller(f.admin), &memoryv1.ListEntitiesRequest{Type: memoryv1.EntityType_ENTITY_TYPE_DECISION})
			require.NoError(t, err)
			return len(hits.GetResults()) > 0 && len(ents.GetEntities()) == 2
		}, 20*time.Second, 50*time.Millisecond, "the index and the graph follow the seed commit")

		// The header's query box, on any page.
		b.open("/ui/inbox", "#top-q")
		b.do(chromedp.SetValue(chromedp.CSS("#top-q"), "greenhouses"), chromedp.Submit(chromedp.CSS("#top-q")),
			chromedp.WaitVisible(chromedp.CSS("ol.hits mark")))
		require.Equal(t, "greenhouses", strings.ToLower(b.text("ol.hits mark")), "the match is marked")
		require.Contains(t, b.text("ol.hits"), "three greenhouses")
		b.screenshot("search")
		b.do(chromedp.Click(chromedp.CSS("ol.hits h2 a")), chromedp.WaitVisible(chromedp.CSS("#tab-facts-body")))
		require.Contains(t, b.text("#tab-facts-body"), "The garden has three greenhouses", "a hit links to its file's tab")

		b.open("/ui/entities?type=decision", `li[data-entity="`+decision+`"]`)
		b.do(chromedp.Click(chromedp.CSS(`li[data-entity="`+decision+`"] a`)), chromedp.WaitVisible(chromedp.CSS("figure.picture svg.gb-timeline")))
		require.True(t, b.eval(`document.querySelectorAll("figure.picture svg.gb-timeline .bar").length > 0`), "the relations drawn as bars")
		require.True(t, b.eval(`document.querySelectorAll("table.edges tbody tr").length > 0`), "and listed with valid_from / valid_to")
		b.screenshot("entity")

		b.open("/ui/decisions?id="+url.QueryEscape(later), "figure.picture svg.gb-chain")
		require.Contains(t, b.text("ol.chain"), "Version every source bucket")
		require.Contains(t, b.text("ol.chain"), "Use MinIO for sources", "and the decision it builds on")
		require.True(t, b.eval(`document.querySelector("figure.picture svg.gb-chain > title").textContent.includes("Version every source bucket")`), "the chain's picture names it")
		require.True(t, b.eval(`document.querySelectorAll("figure.picture svg.gb-chain .edge").length > 0`), "an arrow to what it builds on")
		b.screenshot("decisions")
		require.Empty(t, log.problems(), "inline SVG under the strict CSP: no violation")
	})

	var seedSHA string
	t.Run("history and a commit's diff", func(t *testing.T) {
		b.open("/ui/agents/curator?tab=history", "table.history")
		sha, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("table.history tbody tr").dataset.sha`))
		require.NoError(t, err)
		seedSHA = sha
		b.do(chromedp.Click(chromedp.CSS(`table.history tbody tr a[href*="/commits/"]`)), chromedp.WaitVisible(chromedp.CSS("table.diff.unified")))
		require.Contains(t, b.text("main"), "+- MinIO bucket mcpstorage has versioning on")
		b.do(chromedp.Click(chromedp.CSS("#view-split")), chromedp.WaitVisible(chromedp.CSS("table.diff.split")))
		b.do(chromedp.Click(chromedp.CSS(`a[href*="at="]`)), chromedp.WaitVisible(chromedp.CSS("#as-of")))
		require.Contains(t, b.text("#tab-snapshot-body"), "Curator of the garden's memory.", "memory as of the commit")
	})

	t.Run("inbox, oldest first, with why each waits", func(t *testing.T) {
		b.open("/ui/inbox", "ol.inbox")
		b.screenshot("inbox")
		order, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("ol.inbox li[data-proposal]")].map(li => li.dataset.proposal)`))
		require.NoError(t, err)
		require.Equal(t, []string{f.approve, f.reject, f.policy}, order)
		require.Contains(t, b.text(`li[data-proposal="`+f.reject+`"]`), "high priority always waits for a person")
		require.Contains(t, b.text(`li[data-proposal="`+f.policy+`"]`), "changes the agent's review policy")
		require.Contains(t, b.text(`li[data-proposal="`+f.approve+`"]`), "the agent's policy does not auto-approve")
	})

	t.Run("approve and see the commit", func(t *testing.T) {
		b.open("/ui/proposals/"+f.approve, "#approve")
		b.screenshot("proposal")
		preview := b.eval(`document.querySelector("#preview") !== null`)
		if preview {
			require.Contains(t, b.text("#preview"), "The compost heap is turned weekly", "the exact diff the commit would make")
		} else {
			require.Contains(t, b.text("#preview-unavailable"), "Preview unavailable:")
		}
		b.do(chromedp.SetValue(chromedp.CSS("#approve-comment"), "looks right"), chromedp.Click(chromedp.CSS("#approve")),
			chromedp.WaitVisible(chromedp.CSS("p.notice")))
		require.Contains(t, b.text("p.notice"), "Approved")
		b.mark()
		b.do(chromedp.WaitVisible(chromedp.CSS("#commit")))
		b.markSurvived()
		require.Equal(t, "applied", b.text("#status"))
		b.do(chromedp.Click(chromedp.CSS("#commit")), chromedp.WaitVisible(chromedp.CSS("table.diff")))
		require.Contains(t, b.text("main"), "The compost heap is turned weekly")
		b.open("/ui/agents/curator?tab=history", `tr[data-proposal="`+f.approve+`"]`)
		require.Contains(t, b.text(`tr[data-proposal="`+f.approve+`"]`), "run_a", "the commit, with its proposal and run")
	})

	t.Run("reject with a comment", func(t *testing.T) {
		b.open("/ui/proposals/"+f.reject, "#reject")
		b.do(chromedp.SetValue(chromedp.CSS("#reject-comment"), "duplicate of the versioning fact"), chromedp.Click(chromedp.CSS("#reject")),
			chromedp.WaitVisible(chromedp.CSS("p.notice")))
		require.Equal(t, "rejected", b.text("#status"))
		require.Contains(t, b.text("dl.props"), "duplicate of the versioning fact")
		p := f.status(t, f.reject)
		require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_REJECTED, p.GetStatus())
		require.Equal(t, "duplicate of the versioning fact", p.GetReviewComment())
	})

	t.Run("history and inbox follow new commits without a reload", func(t *testing.T) {
		b.open("/ui/agents/curator?tab=history", "table.history")
		b.mark()
		id := f.propose(t, &memoryv1.ProposeRequest{AgentId: "curator", RunId: "run_live", Updates: []*memoryv1.FileUpdate{fact("Domain", "- The orchard has twelve trees")}})
		f.applied(t, id)
		b.do(chromedp.WaitVisible(chromedp.CSS(`tr[data-proposal="` + id + `"]`)))
		b.markSurvived()

		b.open("/ui/inbox", "ol.inbox")
		b.mark()
		waiting := f.propose(t, &memoryv1.ProposeRequest{AgentId: "curator", RunId: "run_new", Updates: []*memoryv1.FileUpdate{fact("Domain", "- The pond is drained in November")}})
		b.do(chromedp.WaitVisible(chromedp.CSS(`li[data-proposal="` + waiting + `"]`)))
		b.markSurvived()
	})

	t.Run("a forged POST changes nothing", func(t *testing.T) {
		c := b.sessionCookie()
		require.NotNil(t, c)
		post := func(form url.Values, headers map[string]string) int {
			req, err := http.NewRequest("POST", f.base+"/ui/proposals/"+f.policy+"/approve", strings.NewReader(form.Encode()))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Cookie", "gbm_session="+c.Value)
			for k, v := range headers {
				req.Header.Set(k, v)
			}
			resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			return resp.StatusCode
		}
		require.Equal(t, http.StatusForbidden, post(url.Values{"comment": {"forged"}}, nil), "no CSRF token")
		b.open("/ui/proposals/"+f.policy, "#approve")
		csrf, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`#approve-form input[name=csrf]`)))
		require.NoError(t, err)
		require.Equal(t, http.StatusForbidden, post(url.Values{"csrf": {csrf}}, map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}),
			"the right token from another site")
		require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, f.status(t, f.policy).GetStatus(), "nothing changed")
	})

	t.Run("phone width and dark", func(t *testing.T) {
		b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
		for _, p := range []string{"/ui/", "/ui/inbox", "/ui/agents/curator?tab=history", "/ui/proposals/" + f.policy, "/ui/search?q=greenhouses", "/ui/decisions?query=MinIO"} {
			b.open(p, "main")
			require.True(t, b.eval(`document.documentElement.scrollWidth <= window.innerWidth`), "no sideways scrolling at 390 px: %s", p)
		}
		b.screenshot("inbox-phone")
		b.do(chromedp.EmulateViewport(screenshotWidth, screenshotHeight))
		light, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
		require.NoError(t, err)
		_, err = chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
		require.NoError(t, err)
		dark, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
		require.NoError(t, err)
		require.NotEqual(t, light, dark, "a dark scheme")
		_, err = chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{})
		require.NoError(t, err)
	})

	t.Run("a reviewer cannot approve a policy change", func(t *testing.T) {
		b.signOut()
		b.signIn(f.reviewer)
		b.open("/ui/proposals/"+f.policy, "#approve")
		b.do(chromedp.Click(chromedp.CSS("#approve")), chromedp.WaitVisible(chromedp.CSS("#error")))
		require.Contains(t, b.text("#error"), "a change of the agent's review policy needs an admin")
		require.Contains(t, b.text("#error"), "PERMISSION_DENIED")
		require.Equal(t, memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, f.status(t, f.policy).GetStatus())
	})

	t.Run("memctl console: a one-time code and one click", func(t *testing.T) {
		b.signOut()
		// What memctl console asks for, with the reviewer's token.
		req, err := http.NewRequest(http.MethodPost, f.base+"/ui/api/sign-in-codes", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+f.reviewer)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		path := regexp.MustCompile(`"path":"([^"]+)"`).FindStringSubmatch(string(body))
		require.NotNil(t, path, string(body))
		link := f.base + strings.ReplaceAll(path[1], `\u0026`, "&")
		b.do(chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("input[name=code] ~ button")))
		require.Contains(t, b.text("main"), "Continue as rita")
		require.Nil(t, b.sessionCookie(), "opening the link signs nobody in")
		b.do(chromedp.Click(chromedp.CSS("input[name=code] ~ button")), chromedp.WaitVisible(chromedp.CSS("header nav")))
		require.NotNil(t, b.sessionCookie())
		require.Contains(t, b.text("header"), "rita")
		// The same link again: used.
		b.signOut()
		b.do(chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("input[name=code] ~ button")),
			chromedp.Click(chromedp.CSS("input[name=code] ~ button")), chromedp.WaitVisible(chromedp.CSS("p.error")))
		require.Contains(t, b.text("p.error"), "expired or was already used")
		require.Nil(t, b.sessionCookie())
		b.signIn(f.reviewer)
	})

	t.Run("an agent token sees only its agent", func(t *testing.T) {
		b.signOut()
		b.signIn(f.agent)
		b.open("/ui/", "ul.agents")
		agents, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("li[data-agent]")].map(li => li.dataset.agent)`))
		require.NoError(t, err)
		require.Equal(t, []string{"curator"}, agents)
		b.open("/ui/agents/other?tab=snapshot", "#error")
		require.Contains(t, b.text("#error"), "Not allowed")
		require.NotContains(t, b.text("main"), "Someone else.")
	})

	t.Run("a person's edit is marked, and memory is text", func(t *testing.T) {
		sha := pushHumanEdit(t, f.d.dataDir, "memory/curator/facts.md",
			"\n## Notes\n- <script>document.title='pwned'</script> typed by a person\n")
		require.NotEqual(t, seedSHA, sha)
		b.open("/ui/agents/curator?tab=history", `tr[data-sha="`+sha+`"]`)
		require.Contains(t, b.text(`tr[data-sha="`+sha+`"]`), "human edit")
		b.open("/ui/agents/curator?tab=facts", "#tab-facts-body")
		require.Contains(t, b.text("#tab-facts-body"), "<script>document.title='pwned'</script> typed by a person", "shown as text")
		require.False(t, b.eval(`document.querySelector("main script") !== null`), "never as markup")
		title, err := chromedp.Run(ctx, chromedp.Title())
		require.NoError(t, err)
		require.NotEqual(t, "pwned", title)
	})

	require.Empty(t, log.problems(), "no console errors and no CSP violations")
}

// pushHumanEdit appends text to a file with the real git binary through a
// clone pushed to the data dir's repository, as a person would (spec
// DiffMem §6.5), and returns the commit.
func pushHumanEdit(t *testing.T, dataDir, path, text string) string {
	t.Helper()
	wt := filepath.Join(t.TempDir(), "wt")
	run := func(dir string, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Person", "GIT_AUTHOR_EMAIL=person@example.org",
			"GIT_COMMITTER_NAME=Person", "GIT_COMMITTER_EMAIL=person@example.org")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	run(".", "clone", "-q", "--branch", "main", filepath.Join(dataDir, "memory.git"), wt)
	file := filepath.Join(wt, path)
	old, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, append(old, []byte(text)...), 0o644))
	run(wt, "commit", "-q", "-am", fmt.Sprintf("fix %s by hand", filepath.Base(path)))
	run(wt, "push", "-q", "origin", "main")
	return run(wt, "rev-parse", "HEAD")
}
