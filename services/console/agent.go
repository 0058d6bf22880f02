package console

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/mdops"
)

// tabs are the Agent page's tabs (spec DiffMem §6.1: Snapshot / Facts /
// Loops / Decisions / Timeline, plus History).
var tabs = []tabLink{
	{ID: "snapshot", Label: "Snapshot"},
	{ID: "facts", Label: "Facts"},
	{ID: "loops", Label: "Loops"},
	{ID: "decisions", Label: "Decisions"},
	{ID: "timeline", Label: "Timeline"},
	{ID: "history", Label: "History"},
}

type tabLink struct {
	ID, Label, URL string
	Active         bool
}

// revisionRe is what the console accepts as a commit in its URLs: a full
// or abbreviated sha. The services resolve it (and refuse what names
// nothing); the console keeps ~N and names out of its links.
var revisionRe = regexp.MustCompile(`^[0-9a-f]{4,64}$`)

// agentView is the Agent page's data.
type agentView struct {
	Agent string
	Tab   string
	Tabs  []tabLink
	// At is the commit the page shows the memory as of ("" = now).
	At string
	// Commit is the commit the read was served from.
	Commit   string
	Snapshot string
	Facts    []factSection
	Loops    loopsView
	// Decisions, newest first.
	Decisions []*memoryv1.Decision
	Timeline  []*memoryv1.TimelineDay
	// TimelineAll: every day, not only the last timelineDays.
	TimelineAll  bool
	TimelineDays int
	History      historyView
	Warnings     []string
	Truncated    bool
}

// factSection is one "## " section of facts.md with its facts.
type factSection struct {
	Title string
	Facts []mdops.Fact
}

// loopsView is open_loops.md: open loops by priority, then closed ones.
type loopsView struct {
	Open   []loopGroup
	Closed []mdops.Loop
	Total  int
}

type loopGroup struct {
	Priority string
	Loops    []mdops.Loop
}

// historyView is the History tab: the agent's commits, newest first.
type historyView struct {
	Commits []historyRow
	// NextURL pages on (older commits).
	NextURL string
}

type historyRow struct {
	*memoryv1.CommitInfo
	Age string
	// Subject is the commit message's first line.
	Subject string
}

// timelineDays is how many days the Timeline tab shows unless asked for all.
const timelineDays = 30

// agentPage shows one agent's memory in the tab asked for, as of a commit
// when ?at= names one.
func (s *Server) agentPage(w http.ResponseWriter, r *http.Request, c *caller) {
	agent := r.PathValue("agent")
	q := r.URL.Query()
	v := agentView{Agent: agent, Tab: q.Get("tab"), At: q.Get("at"), TimelineDays: timelineDays}
	if v.Tab == "" {
		v.Tab = "snapshot"
	}
	if !slices.ContainsFunc(tabs, func(t tabLink) bool { return t.ID == v.Tab }) {
		s.renderError(w, r, c, http.StatusBadRequest, "Not a valid request", "There is no tab "+v.Tab+": the tabs are snapshot, facts, loops, decisions, timeline and history.")
		return
	}
	if v.At != "" && !revisionRe.MatchString(v.At) {
		s.renderError(w, r, c, http.StatusBadRequest, "Not a valid request", "at must be a commit sha (4 to 64 hex digits).")
		return
	}
	for _, t := range tabs {
		t.URL = agentURL(agent, t.ID, v.At)
		t.Active = t.ID == v.Tab
		v.Tabs = append(v.Tabs, t)
	}
	ctx, cancel := s.call(r, c)
	defer cancel()
	var err error
	switch v.Tab {
	case "snapshot", "facts", "loops":
		err = s.readLayer1(ctx, &v)
	case "decisions":
		err = s.readDecisions(ctx, &v)
	case "timeline":
		v.TimelineAll = q.Get("days") == "all"
		err = s.readTimeline(ctx, &v)
	case "history":
		err = s.readHistory(ctx, &v, q.Get("page"))
	}
	if err != nil {
		s.callFailed(w, r, c, err, Path)
		return
	}
	d := base(c, agent, "agents")
	if v.Tab == "history" && q.Get("page") == "" {
		d.Live = &liveView{URL: versionURL("history", "agent", agent), Version: historyVersion(v.History.Commits)}
	}
	d.Data = v
	s.render(w, r, http.StatusOK, "agent", d)
}

// agentURL is the URL of an agent's tab, as of at ("" = now).
func agentURL(agent, tab, at string) string {
	q := url.Values{"tab": {tab}}
	if at != "" {
		q.Set("at", at)
	}
	return Path + "agents/" + url.PathEscape(agent) + "?" + q.Encode()
}

// readLayer1 reads the tab's Layer 1 file (ReadMemory, deep, that file
// only) and prepares it.
func (s *Server) readLayer1(ctx context.Context, v *agentView) error {
	file := map[string]string{"snapshot": "snapshot.md", "facts": "facts.md", "loops": "open_loops.md"}[v.Tab]
	resp, err := s.clients.ContextAssembly.ReadMemory(ctx, &memoryv1.ReadMemoryRequest{
		AgentId: v.Agent, Mode: memoryv1.ReadMode_READ_MODE_DEEP, IncludeFiles: []string{file}, At: v.At})
	if err != nil {
		return err
	}
	v.Commit, v.Warnings, v.Truncated = resp.GetCommit(), resp.GetWarnings(), resp.GetTruncated()
	content := ""
	for _, f := range resp.GetFiles() {
		if f.GetFile() == file {
			content = f.GetContent()
		}
	}
	switch v.Tab {
	case "snapshot":
		v.Snapshot = content
	case "facts":
		v.Facts = factSections(mdops.ParseFacts(content))
	case "loops":
		v.Loops = loopsOf(mdops.ParseLoops(content))
	}
	return nil
}

