package app

import (
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// cgroupMemoryFiles hold the container's memory limit (cgroup v2, then v1).
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// memoryLimitShare of the container's limit becomes Go's soft memory limit:
// the collector then works harder near the limit instead of letting the
// heap double (GOGC) into an OOM kill. The rest is for memory Go does not
// manage (mapped index segments, stacks).
const memoryLimitShare = 0.85

// setMemoryLimit applies a soft memory limit derived from the cgroup limit
// unless GOMEMLIMIT is set (the runtime already honours it) or there is no
// limit. It returns the limit set, 0 if none.
func setMemoryLimit(logger *slog.Logger, files []string) int64 {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return 0
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		limit, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		// "max" (v2) or a huge number (v1's "unlimited") mean no limit.
		if err != nil || limit <= 0 || limit >= 1<<60 {
			return 0
		}
		soft := int64(float64(limit) * memoryLimitShare)
		debug.SetMemoryLimit(soft)
		logger.Info("memory limit from the container", "cgroup_limit_bytes", limit, "go_memory_limit_bytes", soft, "file", f)
		return soft
	}
	return 0
}
