package tokens

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCount(t *testing.T) {
	c, err := New("")
	require.NoError(t, err)
	require.Equal(t, "cl100k_base", c.Encoding())
	require.Equal(t, 0, c.Count(""))
	// "hello world" is two tokens in cl100k_base.
	require.Equal(t, 2, c.Count("hello world"))
	// Cyrillic text costs more tokens than characters/4 would suggest.
	require.Greater(t, c.Count("Виявлено нові технічні факти"), 5)
	require.Equal(t, 2000, c.Count(strings.Repeat(" a", 2000)))
}

func TestOtherEncodingAndErrors(t *testing.T) {
	c, err := New("o200k_base")
	require.NoError(t, err)
	require.Equal(t, "o200k_base", c.Encoding())
	_, err = New("no_such_encoding")
	require.ErrorContains(t, err, "no_such_encoding")
}

func TestConcurrentUse(t *testing.T) {
	c, err := New(DefaultEncoding)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				require.Equal(t, 2, c.Count("hello world"))
			}
		})
	}
	wg.Wait()
}
