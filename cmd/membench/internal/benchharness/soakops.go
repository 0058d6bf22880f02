package benchharness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

// Request kinds of the soak, in the order of the report's columns, with
// their short column names.
const (
	skPropose   = "Propose"
	skApplied   = "applied"
	skApprove   = "ApproveProposal"
	skReject    = "RejectProposal"
	skGetProp   = "GetProposal"
	skListProp  = "ListProposals"
	skBasic     = "ReadMemory basic"
	skBasicREST = "ReadMemory basic (REST)"
	skWide      = "ReadMemory wide"
	skSearch    = "Search"
	skSearchRST = "Search (REST)"
	skAssemble  = "AssembleContext"
	skDiff      = "DiffMemory"
)

var soakKinds = []struct{ kind, short string }{
	{skPropose, "propose"}, {skApplied, "applied"}, {skApprove, "approve"}, {skReject, "reject"},
	{skGetProp, "get prop."}, {skListProp, "list prop."}, {skBasic, "basic"}, {skBasicREST, "basic REST"},
	{skWide, "wide"}, {skSearch, "search"}, {skSearchRST, "search REST"}, {skAssemble, "assemble"}, {skDiff, "diff"},
}

// appliedTimeout bounds the wait for a proposal's commit.
const appliedTimeout = time.Minute

