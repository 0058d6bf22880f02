package blobtest

import (
	"fmt"
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
	shared        *MinIO
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
	defer func() { _ = lis.Close() }() // only its port was wanted
	return lis.Addr().String()
}

// MinIO is a MinIO server process on loopback that a test can stop and
// start again on the same address and data (fault tests).
type MinIO struct {
	Addr     string
	bin, dir string
	console  string
	cmd      *exec.Cmd
}

// NewMinIO starts a server of the test's own, stopped at the test's end.
func NewMinIO(t testing.TB) *MinIO {
	t.Helper()
	bin := minioBinary()
	if _, err := os.Stat(bin); err != nil {
		skipOrFail(t, "MinIO is not installed at "+bin+" (run make tools)")
	}
	m := &MinIO{Addr: freePort(t), console: freePort(t), bin: bin, dir: t.TempDir()}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	return m
}

// Start starts the server and waits until it is healthy.
func (m *MinIO) Start() error {
	cmd := exec.Command(m.bin, "server", "--quiet", "--address", m.Addr, "--console-address", m.console, m.dir)
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+minioUser, "MINIO_ROOT_PASSWORD="+minioPassword, "MINIO_BROWSER=off")
	if err := cmd.Start(); err != nil {
		return err
	}
	m.cmd = cmd
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + m.Addr + "/minio/health/ready")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	m.Stop()
	return fmt.Errorf("MinIO did not become healthy on %s", m.Addr)
}

// Stop kills the server (as a crash or an outage would) and waits for it.
func (m *MinIO) Stop() {
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Kill()
	_ = m.cmd.Wait()
	m.cmd = nil
}

func skipOrFail(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// StartMinIO starts the shared server once and returns its address; it lives
// until the test binary exits (the OS reaps it with the process group).
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
		m := &MinIO{Addr: freePort(t), console: freePort(t), bin: bin, dir: dir}
		if err := m.Start(); err != nil {
			minioErr = err.Error()
			_ = os.RemoveAll(dir)
			return
		}
		minioEndpoint, shared = m.Addr, m
	})
	if minioEndpoint == "" {
		skipOrFail(t, minioErr)
	}
	return minioEndpoint
}

// StopShared stops the shared server and removes its data; call it from
// TestMain after m.Run.
func StopShared() {
	if shared != nil {
		shared.Stop()
		_ = os.RemoveAll(shared.dir)
	}
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
