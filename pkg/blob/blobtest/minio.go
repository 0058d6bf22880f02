package blobtest

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// minioServer is one real MinIO server for the package's tests, started on
// loopback from the binary `make tools` builds (see TOOLCHAIN: pinned
// go install). Without it the S3 tests skip — except in CI, where they fail.
var (
	minioOnce     sync.Once
	minioEndpoint string
	minioErr      string
)

// MinIO root credentials of the test server.
const minioUser, minioPassword = "gardenbloom", "gardenbloom-test-secret"

func minioBinary() string {
	if p := os.Getenv("MINIO_BIN"); p != "" {
		return p
	}
	dir, _ := os.Getwd()
	for ; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "bin", "minio")
		}
	}
	return ""
}

func freePort(t testing.TB) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer lis.Close()
	return lis.Addr().String()
}

// StartMinIO starts the shared server once and returns its address; it lives until the test binary
// exits (the OS reaps it with the process group).
func StartMinIO(t testing.TB) string {
	minioOnce.Do(func() {
		bin := minioBinary()
		if _, err := os.Stat(bin); err != nil {
			minioErr = "MinIO is not installed at " + bin + " (run make tools)"
			return
		}
		dir, err := os.MkdirTemp("", "minio-data-")
		if err != nil {
			minioErr = err.Error()
			return
		}
		addr, console := freePort(t), freePort(t)
		cmd := exec.Command(bin, "server", "--quiet", "--address", addr, "--console-address", console, dir)
		cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+minioUser, "MINIO_ROOT_PASSWORD="+minioPassword, "MINIO_BROWSER=off")
		if err := cmd.Start(); err != nil {
			minioErr = err.Error()
			return
		}
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			resp, err := http.Get("http://" + addr + "/minio/health/live")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					minioEndpoint = addr
					return
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = cmd.Process.Kill()
		minioErr = "MinIO did not become healthy"
	})
	if minioEndpoint == "" {
		if os.Getenv("CI") != "" {
			t.Fatal(minioErr)
		}
		t.Skip(minioErr)
	}
	return minioEndpoint
}

// MinIOEnv answers AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY for the test
// server, as the process environment would in production.
func MinIOEnv(k string) (string, bool) {
	switch k {
	case "AWS_ACCESS_KEY_ID":
		return minioUser, true
	case "AWS_SECRET_ACCESS_KEY":
		return minioPassword, true
	}
	return "", false
}
