package console

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/authz"
)

// agentsPerPage is how many agents one Agents page shows (each costs two
// calls).
const agentsPerPage = 50

// fanOut bounds the calls one page makes at the same time.
const fanOut = 8

// The discovery bounds: pages of ListEntities and of ListProposals read to
// find the agents a caller who may see every agent has.
const (
	discoverEntityPages   = 4
	discoverProposalPages = 4
)

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
	Layer1    int32
	Layer1Max int32
	Version   int32
	OpenLoops int32
	Waiting   int
	Commit    *memoryv1.CommitInfo
	Age       string
	// Error is why the agent's memory could not be read (e.g. a reviewer
	// token, which may review proposals but not read memory).
	Error string
}

// agentsView is the Agents page's data.
type agentsView struct {
	Query       string
	OnlyWaiting bool
	Rows        []agentRow
	Total       int
	Page, Pages int
	PrevURL     string
	NextURL     string
	// Discovered: the caller may see every agent, and no RPC lists agents,
	// so the list is what the proposals and the entity graph name.
	Discovered bool
	Notes      []string
}

// agentsPage lists the agents the caller may see, with their Layer 1
// gauges, waiting proposals, open loops and last commit.
func (s *Server) agentsPage(w http.ResponseWriter, r *http.Request, c *caller) {
	ctx, cancel := s.call(r, c)
	defer cancel()
	q := r.URL.Query()
	v := agentsView{Query: strings.TrimSpace(q.Get("q")), OnlyWaiting: q.Get("waiting") == "1"}

	waiting, _, err := s.waiting(ctx, "", waitingStatuses)
	if err != nil {
		s.callFailed(w, r, c, err, "")
		return
	}
	waitingBy := map[string]int{}
	for _, p := range waiting {
		waitingBy[p.GetAgentId()]++
	}
	ids, discovered, notes := s.agentIDs(ctx, c.claims)
	for id := range waitingBy {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	v.Discovered, v.Notes = discovered, notes
	ids = slices.DeleteFunc(ids, func(id string) bool {
		return (v.Query != "" && !strings.Contains(id, strings.ToLower(v.Query))) || (v.OnlyWaiting && waitingBy[id] == 0)
	})
	v.Total = len(ids)
	v.Pages = max(1, (len(ids)+agentsPerPage-1)/agentsPerPage)
	v.Page, _ = strconv.Atoi(q.Get("page"))
	v.Page = min(max(v.Page, 1), v.Pages)
	lo := (v.Page - 1) * agentsPerPage
	pageIDs := ids[lo:min(lo+agentsPerPage, len(ids))]
	v.Rows = s.agentRows(ctx, pageIDs)
	for i := range v.Rows {
		v.Rows[i].Waiting = waitingBy[v.Rows[i].ID]
	}
	link := func(page int) string {
		u := url.Values{}
		if v.Query != "" {
			u.Set("q", v.Query)
		}
		if v.OnlyWaiting {
			u.Set("waiting", "1")
		}
		u.Set("page", strconv.Itoa(page))
		return Path + "?" + u.Encode()
	}
	if v.Page > 1 {
		v.PrevURL = link(v.Page - 1)
	}
	if v.Page < v.Pages {
		v.NextURL = link(v.Page + 1)
	}
	d := base(c, "Agents", "agents")
	d.Data = v
	s.render(w, r, http.StatusOK, "agents", d)
}

// agentIDs lists the agents the caller may see. A token that names its
// agents sees those. A token that reaches every agent gets the agents the
// entity graph and the proposals name (discovered = true): no RPC lists
// every agent.
func (s *Server) agentIDs(ctx context.Context, claims *auth.Claims) (ids []string, discovered bool, notes []string) {
	if named := authz.VisibleAgents(claims); named != nil {
		return slices.Clone(named), false, nil
	}
	seen := map[string]bool{}
	token := ""
	for range discoverEntityPages {
		resp, err := s.clients.EntityGraph.ListEntities(ctx, &memoryv1.ListEntitiesRequest{Type: memoryv1.EntityType_ENTITY_TYPE_AGENT, PageSize: listPage, PageToken: token})
		if err != nil {
			if status.Code(err) != codes.PermissionDenied {
				notes = append(notes, "The entity graph did not answer: "+status.Convert(err).Message())
			}
			break
		}
		for _, e := range resp.GetEntities() {
			seen[e.GetEntityId()] = true
		}
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
	}
	token = ""
	for range discoverProposalPages {
		resp, err := s.clients.ProposalApply.ListProposals(ctx, &memoryv1.ListProposalsRequest{PageSize: listPage, PageToken: token})
		if err != nil {
			notes = append(notes, "The proposal list did not answer: "+status.Convert(err).Message())
			break
		}
		for _, p := range resp.GetProposals() {
			seen[p.GetAgentId()] = true
		}
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
	}
	for id := range seen {
		ids = append(ids, id)
	}
	return ids, true, notes
}

// agentRows reads each agent's status and last commit, a few at a time.
func (s *Server) agentRows(ctx context.Context, ids []string) []agentRow {
	rows := make([]agentRow, len(ids))
	sem := make(chan struct{}, fanOut)
	var wg sync.WaitGroup
	now := s.opts.Now()
	for i, id := range ids {
		rows[i].ID = id
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			s.fillAgentRow(ctx, &rows[i], now)
		})
	}
	wg.Wait()
	return rows
}

// fillAgentRow reads one agent's status and last commit into row.
func (s *Server) fillAgentRow(ctx context.Context, row *agentRow, now time.Time) {
	st, err := s.clients.ContextAssembly.GetAgentStatus(ctx, &memoryv1.GetAgentStatusRequest{AgentId: row.ID})
	if err != nil {
		row.Error = status.Convert(err).Message()
		return
	}
	row.Version, row.OpenLoops = st.GetMeta().GetVersion(), st.GetMeta().GetOpenLoopsCount()
	row.Layer1, row.Layer1Max = st.GetLayer1Tokens(), st.GetLayer1Limit()
	row.Gauges = gauges(st.GetLayer1())
	h, err := s.clients.ContextAssembly.ListHistory(ctx, &memoryv1.ListHistoryRequest{AgentId: row.ID, PageSize: 1})
	if err != nil {
		row.Error = status.Convert(err).Message()
		return
	}
	if cs := h.GetCommits(); len(cs) > 0 {
		row.Commit = cs[0]
		row.Age = ago(now, cs[0].GetTime().AsTime())
	}
}

// gauges turns GetAgentStatus's Layer 1 usage into meters.
func gauges(us []*memoryv1.LayerUsage) []gauge {
	out := make([]gauge, 0, len(us))
	for _, u := range us {
		out = append(out, gauge{File: u.GetFile(), Tokens: u.GetTokens(), Limit: u.GetLimit(), High: u.GetLimit() * 9 / 10})
	}
	return out
}
