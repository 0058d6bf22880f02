package entitygraph

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/authz"
	"github.com/garden-bloom/memory/pkg/entitygraph"
	"github.com/garden-bloom/memory/pkg/mdops"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

// Finding kinds of the semantic guard.
const (
	FindingUnknownRef      = "unknown_entity_ref"
	FindingDuplicateFact   = "duplicate_fact"
	FindingStillReferenced = "removal_still_referenced"
)

// normalizeFact compares facts the way a person would: case and spacing aside.
func normalizeFact(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(strings.TrimPrefix(strings.TrimSpace(s), "- ")), " "))
}

// CheckProposal is the semantic guard (spec integration §3): entity refs
// the graph does not know, facts that repeat ones the agent has (case and
// spacing aside), and removals of facts linking entities that other agents'
// memory still refers to. proposal-apply flags such proposals for a person.
func (h *handler) CheckProposal(ctx context.Context, req *memoryv1.CheckProposalRequest) (*memoryv1.CheckProposalResponse, error) {
	if _, err := authz.RequireRole(ctx, auth.RoleService, auth.RoleAdmin); err != nil {
		return nil, err
	}
	agent := req.GetAgentId()
	if !memlayout.ValidAgentID(agent) {
		return nil, invalid("agentId", "agentId must be a slug")
	}
	known := h.knownFacts(ctx, agent, req.GetUpdates())
	resp := &memoryv1.CheckProposalResponse{}
	h.svc.mu.RLock()
	defer h.svc.mu.RUnlock()
	for _, ref := range req.GetEntityRefs() {
		if _, _, ok := h.svc.graph.Node(entitygraph.Slug(ref), timeZero); !ok {
			resp.Findings = append(resp.Findings, &memoryv1.CheckFinding{Kind: FindingUnknownRef, UpdateIndex: -1,
				Detail: fmt.Sprintf("entity ref %q is not in the entity graph", ref)})
		}
	}
	for i, u := range req.GetUpdates() {
		if u.GetFile() != memlayout.FactsFile {
			continue
		}
		switch u.GetOperation() {
		case memoryv1.Operation_OPERATION_APPEND:
			for _, line := range strings.Split(u.GetContent(), "\n") {
				if was, ok := known[normalizeFact(line)]; ok && strings.TrimSpace(line) != "" {
					resp.Findings = append(resp.Findings, &memoryv1.CheckFinding{Kind: FindingDuplicateFact, UpdateIndex: int32(i),
						Detail: fmt.Sprintf("%q repeats the existing fact %q", strings.TrimSpace(line), was)})
				}
			}
		case memoryv1.Operation_OPERATION_REMOVE:
			for _, m := range entitygraph.Extract(memlayout.AgentDir(agent)+memlayout.FactsFile, "- "+strings.TrimPrefix(strings.TrimSpace(u.GetContent()), "- ")+"\n") {
				if m.Relation != entitygraph.RelRefersTo {
					continue
				}
				n, _, ok := h.svc.graph.Node(m.EntityID, timeZero)
				if !ok {
					continue
				}
				var others []string
				for _, r := range n.Refs {
					if !strings.HasPrefix(r, memlayout.AgentDir(agent)) && !strings.HasPrefix(r, memlayout.LogicDir(agent)) {
						others = append(others, r)
					}
				}
				if len(others) > 0 {
					resp.Findings = append(resp.Findings, &memoryv1.CheckFinding{Kind: FindingStillReferenced, UpdateIndex: int32(i), Refs: others,
						Detail: fmt.Sprintf("removing a fact about %q, which %d other file(s) still refer to", n.Label, len(others))})
				}
			}
		}
	}
	return resp, nil
}

// knownFacts maps each fact an update appends (normalised) that repeats one
// of the agent's facts at head to that fact's text. It reads facts.md only
// when an update appends facts, and before taking the graph's lock, which
// commits being applied wait on.
func (h *handler) knownFacts(ctx context.Context, agent string, updates []*memoryv1.FileUpdate) map[string]string {
	appended := map[string]bool{}
	for _, u := range updates {
		if u.GetFile() != memlayout.FactsFile || u.GetOperation() != memoryv1.Operation_OPERATION_APPEND {
			continue
		}
		for _, line := range strings.Split(u.GetContent(), "\n") {
			if strings.TrimSpace(line) != "" {
				appended[normalizeFact(line)] = true
			}
		}
	}
	if len(appended) == 0 {
		return nil
	}
	repo, err := h.svc.repo.Get()
	if err != nil {
		return nil
	}
	head, err := repo.Head(ctx)
	if err != nil {
		return nil
	}
	data, err := repo.ReadFile(ctx, head, memlayout.AgentDir(agent)+memlayout.FactsFile)
	if err != nil {
		return nil
	}
	known := map[string]string{}
	for _, f := range mdops.ParseFacts(string(data)) {
		for norm := range appended {
			if sameFact(f.Text, norm) {
				known[norm] = f.Text
			}
		}
	}
	return known
}

// sameFact reports whether normalizeFact(text) == norm without building the
// normalised text: a guard check compares the appended facts with every
// fact the agent has, and nearly all differ within a few bytes.
func sameFact(text, norm string) bool {
	i := 0
	for word := range strings.FieldsSeq(strings.TrimPrefix(strings.TrimSpace(text), "- ")) {
		if i > 0 {
			if i >= len(norm) || norm[i] != ' ' {
				return false
			}
			i++
		}
		n, ok := matchLower(word, norm[i:])
		if !ok {
			return false
		}
		i += n
	}
	return i == len(norm)
}

// matchLower reports whether strings.ToLower(word) is a prefix of s, and
// its length.
func matchLower(word, s string) (int, bool) {
	for j := 0; j < len(word); j++ {
		c := word[j]
		if c >= utf8.RuneSelf { // not ASCII: compare the way ToLower would
			lower := strings.ToLower(word)
			return len(lower), strings.HasPrefix(s, lower)
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if j >= len(s) || s[j] != c {
			return 0, false
		}
	}
	return len(word), true
}
