package lru

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEvictsLeastRecentlyUsedByCost(t *testing.T) {
	c := New[string, int](100)
	c.Put("a", 1, 25)
	c.Put("b", 2, 25)
	c.Put("c", 3, 25)
	v, ok := c.Get("a") // a is now the most recent
	require.True(t, ok)
	require.Equal(t, 1, v)
	c.Put("d", 4, 25)
	c.Put("e", 5, 25) // 125 > 100: b, the least recent, goes
	_, ok = c.Get("b")
	require.False(t, ok)
	for _, k := range []string{"a", "c", "d", "e"} {
		_, ok := c.Get(k)
		require.True(t, ok, k)
	}
	require.Equal(t, int64(100), c.Cost())
	require.Equal(t, 4, c.Len())
}

func TestReplaceUpdatesCost(t *testing.T) {
	c := New[string, string](100)
	c.Put("a", "x", 10)
	c.Put("a", "y", 20)
	v, _ := c.Get("a")
	require.Equal(t, "y", v)
	require.Equal(t, int64(20), c.Cost())
	require.Equal(t, 1, c.Len())
}

func TestRefusesValuesOverAQuarter(t *testing.T) {
	c := New[string, int](100)
	c.Put("small", 1, 10)
	c.Put("huge", 2, 26)
	_, ok := c.Get("huge")
	require.False(t, ok)
	_, ok = c.Get("small")
	require.True(t, ok, "a refused value evicts nothing")
}

func TestConcurrentUse(t *testing.T) {
	c := New[int, int](1000)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				k := (g*7 + i) % 300
				if v, ok := c.Get(k); ok {
					require.Equal(t, k*2, v, fmt.Sprint(k))
				}
				c.Put(k, k*2, 10)
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, c.Cost(), int64(1000))
}

func TestStatsCountHitsMissesEvictions(t *testing.T) {
	c := New[string, int](100)
	c.Put("a", 1, 25)
	c.Put("b", 2, 25)
	c.Get("a")
	c.Get("a")
	c.Get("zz")
	c.Put("b", 3, 25) // replaced under its key: no eviction
	c.Put("c", 4, 25)
	c.Put("d", 5, 25)
	c.Put("e", 6, 25) // 125 > 100: a, used before b's Put, goes
	require.Equal(t, Stats{Entries: 4, Bytes: 100, MaxBytes: 100, Hits: 2, Misses: 1, Evictions: 1}, c.Stats())
	c.Put("big", 7, 26) // over a quarter: not kept, nothing evicted
	require.Equal(t, int64(1), c.Stats().Evictions)
}

// Resize (issue #30, one memory budget): a cache made with one bound and
// resized to another holds at most the new bound, dropping the least
// recently used values first, and reports it as its MaxBytes.
func TestResize(t *testing.T) {
	c := New[int, string](100)
	for i := range 10 {
		c.Put(i, "v", 10)
	}
	c.Get(0) // most recently used now
	c.Resize(30)
	st := c.Stats()
	require.Equal(t, int64(30), st.MaxBytes)
	require.LessOrEqual(t, st.Bytes, int64(30))
	require.Equal(t, 3, st.Entries)
	_, ok := c.Get(0)
	require.True(t, ok, "the most recently used stays")
	_, ok = c.Get(1)
	require.False(t, ok, "the least recently used went first")
	require.Equal(t, int64(7), st.Evictions)

	c.Resize(1000)
	c.Put(100, "big", 200) // a quarter of the new bound fits
	_, ok = c.Get(100)
	require.True(t, ok)
}

// Delete drops a value and its cost; deleting what is not held is a no-op.
func TestDelete(t *testing.T) {
	c := New[string, int](100)
	c.Put("a", 1, 10)
	c.Put("b", 2, 20)
	c.Delete("a")
	c.Delete("nothing")
	_, ok := c.Get("a")
	require.False(t, ok)
	v, ok := c.Get("b")
	require.True(t, ok)
	require.Equal(t, 2, v)
	require.Equal(t, int64(20), c.Cost())
	require.Equal(t, 1, c.Len())
	require.Zero(t, c.Stats().Evictions, "a deletion is no eviction")
}
