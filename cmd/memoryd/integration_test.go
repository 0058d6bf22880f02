package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/garden-bloom/memory/cmd/memoryd/app"
	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/blob/blobtest"
	"github.com/garden-bloom/memory/pkg/telemetry"
)

// memorydBin is the real binary, built once by TestMain.
var memorydBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "memoryd-bin-")
	if err != nil {
		panic(err)
	}
	memorydBin = filepath.Join(dir, "memoryd")
	build := exec.Command("go", "build", "-o", memorydBin, ".")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building memoryd:", err)
		os.Exit(1)
	}
	code := m.Run()
	blobtest.StopShared()
	_ = os.RemoveAll(dir)
	if readBenchEnv != nil {
		_ = os.RemoveAll(readBenchEnv.dir)
	}
	os.Exit(code)
}

// deployment is a running suite, however it is deployed: the same test body
// runs against each (as etcd's tests/framework does).
type deployment struct {
	// grpcAddr maps each gRPC service name to the address serving it.
	grpcAddr map[string]string
	// processes maps each process's gRPC address to the services it should list.
	processes map[string][]string
	httpAddr  string
	dataDir   string
	// objects is the object store the suite uses (a folder, or a MinIO bucket).
	objects blob.Store
}

var serviceNames = []string{
	memoryv1.ContextAssemblyService_ServiceDesc.ServiceName,
	memoryv1.SearchIndexService_ServiceDesc.ServiceName,
	memoryv1.EntityGraphService_ServiceDesc.ServiceName,
	memoryv1.ProposalApplyService_ServiceDesc.ServiceName,
}

var readServices = serviceNames[:3]

func allAt(addr string) map[string]string {
	m := map[string]string{}
	for _, s := range serviceNames {
		m[s] = addr
	}
	return m
}

// startInProcess runs --target=all inside the test process.
func startInProcess(t *testing.T) *deployment { return startInProcessWith(t) }

// startInProcessWith runs --target=all in the test process with extra flags.
func startInProcessWith(t testing.TB, extra ...string) *deployment {
	dataDir := t.TempDir()
	a, _ := runInProcess(t, dataDir, extra...)
	return &deployment{
		grpcAddr:  allAt(a.GRPCAddr()),
		processes: map[string][]string{a.GRPCAddr(): serviceNames},
		httpAddr:  a.HTTPAddr(), dataDir: dataDir, objects: folderObjects(t, dataDir),
	}
}

// runInProcess runs --target=all on dataDir in the test process until stop
// (also called at cleanup) ends it and requires a clean exit.
func runInProcess(t testing.TB, dataDir string, extra ...string) (a *app.App, stop func()) {
	t.Helper()
	cfg, flags, err := app.LoadConfig(append([]string{"--data-dir", dataDir, "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0",
		"--search-sources-poll", "100ms"}, extra...),
		func(string) (string, bool) { return "", false })
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	a, err = app.New(ctx, cfg, flags, telemetry.NewLogger(io.Discard, 0))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(60 * time.Second):
				t.Error("in-process memoryd did not stop")
			}
		})
	}
	t.Cleanup(stop)
	return a, stop
}

// process is a running memoryd binary.
type process struct {
	grpcAddr, httpAddr string
	logs               func() string // its log lines so far
	// stop ends it with SIGTERM and requires a clean exit (also done at
	// the end of the test).
	stop func()
}

// freeAddr returns a loopback address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close())
	return addr
}

