package contextassembly

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/factttl"
	"github.com/garden-bloom/memory/pkg/mdops"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memread"
)

// Stale facts (memory-bridge §4 get_stale_facts, docs/ttl.md): facts whose
// TTL marker (pkg/factttl) has run out but whose action the write plane has
// not applied yet, and facts it marked stale. Reads also warn about them
// (staleWarning).

// GetStaleFacts lists an agent's facts past their TTL or marked stale at
// main's head, oldest expiry first; include_archived adds decisions.md §
// "Expired facts".
func (h *handler) GetStaleFacts(ctx context.Context, req *memoryv1.GetStaleFactsRequest) (*memoryv1.GetStaleFactsResponse, error) {
	if err := access(ctx, req.GetAgentId(), "agentId"); err != nil {
		return nil, err
	}
	// "Has run out" is a question about now, not about the commit.
	return h.svc.staleFacts(ctx, req.GetAgentId(), req.GetIncludeArchived(), h.svc.now())
}

// staleFacts reads facts.md (and decisions.md with archived) at head.
func (s *Service) staleFacts(ctx context.Context, agent string, archived bool, now time.Time) (*memoryv1.GetStaleFactsResponse, error) {
	files, _, err := s.at(ctx, agent, "")
	if err != nil {
		return nil, err
	}
	resp := &memoryv1.GetStaleFactsResponse{Commit: files.commit.String()}
	md, _, err := files.read(memlayout.FactsFile)
	if err != nil {
		return nil, s.unavailable(err)
	}
	resp.Facts = lapsedFacts(md, now)
	if archived {
		md, _, err := files.read(memlayout.DecisionsFile)
		if err != nil {
			return nil, s.unavailable(err)
		}
		resp.Facts = append(resp.Facts, archivedFacts(md)...)
	}
	// Oldest expiry first; file order (facts.md, then decisions.md) among
	// equals, so the same head gives the same list.
	slices.SortStableFunc(resp.Facts, func(a, b *memoryv1.StaleFact) int {
		return a.GetExpiresAt().AsTime().Compare(b.GetExpiresAt().AsTime())
	})
	return resp, nil
}

// lapsedFacts lists the facts of facts.md past their TTL at now or marked
// stale, in file order.
func lapsedFacts(md string, now time.Time) []*memoryv1.StaleFact {
	if !strings.Contains(md, ")_") {
		return nil
	}
	var out []*memoryv1.StaleFact
	for _, f := range mdops.ParseFacts(md) {
		m, ok := factttl.Of(f.Text)
		if !ok || !m.Lapsed(now) {
			continue
		}
		sf := &memoryv1.StaleFact{Fact: "- " + f.Text, Section: f.Section, ExpiresAt: timestamppb.New(m.At)}
		if m.Kind == factttl.Stale {
			sf.OnExpire, sf.MarkedStale = memoryv1.TTLAction_TTL_ACTION_MARK_STALE, true
		} else {
			sf.OnExpire = m.Action.Proto()
		}
		out = append(out, sf)
	}
	return out
}

// archivedFacts lists the records of decisions.md § "Expired facts".
func archivedFacts(md string) []*memoryv1.StaleFact {
	var out []*memoryv1.StaleFact
	for _, f := range mdops.ParseFacts(md) {
		if !strings.EqualFold(strings.TrimSpace(f.Section), factttl.SectionExpiredFacts) {
			continue
		}
		a, ok := factttl.ParseArchived(f.Text)
		if !ok {
			continue // a line a person wrote there
		}
		out = append(out, &memoryv1.StaleFact{Fact: "- " + a.Fact, Section: factttl.SectionExpiredFacts,
			ExpiresAt: timestamppb.New(a.Expired), OnExpire: memoryv1.TTLAction_TTL_ACTION_ARCHIVE, Archived: true})
	}
	return out
}

// countLapsed counts the facts in a facts.md text (whole or as a read cut
// it) past their TTL at now or marked stale.
func countLapsed(md string, now time.Time) int {
	if !strings.Contains(md, ")_") {
		return 0
	}
	n := 0
	for _, f := range mdops.ParseFacts(md) {
		if factttl.Lapsed(f.Text, now) {
			n++
		}
	}
	return n
}

// staleWarningText is the warning a read carries when facts it returns are
// past their TTL or stale: short, since it counts toward the budget.
func staleWarningText(agent string, n int) string {
	if n == 1 {
		return fmt.Sprintf("1 fact is past its TTL or stale (GET /v1/memory/%s/stale-facts)", agent)
	}
	return fmt.Sprintf("%d facts are past their TTL or stale (GET /v1/memory/%s/stale-facts)", n, agent)
}

// lapsedIn counts the lapsed facts among a read's files: facts.md and its
// ALWAYS_LOAD blocks, as returned (perhaps cut to the budget).
func lapsedIn(files []memread.File, now time.Time) int {
	n := 0
	for _, f := range files {
		if strings.TrimPrefix(f.Rel, memread.AlwaysLoadPrefix) == memlayout.FactsFile {
			n += countLapsed(f.Content, now)
		}
	}
	return n
}

// staleWarning adds the stale-facts warning to a read whose facts.md holds
// facts past their TTL or stale. "Past" is judged at the commit's time, as
// the rest of a read is, so the same commit always reads the same; the
// scheduler turns an expiry into a commit within --ttl-interval. The
// warning counts toward the budget like every warning (budget.go): when
// what the read returns leaves no room for it, it is left out. The read
// may be shared (cached), so a changed copy is returned.
func staleWarning(agent string, read *folderRead, at time.Time, count func(string) int) *folderRead {
	n := lapsedIn(read.res.Files, at)
	if n == 0 {
		return read
	}
	w := staleWarningText(agent, n)
	cost := count(w)
	if read.res.Tokens+cost > read.res.Budget {
		return read
	}
	res := *read.res
	res.Warnings = append(slices.Clip(res.Warnings), w)
	res.Tokens += cost
	return &folderRead{res: &res, meta: read.meta}
}
