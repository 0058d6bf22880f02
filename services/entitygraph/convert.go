package entitygraph

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/enumname"
	"github.com/garden-bloom/memory/pkg/mdops"
	"github.com/garden-bloom/memory/pkg/temporalgraph"
)

// Conversions between the API's messages and the graph's types. Nodes and
// edges are converted for a viewer: what it may not see is left out.
//
// The graph's type and relation names are the enums' REST short forms
// ("failure_mode" is ENTITY_TYPE_FAILURE_MODE, "used_skill"
// RELATION_USED_SKILL), so enumname converts both ways without a table to
// keep in step; the tests hold every temporalgraph.Types and
// temporalgraph.Relations value to a declared enum value and back.

func entityType(t string) memoryv1.EntityType {
	v, ok := enumname.Parse(memoryv1.EntityType(0).Descriptor(), t)
	if !ok {
		return memoryv1.EntityType_ENTITY_TYPE_CONCEPT
	}
	return memoryv1.EntityType(v)
}

// entityTypeName is the graph's name of t ("" for unspecified: any type).
func entityTypeName(t memoryv1.EntityType) string {
	if t == memoryv1.EntityType_ENTITY_TYPE_UNSPECIFIED {
		return ""
	}
	return enumname.Name(t)
}

func relation(r string) memoryv1.Relation {
	v, ok := enumname.Parse(memoryv1.Relation(0).Descriptor(), r)
	if !ok {
		return memoryv1.Relation_RELATION_UNSPECIFIED
	}
	return memoryv1.Relation(v)
}

// relationNames are the graph's names of rs; a value that names no
// relation (unspecified, or a number the API does not declare) is an
// InvalidArgument on relations[i]: as a filter it would match nothing.
func relationNames(rs []memoryv1.Relation) ([]string, error) {
	var out []string
	for i, r := range rs {
		if r == memoryv1.Relation_RELATION_UNSPECIFIED || r.Descriptor().Values().ByNumber(r.Number()) == nil {
			field := fmt.Sprintf("relations[%d]", i)
			named := slices.DeleteFunc(enumname.Allowed(r.Descriptor()), func(n string) bool { return n == "unspecified" })
			return nil, apierr.InvalidArgument(field, fmt.Sprintf("%s must be a relation: one of %s", field, strings.Join(named, ", ")))
		}
		out = append(out, enumname.Name(r))
	}
	return out, nil
}

// checkEntityType rejects a type filter the API does not declare.
func checkEntityType(t memoryv1.EntityType) error {
	if t.Descriptor().Values().ByNumber(t.Number()) == nil {
		return apierr.InvalidArgument("type", fmt.Sprintf("type must be one of %s", strings.Join(enumname.Allowed(t.Descriptor()), ", ")))
	}
	return nil
}

func (v viewer) node(n temporalgraph.Node) *memoryv1.Entity {
	e := &memoryv1.Entity{EntityId: n.ID, Type: entityType(n.Type), Label: n.Label, Aliases: n.Aliases}
	for _, r := range n.Refs {
		if v.sees(r) {
			e.Refs = append(e.Refs, r)
		}
	}
	if !n.LastUpdated.IsZero() {
		e.LastUpdated = timestamppb.New(n.LastUpdated)
	}
	return e
}

// edges converts edges, keeping only evidence the viewer may see and edges
// left with some.
func (v viewer) edges(es []temporalgraph.Edge) []*memoryv1.Edge {
	var out []*memoryv1.Edge
	for _, e := range es {
		if pe := v.edge(e, len(e.Evidence)); pe != nil {
			out = append(out, pe)
		}
	}
	return out
}

// seesEdge is the filter of the edges v sees: nil when v sees every
// file (an open edge always has evidence), so the graph builds the
// evidence of a page's edges only.
func (v viewer) seesEdge() func(temporalgraph.Edge) bool {
	if v.agents == nil {
		return nil
	}
	return func(e temporalgraph.Edge) bool { return v.visibleEvidence(e) > 0 }
}

// seesEvidence reports whether v sees evidence ev.
func (v viewer) seesEvidence(ev temporalgraph.Evidence) bool {
	if strings.HasPrefix(ev.File, "commit:") {
		return v.agents == nil // commit-message refs are not tied to one agent's files
	}
	return v.sees(ev.File)
}

// visibleEvidence counts the evidence of e that v sees.
func (v viewer) visibleEvidence(e temporalgraph.Edge) int {
	n := 0
	for _, ev := range e.Evidence {
		if v.seesEvidence(ev) {
			n++
		}
	}
	return n
}

// edge is e as v sees it, with at most max pieces of evidence (nil: v
// sees none of it). Its weight and evidence_count count all it sees.
func (v viewer) edge(e temporalgraph.Edge, max int) *memoryv1.Edge {
	pe := &memoryv1.Edge{FromEntityId: e.From, ToEntityId: e.To, Relation: relation(e.Relation), ValidFrom: timestamppb.New(e.ValidFrom)}
	if !e.ValidTo.IsZero() {
		pe.ValidTo = timestamppb.New(e.ValidTo)
	}
	for _, ev := range e.Evidence {
		if !v.seesEvidence(ev) {
			continue
		}
		pe.EvidenceCount++
		if len(pe.Evidence) < max {
			pe.Evidence = append(pe.Evidence, &memoryv1.Evidence{File: ev.File, Commit: ev.Commit, Span: &memoryv1.Span{StartLine: int32(ev.Line), EndLine: int32(ev.Line)}})
		}
	}
	if pe.EvidenceCount == 0 {
		return nil
	}
	if e.Total > 0 && v.agents == nil {
		pe.EvidenceCount = int32(e.Total) // the graph listed only the first (NodePage)
	}
	pe.Weight = float64(pe.EvidenceCount)
	return pe
}

func factChange(c temporalgraph.FactChange) *memoryv1.EntityFactChange {
	kind := memoryv1.ChangeKind_CHANGE_KIND_ADDED
	if c.Change == "removed" {
		kind = memoryv1.ChangeKind_CHANGE_KIND_REMOVED
	}
	agent := ""
	if parts := strings.SplitN(c.File, "/", 3); len(parts) == 3 && parts[0] == "memory" {
		agent = parts[1]
	}
	return &memoryv1.EntityFactChange{Change: kind, Fact: c.Text, File: c.File, Commit: c.Commit,
		Time: timestamppb.New(c.Time), ProposalId: c.ProposalID, AgentId: agent}
}

// decisionMessage is decision d of decisions.md as graph node id.
func decisionMessage(id string, d mdops.Decision) *memoryv1.Decision {
	return &memoryv1.Decision{Id: id, Title: d.Title, Status: d.Status, Context: d.Context, Decision: d.Decision,
		Rationale: d.Rationale, Consequences: d.Consequences, RunId: d.RunID, Date: timestamppb.New(d.Date)}
}
