// Package healthcheck serves GET /health: the grpc.health.v1 status of every
// service a process runs or routes to, checked over gRPC like any client would.
package healthcheck

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Target is one service to check.
type Target struct {
	// Name shown in the report, e.g. "context-assembly".
	Name string
	// Service is the gRPC health service name, e.g. "gardenbloom.memory.v1.SearchIndexService".
	Service string
	// Address is shown in the report so an operator sees where it looked.
	Address string
	Conn    grpc.ClientConnInterface
}

// ServiceStatus is one service's line of the report.
type ServiceStatus struct {
	Status  string `json:"status"`
	Address string `json:"address"`
	Error   string `json:"error,omitempty"`
}

// Report is the /health body.
type Report struct {
	// SERVING when every service is; NOT_SERVING otherwise.
	Status   string                   `json:"status"`
	Services map[string]ServiceStatus `json:"services"`
}

// Check asks every target in parallel, each within timeout.
func Check(ctx context.Context, targets []Target, timeout time.Duration) Report {
	rep := Report{Status: healthpb.HealthCheckResponse_SERVING.String(), Services: map[string]ServiceStatus{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, t := range targets {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			st := ServiceStatus{Address: t.Address}
			resp, err := healthpb.NewHealthClient(t.Conn).Check(cctx, &healthpb.HealthCheckRequest{Service: t.Service})
			if err != nil {
				st.Status = "UNREACHABLE"
				st.Error = err.Error()
			} else {
				st.Status = resp.GetStatus().String()
			}
			mu.Lock()
			defer mu.Unlock()
			rep.Services[t.Name] = st
			if st.Status != healthpb.HealthCheckResponse_SERVING.String() {
				rep.Status = healthpb.HealthCheckResponse_NOT_SERVING.String()
			}
		})
	}
	wg.Wait()
	return rep
}

// Handler answers 200 with the report when every service is serving and 503
// otherwise, so load balancers and people read the same signal.
func Handler(targets []Target, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		rep := Check(r.Context(), targets, timeout)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if rep.Status != healthpb.HealthCheckResponse_SERVING.String() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(rep)
	})
}
