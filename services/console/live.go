package console

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// The live pages (inbox, a History tab, a proposal) carry the version of
// what their #live part shows; static/console.js asks /ui/api/version for
// the current one every --console-poll and, when it differs, fetches the
// page again and swaps that part in. Polling a tiny answer keeps to the
// strict CSP (same origin, no inline script), needs no stream held open
// per tab on the edge, and works through any proxy; without JavaScript
// the pages are plain links.

// versionURL is the version endpoint of a view, with its parameters as
// name, value pairs (empty values left out).
func versionURL(view string, params ...string) string {
	q := url.Values{"view": {view}}
	for i := 0; i+1 < len(params); i += 2 {
		if params[i+1] != "" {
			q.Set(params[i], params[i+1])
		}
	}
	return Path + "api/version?" + q.Encode()
}

// version answers {"version": "…"} for a view: what the page would show
// now, reduced to a short hash.
func (s *Server) version(w http.ResponseWriter, r *http.Request, c *caller) {
	ctx, cancel := s.call(r, c)
	defer cancel()
	q := r.URL.Query()
	var v string
	switch q.Get("view") {
	case "inbox":
		statuses, _, agent, bad := inboxQuery(q)
		if bad != "" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": bad})
			return
		}
		ps, _, err := s.waiting(ctx, agent, statuses)
		if err != nil {
			s.versionFailed(w, err)
			return
		}
		v = proposalsVersion(ps)
	case "history":
		resp, err := s.clients.ContextAssembly.ListHistory(ctx, &memoryv1.ListHistoryRequest{AgentId: q.Get("agent"), PageSize: 1})
		if err != nil {
			s.versionFailed(w, err)
			return
		}
		rows := make([]historyRow, 0, len(resp.GetCommits()))
		for _, c := range resp.GetCommits() {
			rows = append(rows, historyRow{CommitInfo: c})
		}
		v = historyVersion(rows)
	case "proposal":
		resp, err := s.clients.ProposalApply.GetProposal(ctx, &memoryv1.GetProposalRequest{ProposalId: q.Get("id")})
		if err != nil {
			s.versionFailed(w, err)
			return
		}
		v = proposalVersion(resp.GetProposal())
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "view must be inbox, history or proposal"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"version": v})
}

func (s *Server) versionFailed(w http.ResponseWriter, err error) {
	code, _ := httpStatus(err)
	writeJSON(w, code, map[string]string{"error": "the service did not answer"})
}

// digest hashes parts into a short version string.
func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		_, _ = fmt.Fprintf(h, "%d:%s;", len(p), p) // a hash.Hash never fails to write
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// proposalsVersion changes when a proposal joins or leaves the list, or
// one of them changes.
func proposalsVersion(ps []*memoryv1.Proposal) string {
	parts := make([]string, 0, len(ps))
	for _, p := range ps {
		parts = append(parts, p.GetProposalId()+"@"+p.GetUpdatedAt().AsTime().String()+"/"+p.GetStatus().String())
	}
	return digest(parts...)
}

// historyVersion is the newest commit the History tab shows.
func historyVersion(rows []historyRow) string {
	if len(rows) == 0 {
		return digest()
	}
	return digest(rows[0].GetSha())
}

// proposalVersion changes with the proposal's status, commit or update.
func proposalVersion(p *memoryv1.Proposal) string {
	return digest(p.GetStatus().String(), p.GetCommitSha(), p.GetUpdatedAt().AsTime().String())
}
