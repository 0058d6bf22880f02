package console

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// agentsPerPage is how many agents one Agents page shows: one ListAgents
// page, so a page costs one call however many agents there are.
const agentsPerPage = 50

// gauge is one Layer 1 file's tokens against its hard limit.
type gauge struct {
	File   string
	Tokens int32
	Limit  int32
	// High starts the meter's warning zone (90 % of the limit).
	High int32
}

// agentRow is one agent of the Agents page.
type agentRow struct {
	ID        string
	Gauges    []gauge
	Version   int32
	OpenLoops int32
	LastRun   string
	Waiting   int
	// Updated is meta.json's last_update (zero when never written), Age
	// how long ago that was.
	Updated time.Time
	Age     string
	// NoMemory: the agent has waiting proposals but no memory folder yet
	// (its first proposal was not applied), so ListAgents does not list it.
	NoMemory bool
}

// agentsView is the Agents page's data.
type agentsView struct {
	Query       string
	OnlyWaiting bool
	Rows        []agentRow
	// Total is how many agents with memory match the query (ListAgents'
	// total_size); Shown how many rows this page has before "only waiting".
	Total     int
	Shown     int
	FirstURL  string
	NextURL   string
	PageToken string
}

// agentsPage lists the agents the caller may see, with their Layer 1
// gauges, waiting proposals, open loops and last update. A page is one
// ListAgents call (the service decides which agents the caller sees) plus
// the waiting proposals.
func (s *Server) agentsPage(w http.ResponseWriter, r *http.Request, c *caller) {
	ctx, cancel := s.call(r, c)
	defer cancel()
	q := r.URL.Query()
	v := agentsView{Query: strings.TrimSpace(q.Get("q")), OnlyWaiting: q.Get("waiting") == "1", PageToken: q.Get("page_token")}

	resp, err := s.clients.ContextAssembly.ListAgents(ctx, &memoryv1.ListAgentsRequest{Query: v.Query, PageSize: agentsPerPage, PageToken: v.PageToken})
	if err != nil {
		s.callFailed(w, r, c, err, "")
		return
	}
	waitingBy, err := s.waitingByAgent(ctx)
	if err != nil {
		s.callFailed(w, r, c, err, "")
		return
	}
	v.Total = int(resp.GetTotalSize())
	v.Rows = agentRows(resp.GetAgents(), waitingBy, s.opts.Now())
	v.Rows = append(v.Rows, agentsWithoutMemory(waitingBy, v.Rows, v.Query, v.PageToken, resp.GetNextPageToken())...)
	slices.SortFunc(v.Rows, func(a, b agentRow) int { return strings.Compare(a.ID, b.ID) })
	v.Shown = len(v.Rows)
	if v.OnlyWaiting {
		// Filters this page's rows: the service lists agents, not their
		// proposals, so "only waiting" cannot page on its own.
		v.Rows = slices.DeleteFunc(v.Rows, func(row agentRow) bool { return row.Waiting == 0 })
	}
	link := func(token string) string {
		u := url.Values{}
		if v.Query != "" {
			u.Set("q", v.Query)
		}
		if v.OnlyWaiting {
			u.Set("waiting", "1")
		}
		if token != "" {
			u.Set("page_token", token)
		}
		if len(u) == 0 {
			return Path
		}
		return Path + "?" + u.Encode()
	}
	if v.PageToken != "" {
		v.FirstURL = link("")
	}
	if next := resp.GetNextPageToken(); next != "" {
		v.NextURL = link(next)
	}
	d := base(c, "Agents", "agents")
	d.Data = v
	s.render(w, r, http.StatusOK, "agents", d)
}

// waitingByAgent counts the caller's waiting proposals per agent.
func (s *Server) waitingByAgent(ctx context.Context) (map[string]int, error) {
	waiting, _, err := s.waiting(ctx, "", waitingStatuses)
	if err != nil {
		return nil, err
	}
	by := map[string]int{}
	for _, p := range waiting {
		by[p.GetAgentId()]++
	}
	return by, nil
}

// agentRows turns ListAgents' summaries into rows.
func agentRows(agents []*memoryv1.AgentSummary, waitingBy map[string]int, now time.Time) []agentRow {
	rows := make([]agentRow, 0, len(agents))
	for _, a := range agents {
		m := a.GetMeta()
		row := agentRow{ID: a.GetAgentId(), Gauges: gauges(a.GetLayer1()), Version: m.GetVersion(), OpenLoops: m.GetOpenLoopsCount(),
			LastRun: m.GetLastRunId(), Waiting: waitingBy[a.GetAgentId()]}
		if m.GetLastUpdate() != nil {
			row.Updated = m.GetLastUpdate().AsTime()
			row.Age = ago(now, row.Updated)
		}
		rows = append(rows, row)
	}
	return rows
}

// agentsWithoutMemory are the agents with waiting proposals that ListAgents
// cannot list (no memory folder yet) and that belong on this page: pages
// are ranges of agent ids, (after, next] — or (after, ∞) on the last page.
func agentsWithoutMemory(waitingBy map[string]int, listed []agentRow, query, after, next string) []agentRow {
	var out []agentRow
	for id, n := range waitingBy {
		if slices.ContainsFunc(listed, func(row agentRow) bool { return row.ID == id }) ||
			!strings.Contains(strings.ToLower(id), strings.ToLower(query)) || id <= after || (next != "" && id > next) {
			continue
		}
		out = append(out, agentRow{ID: id, Waiting: n, NoMemory: true})
	}
	return out
}

// gauges turns Layer 1 usage into meters.
func gauges(us []*memoryv1.LayerUsage) []gauge {
	out := make([]gauge, 0, len(us))
	for _, u := range us {
		out = append(out, gauge{File: u.GetFile(), Tokens: u.GetTokens(), Limit: u.GetLimit(), High: u.GetLimit() * 9 / 10})
	}
	return out
}
