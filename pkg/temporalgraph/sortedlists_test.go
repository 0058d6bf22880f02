package temporalgraph

import (
	"cmp"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// The graph's hot set (the busiest nodes' sorted lists) is a cache of the
// process's memory budget (issue #30, point 1): bounded in bytes, resized
// by the budget, with the figures of every other cache.
func TestSortedListsAreABudgetedCache(t *testing.T) {
	c := newSortedLists[int](8)
	list := func(n int) func() []int {
		return func() []int {
			l := make([]int, n)
			for i := range l {
				l[i] = n - i
			}
			return l
		}
	}
	for i := range 4 {
		got := c.get(fmt.Sprint("n", i), 1000, list(1000), cmp.Compare[int])
		require.Equal(t, 1, got[0], "sorted")
	}
	st := c.Stats()
	require.Equal(t, 4, st.Entries)
	require.Equal(t, int64(4*1000*8), st.Bytes, "8 bytes an item")
	require.Equal(t, int64(sortedMaxItems*8), st.MaxBytes)
	require.Equal(t, int64(4), st.Misses)

	c.get("n0", 1000, list(1000), cmp.Compare[int])
	require.Equal(t, int64(1), c.Stats().Hits)

	c.Resize(2500 * 8) // room for two lists
	st = c.Stats()
	require.Equal(t, 2, st.Entries)
	require.Equal(t, int64(2), st.Evictions)
	require.Equal(t, int64(2500*8), st.MaxBytes)

	c.Resize(500 * 8) // a list of 1,000 no longer fits: none kept
	c.get("n9", 1000, list(1000), cmp.Compare[int])
	require.Zero(t, c.Stats().Entries)
}
