package benchharness

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
)

// Deployment kinds.
const (
	DeployAll   = "all"   // one process, --target=all
	DeploySplit = "split" // --target=write and --target=read
)

// deployment is a running memoryd suite on a copy of a data set.
type deployment struct {
	dataDir string
	started time.Time // when the first process was started
	runDir  string
	// stopGuards ends the RSS guards.
	stopGuards context.CancelFunc
	manifest   *Manifest
	procs      []*process
	read       *process // the process serving the read plane and REST
	write      *process // the process running proposal-apply

	conns []*grpc.ClientConn
	ca    memoryv1.ContextAssemblyServiceClient
	si    memoryv1.SearchIndexServiceClient
	eg    memoryv1.EntityGraphServiceClient
	pa    memoryv1.ProposalApplyServiceClient
	call  context.Context // carries the service token
	token string
	// adminToken reads /debug/pprof (--profile).
	adminToken string
	// bin and args start each process again (restart).
	bin  string
	args map[*process][]string
	// head is the commit waitServing waits for: the data set's, then main's
	// head when a restart is measured after the writes.
	head   string
	maxRSS int64
	rest   *http.Client
	base   string // REST base URL
}

// ColdStart is how long a deployment took from process start to serving.
type ColdStart struct {
	// HealthSeconds: until GET /health answered 200 on every process.
	HealthSeconds float64 `json:"healthSeconds"`
	// IndexSeconds: until GetIndexStatus reported lastCommit == head of the
	// data set (lag 0), i.e. every file and source indexed.
	IndexSeconds float64 `json:"indexSeconds"`
	// GraphSeconds: until GetEntity found the entity only the last commit
	// links (entity-graph has no readiness of its own: this is how the
	// harness sees that the history replay finished).
	GraphSeconds float64 `json:"graphSeconds"`
	// ServingSeconds is the largest of the three.
	ServingSeconds float64 `json:"servingSeconds"`
	Ready          bool    `json:"ready"`
	// IdleSeconds is how long after serving the processes kept busy
	// (index merges, snapshots, GC) before the scenarios started (≤ 30 s).
	IdleSeconds float64 `json:"idleAfterSeconds"`
	// PrimedAgents were read once (ReadMemory wide, AssembleContext) after
	// that, in PrimeSeconds, so the scenarios see warm caches like a read
	// plane that has been serving for a while (at most --prime-timeout).
	PrimedAgents int     `json:"primedAgents"`
	PrimeSeconds float64 `json:"primeSeconds"`
	Note         string  `json:"note,omitempty"`
	// Procs: CPU used and peak RSS from start to serving.
	Procs []ProcStats `json:"procs"`
}

