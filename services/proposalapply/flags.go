package proposalapply

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/dupfacts"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/temporalgraph"
)

// Policy thresholds that send a proposal to a person (issue #3).
const (
	flagFactLines = 50
	flagFiles     = 5
)

// guardTimeout bounds the semantic guard: a slow read plane must not stall
// writes.
const guardTimeout = 2 * time.Second

// guardFlags runs the semantic guard on a proposal; its findings send the
// proposal to a person. The duplicate-fact check needs facts.md, not the
// graph, so it runs here on head. entity-graph is asked only what needs the
// graph (entity refs it does not know, removals of facts other agents refer
// to), and only when the proposal has such parts: asking it about every
// proposal cost a round trip and a read of facts.md on the read plane, CPU
// taken from reads under apply load (issue #9). If entity-graph cannot answer, the
// proposal goes on without its findings (logged): the read plane never
// blocks writes.
func (s *Service) guardFlags(ctx context.Context, p *memoryv1.Proposal, head plumbing.Hash) ([]string, error) {
	read := s.reader(ctx, head, p.GetAgentId())
	repeats, err := dupfacts.Find(p.GetUpdates(), func() (string, error) {
		facts, _, err := read(memlayout.FactsFile)
		return facts, err
	})
	if err != nil {
		return nil, err
	}
	var flags []string
	for _, r := range repeats {
		flags = append(flags, "semantic guard: "+dupfacts.Kind+": "+r.Detail())
	}
	return append(flags, s.graphFlags(ctx, p)...), nil
}

// graphFlags asks entity-graph's guard about the proposal's entity refs and
// the facts it removes. A ref to an entity the proposal itself introduces
// (a [[MinIO]] link in its content for "minio") is not unknown: the commit
// brings it.
func (s *Service) graphFlags(ctx context.Context, p *memoryv1.Proposal) []string {
	var removals []*memoryv1.FileUpdate
	introduced := map[string]bool{}
	for _, u := range p.GetUpdates() {
		if u.GetFile() == memlayout.FactsFile && u.GetOperation() == memoryv1.Operation_OPERATION_REMOVE {
			removals = append(removals, u)
			continue
		}
		if f, err := memlayout.Resolve(p.GetAgentId(), u.GetFile()); err == nil {
			for _, m := range temporalgraph.Extract(f.Path, u.GetContent()+"\n"+decisionText(u.GetDecision())) {
				introduced[m.EntityID] = true
			}
		}
	}
	var refs []string
	for _, r := range p.GetEntityRefs() {
		if !introduced[temporalgraph.EntityID(r)] {
			refs = append(refs, r)
		}
	}
	if s.guard == nil || (len(refs) == 0 && len(removals) == 0) {
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), guardTimeout)
	defer cancel()
	resp, err := s.guard.CheckProposal(cctx, &memoryv1.CheckProposalRequest{AgentId: p.GetAgentId(), Updates: removals, EntityRefs: refs})
	if err != nil {
		s.logger.Warn("semantic guard unavailable; proposal not checked", "agent", p.GetAgentId(), "err", err)
		return nil
	}
	var flags []string
	for _, f := range resp.GetFindings() {
		flags = append(flags, "semantic guard: "+f.GetKind()+": "+f.GetDetail())
	}
	return flags
}

// decisionText is a decision's prose, where it may link entities.
func decisionText(d *memoryv1.Decision) string {
	if d == nil {
		return ""
	}
	return strings.Join([]string{d.GetTitle(), d.GetContext(), d.GetDecision(), d.GetRationale(), d.GetConsequences()}, "\n")
}

// reviewFlags lists why a proposal needs a person whatever the policy says.
func reviewFlags(updates []*memoryv1.FileUpdate) []string {
	var flags []string
	files := map[string]bool{}
	factLines := 0
	for _, u := range updates {
		files[u.GetFile()] = true
		if u.GetFile() == memlayout.FactsFile && u.GetOperation() == memoryv1.Operation_OPERATION_APPEND {
			for _, l := range strings.Split(u.GetContent(), "\n") {
				if strings.TrimSpace(l) != "" {
					factLines++
				}
			}
		}
		if u.GetFile() == memlayout.PolicyFile {
			flags = append(flags, "changes the agent's review policy")
		}
	}
	if factLines > flagFactLines {
		flags = append(flags, fmt.Sprintf("adds %d lines to facts.md (more than %d)", factLines, flagFactLines))
	}
	if len(files) > flagFiles {
		flags = append(flags, fmt.Sprintf("touches %d files (more than %d)", len(files), flagFiles))
	}
	return flags
}
