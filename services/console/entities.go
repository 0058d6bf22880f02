package console

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/decisionsvg"
	"github.com/garden-bloom/memory/pkg/enumname"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

// entitiesPerPage is one ListEntities page of the Entities page.
const entitiesPerPage = 100

// entityTypes is the EntityType enum, for the type filter.
var entityTypes = memoryv1.EntityType(0).Descriptor()

// entityTypeNames are the type filter's choices ("unspecified" is no type).
func entityTypeNames() []string {
	return slices.DeleteFunc(enumname.Allowed(entityTypes), func(n string) bool { return n == "unspecified" })
}

// entitiesView is the Entities page's data.
type entitiesView struct {
	Query    string
	Type     string
	Types    []string
	Entities []*memoryv1.Entity
	NextURL  string
}

// entitiesPage lists the entity graph's entities by label prefix and type.
func (s *Server) entitiesPage(w http.ResponseWriter, r *http.Request, c *caller) {
	q := r.URL.Query()
	v := entitiesView{Query: strings.TrimSpace(q.Get("q")), Type: strings.TrimSpace(q.Get("type")), Types: entityTypeNames()}
	req := &memoryv1.ListEntitiesRequest{Query: v.Query, PageSize: entitiesPerPage, PageToken: q.Get("page_token")}
	if v.Type != "" {
		n, ok := enumname.Parse(entityTypes, v.Type)
		if !ok || n == 0 {
			s.renderError(w, r, c, http.StatusBadRequest, "Not a valid request", "type must be one of "+strings.Join(v.Types, ", ")+".")
			return
		}
		req.Type = memoryv1.EntityType(n)
	}
	ctx, cancel := s.call(r, c)
	defer cancel()
	resp, err := s.clients.EntityGraph.ListEntities(ctx, req)
	if err != nil {
		s.callFailed(w, r, c, err, "")
		return
	}
	v.Entities = resp.GetEntities()
	if next := resp.GetNextPageToken(); next != "" {
		u := url.Values{"page_token": {next}}
		if v.Query != "" {
			u.Set("q", v.Query)
		}
		if v.Type != "" {
			u.Set("type", v.Type)
		}
		v.NextURL = Path + "entities?" + u.Encode()
	}
	d := base(c, "Entities", "entities")
	d.Data = v
	s.render(w, r, http.StatusOK, "entities", d)
}

// edgeRow is one relation of an entity, seen from the entity.
type edgeRow struct {
	// Out: the edge goes from the entity to Other.
	Out      bool
	Other    string
	Relation string
	From     time.Time
	To       time.Time
	Weight   float64
	Evidence []evidenceLink
}

// evidenceLink is where a relation was seen, linked to the agent's tab as
// of that commit when the file is an agent's memory.
type evidenceLink struct {
	File   string
	Commit string
	Line   int32
	URL    string
}

// entityView is an entity's page: its relations over time as a table and
// a picture, and its neighbours.
type entityView struct {
	Entity    *memoryv1.Entity
	Edges     []edgeRow
	Refs      []string
	Neighbors []*memoryv1.Entity
	// Picture is decisionsvg's Timeline: escaped SVG, safe inline.
	Picture template.HTML
	// PictureError says why there is no picture.
	PictureError string
	// Total is the entity's relations on all pages; the page shows the
	// First to the Last of them.
	Total, First, Last int
	FirstURL, NextURL  string
}

// entityPage shows one entity: GetEntity's edges, the timeline picture of
// them, and GetNeighbors at depth 1.
func (s *Server) entityPage(w http.ResponseWriter, r *http.Request, c *caller) {
	id := r.PathValue("id")
	ctx, cancel := s.call(r, c)
	defer cancel()
	token := r.URL.Query().Get("page_token")
	resp, err := s.clients.EntityGraph.GetEntity(ctx, &memoryv1.GetEntityRequest{EntityId: id, PageToken: token})
	if err != nil {
		s.callFailed(w, r, c, err, Path+"entities")
		return
	}
	nb, err := s.clients.EntityGraph.GetNeighbors(ctx, &memoryv1.GetNeighborsRequest{EntityId: id, Depth: 1})
	if err != nil {
		s.callFailed(w, r, c, err, Path+"entities")
		return
	}
	v := entityView{Entity: resp.GetEntity(), Refs: resp.GetRefs(), Total: int(resp.GetTotalEdges()), First: 1}
	if token != "" {
		// The token is the offset of the page's first edge (GetEntity).
		skip, _ := strconv.Atoi(token)
		v.First = skip + 1
		v.FirstURL = Path + "entities/" + url.PathEscape(id)
	}
	if next := resp.GetNextPageToken(); next != "" {
		v.NextURL = Path + "entities/" + url.PathEscape(id) + "?" + url.Values{"page_token": {next}}.Encode()
	}
	v.Last = v.First + len(resp.GetEdges()) - 1
	for _, e := range resp.GetEdges() {
		v.Edges = append(v.Edges, newEdgeRow(id, e))
	}
	for _, n := range nb.GetEntities() {
		if n.GetEntityId() != id {
			v.Neighbors = append(v.Neighbors, n)
		}
	}
	v.Picture, v.PictureError = picture(decisionsvg.Timeline(resp.GetEntity(), resp.GetEdges(), s.opts.Now()))
	title := resp.GetEntity().GetLabel()
	if title == "" {
		title = id
	}
	d := base(c, title, "entities")
	d.Data = v
	s.render(w, r, http.StatusOK, "entity", d)
}

