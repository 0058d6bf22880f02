package mdops

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// update rewrites the golden files: go test ./pkg/mdops/ -run Golden -update
var update = flag.Bool("update", false, "rewrite testdata/*.golden.md")

// readTestdata returns a testdata file.
func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return string(b)
}

// golden compares got with testdata/<name>, rewriting it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), got)
}

// requireFile checks the invariants every output file must satisfy.
func requireFile(t *testing.T, s string) {
	t.Helper()
	require.True(t, strings.HasSuffix(s, "\n"), "missing final newline: %q", s)
	require.False(t, strings.HasSuffix(s, "\n\n"), "more than one final newline: %q", s)
	require.NotContains(t, s, "\r")
}

// day0 is the fixed clock of the tests.
var day0 = time.Date(2026, 2, 17, 14, 30, 0, 0, time.UTC)

// days returns day0 shifted by n days.
func days(n int) time.Time { return day0.AddDate(0, 0, n) }
