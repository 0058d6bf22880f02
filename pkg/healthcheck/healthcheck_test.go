package healthcheck

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func TestHandler(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	hs.SetServingStatus("svc.A", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("svc.B", healthpb.HealthCheckResponse_SERVING)

	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	// A port nothing listens on: the target must show as unreachable, not hang.
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadAddr := dead.Addr().String()
	require.NoError(t, dead.Close())
	deadConn, err := grpc.NewClient(deadAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = deadConn.Close() })

	get := func(targets []Target, deps ...Dependency) (int, Report) {
		rec := httptest.NewRecorder()
		Handler(Sources{Targets: targets, Dependencies: deps}, time.Second).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
		var rep Report
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &rep))
		return rec.Code, rep
	}
	a := Target{Name: "a", Service: "svc.A", Address: lis.Addr().String(), Conn: conn}
	b := Target{Name: "b", Service: "svc.B", Address: lis.Addr().String(), Conn: conn}

	code, rep := get([]Target{a, b})
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "SERVING", rep.Status)
	require.Equal(t, ServiceStatus{Status: "SERVING", Address: lis.Addr().String()}, rep.Services["a"])

	hs.SetServingStatus("svc.B", healthpb.HealthCheckResponse_NOT_SERVING)
	code, rep = get([]Target{a, b})
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "NOT_SERVING", rep.Status)
	require.Equal(t, "SERVING", rep.Services["a"].Status)
	require.Equal(t, "NOT_SERVING", rep.Services["b"].Status)

	code, rep = get([]Target{a, {Name: "gone", Service: "svc.A", Address: deadAddr, Conn: deadConn}})
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "UNREACHABLE", rep.Services["gone"].Status)
	require.NotEmpty(t, rep.Services["gone"].Error)

	// A dependency that is down is named, and the services still serve.
	since := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	store := Dependency{Name: "object-store", State: func() (bool, time.Time, error) {
		return false, since, errors.New("connection refused")
	}}
	code, rep = get([]Target{a}, store)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "SERVING", rep.Status)
	require.Equal(t, []string{"object-store"}, rep.Degraded)
	require.Equal(t, DependencyStatus{Status: "UNAVAILABLE", Since: since, Error: "connection refused"}, rep.Dependencies["object-store"])

	rec := httptest.NewRecorder()
	Handler(Sources{}, time.Second).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/health", nil))
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
}

// A module that is not ready makes the process NOT_SERVING (503) and the
// report says which one and why; once it is ready, SERVING again.
func TestHandlerModules(t *testing.T) {
	indexErr := errors.New("catching up with the repository")
	src := Sources{Modules: func() []ModuleState {
		return []ModuleState{{Name: "gateway"}, {Name: "search-index", Err: indexErr}}
	}}
	get := func() (int, Report) {
		rec := httptest.NewRecorder()
		Handler(src, time.Second).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
		var rep Report
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &rep))
		return rec.Code, rep
	}
	code, rep := get()
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "NOT_SERVING", rep.Status)
	require.Equal(t, ModuleStatus{Status: "SERVING"}, rep.Modules["gateway"])
	require.Equal(t, ModuleStatus{Status: "NOT_SERVING", Reason: "catching up with the repository"}, rep.Modules["search-index"])

	indexErr = nil
	code, rep = get()
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "SERVING", rep.Status)
	require.Equal(t, ModuleStatus{Status: "SERVING"}, rep.Modules["search-index"])
}
