package app

import (
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSetMemoryLimitFromCgroup(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	defer debug.SetMemoryLimit(math.MaxInt64)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	require.Equal(t, int64(0), setMemoryLimit(logger, []string{write("v2-max", "max\n")}), "no limit")
	require.Equal(t, int64(0), setMemoryLimit(logger, []string{write("v1-unlimited", "9223372036854771712\n")}), "v1's unlimited")
	require.Equal(t, int64(0), setMemoryLimit(logger, []string{filepath.Join(dir, "absent")}))

	got := setMemoryLimit(logger, []string{filepath.Join(dir, "absent"), write("v2", "1073741824\n")})
	limit := float64(1 << 30)
	require.Equal(t, int64(limit*memoryLimitShare), got)
	require.Equal(t, got, debug.SetMemoryLimit(-1), "the runtime has it")

	t.Setenv("GOMEMLIMIT", "512MiB")
	require.Equal(t, int64(0), setMemoryLimit(logger, []string{write("v2b", "1073741824\n")}), "GOMEMLIMIT wins")
}
