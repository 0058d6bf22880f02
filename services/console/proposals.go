package console

import (
	"context"
	"slices"
	"strings"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// The statuses of proposals that wait for a person, in the inbox's order.
var waitingStatuses = []memoryv1.ProposalStatus{
	memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING,
	memoryv1.ProposalStatus_PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW,
	memoryv1.ProposalStatus_PROPOSAL_STATUS_FAILED,
}

// listPage is the page size of proposal lists; maxListed bounds how many
// proposals of one status a page gathers (the rest is said to exist).
const (
	listPage  = 500
	maxListed = 2000
)

// proposalsOf lists the proposals of status st (and of agent, unless ""),
// newest first as ListProposals gives them, at most maxListed; more
// reports that there were more.
func (s *Server) proposalsOf(ctx context.Context, agent string, st memoryv1.ProposalStatus) (out []*memoryv1.Proposal, more bool, err error) {
	token := ""
	for {
		resp, err := s.clients.ProposalApply.ListProposals(ctx, &memoryv1.ListProposalsRequest{AgentId: agent, Status: st, PageSize: listPage, PageToken: token})
		if err != nil {
			return nil, false, err
		}
		out = append(out, resp.GetProposals()...)
		token = resp.GetNextPageToken()
		if token == "" {
			return out, false, nil
		}
		if len(out) >= maxListed {
			return out, true, nil
		}
	}
}

// waiting lists the proposals of statuses (and of agent, unless "") oldest
// first: the order a reviewer should take them in.
func (s *Server) waiting(ctx context.Context, agent string, statuses []memoryv1.ProposalStatus) (out []*memoryv1.Proposal, more bool, err error) {
	for _, st := range statuses {
		ps, m, err := s.proposalsOf(ctx, agent, st)
		if err != nil {
			return nil, false, err
		}
		out, more = append(out, ps...), more || m
	}
	slices.SortStableFunc(out, func(a, b *memoryv1.Proposal) int {
		if c := a.GetCreatedAt().AsTime().Compare(b.GetCreatedAt().AsTime()); c != 0 {
			return c
		}
		return strings.Compare(a.GetProposalId(), b.GetProposalId())
	})
	return out, more, nil
}

// reasonView is one reason a proposal waits, with its kind: policy, high
// priority, large change, guard findings, conflict, failure, staged.
type reasonView struct {
	Kind string
	Text string
}

// whyWaits says why p waits for a person, from what the write plane
// recorded on it (its status, reason, priority, flags and message).
func whyWaits(p *memoryv1.Proposal) []reasonView {
	var out []reasonView
	add := func(kind, text string) { out = append(out, reasonView{Kind: kind, Text: text}) }
	switch p.GetStatus() {
	case memoryv1.ProposalStatus_PROPOSAL_STATUS_FAILED:
		add("failure", enumLabel(p.GetReason())+": "+p.GetMessage())
		return out
	case memoryv1.ProposalStatus_PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW:
		add("conflict", conflictText(p))
	}
	switch p.GetReason() {
	case memoryv1.StatusReason_STATUS_REASON_STAGED:
		add("staged", "staged by process-session: waits for commit-session")
	case memoryv1.StatusReason_STATUS_REASON_AWAITING_REVIEW:
		if p.GetPriority() != memoryv1.Priority_PRIORITY_HIGH {
			add("policy", "the agent's policy does not auto-approve")
		}
	}
	if p.GetPriority() == memoryv1.Priority_PRIORITY_HIGH {
		add("high priority", "high priority always waits for a person")
	}
	for _, f := range p.GetFlags() {
		add(flagKind(f), f)
	}
	if len(out) == 0 && p.GetMessage() != "" {
		add("waiting", p.GetMessage())
	}
	return out
}

// conflictText is what a needs-human-review proposal conflicts with.
func conflictText(p *memoryv1.Proposal) string {
	if p.GetMessage() != "" {
		return p.GetMessage()
	}
	return enumLabel(p.GetReason())
}

// flagKind sorts a write-plane flag (services/proposalapply flags.go) into
// the kinds the inbox shows.
func flagKind(flag string) string {
	switch {
	case strings.HasPrefix(flag, "semantic guard:"):
		return "guard finding"
	case strings.Contains(flag, "review policy"):
		return "policy change"
	case strings.HasPrefix(flag, "adds ") || strings.HasPrefix(flag, "touches "):
		return "large change"
	default:
		return "flagged"
	}
}

// reviewable reports whether a person may approve or reject p now.
func reviewable(p *memoryv1.Proposal) bool {
	st := p.GetStatus()
	return st == memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING || st == memoryv1.ProposalStatus_PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW
}