// deploy copies the data set to runDir/data and starts memoryd on it. With
// no data set (dataset "", m nil) memoryd starts on an empty data dir, as
// the embedded default does on a first start (membench soak).
func (h *harness) deploy(ctx context.Context, kind, dataset string, m *Manifest, runDir string) (*deployment, error) {
	d := &deployment{dataDir: filepath.Join(runDir, "data"), manifest: m, bin: h.bin,
		args: map[*process][]string{}, maxRSS: h.maxRSS, runDir: runDir}
	if m != nil {
		d.head = m.Head
	}
	if err := os.MkdirAll(d.dataDir, 0o755); err != nil {
		return nil, err
	}
	if dataset != "" {
		if err := cloneDataset(dataset, d.dataDir); err != nil {
			return nil, fmt.Errorf("copy data set: %w", err)
		}
	}
	secretFile := filepath.Join(d.dataDir, "auth.secret")
	secret, err := auth.LoadOrCreateSecret(secretFile)
	if err != nil {
		return nil, err
	}
	signer, err := auth.NewSigner(secret)
	if err != nil {
		return nil, err
	}
	if d.token, err = signer.Mint("membench", []auth.Role{auth.RoleService}, []string{"*"}, 24*time.Hour); err != nil {
		return nil, err
	}
	if d.adminToken, err = signer.Mint("membench-admin", []auth.Role{auth.RoleAdmin}, []string{"*"}, 24*time.Hour); err != nil {
		return nil, err
	}
	common := append([]string{"--data-dir", d.dataDir, "--auth-secret-file", secretFile, "--rate-limit=0",
		"--rotate-runs-every=0", "--auto-approve-default"}, h.opts.ExtraFlags...)
	addrs := make([]string, 4)
	for i := range addrs {
		if addrs[i], err = freeAddr(); err != nil {
			return nil, err
		}
	}
	d.started = time.Now()
	start := func(name string, args []string) (*process, error) {
		p, err := startProcess(h.bin, name, runDir, args)
		if err == nil {
			d.args[p] = args
		}
		return p, err
	}
	switch kind {
	case DeployAll:
		p, err := start("all", append(common, "--target=all", "--grpc-addr", addrs[0], "--http-addr", addrs[1]))
		if err != nil {
			return nil, err
		}
		d.procs, d.read, d.write = []*process{p}, p, p
	case DeploySplit:
		// Each plane calls the other (the read edge and search-index follow
		// proposal-apply; its semantic guard calls entity-graph), so both
		// addresses are fixed before either starts.
		w, err := start("write", append(common, "--target=write", "--grpc-addr", addrs[0],
			"--http-addr", addrs[1], "--entity-graph-addr", addrs[2]))
		if err != nil {
			return nil, err
		}
		d.procs, d.write = []*process{w}, w
		r, err := start("read", append(common, "--target=read", "--grpc-addr", addrs[2],
			"--http-addr", addrs[3], "--proposal-apply-addr", addrs[0]))
		if err != nil {
			return nil, errors.Join(err, d.stop())
		}
		d.procs, d.read = append(d.procs, r), r
	default:
		return nil, fmt.Errorf("unknown deployment %q", kind)
	}
	d.guard(ctx)
	dialRead, err := grpc.NewClient(d.read.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, errors.Join(err, d.stop())
	}
	d.conns = append(d.conns, dialRead)
	dialWrite := dialRead
	if d.write != d.read {
		if dialWrite, err = grpc.NewClient(d.write.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
			return nil, errors.Join(err, d.stop())
		}
		d.conns = append(d.conns, dialWrite)
	}
	d.ca = memoryv1.NewContextAssemblyServiceClient(dialRead)
	d.si = memoryv1.NewSearchIndexServiceClient(dialRead)
	d.eg = memoryv1.NewEntityGraphServiceClient(dialRead)
	d.pa = memoryv1.NewProposalApplyServiceClient(dialWrite)
	d.call = withToken(ctx, d.token)
	d.rest = &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}}
	d.base = "http://" + d.read.httpAddr
	return d, nil
}