// newEdgeRow is e as the entity id sees it.
func newEdgeRow(id string, e *memoryv1.Edge) edgeRow {
	row := edgeRow{Out: e.GetFromEntityId() == id, Other: e.GetToEntityId(), Relation: enumLabel(e.GetRelation()), Weight: e.GetWeight()}
	if !row.Out {
		row.Other = e.GetFromEntityId()
	}
	if e.GetValidFrom() != nil {
		row.From = e.GetValidFrom().AsTime()
	}
	if e.GetValidTo() != nil {
		row.To = e.GetValidTo().AsTime()
	}
	for _, ev := range e.GetEvidence() {
		row.Evidence = append(row.Evidence, evidenceLink{File: ev.GetFile(), Commit: ev.GetCommit(), Line: ev.GetSpan().GetStartLine(),
			URL: evidenceURL(ev.GetFile(), ev.GetCommit())})
	}
	return row
}

// evidenceURL is the agent tab showing file as of commit, "" for a file
// outside the agents' memory.
func evidenceURL(file, commit string) string {
	rest, ok := strings.CutPrefix(file, memlayout.MemoryDir+"/")
	if !ok {
		return ""
	}
	agent, _, ok := strings.Cut(rest, "/")
	if !ok || !memlayout.ValidAgentID(agent) {
		return ""
	}
	tab := fileTab(file, "")
	if tab == "" {
		tab = "history"
	}
	if !revisionRe.MatchString(commit) {
		commit = ""
	}
	return agentURL(agent, tab, commit)
}

// decisionsView is the Decisions page: a decision chain as a picture and
// as a list.
type decisionsView struct {
	Query    string
	ID       string
	Chain    []*memoryv1.Decision
	Entities []*memoryv1.Entity
	Edges    []edgeRow
	Picture  template.HTML
	// PictureError says why there is no picture.
	PictureError string
	// Total is the entity's relations on all pages; the page shows the
	// First to the Last of them.
	Total, First, Last int
	FirstURL, NextURL  string
}

// decisionsPage explains a decision (?id= a decision entity, or ?query=
// free text): ExplainDecision's chain drawn by decisionsvg.Chain.
func (s *Server) decisionsPage(w http.ResponseWriter, r *http.Request, c *caller) {
	q := r.URL.Query()
	v := decisionsView{Query: strings.TrimSpace(q.Get("query")), ID: strings.TrimSpace(q.Get("id"))}
	d := base(c, "Decisions", "decisions")
	d.Data = &v
	if v.Query == "" && v.ID == "" {
		s.render(w, r, http.StatusOK, "decisions", d)
		return
	}
	ctx, cancel := s.call(r, c)
	defer cancel()
	resp, err := s.clients.EntityGraph.ExplainDecision(ctx, &memoryv1.ExplainDecisionRequest{DecisionId: v.ID, Query: v.Query})
	if err != nil {
		s.callFailed(w, r, c, err, Path+"decisions")
		return
	}
	v.Chain, v.Entities = resp.GetChain(), resp.GetEntities()
	for _, e := range resp.GetEdges() {
		v.Edges = append(v.Edges, newEdgeRow(e.GetFromEntityId(), e))
	}
	v.Picture, v.PictureError = picture(decisionsvg.Chain(resp))
	s.render(w, r, http.StatusOK, "decisions", d)
}

// picture is decisionsvg's output for a template: the SVG is escaped by
// decisionsvg (memory's text is text in it, no script, no style), so it
// goes inline as it is and takes the page's colours.
func picture(svg string, err error) (template.HTML, string) {
	switch {
	case errors.Is(err, decisionsvg.ErrNothingToDraw):
		return "", "Nothing to draw."
	case err != nil:
		return "", "The picture could not be drawn: " + err.Error()
	}
	return template.HTML(svg), "" //nolint:gosec // decisionsvg escapes every text it draws (see its package doc)
}

// enumShort is an enum value's short lower-case name (e.g. "decision").
func enumShort(v protoreflect.Enum) string {
	return enumname.Short(v.Descriptor(), v.Number())
}
