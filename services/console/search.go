package console

import (
	"html"
	"html/template"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/fulltext"
)

// searchTopK is how many hits the Search page asks for.
const searchTopK = 30

// The search index marks each match of an excerpt between these
// (search_index.proto SearchResult.excerpt).
const (
	markOpen  = fulltext.MarkOpen
	markClose = fulltext.MarkClose
)

// searchHit is one hit of the Search page.
type searchHit struct {
	File    string
	Agent   string
	Kind    string
	Lines   string
	Score   float64
	Excerpt template.HTML
	// URL is the agent's tab that shows the file; "" for sources and
	// logic, which no console page shows.
	URL string
}

// searchView is the Search page's data.
type searchView struct {
	Query string
	Agent string
	Hits  []searchHit
	Total int32
	Stale bool
}

// searchPage runs the query box's query over the BM25 index. The service
// decides which agents' files the caller's token may find.
func (s *Server) searchPage(w http.ResponseWriter, r *http.Request, c *caller) {
	q := r.URL.Query()
	v := searchView{Query: strings.TrimSpace(q.Get("q")), Agent: strings.TrimSpace(q.Get("agent"))}
	d := base(c, "Search", "search")
	d.Data = &v
	if v.Query == "" {
		s.render(w, r, http.StatusOK, "search", d)
		return
	}
	ctx, cancel := s.call(r, c)
	defer cancel()
	resp, err := s.clients.SearchIndex.Search(ctx, &memoryv1.SearchRequest{Query: v.Query, AgentId: v.Agent, TopK: searchTopK})
	if err != nil {
		s.callFailed(w, r, c, err, "")
		return
	}
	v.Total, v.Stale = resp.GetTotalHits(), resp.GetStale()
	for _, h := range resp.GetResults() {
		hit := searchHit{File: h.GetFile(), Agent: h.GetAgentId(), Kind: h.GetKind(), Score: h.GetScore(),
			Excerpt: markedExcerpt(h.GetExcerpt()), URL: fileURL(h.GetAgentId(), h.GetFile(), h.GetKind())}
		if sp := h.GetSpan(); sp != nil && sp.GetStartLine() > 0 {
			hit.Lines = spanLines(sp)
		}
		v.Hits = append(v.Hits, hit)
	}
	s.render(w, r, http.StatusOK, "search", d)
}

// markedExcerpt turns the index's «match» marks into <mark> elements and
// escapes everything else: the excerpt is the memory's text, which anyone
// who can propose may have written.
func markedExcerpt(excerpt string) template.HTML {
	var b strings.Builder
	for {
		open := strings.Index(excerpt, markOpen)
		if open < 0 {
			break
		}
		closing := strings.Index(excerpt[open+len(markOpen):], markClose)
		if closing < 0 {
			break
		}
		b.WriteString(html.EscapeString(excerpt[:open]))
		b.WriteString("<mark>")
		b.WriteString(html.EscapeString(excerpt[open+len(markOpen) : open+len(markOpen)+closing]))
		b.WriteString("</mark>")
		excerpt = excerpt[open+len(markOpen)+closing+len(markClose):]
	}
	b.WriteString(html.EscapeString(excerpt))
	return template.HTML(b.String()) //nolint:gosec // every piece of text is escaped above; only <mark> is ours
}

// fileURL is the agent page's tab that shows a memory file.
func fileURL(agent, file, kind string) string {
	if agent == "" {
		return ""
	}
	if tab := fileTab(file, kind); tab != "" {
		return agentURL(agent, tab, "")
	}
	return Path + "agents/" + url.PathEscape(agent)
}

// fileTab is the agent page's tab that shows a file of an agent's memory,
// by the search index's kind or else by its path; "" when no tab does.
func fileTab(file, kind string) string {
	if tab := map[string]string{"snapshot": "snapshot", "facts": "facts", "open_loops": "loops", "decisions": "decisions", "timeline": "timeline"}[kind]; tab != "" {
		return tab
	}
	if tab := map[string]string{"snapshot.md": "snapshot", "facts.md": "facts", "open_loops.md": "loops", "decisions.md": "decisions"}[path.Base(file)]; tab != "" {
		return tab
	}
	if strings.Contains(file, "/timeline/") {
		return "timeline"
	}
	return ""
}

// spanLines is a hit's lines as "12" or "12–18".
func spanLines(sp *memoryv1.Span) string {
	if sp.GetStartLine() == sp.GetEndLine() {
		return strconv.Itoa(int(sp.GetStartLine()))
	}
	return strconv.Itoa(int(sp.GetStartLine())) + "–" + strconv.Itoa(int(sp.GetEndLine()))
}
