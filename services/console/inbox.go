package console

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/enumname"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

// inboxRow is one waiting proposal of the inbox.
type inboxRow struct {
	*memoryv1.Proposal
	Age string
	Why []reasonView
	// Files lists the files the proposal changes.
	Files []string
}

// inboxView is the Inbox page's data.
type inboxView struct {
	// Status filters to one waiting status ("" = all of them).
	Status  string
	Agent   string
	Filters []tabLink
	Rows    []inboxRow
	// More: more proposals wait than the page gathered.
	More bool
}

// inboxFilters are the inbox's status filters.
var inboxFilters = []tabLink{
	{ID: "", Label: "All waiting"},
	{ID: "pending", Label: "Pending"},
	{ID: "needs_human_review", Label: "Needs review"},
	{ID: "failed", Label: "Failed"},
}

// inboxQuery reads the inbox's filters from a query: the statuses and the
// agent; a bad value is a message.
func inboxQuery(q url.Values) (statuses []memoryv1.ProposalStatus, st, agent, bad string) {
	st, agent = q.Get("status"), q.Get("agent")
	statuses = waitingStatuses
	if st != "" {
		n, ok := enumname.Parse(memoryv1.ProposalStatus(0).Descriptor(), st)
		s := memoryv1.ProposalStatus(n)
		if !ok || (s != memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING && s != memoryv1.ProposalStatus_PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW && s != memoryv1.ProposalStatus_PROPOSAL_STATUS_FAILED) {
			return nil, st, agent, "status must be pending, needs_human_review or failed"
		}
		statuses = []memoryv1.ProposalStatus{s}
	}
	if agent != "" && !memlayout.ValidAgentID(agent) {
		return nil, st, agent, "agent must be an agent id (a slug [a-z0-9][a-z0-9-]{0,63})"
	}
	return statuses, st, agent, ""
}

// inboxPage lists the proposals that wait for a person — pending, needs
// human review, failed — oldest first, each with why it waits.
func (s *Server) inboxPage(w http.ResponseWriter, r *http.Request, c *caller) {
	statuses, st, agent, bad := inboxQuery(r.URL.Query())
	if bad != "" {
		s.renderError(w, r, c, http.StatusBadRequest, "Not a valid request", bad)
		return
	}
	ctx, cancel := s.call(r, c)
	defer cancel()
	ps, more, err := s.waiting(ctx, agent, statuses)
	if err != nil {
		s.callFailed(w, r, c, err, "")
		return
	}
	v := inboxView{Status: st, Agent: agent, More: more}
	for _, f := range inboxFilters {
		q := url.Values{}
		if f.ID != "" {
			q.Set("status", f.ID)
		}
		if agent != "" {
			q.Set("agent", agent)
		}
		f.URL, f.Active = Path+"inbox?"+q.Encode(), f.ID == st
		v.Filters = append(v.Filters, f)
	}
	now := s.opts.Now()
	for _, p := range ps {
		v.Rows = append(v.Rows, inboxRow{Proposal: p, Age: ago(now, p.GetCreatedAt().AsTime()), Why: whyWaits(p), Files: updatedFiles(p)})
	}
	d := base(c, "Inbox", "inbox")
	d.Live = &liveView{URL: versionURL("inbox", "status", st, "agent", agent), Version: proposalsVersion(ps)}
	d.Data = v
	s.render(w, r, http.StatusOK, "inbox", d)
}

