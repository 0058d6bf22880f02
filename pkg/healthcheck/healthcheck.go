// Package healthcheck serves GET /health: the readiness of every module the
// process runs (and why one is not ready), the grpc.health.v1 status of
// every service it runs or routes to, checked over gRPC like any client
// would, and the state of the dependencies it can serve without.
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
	// State says whether it is up, since when, and what took it down.
	State func() (up bool, since time.Time, err error)
}

// DependencyStatus is one dependency's line of the report.
type DependencyStatus struct {
	// SERVING or UNAVAILABLE.
	Status string    `json:"status"`
	Since  time.Time `json:"since"`
	Error  string    `json:"error,omitempty"`
}

// ModuleState is one local module's readiness: Err is nil when it is
// ready, else why not.
type ModuleState struct {
	Name string
	Err  error
}

// ModuleStatus is one module's line of the report.
type ModuleStatus struct {
	// SERVING or NOT_SERVING.
	Status string `json:"status"`
	// Reason says why a module is not ready.
	Reason string `json:"reason,omitempty"`
}

// Sources are what a report is made of.
type Sources struct {
	Targets      []Target
	Dependencies []Dependency
	// Modules reports the local modules' readiness (nil: none).
	Modules func() []ModuleState
}

// Report is the /health body.
type Report struct {
	// SERVING when every module is ready and every service serving;
	// NOT_SERVING otherwise. A dependency that is down does not change
	// it: the services serve what they can.
	Status string `json:"status"`
	// Modules are this process's modules, each ready or not and why.
	Modules  map[string]ModuleStatus  `json:"modules"`
	Services map[string]ServiceStatus `json:"services"`
	// Degraded lists the dependencies that are down.
	Degraded     []string                    `json:"degraded"`
	Dependencies map[string]DependencyStatus `json:"dependencies"`
}

// Check asks every target in parallel, each within timeout, and reads the
// dependencies' states.
func Check(ctx context.Context, src Sources, timeout time.Duration) Report {
	rep := Report{Status: healthpb.HealthCheckResponse_SERVING.String(), Modules: map[string]ModuleStatus{},
		Services: map[string]ServiceStatus{}, Degraded: []string{}, Dependencies: map[string]DependencyStatus{}}
	if src.Modules != nil {
		for _, m := range src.Modules() {
			st := ModuleStatus{Status: healthpb.HealthCheckResponse_SERVING.String()}
			if m.Err != nil {
				st = ModuleStatus{Status: healthpb.HealthCheckResponse_NOT_SERVING.String(), Reason: m.Err.Error()}
				rep.Status = st.Status
			}
			rep.Modules[m.Name] = st
		}
	}
	for _, d := range src.Dependencies {
		up, since, err := d.State()
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
	for _, t := range src.Targets {
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

// Handler answers 200 with the report when every module is ready and every
// service serving, and 503 otherwise, so load balancers and people read the same signal.
func Handler(src Sources, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		rep := Check(r.Context(), src, timeout)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if rep.Status != healthpb.HealthCheckResponse_SERVING.String() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(rep)
	})
}