// proposeStep makes one proposal for agent a and sees it through: the
// mix is facts (44 %), loops opened (10 %) and closed (6 %), decisions
// (11 %) and snapshot rewrites (3 %), auto-approved by policy
// (--auto-approve-default); 23 % are facts that wait for a reviewer, who
// approves them (high priority, or the agent's auto_approve=false hint),
// and 3 % are rejected by the reviewer.
func (s *soak) proposeStep(ctx context.Context, r *rand.Rand, a *soakAgent) {
	req := &memoryv1.ProposeRequest{AgentId: a.id, RunId: "run_soak_" + randomID(r, 5), Priority: memoryv1.Priority_PRIORITY_NORMAL}
	review, reject := false, false
	switch k := r.IntN(100); {
	case k < 44:
		req.Updates, req.Reasoning = s.factUpdates(a), "membench soak: facts"
	case k < 60:
		up, err := s.loopUpdates(ctx, a, k >= 54)
		if err != nil {
			return // counted
		}
		req.Updates, req.Reasoning = up, "membench soak: loops"
	case k < 71:
		req.Updates, req.Reasoning = s.decision(a), "membench soak: decision"
	case k < 74:
		req.Updates = []*memoryv1.FileUpdate{{File: "snapshot.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: s.snapshot(a)}}
		req.Reasoning = "membench soak: snapshot"
	case k < 97:
		req.Updates, req.Reasoning, review = s.factUpdates(a), "membench soak: reviewed facts", true
		if k%2 == 0 {
			req.Priority = memoryv1.Priority_PRIORITY_HIGH
		} else {
			req.AutoApprove = proto.Bool(false)
		}
	default:
		req.Updates, req.Reasoning, reject = s.factUpdates(a), "membench soak: facts to reject", true
		req.Priority = memoryv1.Priority_PRIORITY_HIGH
	}

	start := time.Now()
	var resp *memoryv1.ProposeResponse
	if s.timed(skPropose, func() error {
		c, cancel := context.WithTimeout(s.d.call, requestTimeout)
		defer cancel()
		var err error
		if resp, err = s.d.pa.Propose(c, req); err != nil {
			return err
		}
		if resp.GetAgentId() != a.id || !strings.HasPrefix(resp.GetProposalId(), "proposal_") {
			return fmt.Errorf("answer for agent %q, proposal %q", resp.GetAgentId(), resp.GetProposalId())
		}
		want := []memoryv1.ProposalStatus{memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED,
			memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLYING, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED}
		if review || reject {
			want = []memoryv1.ProposalStatus{memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING}
		}
		return wantStatus(resp.GetProposalId(), resp.GetStatus(), resp.GetReason(), want...)
	}) != nil {
		return
	}
	id := resp.GetProposalId()
	s.proposals.Add(1)
	s.remember(id)

	switch {
	case reject:
		_ = s.timed(skReject, func() error {
			c, cancel := context.WithTimeout(s.reviewer, requestTimeout)
			defer cancel()
			rr, err := s.d.pa.RejectProposal(c, &memoryv1.RejectProposalRequest{ProposalId: id, Reason: "membench soak: not this one"})
			if err != nil {
				return err
			}
			return wantStatus(id, rr.GetProposal().GetStatus(), rr.GetProposal().GetReason(), memoryv1.ProposalStatus_PROPOSAL_STATUS_REJECTED)
		})
		s.rejected.Add(1)
		return
	case review:
		if s.timed(skApprove, func() error {
			c, cancel := context.WithTimeout(s.reviewer, requestTimeout)
			defer cancel()
			ar, err := s.d.pa.ApproveProposal(c, &memoryv1.ApproveProposalRequest{ProposalId: id, Comment: "membench soak: fine"})
			if err != nil {
				return err
			}
			return wantStatus(id, ar.GetProposal().GetStatus(), ar.GetProposal().GetReason(), memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED,
				memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLYING, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED)
		}) != nil {
			return
		}
		s.approved.Add(1)
		start = time.Now()
	default:
		s.auto.Add(1)
	}

	// Applied: the commit on WatchCommits, from Propose (auto-approved) or
	// from the approval; then the proposal as stored.
	if s.timedFrom(skApplied, start, func() error {
		c, cancel := context.WithTimeout(ctx, appliedTimeout)
		defer cancel()
		_, err := s.cw.wait(c, id)
		return err
	}) != nil {
		return
	}
	s.applied.Add(1)
	_ = s.timed(skGetProp, func() error {
		p, err := s.getApplied(ctx, id)
		if err != nil {
			return err
		}
		if p.GetAgentId() != a.id || p.GetCommitSha() == "" || p.GetAppliedVersion() <= a.version {
			return fmt.Errorf("applied proposal %s: agent %q, commit %q, version %d after %d", id, p.GetAgentId(), p.GetCommitSha(),
				p.GetAppliedVersion(), a.version)
		}
		a.version = p.GetAppliedVersion()
		a.addCommit(p.GetCommitSha())
		return nil
	})
}

// getApplied reads an applied proposal. The store records the outcome
// before the commit is streamed; the commit stream's poll for commits made
// with plain git may still see the commit a moment earlier, so a proposal
// still applying is read again, briefly.
func (s *soak) getApplied(ctx context.Context, id string) (*memoryv1.Proposal, error) {
	for deadline := time.Now().Add(2 * time.Second); ; {
		c, cancel := context.WithTimeout(s.d.call, requestTimeout)
		resp, err := s.d.pa.GetProposal(c, &memoryv1.GetProposalRequest{ProposalId: id})
		cancel()
		if err != nil {
			return nil, err
		}
		p := resp.GetProposal()
		if p.GetProposalId() != id {
			return nil, fmt.Errorf("asked for %s, got %s", id, p.GetProposalId())
		}
		st := p.GetStatus()
		if st == memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED {
			return p, nil
		}
		if st != memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLYING || time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("proposal %s committed but %s (%s: %s)", id, st, p.GetReason(), p.GetMessage())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func wantStatus(id string, got memoryv1.ProposalStatus, reason memoryv1.StatusReason, want ...memoryv1.ProposalStatus) error {
	for _, w := range want {
		if got == w {
			return nil
		}
	}
	return fmt.Errorf("proposal %s is %s (%s), want %v", id, got, reason, want)
}

func (s *soak) factUpdates(a *soakAgent) []*memoryv1.FileUpdate {
	w := &a.w
	n := 1 + w.r.IntN(2)
	lines := make([]string, n)
	for i := range lines {
		text, _ := w.fact()
		lines[i] = "- " + text
	}
	return []*memoryv1.FileUpdate{{File: "facts.md", Operation: memoryv1.Operation_OPERATION_APPEND,
		Section: factSections[w.r.IntN(len(factSections))], Content: strings.Join(lines, "\n")}}
}

var loopPriorities = []memoryv1.LoopPriority{memoryv1.LoopPriority_LOOP_PRIORITY_HIGH, memoryv1.LoopPriority_LOOP_PRIORITY_NORMAL,
	memoryv1.LoopPriority_LOOP_PRIORITY_NORMAL, memoryv1.LoopPriority_LOOP_PRIORITY_LOW}

var openLoopLine = regexp.MustCompile(`(?m)^- \[ \] (loop_[0-9]+):`)

// loopHeadroom is how far below its 2,000-token limit open_loops.md must
// be for the load to open or close a loop there. A closed loop stays in
// the file for 7 days (spec DiffMem §11.3) and only open loops can be
// frozen out of it, so an agent that closes loops faster than that fills
// it, and the next loop proposal is (rightly) refused; the soak's agents
// do in an hour what real ones do in weeks, so they write a fact instead.
const loopHeadroom = 150

// loopUpdates opens a loop or closes the agent's oldest open one (opening
// one when none is open), read from its open_loops.md at (at least) its
// last applied version; near the file's limit it appends facts instead.
func (s *soak) loopUpdates(ctx context.Context, a *soakAgent, closing bool) ([]*memoryv1.FileUpdate, error) {
	var loops string
	var tokens int32
	err := s.timed(skBasic, func() error {
		for deadline := time.Now().Add(5 * time.Second); ; {
			c, cancel := context.WithTimeout(s.d.call, requestTimeout)
			resp, err := s.d.ca.ReadMemory(c, &memoryv1.ReadMemoryRequest{AgentId: a.id, Mode: memoryv1.ReadMode_READ_MODE_BASIC})
			cancel()
			if err != nil {
				return err
			}
			if err := checkRead(resp, a.id, "snapshot.md", "open_loops.md"); err != nil {
				return err
			}
			if resp.GetVersion() >= a.version {
				loops, tokens = resp.GetContent()["open_loops.md"], resp.GetMeta().GetOpenLoopsTokenCount()
				return nil
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("%s read at version %d, %d applied", a.id, resp.GetVersion(), a.version)
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	if err != nil {
		return nil, err
	}
	if tokens > memlayout.OpenLoopsLimit-loopHeadroom {
		s.loopsFull.Add(1)
		return s.factUpdates(a), nil
	}
	m := openLoopLine.FindStringSubmatch(loops)
	if !closing || m == nil {
		w := &a.w
		text := fmt.Sprintf("%s the %s %s for %s", pick(w.r, []string{"Confirm", "Schedule", "Review", "Clean up"}), w.dw(),
			pick(w.r, nouns), w.m.link(w.r.IntN(len(w.m.entities))))
		return []*memoryv1.FileUpdate{{File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_OPEN, Content: text,
			LoopPriority: loopPriorities[w.r.IntN(len(loopPriorities))]}}, nil
	}
	return []*memoryv1.FileUpdate{{File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_CLOSE, LoopId: m[1],
		Resolution: a.w.sentence()}}, nil
}

func (s *soak) decision(a *soakAgent) []*memoryv1.FileUpdate {
	w := &a.w
	a.decisions++
	return []*memoryv1.FileUpdate{{File: "decisions.md", Operation: memoryv1.Operation_OPERATION_ADD_DECISION, Decision: &memoryv1.Decision{
		Title:   fmt.Sprintf("Decision %d: move the %s %s to the %s %s", a.decisions, w.dw(), pick(w.r, nouns), w.dw(), pick(w.r, nouns)),
		Context: w.sentence(), Decision: w.sentence(), Rationale: w.sentence(), Consequences: w.sentence(),
		Date: timestamppb.Now(),
	}}}
}

// snapshot is a snapshot.md of some 300 tokens.
func (s *soak) snapshot(a *soakAgent) string {
	w := &a.w
	var b strings.Builder
	fmt.Fprintf(&b, "# Snapshot: %s\n\n## Role\n", a.id)
	for range 4 {
		b.WriteString(w.sentence() + " ")
	}
	b.WriteString("\n\n## Current focus\n")
	for range 6 {
		b.WriteString("- " + w.sentence() + "\n")
	}
	return b.String()
}

// readStep makes one read of a random kind for a random agent and checks
// the answer.
func (s *soak) readStep(ctx context.Context, r *rand.Rand) {
	a := s.agents[r.IntN(len(s.agents))]
	s.reads.Add(1)
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	call := withToken(ctx, s.d.token)
	query := func(n int) string { return (&workload{m: s.tm, seed: s.o.Seed}).query(r, a.i, n) }
	switch k := r.IntN(100); {
	case k < 18:
		_ = s.timed(skBasic, func() error {
			resp, err := s.d.ca.ReadMemory(call, &memoryv1.ReadMemoryRequest{AgentId: a.id, Mode: memoryv1.ReadMode_READ_MODE_BASIC})
			if err != nil {
				return err
			}
			return checkRead(resp, a.id, "snapshot.md", "open_loops.md")
		})
	case k < 28:
		_ = s.timed(skBasicREST, func() error {
			var body struct {
				AgentID string            `json:"agentId"`
				Content map[string]string `json:"content"`
			}
			if err := s.restJSON(ctx, "/memory/"+a.id+"/read?mode=basic", &body); err != nil {
				return err
			}
			if body.AgentID != a.id || body.Content["snapshot.md"] == "" {
				return fmt.Errorf("REST read of %s: agent %q, %d files", a.id, body.AgentID, len(body.Content))
			}
			return nil
		})
	case k < 38:
		_ = s.timed(skWide, func() error {
			resp, err := s.d.ca.ReadMemory(call, &memoryv1.ReadMemoryRequest{AgentId: a.id, Mode: memoryv1.ReadMode_READ_MODE_WIDE})
			if err != nil {
				return err
			}
			return checkRead(resp, a.id, "snapshot.md", "open_loops.md", "facts.md")
		})
	case k < 53:
		_ = s.timed(skSearch, func() error {
			resp, err := s.d.si.Search(call, &memoryv1.SearchRequest{Query: query(2), AgentId: a.id})
			if err != nil {
				return err
			}
			for _, res := range resp.GetResults() {
				if res.GetAgentId() != a.id {
					return fmt.Errorf("search filtered on %s found %s's %s", a.id, res.GetAgentId(), res.GetFile())
				}
			}
			return nil
		})
	case k < 58:
		_ = s.timed(skSearchRST, func() error {
			var body struct {
				Results []struct {
					AgentID string `json:"agentId"`
				} `json:"results"`
			}
			if err := s.restJSON(ctx, "/memory/search?q="+url.QueryEscape(query(2))+"&agent_id="+a.id, &body); err != nil {
				return err
			}
			for _, res := range body.Results {
				if res.AgentID != a.id {
					return fmt.Errorf("REST search filtered on %s found %s", a.id, res.AgentID)
				}
			}
			return nil
		})
	case k < 72:
		_ = s.timed(skAssemble, func() error {
			const budget = 16000
			resp, err := s.d.ca.AssembleContext(call, &memoryv1.AssembleContextRequest{AgentId: a.id, QueryHint: query(3), Budget: budget})
			if err != nil {
				return err
			}
			if resp.GetAgentId() != a.id || len(resp.GetSections()) == 0 || resp.GetTotalTokens() <= 0 || resp.GetTotalTokens() > budget {
				return fmt.Errorf("context of %s: agent %q, %d sections, %d tokens (budget %d)", a.id, resp.GetAgentId(),
					len(resp.GetSections()), resp.GetTotalTokens(), budget)
			}
			return nil
		})
	case k < 80:
		id := s.recentProposal(r)
		if id == "" {
			return
		}
		_ = s.timed(skGetProp, func() error {
			resp, err := s.d.pa.GetProposal(call, &memoryv1.GetProposalRequest{ProposalId: id})
			if err != nil {
				return err
			}
			if resp.GetProposal().GetProposalId() != id {
				return fmt.Errorf("asked for %s, got %q", id, resp.GetProposal().GetProposalId())
			}
			return nil
		})
	case k < 88:
		_ = s.timed(skListProp, func() error {
			resp, err := s.d.pa.ListProposals(call, &memoryv1.ListProposalsRequest{AgentId: a.id, PageSize: 20})
			if err != nil {
				return err
			}
			ps := resp.GetProposals()
			if len(ps) == 0 || len(ps) > 20 {
				return fmt.Errorf("%d proposals of %s listed (page size 20)", len(ps), a.id)
			}
			for i, p := range ps {
				if p.GetAgentId() != a.id {
					return fmt.Errorf("listing %s gave %s's %s", a.id, p.GetAgentId(), p.GetProposalId())
				}
				if i > 0 && p.GetCreatedAt().AsTime().After(ps[i-1].GetCreatedAt().AsTime()) {
					return fmt.Errorf("listing %s: not newest first at %d", a.id, i)
				}
			}
			return nil
		})
	default:
		from := a.diffBase()
		_ = s.timed(skDiff, func() error {
			resp, err := s.d.ca.DiffMemory(call, &memoryv1.DiffMemoryRequest{AgentId: a.id, From: from, MaxTokens: 8000})
			if err != nil {
				return err
			}
			if resp.GetAgentId() != a.id || resp.GetFrom() != from || resp.GetTo() == "" {
				return fmt.Errorf("diff of %s from %s: agent %q, from %q, to %q", a.id, from, resp.GetAgentId(), resp.GetFrom(), resp.GetTo())
			}
			return nil
		})
	}
}

func checkRead(resp *memoryv1.ReadMemoryResponse, agent string, files ...string) error {
	if resp.GetAgentId() != agent {
		return fmt.Errorf("read of %s answered for %q", agent, resp.GetAgentId())
	}
	for _, f := range files {
		if strings.TrimSpace(resp.GetContent()[f]) == "" {
			return fmt.Errorf("read of %s without %s", agent, f)
		}
	}
	return nil
}

// restJSON GETs path on the REST edge with the service token and decodes
// a 200 answer into v.
func (s *soak) restJSON(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.d.base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.d.token)
	resp, err := s.d.rest.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return errors.New("GET " + path + ": " + err.Error())
	}
	return nil
}
