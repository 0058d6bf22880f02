package membudget

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/lru"
)

func caches(bounds ...int64) []Named {
	var out []Named
	for i, b := range bounds {
		out = append(out, Named{Name: string(rune('a' + i)), Cache: lru.New[int, int](b)})
	}
	return out
}

func bounds(cs []Named) []int64 {
	var out []int64
	for _, c := range cs {
		out = append(out, c.Cache.Stats().MaxBytes)
	}
	return out
}

func sum(xs []int64) int64 {
	var s int64
	for _, x := range xs {
		s += x
	}
	return s
}

// Issue #30, point 1: "Every cache … draws from one byte budget". The
// caches share it in the proportions they were made with (the balance
// measured for each), together never above it.
func TestSplitSharesTheBudgetInTheCachesProportions(t *testing.T) {
	cs := caches(64<<20, 32<<20, 32<<20) // 2 : 1 : 1
	require.NoError(t, Split(64<<20, cs))
	got := bounds(cs)
	require.LessOrEqual(t, sum(got), int64(64<<20))
	require.InDelta(t, 32<<20, got[0], 1)
	require.InDelta(t, 16<<20, got[1], 1)
	require.InDelta(t, 16<<20, got[2], 1)

	// Split again (another budget): still the made-with proportions.
	require.NoError(t, Split(1<<30, cs))
	got = bounds(cs)
	require.LessOrEqual(t, sum(got), int64(1<<30))
	require.InDelta(t, 512<<20, got[0], 1)
	require.InDelta(t, 256<<20, got[1], 1)
}

// A small cache keeps at least MinShare, taken from the others.
func TestSplitKeepsAFloorForEveryCache(t *testing.T) {
	cs := caches(1000<<20, 1<<20)
	require.NoError(t, Split(64<<20, cs))
	got := bounds(cs)
	require.Equal(t, int64(MinShare), got[1])
	require.LessOrEqual(t, sum(got), int64(64<<20))
}

// A budget that cannot give every cache its floor is refused, naming what
// it needs, and changes nothing.
func TestSplitRefusesABudgetTooSmall(t *testing.T) {
	cs := caches(8<<20, 8<<20, 8<<20)
	err := Split(2<<20, cs)
	require.ErrorContains(t, err, "--memory-budget of 2 MiB is too small for 3 caches: at least 3 MiB")
	require.Equal(t, []int64{8 << 20, 8 << 20, 8 << 20}, bounds(cs))
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{
		"256MiB": 256 << 20, "1GiB": 1 << 30, "1.5GiB": 3 << 29, "512MB": 512_000_000, "2G": 2_000_000_000,
		"64mib": 64 << 20, "1048576": 1 << 20, "8 MiB": 8 << 20, "100KiB": 100 << 10,
	} {
		got, err := ParseBytes(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "MiB", "-1MiB", "1TB?", "lots", "1.5", "0x10", "9999999999GiB"} {
		_, err := ParseBytes(in)
		require.Error(t, err, in)
	}
}

func TestFormatBytes(t *testing.T) {
	require.Equal(t, "256 MiB", FormatBytes(256<<20))
	require.Equal(t, "1 GiB", FormatBytes(1<<30))
	require.Equal(t, "1.5 GiB", FormatBytes(3<<29))
	require.Equal(t, "1000 bytes", FormatBytes(1000))
}