// watchLogs collects a process's JSON log lines (for failure messages) and
// reports its addresses once it logs "memoryd serving".
// The returned wait must be used instead of cmd.Wait: it reads the log to
// its end first (Wait closes the pipe, and lines not read by then, such as
// the last "memoryd stopped", would be lost).
func watchLogs(t *testing.T, cmd *exec.Cmd) (<-chan process, func() string, func() error) {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	var mu sync.Mutex
	var logs strings.Builder
	ready := make(chan process, 1)
	eof := make(chan struct{})
	go func() {
		defer close(eof)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			logs.WriteString(line + "\n")
			mu.Unlock()
			var rec struct {
				Msg      string `json:"msg"`
				GRPCAddr string `json:"grpc_addr"`
				HTTPAddr string `json:"http_addr"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "memoryd serving" {
				ready <- process{grpcAddr: rec.GRPCAddr, httpAddr: rec.HTTPAddr}
			}
		}
	}()
	wait := func() error {
		<-eof
		return cmd.Wait()
	}
	return ready, func() string { mu.Lock(); defer mu.Unlock(); return logs.String() }, wait
}

// startBinary runs the real memoryd with args and waits for it to log its
// addresses. At cleanup it sends SIGTERM and requires a clean exit.
func startBinary(t *testing.T, dataDir string, args ...string) process {
	t.Helper()
	return startBinaryEnv(t, nil, dataDir, args...)
}

// startBinaryEnv is startBinary with env added to the process's
// environment (the object store's credentials).
func startBinaryEnv(t *testing.T, env []string, dataDir string, args ...string) process {
	t.Helper()
	cmd := exec.Command(memorydBin, append([]string{"--data-dir", dataDir,
		"--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--search-sources-poll", "100ms"}, args...)...)
	cmd.Env = append(append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="), env...)
	ready, dump, wait := watchLogs(t, cmd)
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- wait() }()

	var p process
	select {
	case p = <-ready:
		p.logs = dump
	case err := <-exited:
		t.Fatalf("memoryd %v exited before serving: %v\n%s", args, err, dump())
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("memoryd %v did not start\n%s", args, dump())
	}
	var once sync.Once
	p.stop = func() {
		once.Do(func() {
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			select {
			case err := <-exited:
				require.NoError(t, err, "memoryd %v should exit cleanly on SIGTERM\n%s", args, dump())
				require.Contains(t, dump(), `"msg":"memoryd stopped"`)
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				t.Errorf("memoryd %v did not stop on SIGTERM\n%s", args, dump())
			}
		})
	}
	t.Cleanup(p.stop)
	return p
}

func startBinaryAll(t *testing.T) *deployment {
	dataDir := t.TempDir()
	p := startBinary(t, dataDir, "--target=all")
	return &deployment{grpcAddr: allAt(p.grpcAddr), processes: map[string][]string{p.grpcAddr: serviceNames},
		httpAddr: p.httpAddr, dataDir: dataDir, objects: folderObjects(t, dataDir)}
}

// folderObjects is the embedded default object store of a data dir.
func folderObjects(t testing.TB, dataDir string) blob.Store {
	s, err := blob.NewFS(filepath.Join(dataDir, "objects"))
	require.NoError(t, err)
	return s
}

// startBinaryAllOnMinIO runs --target=all with its object store in a bucket
// of a real MinIO server: proposals, sources, the fact index all live there.
func startBinaryAllOnMinIO(t *testing.T) *deployment {
	endpoint := blobtest.StartMinIO(t)
	url := fmt.Sprintf("s3://suite-%d/memory?endpoint=%s&secure=false", time.Now().UnixNano(), endpoint)
	access, _ := blobtest.MinIOEnv("AWS_ACCESS_KEY_ID")
	secret, _ := blobtest.MinIOEnv("AWS_SECRET_ACCESS_KEY")
	dataDir := t.TempDir()
	p := startBinaryEnv(t, []string{"AWS_ACCESS_KEY_ID=" + access, "AWS_SECRET_ACCESS_KEY=" + secret}, dataDir, "--target=all", "--objects-url", url)
	objects, err := blob.NewS3(context.Background(), url, blobtest.MinIOEnv)
	require.NoError(t, err)
	return &deployment{grpcAddr: allAt(p.grpcAddr), processes: map[string][]string{p.grpcAddr: serviceNames},
		httpAddr: p.httpAddr, dataDir: dataDir, objects: objects}
}

// startSplit runs the write plane and the read plane as two processes; the
// read process serves the REST edge and reaches proposal-apply over gRPC.
func startSplit(t *testing.T) *deployment {
	dataDir := t.TempDir()
	// Each plane calls the other (the read edge → proposal-apply, the write
	// plane's semantic guard → entity-graph), so both addresses are fixed
	// before either starts.
	readGRPC := freeAddr(t)
	w := startBinary(t, dataDir, "--target=write", "--entity-graph-addr", readGRPC)
	r := startBinary(t, dataDir, "--target=read", "--proposal-apply-addr", w.grpcAddr, "--grpc-addr", readGRPC)
	d := &deployment{grpcAddr: map[string]string{}, processes: map[string][]string{
		r.grpcAddr: readServices,
		w.grpcAddr: {memoryv1.ProposalApplyService_ServiceDesc.ServiceName},
	}, httpAddr: r.httpAddr, dataDir: dataDir, objects: folderObjects(t, dataDir)}
	for _, s := range readServices {
		d.grpcAddr[s] = r.grpcAddr
	}
	d.grpcAddr[memoryv1.ProposalApplyService_ServiceDesc.ServiceName] = w.grpcAddr
	return d
}

func TestSuite(t *testing.T) {
	for name, start := range map[string]func(*testing.T) *deployment{
		"in-process all":      startInProcess,
		"binary all":          startBinaryAll,
		"binary read+write":   startSplit,
		"binary all on MinIO": startBinaryAllOnMinIO,
	} {
		t.Run(name, func(t *testing.T) {
			d := start(t)
			t.Run("embedded default", func(t *testing.T) { testEmbeddedDefault(t, d) })
			t.Run("reflection", func(t *testing.T) { testReflection(t, d) })
			t.Run("health", func(t *testing.T) { testHealth(t, d) })
			t.Run("grpc auth", func(t *testing.T) { testGRPCAuth(t, d) })
			t.Run("rest proposal flow", func(t *testing.T) { testRESTProposalFlow(t, d) })
			t.Run("rest snapshots", func(t *testing.T) { testRESTSnapshots(t, d) })
			t.Run("diffmem adapter paths", func(t *testing.T) { testDiffMemAdapter(t, d) })
			t.Run("rest search follows commits", func(t *testing.T) { testRESTSearch(t, d) })
			t.Run("rest read memory", func(t *testing.T) { testRESTRead(t, d) })
			t.Run("rest context assembly", func(t *testing.T) { testRESTContext(t, d) })
			t.Run("rest entities", func(t *testing.T) { testRESTEntities(t, d) })
			t.Run("rest errors", func(t *testing.T) { testRESTErrors(t, d) })
			t.Run("metrics and config", func(t *testing.T) { testOps(t, d) })
		})
	}
}

func token(t *testing.T, d *deployment, roles ...auth.Role) string {
	t.Helper()
	secret, err := auth.LoadSecret(filepath.Join(d.dataDir, "auth.secret"))
	require.NoError(t, err)
	s, err := auth.NewSigner(secret)
	require.NoError(t, err)
	tok, err := s.Mint("integration-test", roles, []string{"*"}, time.Hour)
	require.NoError(t, err)
	return tok
}

func dial(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func testEmbeddedDefault(t *testing.T, d *deployment) {
	repo := filepath.Join(d.dataDir, "memory.git")
	out, err := exec.Command("git", "--git-dir", repo, "log", "--format=%s", "main").CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, "init: memory monorepo layout\n", string(out))
	out, err = exec.Command("git", "--git-dir", repo, "show", "main:README.md").CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "memory/")
	if _, local := d.objects.(*blob.FS); local {
		fi, err := os.Stat(filepath.Join(d.dataDir, "objects"))
		require.NoError(t, err)
		require.True(t, fi.IsDir())
	} else {
		_, err := os.Stat(filepath.Join(d.dataDir, "objects"))
		require.True(t, os.IsNotExist(err), "with --objects-url nothing goes to the local folder")
	}
	fi, err := os.Stat(filepath.Join(d.dataDir, "auth.secret"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

func testReflection(t *testing.T, d *deployment) {
	for addr, want := range d.processes {
		stream, err := reflectionpb.NewServerReflectionClient(dial(t, addr)).ServerReflectionInfo(context.Background())
		require.NoError(t, err)
		require.NoError(t, stream.Send(&reflectionpb.ServerReflectionRequest{
			MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}))
		resp, err := stream.Recv()
		require.NoError(t, err)
		var got []string
		for _, s := range resp.GetListServicesResponse().GetService() {
			got = append(got, s.GetName())
		}
		require.NoError(t, stream.CloseSend())
		wantAll := append(slices.Clone(want), "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection")
		for _, s := range wantAll {
			require.Contains(t, got, s, "process %s", addr)
		}
		for _, s := range serviceNames {
			if !slices.Contains(want, s) {
				require.NotContains(t, got, s, "process %s must not run %s", addr, s)
			}
		}
	}
}

func testHealth(t *testing.T, d *deployment) {
	var rep struct {
		Status   string
		Modules  map[string]struct{ Status, Reason string }
		Services map[string]struct{ Status, Address string }
	}
	// Serving comes before ready: a process answers /health as soon as it
	// listens, and says 200 once every module has caught up.
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + d.httpAddr + "/health")
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&rep))
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 20*time.Millisecond, "the process becomes ready")
	require.NotEmpty(t, rep.Modules)
	for name, m := range rep.Modules {
		require.Equal(t, "SERVING", m.Status, "%s: %s", name, m.Reason)
	}
	require.Equal(t, "SERVING", rep.Status)
	for _, name := range []string{"context-assembly", "search-index", "entity-graph", "proposal-apply"} {
		require.Equal(t, "SERVING", rep.Services[name].Status, name)
	}
	require.Equal(t, d.grpcAddr[memoryv1.ProposalApplyService_ServiceDesc.ServiceName], rep.Services["proposal-apply"].Address)
}

func testGRPCAuth(t *testing.T, d *deployment) {
	ca := memoryv1.NewContextAssemblyServiceClient(dial(t, d.grpcAddr[memoryv1.ContextAssemblyService_ServiceDesc.ServiceName]))
	_, err := ca.ReadMemory(context.Background(), &memoryv1.ReadMemoryRequest{AgentId: "a"})
	require.Equal(t, codes.Unauthenticated, status.Code(err))
	require.Equal(t, "UNAUTHENTICATED", apierr.Info(err).GetReason())

	bad := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer not-a-jwt")
	_, err = ca.ReadMemory(bad, &memoryv1.ReadMemoryRequest{AgentId: "a"})
	require.Equal(t, codes.Unauthenticated, status.Code(err))

	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token(t, d, auth.RoleService))
	snap := memoryv1.NewProposalApplyServiceClient(dial(t, d.grpcAddr[memoryv1.ProposalApplyService_ServiceDesc.ServiceName]))
	_, err = snap.CreateSnapshot(ctx, &memoryv1.CreateSnapshotRequest{AgentId: "a"})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "snapshots are for admins")
	require.Equal(t, "PERMISSION_DENIED", apierr.Info(err).GetReason())
	_, err = ca.ReadMemory(ctx, &memoryv1.ReadMemoryRequest{AgentId: "nobody"})
	require.Equal(t, codes.NotFound, status.Code(err), "authenticated calls reach the service")

	pa := memoryv1.NewProposalApplyServiceClient(dial(t, d.grpcAddr[memoryv1.ProposalApplyService_ServiceDesc.ServiceName]))
	stream, err := pa.WatchCommits(context.Background(), &memoryv1.WatchCommitsRequest{})
	require.NoError(t, err)
	_, err = stream.Recv()
	require.Equal(t, codes.Unauthenticated, status.Code(err))
	// With a token the stream is accepted and waits for commits.
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	stream, err = pa.WatchCommits(wctx, &memoryv1.WatchCommitsRequest{})
	require.NoError(t, err)
	_, err = stream.Recv()
	require.Equal(t, codes.DeadlineExceeded, status.Code(err))
}

// restError is the REST edge's JSON error body.
type restError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Details []struct {
		Type   string `json:"@type"`
		Reason string `json:"reason"`
		Domain string `json:"domain"`
	} `json:"details"`
}

func call(t *testing.T, d *deployment, method, path, body, tok string) (int, restError, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	resp, raw := httpDo(t, d, method, path, rd, tok)
	var e restError
	_ = json.Unmarshal(raw, &e)
	return resp.StatusCode, e, string(raw)
}

// httpDo sends one request to the REST edge (JSON when there is a body) and
// returns the answer with its body read.
func httpDo(t *testing.T, d *deployment, method, path string, body io.Reader, tok string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+d.httpAddr+path, body)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, raw
}

// testRESTSnapshots: memory-snapshot and friends through the REST edge
// (spec DiffMem §4.4), after the proposal flow made the curator's memory.
func testRESTSnapshots(t *testing.T, d *deployment) {
	admin := token(t, d, auth.RoleAdmin)
	body := `{"label":"pre-migration","includeRuns":false}`
	code, _, raw := call(t, d, "POST", "/memory/garden-bloom-curator/snapshot", body, "")
	require.Equal(t, http.StatusUnauthorized, code, raw)
	code, e, raw := call(t, d, "POST", "/memory/garden-bloom-curator/snapshot", body, token(t, d, auth.RoleService))
	require.Equal(t, http.StatusForbidden, code, raw)
	require.Equal(t, "PERMISSION_DENIED", e.Details[0].Reason, raw)

	code, resp := jsonCall(t, d, "POST", "/memory/garden-bloom-curator/snapshot", body, admin)
	require.Equal(t, http.StatusOK, code, resp)
	snap := resp["snapshot"].(map[string]any)
	require.Equal(t, "snapshot_pre-migration", snap["snapshotId"])
	require.Equal(t, "garden-bloom-curator", snap["agentId"])
	require.Equal(t, revParse(t, filepath.Join(d.dataDir, "memory.git"), "main"), snap["gitCommit"])
	require.Regexp(t, `^\d+(\.\d)?[KMG]?B$`, snap["size"])
	// storedAt names the object written: the file on the folder store, the
	// bucket and key on S3.
	loc, err := neturl.Parse(snap["storedAt"].(string))
	require.NoError(t, err)
	var opened []byte
	switch loc.Scheme {
	case "file":
		require.True(t, strings.HasSuffix(loc.Path, "/data/memory-snapshots/garden-bloom-curator/pre-migration.tar.gz"), snap["storedAt"])
		opened, err = os.ReadFile(loc.Path)
		require.NoError(t, err, "storedAt opens the archive written")
	case "s3":
		require.True(t, strings.HasSuffix(loc.Path, "/memory-snapshots/garden-bloom-curator/pre-migration.tar.gz"), snap["storedAt"])
		opened, _, err = blob.GetBytes(context.Background(), d.objects, "memory-snapshots/garden-bloom-curator/pre-migration.tar.gz")
		require.NoError(t, err)
	default:
		t.Fatalf("storedAt %q is neither file:// nor s3://", snap["storedAt"])
	}
	require.Equal(t, true, snap["restorable"])
	stored, _, err := blob.GetBytes(context.Background(), d.objects, "memory-snapshots/garden-bloom-curator/pre-migration.tar.gz")
	require.NoError(t, err, "the archive is in the object store")
	require.Equal(t, stored, opened)

	code, e, raw = call(t, d, "POST", "/memory/garden-bloom-curator/snapshot", body, admin)
	require.Equal(t, http.StatusConflict, code, raw)
	require.Equal(t, "ALREADY_EXISTS", e.Details[0].Reason, raw)

	code, list := jsonCall(t, d, "GET", "/memory/garden-bloom-curator/snapshots", "", admin)
	require.Equal(t, http.StatusOK, code, list)
	require.Len(t, list["snapshots"], 1)

	code, e, raw = call(t, d, "POST", "/memory/garden-bloom-curator/snapshots/snapshot_pre-migration:restore", `{}`, admin)
	require.Equal(t, http.StatusBadRequest, code, "nothing changed since: %s", raw)
	code, e, raw = call(t, d, "POST", "/memory/garden-bloom-curator/snapshots/snapshot_nope:restore", `{}`, admin)
	require.Equal(t, http.StatusNotFound, code, raw)
	require.Equal(t, "SNAPSHOT_NOT_FOUND", e.Details[0].Reason, raw)

	code, rot := jsonCall(t, d, "POST", "/memory/runs:rotate", `{}`, admin)
	require.Equal(t, http.StatusOK, code, rot)
	require.Empty(t, rot["proposals"], "every run is younger than 90 days")
}

func testRESTErrors(t *testing.T, d *deployment) {
	tok := token(t, d, auth.RoleAdmin)
	tests := []struct {
		name, method, path, body, tok string
		want                          int
	}{
		{"unknown path", "GET", "/nope", "", tok, http.StatusNotFound},
		{"unknown enum in query", "GET", "/proposals?status=bogus", "", tok, http.StatusBadRequest},
		{"unknown enum in body", "POST", "/memory/propose", `{"priority":"urgent"}`, tok, http.StatusBadRequest},
		{"invalid agent id", "POST", "/memory/Not_A_Slug/propose", `{"runId":"run_1","updates":[{"file":"facts.md","operation":"append","content":"- x"}]}`, tok, http.StatusBadRequest},
		{"path traversal in file", "POST", "/memory/propose", `{"agentId":"a","runId":"run_1","updates":[{"file":"../b/facts.md","operation":"append","content":"- x"}]}`, tok, http.StatusBadRequest},
		{"unknown proposal", "GET", "/proposals/proposal_nope", "", tok, http.StatusNotFound},
		{"malformed json", "POST", "/memory/propose", `{"agentId":`, tok, http.StatusBadRequest},
		{"expired token", "GET", "/memory/curator/read", "", expiredToken(t, d), http.StatusUnauthorized},
		{"forged token", "GET", "/memory/curator/read", "", tok[:len(tok)-4] + "AAAA", http.StatusUnauthorized},
		{"unknown read mode", "GET", "/memory/curator/read?mode=everything", "", tok, http.StatusBadRequest},
		{"agent without memory", "GET", "/memory/nobody-here/read?mode=basic", "", tok, http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, raw := call(t, d, tt.method, tt.path, tt.body, tt.tok)
			require.Equal(t, tt.want, code, raw)
		})
	}
}

func expiredToken(t *testing.T, d *deployment) string {
	secret, err := auth.LoadSecret(filepath.Join(d.dataDir, "auth.secret"))
	require.NoError(t, err)
	s, err := auth.NewSigner(secret, auth.WithSignerClock(func() time.Time { return time.Now().Add(-3 * time.Hour) }))
	require.NoError(t, err)
	tok, err := s.Mint("old", []auth.Role{auth.RoleAdmin}, []string{"*"}, time.Hour)
	require.NoError(t, err)
	return tok
}

func testOps(t *testing.T, d *deployment) {
	// One authenticated call first, so server metrics exist.
	code, _, raw := call(t, d, "GET", "/proposals?agent=curator", "", token(t, d, auth.RoleService))
	require.Equal(t, http.StatusOK, code, raw)

	resp, err := http.Get("http://" + d.httpAddr + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), "rpc_server")
	require.Contains(t, string(body), "go_goroutines")

	resp, err = http.Get("http://" + d.httpAddr + "/status/config")
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), `data-dir: "`+d.dataDir+`"`)
}

// jsonCall is call with a decoded JSON body.
func jsonCall(t *testing.T, d *deployment, method, path, body, tok string) (int, map[string]any) {
	t.Helper()
	code, _, raw := call(t, d, method, path, body, tok)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(raw), &m), raw)
	return code, m
}

// testRESTProposalFlow drives the write plane through the REST edge with the
// specs' JSON: propose, read, list, approve, applied; conflicts; reject.
func testRESTProposalFlow(t *testing.T, d *deployment) {
	svc := token(t, d, auth.RoleService)
	rev := token(t, d, auth.RoleReviewer)

	code, resp := jsonCall(t, d, "POST", "/memory/propose", `{
	  "agentId": "garden-bloom-curator", "runId": "run_def456", "expectedVersion": 0,
	  "updates": [
	    {"file": "facts.md", "operation": "append", "content": "- MinIO bucket mcpstorage підтримує versioning", "section": "Технічні знання"},
	    {"file": "open_loops.md", "operation": "open", "content": "Confirm the proposal lifecycle"}
	  ],
	  "reasoning": "Виявлено нові технічні факти", "priority": "normal", "entity_refs": ["minio"]}`, svc)
	require.Equal(t, http.StatusOK, code, resp)
	require.Equal(t, "pending", resp["status"], "no auto-approve by default")
	require.Equal(t, "garden-bloom-curator", resp["agentId"])
	id, _ := resp["proposalId"].(string)
	require.True(t, strings.HasPrefix(id, "proposal_"))
	require.NotEmpty(t, resp["createdAt"])
	require.Contains(t, resp["reviewUrl"], id)

	// GET of a resource returns the resource (AIP-131), with the fields the
	// propose response shows (DiffMem §4.2) at the top level.
	code, p := jsonCall(t, d, "GET", "/proposals/"+id, "", svc)
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, p, "proposal", "no wrapper")
	require.Equal(t, id, p["proposalId"])
	require.Equal(t, "pending", p["status"])
	require.Equal(t, "garden-bloom-curator", p["agentId"])
	require.Equal(t, resp["createdAt"], p["createdAt"])
	require.Equal(t, resp["reviewUrl"], p["reviewUrl"])
	require.Equal(t, resp["estimatedApplyAt"], p["estimatedApplyAt"], "the same estimate as the propose answer")
	require.Equal(t, "після підтвердження людиною", p["estimatedApplyAt"])
	require.Equal(t, "normal", p["priority"])
	require.Equal(t, "flagged", p["reason"], "the semantic guard does not know the entity ref")
	require.Contains(t, p["flags"].([]any)[0], "unknown_entity_ref")
	require.Equal(t, "append", p["updates"].([]any)[0].(map[string]any)["operation"])
	require.Equal(t, []any{"minio"}, p["entityRefs"])

	code, list := jsonCall(t, d, "GET", "/proposals?agent=garden-bloom-curator&status=pending", "", rev)
	require.Equal(t, http.StatusOK, code)
	require.Len(t, list["proposals"], 1)

	code, _ = jsonCall(t, d, "POST", "/proposals/"+id+":approve", `{}`, svc)
	require.Equal(t, http.StatusForbidden, code, "approving needs a reviewer")
	code, appr := jsonCall(t, d, "POST", "/proposals/"+id+":approve", `{"comment":"ok"}`, rev)
	require.Equal(t, http.StatusOK, code, appr)
	require.Eventually(t, func() bool {
		_, got := jsonCall(t, d, "GET", "/proposals/"+id, "", svc)
		return got["status"] == "applied"
	}, 20*time.Second, 10*time.Millisecond)
	_, done := jsonCall(t, d, "GET", "/proposals/"+id, "", svc)
	applied, err := time.Parse(time.RFC3339, done["estimatedApplyAt"].(string))
	require.NoError(t, err, "an applied proposal's estimate is its apply time: %v", done)
	require.WithinDuration(t, time.Now(), applied, time.Minute)
	out, err := exec.Command("git", "--git-dir", filepath.Join(d.dataDir, "memory.git"), "log", "-1", "--format=%s", "main").CombinedOutput()
	require.NoError(t, err)
	require.Equal(t, "memory-update: garden-bloom-curator / run_def456 / "+id+"\n", string(out))

	// A stale expectedVersion is rejected with the spec's conflict fields.
	code, conflict := jsonCall(t, d, "POST", "/memory/garden-bloom-curator/propose",
		`{"run_id":"run_x","expected_version":0,"updates":[{"file":"facts.md","operation":"append","section":"Technical","content":"- y"}]}`, svc)
	require.Equal(t, http.StatusOK, code, conflict)
	require.Equal(t, "rejected", conflict["status"])
	cp := conflict["proposal"].(map[string]any)
	require.Equal(t, "version_conflict", cp["reason"])
	require.Equal(t, float64(1), cp["currentVersion"])
	require.Equal(t, float64(0), cp["expectedVersion"])
	require.Equal(t, "retry_with_latest", cp["resolution"])

	// Reject with a reason; retry only from failed.
	_, second := jsonCall(t, d, "POST", "/memory/garden-bloom-curator/propose",
		`{"runId":"run_y","updates":[{"file":"facts.md","operation":"append","section":"Technical","content":"- z"}]}`, svc)
	sid := second["proposalId"].(string)
	code, _ = jsonCall(t, d, "POST", "/proposals/"+sid+":retry", `{}`, rev)
	require.Equal(t, http.StatusConflict, code, "INVALID_TRANSITION (issue #24)")
	code, rj := jsonCall(t, d, "POST", "/proposals/"+sid+":reject", `{"reason":"duplicate"}`, rev)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "rejected", rj["proposal"].(map[string]any)["status"])
	require.Equal(t, "reviewer_rejected", rj["proposal"].(map[string]any)["reason"])
}

// testRESTSearch: what the write plane commits becomes searchable through
// the edge — across processes in the split deployment, where search-index
// follows proposal-apply's commit stream over gRPC.
func testRESTSearch(t *testing.T, d *deployment) {
	svc := token(t, d, auth.RoleService)
	rev := token(t, d, auth.RoleReviewer)
	_, resp := jsonCall(t, d, "POST", "/memory/propose", `{"agentId":"searcher","runId":"run_s1",
	  "updates":[{"file":"facts.md","operation":"append","section":"Storage","content":"- The archive bucket keeps ninety days of zebrafish snapshots"},
	             {"file":"runs/run_s1.md","operation":"write_run","content":"# Run: run_s1\n\nLooked at zebrafish retention.\n"}]}`, svc)
	id := resp["proposalId"].(string)
	code, _ := jsonCall(t, d, "POST", "/proposals/"+id+":approve", `{}`, rev)
	require.Equal(t, http.StatusOK, code)

	var res map[string]any
	require.Eventually(t, func() bool {
		code, res = jsonCall(t, d, "GET", "/memory/search?q=zebrafish+snapshot&top_k=5&agent_id=searcher", "", svc)
		hits, _ := res["results"].([]any)
		return code == http.StatusOK && len(hits) > 0
	}, 20*time.Second, 20*time.Millisecond, "the commit becomes searchable")
	hits := res["results"].([]any)
	require.Len(t, hits, 1, "Layer 2 (the run) is not returned unasked")
	hit := hits[0].(map[string]any)
	require.Equal(t, "memory/searcher/facts.md", hit["file"])
	require.Equal(t, float64(1), hit["layer"])
	require.Equal(t, "searcher", hit["agentId"])
	require.Contains(t, hit["excerpt"], "«zebrafish»")
	require.NotEmpty(t, hit["commit"])
	require.NotEmpty(t, res["took"])

	code, res = jsonCall(t, d, "GET", "/memory/search?q=zebrafish&agent_id=searcher&layer=2", "", svc)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "memory/searcher/runs/run_s1.md", res["results"].([]any)[0].(map[string]any)["file"])

	code, _ = jsonCall(t, d, "GET", "/memory/search?q=zebrafish&top_k=1000", "", svc)
	require.Equal(t, http.StatusBadRequest, code)
	code, _ = jsonCall(t, d, "POST", "/memory/reindex", `{}`, svc)
	require.Equal(t, http.StatusForbidden, code, "reindex is for admins")
	code, st := jsonCall(t, d, "GET", "/memory/index/status", "", svc)
	require.Equal(t, http.StatusOK, code)
	require.NotEmpty(t, st["lastCommit"])
}

// testRESTRead reads back what the proposal flow wrote, through the edge.
func testRESTRead(t *testing.T, d *deployment) {
	svc := token(t, d, auth.RoleService)
	code, basic := jsonCall(t, d, "GET", "/memory/garden-bloom-curator/read?mode=basic", "", svc)
	require.Equal(t, http.StatusOK, code, basic)
	require.Equal(t, "basic", basic["mode"])
	require.Equal(t, float64(1), basic["version"])
	content := basic["content"].(map[string]any)
	require.Contains(t, content["open_loops.md"], "loop_001")
	require.NotContains(t, content, "facts.md", "basic is snapshot + open loops")
	require.LessOrEqual(t, basic["tokenCount"].(float64), float64(4100))

	code, wide := jsonCall(t, d, "GET", "/memory/garden-bloom-curator/read?mode=wide&excludeFiles=open_loops.md", "", svc)
	require.Equal(t, http.StatusOK, code, wide)
	require.Contains(t, wide["content"].(map[string]any)["facts.md"], "mcpstorage")
	require.NotContains(t, wide["content"], "open_loops.md")

	// The wide read returned facts: context-assembly reports their use to
	// proposal-apply, whose eviction index records it.
	require.Eventually(t, func() bool {
		data, _, err := blob.GetBytes(context.Background(), d.objects, "fact-index/garden-bloom-curator.json")
		return err == nil && strings.Contains(string(data), `"used"`)
	}, 20*time.Second, 50*time.Millisecond, "fact usage reaches the write plane")

	// Same commit, same request: byte-identical.
	_, _, a := call(t, d, "GET", "/memory/garden-bloom-curator/read?mode=wide&at="+wide["commit"].(string), "", svc)
	_, _, b := call(t, d, "GET", "/memory/garden-bloom-curator/read?mode=wide&at="+wide["commit"].(string), "", svc)
	require.Equal(t, a, b)

	code, hist := jsonCall(t, d, "GET", "/memory/garden-bloom-curator/history", "", svc)
	require.Equal(t, http.StatusOK, code, hist)
	commits := hist["commits"].([]any)
	require.NotEmpty(t, commits)
	require.Equal(t, "run_def456", commits[len(commits)-1].(map[string]any)["runId"])

	code, diff := jsonCall(t, d, "GET", "/memory/garden-bloom-curator/diff?files=facts.md", "", svc)
	require.Equal(t, http.StatusOK, code, diff)
	require.Contains(t, diff["diff"].(map[string]any)["facts.md"], "+- MinIO bucket mcpstorage")
	require.Contains(t, diff["summary"], "1 file")

	code, l2 := jsonCall(t, d, "GET", "/memory/layer2?agent=garden-bloom-curator&include=changelog", "", svc)
	require.Equal(t, http.StatusOK, code, l2)
	require.Contains(t, l2["changelog"], "run_def456")
}

// testRESTContext assembles a run's context through the edge: Layer 1 first,
// then the agent's sources and search hits by score, within the budget.
func testRESTContext(t *testing.T, d *deployment) {
	svc := token(t, d, auth.RoleService)
	blobs := d.objects
	_, err := blob.PutBytes(context.Background(), blobs, "agents/searcher/sources/zebrafish-guide.md",
		[]byte("# Zebrafish guide\n\nZebrafish snapshots are archived for ninety days.\n"), blob.PutOptions{})
	require.NoError(t, err)
	_, err = blob.PutBytes(context.Background(), blobs, "agents/searcher/sources/unrelated.md",
		[]byte("# Gardening\n\nTomatoes like sun.\n"), blob.PutOptions{})
	require.NoError(t, err)

	require.Eventually(t, func() bool { // sources are re-listed every --search-sources-poll
		_, res := jsonCall(t, d, "GET", "/memory/search?q=zebrafish+archive&agent_id=searcher&kinds=source", "", svc)
		hits, _ := res["results"].([]any)
		return len(hits) > 0
	}, 20*time.Second, 20*time.Millisecond)
	path := "/memory/context?agent=searcher&query_hint=zebrafish+archive&budget=5000"
	code, res := jsonCall(t, d, "GET", path, "", svc)
	require.Equal(t, http.StatusOK, code, res)
	sections := res["sections"].([]any)
	first := sections[0].(map[string]any)
	require.Equal(t, "layer1", first["kind"])
	require.Equal(t, "memory/searcher/facts.md", first["file"])
	var files []string
	for _, s := range sections {
		m := s.(map[string]any)
		files = append(files, m["file"].(string))
	}
	require.Contains(t, files, "agents/searcher/sources/zebrafish-guide.md")
	require.Less(t, slices.Index(files, "agents/searcher/sources/zebrafish-guide.md"), slices.Index(files, "agents/searcher/sources/unrelated.md"),
		"the source the hint matches ranks first")
	require.NotContains(t, files, "memory/searcher/runs/run_s1.md", "no Layer 2 unasked")
	require.LessOrEqual(t, res["totalTokens"].(float64), float64(5000))
	require.Equal(t, float64(5000), res["budget"])
	_, _, a := call(t, d, "GET", path+"&at="+res["commit"].(string), "", svc)
	_, _, b := call(t, d, "GET", path+"&at="+res["commit"].(string), "", svc)
	require.Equal(t, a, b, "same request at the same sha reproduces exactly")

	code, small := jsonCall(t, d, "GET", "/memory/context?agent=searcher&query_hint=zebrafish&budget=40", "", svc)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, true, small["truncated"])
	require.LessOrEqual(t, small["totalTokens"].(float64), float64(40))
	code, _ = jsonCall(t, d, "GET", "/memory/context?agent=searcher&budget=-1", "", svc)
	require.Equal(t, http.StatusBadRequest, code)
}

// TestReadPlaneOnAMirror runs the write plane and the read plane as if on two
// hosts: the writer pushes every commit to a git remote, the reader keeps its
// own mirror of that remote in a different data directory. What the writer
// applies becomes readable and searchable at the reader.
func TestReadPlaneOnAMirror(t *testing.T) {
	base := t.TempDir()
	remote := filepath.Join(base, "remote.git")
	out, err := exec.Command("git", "init", "-q", "--bare", "--initial-branch=main", remote).CombinedOutput()
	require.NoError(t, err, string(out))
	writeDir, readDir := filepath.Join(base, "writer"), filepath.Join(base, "reader")
	w := startBinary(t, writeDir, "--target=write", "--git-remote-url", remote, "--auto-approve-default")
	r := startBinary(t, readDir, "--target=read", "--proposal-apply-addr", w.grpcAddr,
		"--repo-mirror-url", remote, "--repo-mirror-poll", "50ms", "--auth-secret-file", filepath.Join(writeDir, "auth.secret"))
	readsFollowTheWriter(t, r, writeDir, readDir)
}

// TestReadPlaneMirrorsTheWritersGitEndpoint is TestReadPlaneOnAMirror with no
// git remote at all, as in Kubernetes where only the write plane may reach
// it: the reader follows the writer's own read-only git endpoint
// (http://<writer http addr>/git/memory.git) with service tokens it mints.
func TestReadPlaneMirrorsTheWritersGitEndpoint(t *testing.T) {
	base := t.TempDir()
	writeDir, readDir := filepath.Join(base, "writer"), filepath.Join(base, "reader")
	w := startBinary(t, writeDir, "--target=write", "--auto-approve-default")
	endpoint := "http://" + w.httpAddr + app.GitHTTPPath
	r := startBinary(t, readDir, "--target=read", "--proposal-apply-addr", w.grpcAddr,
		"--repo-mirror-url", endpoint, "--repo-mirror-poll", "50ms", "--auth-secret-file", filepath.Join(writeDir, "auth.secret"))
	readsFollowTheWriter(t, r, writeDir, readDir)
	require.Eventually(t, func() bool {
		return revParse(t, filepath.Join(writeDir, "memory.git"), "main") == revParse(t, filepath.Join(readDir, "mirror.git"), "main")
	}, 30*time.Second, 50*time.Millisecond, "the mirror's main is the writer's")
	require.NotContains(t, r.logs(), "mirror fetch failed", "the reader's tokens are accepted from the first fetch")

	// The endpoint is the writer's alone, read-only, and wants a service or
	// admin token.
	d := &deployment{dataDir: writeDir}
	info := endpoint + "/info/refs?service=git-upload-pack"
	for _, c := range []struct {
		name, url, tok string
		want           int
	}{
		{"no token", info, "", http.StatusUnauthorized},
		{"agent token", info, token(t, d, auth.RoleAgent), http.StatusForbidden},
		{"service token", info, token(t, d, auth.RoleService), http.StatusOK},
		{"push", endpoint + "/info/refs?service=git-receive-pack", token(t, d, auth.RoleAdmin), http.StatusForbidden},
		{"another file", "http://" + w.httpAddr + "/git/memory.git/config", token(t, d, auth.RoleAdmin), http.StatusNotFound},
	} {
		req, err := http.NewRequest("GET", c.url, nil)
		require.NoError(t, err)
		if c.tok != "" {
			req.Header.Set("Authorization", "Bearer "+c.tok)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err, c.name)
		_ = resp.Body.Close()
		require.Equal(t, c.want, resp.StatusCode, c.name)
	}
	code, _, _ := call(t, &deployment{httpAddr: r.httpAddr}, "GET", app.GitHTTPPath+"/info/refs?service=git-upload-pack", "", token(t, d, auth.RoleService))
	require.NotEqual(t, http.StatusOK, code, "a read replica serves no git endpoint")
	require.NotContains(t, w.logs(), `"msg":"git http-backend"`, "git served every fetch without complaint")
	for name, logs := range map[string]string{"writer": w.logs(), "reader": r.logs()} {
		require.NotContains(t, logs, "eyJ", "no token in the %s's logs", name) // every JWT starts so
	}
}

// readsFollowTheWriter: what the writer applies becomes readable and
// searchable at the reader r, which keeps a mirror in readDir.
func readsFollowTheWriter(t *testing.T, r process, writeDir, readDir string) {
	t.Helper()
	d := &deployment{httpAddr: r.httpAddr, dataDir: writeDir}
	svc := token(t, d, auth.RoleService)

	code, resp := jsonCall(t, d, "POST", "/memory/mirrored/propose", `{"runId":"run_m1",
	  "updates":[{"file":"snapshot.md","operation":"replace","content":"# Snapshot: mirrored\n\nFollows a remote.\n"},
	             {"file":"facts.md","operation":"append","section":"Ops","content":"- The mirror fetches every fifty milliseconds"}]}`, svc)
	require.Equal(t, http.StatusOK, code, resp)
	require.Eventually(t, func() bool {
		code, res := jsonCall(t, d, "GET", "/memory/mirrored/read?mode=wide", "", svc)
		return code == http.StatusOK && strings.Contains(fmt.Sprint(res["content"]), "fifty milliseconds")
	}, 30*time.Second, 50*time.Millisecond, "the reader sees the writer's commit through the mirror")
	require.Eventually(t, func() bool {
		_, res := jsonCall(t, d, "GET", "/memory/search?q=mirror+fetches&agent_id=mirrored", "", svc)
		hits, _ := res["results"].([]any)
		return len(hits) > 0
	}, 30*time.Second, 50*time.Millisecond, "and search indexes it")
	_, err := os.Stat(filepath.Join(readDir, "memory.git"))
	require.True(t, os.IsNotExist(err), "the reader never creates a canonical repository")
}

// revParse resolves rev in a bare repository ("" when it cannot).
func revParse(t *testing.T, gitDir, rev string) string {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", gitDir, "rev-parse", "--verify", rev).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// testRESTEntities: wiki links in applied facts become graph entities.
func testRESTEntities(t *testing.T, d *deployment) {
	svc := token(t, d, auth.RoleService)
	rev := token(t, d, auth.RoleReviewer)
	_, resp := jsonCall(t, d, "POST", "/memory/grapher/propose", `{"runId":"run_g1",
	  "updates":[{"file":"facts.md","operation":"append","section":"Infra","content":"- [[Vault Server]] keeps the [[Backups]] that [[person:Alice]] checks"}]}`, svc)
	code, _ := jsonCall(t, d, "POST", "/proposals/"+resp["proposalId"].(string)+":approve", `{}`, rev)
	require.Equal(t, http.StatusOK, code)
	var ent map[string]any
	require.Eventually(t, func() bool {
		code, ent = jsonCall(t, d, "GET", "/entities/vault-server", "", svc)
		return code == http.StatusOK
	}, 20*time.Second, 20*time.Millisecond, "the graph follows the commit")
	e := ent["entity"].(map[string]any)
	require.Equal(t, "vault-server", e["entity_id"])
	require.Equal(t, "Vault Server", e["label"])
	require.Equal(t, "concept", e["type"])
	require.Contains(t, e["refs"], "memory/grapher/facts.md")
	require.NotEmpty(t, ent["edges"])

	code, alice := jsonCall(t, d, "GET", "/entities/alice", "", svc)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "person", alice["entity"].(map[string]any)["type"])
	code, nb := jsonCall(t, d, "GET", "/entities/Vault%20Server/neighbors?depth=1&relations=relates_to", "", svc)
	require.Equal(t, http.StatusOK, code, nb)
	var ids []string
	for _, x := range nb["entities"].([]any) {
		ids = append(ids, x.(map[string]any)["entity_id"].(string))
	}
	require.Contains(t, ids, "backups")
	code, hist := jsonCall(t, d, "GET", "/entities/vault-server/history", "", svc)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "added", hist["changes"].([]any)[0].(map[string]any)["change"])
	code, _ = jsonCall(t, d, "GET", "/entities/no-such-thing", "", svc)
	require.Equal(t, http.StatusNotFound, code)
}