// waitServing polls until every process answers /health, the index is at
// the data set's head and the entity graph has replayed it, or until
// timeout after the processes were started.
func (d *deployment) waitServing(ctx context.Context, timeout time.Duration) ColdStart {
	start := d.started
	var cs ColdStart
	var healthAt, indexAt, graphAt time.Duration
	healthy := map[*process]bool{}
	lastLag, indexed := int32(-1), ""
	deadline := start.Add(timeout)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if err := d.alive(); err != nil {
			cs.Note = err.Error()
			return cs
		}
		if healthAt == 0 {
			all := true
			for _, p := range d.procs {
				if !healthy[p] {
					healthy[p] = healthOK(ctx, d.rest, "http://"+p.httpAddr+"/health")
				}
				all = all && healthy[p]
			}
			if all {
				healthAt = time.Since(start)
			}
		}
		if healthAt != 0 && indexAt == 0 {
			c, cancel := context.WithTimeout(d.call, 5*time.Second)
			st, err := d.si.GetIndexStatus(c, &memoryv1.GetIndexStatusRequest{})
			cancel()
			if err == nil {
				lastLag, indexed = st.GetLagCommits(), st.GetLastCommit()
				if st.GetLastCommit() == d.head {
					indexAt = time.Since(start)
				}
			}
		}
		if healthAt != 0 && graphAt == 0 {
			c, cancel := context.WithTimeout(d.call, 5*time.Second)
			_, err := d.eg.GetEntity(c, &memoryv1.GetEntityRequest{EntityId: d.manifest.HeadEntity})
			cancel()
			if err == nil {
				graphAt = time.Since(start)
			}
		}
		if healthAt != 0 && indexAt != 0 && graphAt != 0 {
			cs.Ready = true
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	cs.HealthSeconds, cs.IndexSeconds, cs.GraphSeconds = secs(healthAt), secs(indexAt), secs(graphAt)
	cs.ServingSeconds = max(cs.HealthSeconds, cs.IndexSeconds, cs.GraphSeconds)
	if !cs.Ready {
		cs.ServingSeconds = secs(timeout)
		cs.Note = fmt.Sprintf("not serving after %s:", timeout)
		if healthAt == 0 {
			cs.Note += " /health not 200;"
		}
		switch {
		case indexAt != 0:
		case indexed == "":
			cs.Note += " index still on its first full pass;"
		default:
			cs.Note += fmt.Sprintf(" index %d commits behind;", lastLag)
		}
		if graphAt == 0 {
			cs.Note += " entity graph still replaying history;"
		}
		cs.Note += " scenarios ran while it caught up"
	}
	for _, p := range d.procs {
		s, err := p.sample()
		if err != nil || p.started.Before(start) {
			continue // a process not (re)started here used its CPU elsewhere
		}
		wall := time.Since(start).Seconds()
		cs.Procs = append(cs.Procs, ProcStats{Process: p.name, CPUSeconds: round3(s.cpu), CPUCores: round3(s.cpu / wall),
			RSSMB: mb(s.rss), PeakMB: mb(s.hwm)})
	}
	return cs
}

func secs(d time.Duration) float64 { return round3(d.Seconds()) }

func healthOK(ctx context.Context, c *http.Client, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// alive reports a process that exited.
func (d *deployment) alive() error {
	for _, p := range d.procs {
		if err := p.alive(); err != nil {
			return err
		}
	}
	return nil
}

// withToken adds a bearer token to outgoing gRPC calls.
func withToken(ctx context.Context, tok string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
}

// guard kills a process whose RSS goes over the limit (see guardRSS).
func (d *deployment) guard(ctx context.Context) {
	gctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d.stopGuards = cancel
	for _, p := range d.procs {
		go p.guardRSS(gctx, d.maxRSS)
	}
}

// restart stops every process (SIGTERM: each saves its state) and starts
// them again on the same data dir and addresses, then waits until they
// serve main's head: what a deploy or a crash costs once the index and
// the entity graph snapshot are on disk. The clients reconnect by
// themselves.
func (d *deployment) restart(ctx context.Context, timeout time.Duration) (ColdStart, error) {
	return d.replace(ctx, timeout, slices.Clone(d.procs), nil)
}

// newReplica replaces the read plane by one with an empty state dir: the
// read process is stopped (it publishes its state to the object store on
// SIGTERM), its search index and entity graph snapshot are deleted, and it
// starts again — what a new read replica costs when another one has
// published. With one process (all) the whole process restarts that way.
func (d *deployment) newReplica(ctx context.Context, timeout time.Duration) (ColdStart, error) {
	return d.replace(ctx, timeout, []*process{d.read}, func() error {
		for _, dir := range []string{"search-index", "entity-graph"} {
			if err := os.RemoveAll(filepath.Join(d.dataDir, dir)); err != nil {
				return err
			}
		}
		return nil
	})
}

// replace stops procs (last first), runs between, starts them again with
// the same arguments and waits until the deployment serves main's head as
// it was before the stop.
func (d *deployment) replace(ctx context.Context, timeout time.Duration, procs []*process, between func() error) (ColdStart, error) {
	st, err := d.si.GetIndexStatus(d.call, &memoryv1.GetIndexStatusRequest{})
	if err != nil {
		return ColdStart{}, err
	}
	d.head = st.GetHeadCommit()
	if d.stopGuards != nil {
		d.stopGuards()
	}
	for i := len(procs) - 1; i >= 0; i-- {
		if err := procs[i].stop(30 * time.Second); err != nil {
			return ColdStart{}, err
		}
	}
	if between != nil {
		if err := between(); err != nil {
			return ColdStart{}, err
		}
	}
	d.started = time.Now()
	for _, old := range procs {
		p, err := startProcess(d.bin, old.name, d.runDir, d.args[old])
		if err != nil {
			return ColdStart{}, err
		}
		d.args[p] = d.args[old]
		for i := range d.procs {
			if d.procs[i] == old {
				d.procs[i] = p
			}
		}
		if d.read == old {
			d.read = p
		}
		if d.write == old {
			d.write = p
		}
	}
	d.guard(ctx)
	return d.waitServing(ctx, timeout), nil
}

// stop ends the processes (read plane first) and closes the clients.
func (d *deployment) stop() error {
	if d.stopGuards != nil {
		d.stopGuards()
	}
	for _, c := range d.conns {
		_ = c.Close()
	}
	var first error
	for i := len(d.procs) - 1; i >= 0; i-- {
		if err := d.procs[i].stop(30 * time.Second); err != nil && first == nil {
			first = err
		}
	}
	if d.rest != nil {
		d.rest.CloseIdleConnections()
	}
	return first
}
