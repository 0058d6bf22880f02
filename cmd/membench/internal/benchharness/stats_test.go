package benchharness

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPercentile(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 100; i++ {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	require.Equal(t, 50500*time.Microsecond, percentile(s, 0.50)) // between 50 and 51
	require.Equal(t, 95050*time.Microsecond, percentile(s, 0.95))
	require.Equal(t, 100*time.Millisecond, percentile(s, 1))
	require.Equal(t, time.Millisecond, percentile(s, 0))
	require.Equal(t, time.Duration(0), percentile(nil, 0.5))
	require.Equal(t, 7*time.Millisecond, percentile([]time.Duration{7 * time.Millisecond}, 0.99))

	// summarize sorts its input and reports milliseconds.
	l := summarize([]time.Duration{4 * time.Millisecond, time.Millisecond, 3 * time.Millisecond, 2 * time.Millisecond})
	require.Equal(t, Latency{Count: 4, P50: 2.5, P95: 3.85, P99: 3.97, Max: 4, Mean: 2.5}, l)
	require.Equal(t, Latency{}, summarize(nil))
	require.Equal(t, 1.5, ratio(3, 2))
	require.Equal(t, 0.0, ratio(3, 0))
}
