package contextassembly

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// unusedClient stands in for proposal-apply; record never calls it.
type unusedClient struct {
	memoryv1.ProposalApplyServiceClient
}

// Reads of unchanged facts within usageResolution are recorded once; a
// change of the facts or the passing of the resolution records again.
func TestUsageRecordsOncePerResolution(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	u := newUsage(unusedClient{}, slog.Default())
	u.now = func() time.Time { return now }
	facts := "# Facts\n\n## Domain\n- the east region runs three zones\n"

	u.record("a", facts)
	require.Len(t, u.pending["a"], 1)
	clear(u.pending)

	now = now.Add(10 * time.Minute)
	u.record("a", facts)
	require.Empty(t, u.pending, "same facts within the resolution: nothing new to report")

	u.record("a", facts+"- the west region runs two\n")
	require.Len(t, u.pending["a"], 2, "changed facts are recorded")
	clear(u.pending)

	now = now.Add(usageResolution)
	u.record("a", facts+"- the west region runs two\n")
	require.Len(t, u.pending["a"], 2, "after the resolution the same facts are recorded again")
}

// Between reports at most maxPendingUsage facts are held; reads past the
// bound are recorded by a later read, after a report.
func TestUsageHoldsBoundedFacts(t *testing.T) {
	u := newUsage(unusedClient{}, slog.Default())
	var facts strings.Builder
	facts.WriteString("# Facts\n\n## Domain\n")
	for i := range 1000 {
		fmt.Fprintf(&facts, "- fact %d\n", i)
	}
	agents := maxPendingUsage/1000 + 5
	for i := range agents {
		u.record(fmt.Sprintf("agent-%d", i), facts.String())
	}
	require.Equal(t, maxPendingUsage, u.held)
	require.Len(t, u.pending, maxPendingUsage/1000)

	u.take() // as a report does
	u.record(fmt.Sprintf("agent-%d", agents-1), facts.String())
	require.Len(t, u.pending, 1, "an agent left out is recorded at its next read")
}
