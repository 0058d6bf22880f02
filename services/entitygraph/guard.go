package entitygraph

import (
	"context"
	"fmt"
	"strings"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/dupfacts"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/temporalgraph"
)

// Finding kinds of the semantic guard.
const (
	FindingUnknownRef      = "unknown_entity_ref"
	FindingDuplicateFact   = dupfacts.Kind
	FindingStillReferenced = "removal_still_referenced"
)

// checkProposal runs the semantic guard (CheckProposal) on a proposal of
// agent: entity refs the graph does not know, facts that repeat ones the
// agent has (case and spacing aside), and removals of facts linking
// entities that other agents' memory still refers to.
func (s *Service) checkProposal(ctx context.Context, agent string, updates []*memoryv1.FileUpdate, refs []string) []*memoryv1.CheckFinding {
	// facts.md is read before taking the graph's lock, which commits being
	// applied wait on. If it cannot be read, that check is skipped: the
	// guard flags what it finds and never blocks a proposal.
	repeats, _ := dupfacts.Find(updates, func() (string, error) { return s.factsAtHead(ctx, agent) })
	var findings []*memoryv1.CheckFinding
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, ref := range refs {
		if _, _, ok := s.graph.Node(temporalgraph.EntityID(ref), timeZero); !ok {
			findings = append(findings, &memoryv1.CheckFinding{Kind: FindingUnknownRef, UpdateIndex: -1,
				Detail: fmt.Sprintf("entity ref %q is not in the entity graph", ref)})
		}
	}
	for i, u := range updates {
		for _, r := range repeats {
			if r.Update == i {
				findings = append(findings, &memoryv1.CheckFinding{Kind: FindingDuplicateFact, UpdateIndex: int32(i), Detail: r.Detail()})
			}
		}
		if u.GetFile() == memlayout.FactsFile && u.GetOperation() == memoryv1.Operation_OPERATION_REMOVE {
			for _, m := range temporalgraph.Extract(memlayout.AgentDir(agent)+memlayout.FactsFile, "- "+strings.TrimPrefix(strings.TrimSpace(u.GetContent()), "- ")+"\n") {
				if m.Relation != temporalgraph.RelRefersTo {
					continue
				}
				n, _, ok := s.graph.Node(m.EntityID, timeZero)
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
					findings = append(findings, &memoryv1.CheckFinding{Kind: FindingStillReferenced, UpdateIndex: int32(i), Refs: others,
						Detail: fmt.Sprintf("removing a fact about %q, which %d other file(s) still refer to", n.Label, len(others))})
				}
			}
		}
	}
	return findings
}

// factsAtHead reads the agent's facts.md at main's head.
func (s *Service) factsAtHead(ctx context.Context, agent string) (string, error) {
	repo, err := s.repo.Get()
	if err != nil {
		return "", err
	}
	head, err := repo.Head(ctx)
	if err != nil {
		return "", err
	}
	data, err := repo.ReadFile(ctx, head, memlayout.AgentDir(agent)+memlayout.FactsFile)
	return string(data), err
}