// factSections groups facts by section, sections in file order.
func factSections(facts []mdops.Fact) []factSection {
	var out []factSection
	at := map[string]int{}
	for _, f := range facts {
		i, ok := at[f.Section]
		if !ok {
			i = len(out)
			at[f.Section] = i
			out = append(out, factSection{Title: f.Section})
		}
		out[i].Facts = append(out[i].Facts, f)
	}
	return out
}

// loopPriorities orders the open loops' groups.
var loopPriorities = []string{mdops.PriorityCritical, mdops.PriorityHigh, mdops.PriorityNormal, mdops.PriorityLow, ""}

// loopsOf groups open loops by priority (critical first) and lists the
// closed ones after them.
func loopsOf(loops []mdops.Loop) loopsView {
	v := loopsView{Total: len(loops)}
	groups := map[string][]mdops.Loop{}
	for _, l := range loops {
		if l.Closed {
			v.Closed = append(v.Closed, l)
			continue
		}
		p := l.Priority
		if !slices.Contains(loopPriorities, p) {
			p = ""
		}
		groups[p] = append(groups[p], l)
	}
	for _, p := range loopPriorities {
		if len(groups[p]) > 0 {
			label := p
			if label == "" {
				label = "no priority"
			}
			v.Open = append(v.Open, loopGroup{Priority: label, Loops: groups[p]})
		}
	}
	return v
}

// maxDecisions is how many decisions the Decisions tab shows.
const maxDecisions = 100

// readDecisions reads the newest decisions (GetLayer2).
func (s *Server) readDecisions(ctx context.Context, v *agentView) error {
	resp, err := s.clients.ContextAssembly.GetLayer2(ctx, &memoryv1.GetLayer2Request{
		AgentId: v.Agent, Include: []string{"decisions"}, DecisionsLimit: maxDecisions, At: v.At})
	if err != nil {
		return err
	}
	v.Commit, v.Decisions, v.Truncated = resp.GetCommit(), resp.GetDecisions(), resp.GetTruncated()
	return nil
}

// readTimeline reads the timeline days (GetLayer2), newest first: the
// last timelineDays unless all are asked for.
func (s *Server) readTimeline(ctx context.Context, v *agentView) error {
	req := &memoryv1.GetLayer2Request{AgentId: v.Agent, Include: []string{"timeline"}, At: v.At}
	if !v.TimelineAll {
		req.TimelineFrom = s.opts.Now().UTC().AddDate(0, 0, -timelineDays).Format(time.DateOnly)
	}
	resp, err := s.clients.ContextAssembly.GetLayer2(ctx, req)
	if err != nil {
		return err
	}
	v.Commit, v.Truncated = resp.GetCommit(), resp.GetTruncated()
	v.Timeline = slices.Clone(resp.GetTimeline())
	slices.Reverse(v.Timeline)
	return nil
}

// historyPage is how many commits the History tab shows at once.
const historyPage = 50

// readHistory lists the agent's commits, newest first (ListHistory).
func (s *Server) readHistory(ctx context.Context, v *agentView, page string) error {
	resp, err := s.clients.ContextAssembly.ListHistory(ctx, &memoryv1.ListHistoryRequest{AgentId: v.Agent, PageSize: historyPage, PageToken: page})
	if err != nil {
		return err
	}
	now := s.opts.Now()
	for _, c := range resp.GetCommits() {
		subject, _, _ := strings.Cut(c.GetMessage(), "\n")
		v.History.Commits = append(v.History.Commits, historyRow{CommitInfo: c, Age: ago(now, c.GetTime().AsTime()), Subject: subject})
	}
	if next := resp.GetNextPageToken(); next != "" {
		v.History.NextURL = agentURL(v.Agent, "history", "") + "&page=" + url.QueryEscape(next)
	}
	return nil
}

// commitView is the commit page's data.
type commitView struct {
	Agent   string
	SHA     string
	Parent  string
	Date    time.Time
	Summary string
	Split   bool
	Files   []fileDiff
	// UnifiedURL and SplitURL switch the view.
	UnifiedURL, SplitURL string
	AsOfURL              string
	Truncated            bool
}

// commitPage shows what one commit changed in the agent's memory: the
// diff between its parent and it (DiffMemory), unified or side by side.
func (s *Server) commitPage(w http.ResponseWriter, r *http.Request, c *caller) {
	agent, sha := r.PathValue("agent"), r.PathValue("sha")
	if !revisionRe.MatchString(sha) {
		s.renderError(w, r, c, http.StatusBadRequest, "Not a valid request", "A commit is named by its sha (4 to 64 hex digits).")
		return
	}
	ctx, cancel := s.call(r, c)
	defer cancel()
	resp, err := s.clients.ContextAssembly.DiffMemory(ctx, &memoryv1.DiffMemoryRequest{AgentId: agent, From: sha + "~1", To: sha})
	if err != nil {
		s.callFailed(w, r, c, err, agentURL(agent, "history", ""))
		return
	}
	here := Path + "agents/" + url.PathEscape(agent) + "/commits/" + sha
	v := commitView{Agent: agent, SHA: resp.GetTo(), Parent: resp.GetFrom(), Date: resp.GetToDate().AsTime(),
		Summary: resp.GetSummary(), Split: r.URL.Query().Get("view") == "split", Files: fileDiffs(resp.GetDiff()),
		UnifiedURL: here, SplitURL: here + "?view=split", AsOfURL: agentURL(agent, "snapshot", resp.GetTo()), Truncated: resp.GetTruncated()}
	d := base(c, agent+" @ "+shortSHA(v.SHA), "agents")
	d.Data = v
	s.render(w, r, http.StatusOK, "commit", d)
}
