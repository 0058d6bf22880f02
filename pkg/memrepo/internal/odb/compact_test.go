package odb

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGeometricRollup(t *testing.T) {
	sizes := func(ms []mergeable) []int64 {
		var out []int64
		for _, m := range ms {
			out = append(out, m.objects)
		}
		return out
	}
	packs := func(n ...int64) []mergeable {
		var out []mergeable
		for _, x := range n {
			out = append(out, mergeable{objects: x})
		}
		return out
	}
	// Already a progression: nothing to do.
	require.Empty(t, geometricRollup(packs(1, 2, 4, 8, 100)))
	// Equal small packs are rolled up; the big one stays.
	require.Equal(t, []int64{10, 10, 10, 10}, sizes(geometricRollup(packs(10, 10, 1000, 10, 10))))
	// The rolled-up pack would break the progression with the next one, so
	// that one joins too.
	require.Equal(t, []int64{10, 10, 10, 50}, sizes(geometricRollup(packs(10, 10, 10, 50, 1000))))
}
