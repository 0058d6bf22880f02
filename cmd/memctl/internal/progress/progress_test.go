package progress

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Issue #27: "a progress bar with counts and ETA" — and nothing when the
// output is not a terminal.
func TestLineShowsCountsRateAndETA(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	var out strings.Builder
	b := New(&out, true, "ingest", 1000, clock)
	b.Add("applied", 0)
	now = now.Add(2 * time.Second)
	b.Add("applied", 250)
	b.Add("failed", 2)
	line := b.Line()
	require.Contains(t, line, "250/1000")
	require.Contains(t, line, " 25%")
	require.Contains(t, line, "250 applied, 2 failed")
	require.Contains(t, line, "125.0/s")
	require.Contains(t, line, "ETA 6s")
	require.Contains(t, out.String(), "\r")
	b.Done()
	require.True(t, strings.HasSuffix(out.String(), "\n"))

	var quiet strings.Builder
	q := New(&quiet, false, "ingest", 10, clock)
	q.Add("sent", 10)
	q.Done()
	require.Empty(t, quiet.String())
	require.Contains(t, q.Line(), "ETA 0s")
}
