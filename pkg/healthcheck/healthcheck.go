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

// Dependency is something the services use but can serve without for a
// while (the object store): its outage is reported, not a reason to stop
// serving.
type Dependency struct {
	// Name shown in the report, e.g. "object-store".
	Name string
	// State says whether it is up, what took it down, and since when.
	State func() (up bool, err error, since time.Time)
}

// DependencyStatus is one dependency's line of the report.
type DependencyStatus struct {
	// SERVING or UNAVAILABLE.
	Status string    `json:"status"`
	Since  time.Time `json:"since"`
	Error  string    `json:"error,omitempty"`
}

// Report is the /health body.
type Report struct {
	// SERVING when every service is; NOT_SERVING otherwise. A dependency
	// that is down does not change it: the services serve what they can.
	Status   string                   `json:"status"`
	Services map[string]ServiceStatus `json:"services"`
	// Degraded lists the dependencies that are down.
	Degraded     []string                    `json:"degraded"`
	Dependencies map[string]DependencyStatus `json:"dependencies"`
}

// Check asks every target in parallel, each within timeout, and reads the
// dependencies' states.
func Check(ctx context.Context, targets []Target, deps []Dependency, timeout time.Duration) Report {
	rep := Report{Status: healthpb.HealthCheckResponse_SERVING.String(), Services: map[string]ServiceStatus{},
		Degraded: []string{}, Dependencies: map[string]DependencyStatus{}}
	for _, d := range deps {
		up, err, since := d.State()
		st := DependencyStatus{Status: healthpb.HealthCheckResponse_SERVING.String(), Since: since.UTC()}
		if !up {
			st.Status = "UNAVAILABLE"
			if err != nil {
				st.Error = err.Error()
			}
			rep.Degraded = append(rep.Degraded, d.Name)
		}
		rep.Dependencies[d.Name] = st
	}
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
func Handler(targets []Target, deps []Dependency, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		rep := Check(r.Context(), targets, deps, timeout)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if rep.Status != healthpb.HealthCheckResponse_SERVING.String() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(rep)
	})
}