// updatedFiles lists the files a proposal changes, each once, in order.
func updatedFiles(p *memoryv1.Proposal) []string {
	var out []string
	for _, u := range p.GetUpdates() {
		if f := u.GetFile(); !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// proposalView is the proposal page's data.
type proposalView struct {
	P   *memoryv1.Proposal
	Why []reasonView
	Age string
	// Preview is the exact diff applying it now would commit (or, applied,
	// did commit); PreviewError says why there is none.
	Preview      *previewView
	PreviewError string
	Reviewable   bool
	Retryable    bool
	// CommitURL links the commit that applied it.
	CommitURL string
	// Done is the action just taken ("approved", "rejected", "retried").
	Done string
}

// previewView is PreviewProposal's answer, ready for the page.
type previewView struct {
	*memoryv1.PreviewProposalResponse
	Files []fileDiff
}

// proposalPage shows one proposal: what it asks, why it waits, the exact
// diff its commit would make (PreviewProposal) and the review forms.
func (s *Server) proposalPage(w http.ResponseWriter, r *http.Request, c *caller) {
	id := r.PathValue("id")
	ctx, cancel := s.call(r, c)
	defer cancel()
	resp, err := s.clients.ProposalApply.GetProposal(ctx, &memoryv1.GetProposalRequest{ProposalId: id})
	if err != nil {
		s.callFailed(w, r, c, err, Path+"inbox")
		return
	}
	p := resp.GetProposal()
	v := proposalView{P: p, Why: whyWaits(p), Age: ago(s.opts.Now(), p.GetCreatedAt().AsTime()),
		Reviewable: reviewable(p), Retryable: p.GetStatus() == memoryv1.ProposalStatus_PROPOSAL_STATUS_FAILED}
	switch done := r.URL.Query().Get("done"); done {
	case "approved", "rejected", "retried":
		v.Done = done
	}
	if sha := p.GetCommitSha(); sha != "" {
		v.CommitURL = Path + "agents/" + url.PathEscape(p.GetAgentId()) + "/commits/" + sha
	}
	pre, err := s.clients.ProposalApply.PreviewProposal(ctx, &memoryv1.PreviewProposalRequest{ProposalId: id})
	if err != nil {
		v.PreviewError = previewUnavailable(err)
	} else {
		pv := &previewView{PreviewProposalResponse: pre}
		for _, f := range pre.GetFiles() {
			pv.Files = append(pv.Files, newFileDiff(f.GetFile(), changeLabel(f.GetChange()), f.GetUnifiedDiff()))
		}
		v.Preview = pv
	}
	d := base(c, id, "inbox")
	d.Live = &liveView{URL: versionURL("proposal", "id", id), Version: proposalVersion(p)}
	d.Data = v
	s.render(w, r, http.StatusOK, "proposal", d)
}

// previewUnavailable says why there is no preview, in the service's words.
func previewUnavailable(err error) string {
	st := status.Convert(err)
	_, heading := httpStatus(err)
	return strings.ToLower(heading) + ": " + st.Message()
}

// changeLabel is a FileDiff's change as the page shows it.
func changeLabel(k memoryv1.ChangeKind) string {
	switch k {
	case memoryv1.ChangeKind_CHANGE_KIND_ADDED:
		return "added"
	case memoryv1.ChangeKind_CHANGE_KIND_REMOVED:
		return "removed"
	default:
		return "changed"
	}
}

// review approves, rejects (with a required comment) or retries a
// proposal; the service decides whether the caller may.
func (s *Server) review(w http.ResponseWriter, r *http.Request, c *caller) {
	id, action := r.PathValue("id"), r.PathValue("action")
	comment := strings.TrimSpace(r.PostForm.Get("comment"))
	back := Path + "proposals/" + url.PathEscape(id)
	ctx, cancel := s.call(r, c)
	defer cancel()
	var err error
	var done string
	switch action {
	case "approve":
		_, err = s.clients.ProposalApply.ApproveProposal(ctx, &memoryv1.ApproveProposalRequest{ProposalId: id, Comment: comment})
		done = "approved"
	case "reject":
		if comment == "" {
			s.renderErrorView(w, r, c, http.StatusBadRequest, errorView{Heading: "A reason is needed",
				Message: "A rejection needs a comment saying why: the agent and the people after you read it.", Back: back})
			return
		}
		_, err = s.clients.ProposalApply.RejectProposal(ctx, &memoryv1.RejectProposalRequest{ProposalId: id, Reason: comment})
		done = "rejected"
	case "retry":
		_, err = s.clients.ProposalApply.RetryProposal(ctx, &memoryv1.RetryProposalRequest{ProposalId: id, Comment: comment})
		done = "retried"
	default:
		s.notFound(w, r)
		return
	}
	if err != nil {
		s.callFailed(w, r, c, err, back)
		return
	}
	s.log.Info("console review", "proposal", id, "action", action, "by", c.claims.Subject)
	http.Redirect(w, r, back+"?done="+done, http.StatusSeeOther)
}
