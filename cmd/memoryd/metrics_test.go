package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"
	"gopkg.in/yaml.v3"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
)

// Issue #25 point 6: "Metrics an operator can run on: apply queue depth,
// proposals awaiting review (by agent and reason), index and graph lag,
// push lag, object-store and git errors, rate-limit and slow-client cuts,
// open streams, REST edge request metrics (http_server_*), cache
// bytes/hits/evictions — and histogram buckets that fit the values (reads
// are sub-millisecond, applies take seconds)." The tests below start the
// real binary, drive that traffic, and read /metrics as Prometheus would.

// sample is one line of the Prometheus text exposition.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// scrape is one /metrics answer.
type scrape []sample

// parseExposition reads the Prometheus text format (what /metrics serves
// without an OpenMetrics Accept header).
func parseExposition(t testing.TB, text string) scrape {
	t.Helper()
	var out scrape
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s := sample{labels: map[string]string{}}
		rest := line
		if i := strings.IndexAny(rest, "{ "); i >= 0 && rest[i] == '{' {
			s.name = rest[:i]
			rest = rest[i+1:]
			for !strings.HasPrefix(rest, "}") {
				eq := strings.Index(rest, `="`)
				require.GreaterOrEqual(t, eq, 0, "label in %q", line)
				key := strings.TrimPrefix(rest[:eq], ",")
				rest = rest[eq+2:]
				var val strings.Builder
				for i := 0; ; i++ {
					require.Less(t, i, len(rest), "unterminated label value in %q", line)
					c := rest[i]
					if c == '\\' && i+1 < len(rest) {
						i++
						switch rest[i] {
						case 'n':
							val.WriteByte('\n')
						default:
							val.WriteByte(rest[i])
						}
						continue
					}
					if c == '"' {
						rest = rest[i+1:]
						break
					}
					val.WriteByte(c)
				}
				s.labels[key] = val.String()
				rest = strings.TrimPrefix(rest, ",")
			}
			rest = strings.TrimSpace(rest[1:])
		} else {
			name, v, ok := strings.Cut(rest, " ")
			require.True(t, ok, "sample line %q", line)
			s.name, rest = name, v
		}
		value, _, _ := strings.Cut(rest, " ")
		v, err := strconv.ParseFloat(value, 64)
		require.NoError(t, err, "value of %q", line)
		s.value = v
		out = append(out, s)
	}
	return out
}

// names is the set of sample names (with _bucket, _sum, _count, _total).
func (s scrape) names() map[string]bool {
	m := map[string]bool{}
	for _, x := range s {
		m[x.name] = true
	}
	return m
}

// find returns the samples named name whose labels include want.
func (s scrape) find(name string, want map[string]string) []sample {
	var out []sample
	for _, x := range s {
		if x.name != name {
			continue
		}
		ok := true
		for k, v := range want {
			if x.labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, x)
		}
	}
	return out
}

// sum adds the values of the samples find returns (false: none).
func (s scrape) sum(name string, want map[string]string) (float64, bool) {
	found := s.find(name, want)
	total := 0.0
	for _, x := range found {
		total += x.value
	}
	return total, len(found) > 0
}

// buckets is a histogram's cumulative counts by upper bound, summed over
// the series that match want.
func (s scrape) buckets(t testing.TB, name string, want map[string]string) map[float64]float64 {
	t.Helper()
	out := map[float64]float64{}
	for _, x := range s.find(name+"_bucket", want) {
		le, err := strconv.ParseFloat(x.labels["le"], 64)
		require.NoError(t, err)
		out[le] += x.value
	}
	return out
}

func bounds(b map[float64]float64) []float64 {
	var out []float64
	for le := range b {
		if !math.IsInf(le, 1) {
			out = append(out, le)
		}
	}
	sort.Float64s(out)
	return out
}

// operatorScenario is a running memoryd that has seen the traffic of the
// issue's list; scrape reads its /metrics.
type operatorScenario struct {
	d      *deployment
	remote string
	scrape func() scrape
}

func scrapeMetrics(t testing.TB, httpAddr string) scrape {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return parseExposition(t, string(body))
}

// eventually waits until the value of name (summed over the series
// matching want) satisfies ok, and returns the last scrape.
func (o *operatorScenario) eventually(t *testing.T, name string, want map[string]string, ok func(float64) bool, what string) scrape {
	t.Helper()
	var last scrape
	var v float64
	var found bool
	require.Eventuallyf(t, func() bool {
		last = o.scrape()
		v, found = last.sum(name, want)
		return found && ok(v)
	}, 30*time.Second, 50*time.Millisecond, "%s: %s %v is %v (present: %v)", what, name, want, v, found)
	return last
}

func atLeast(n float64) func(float64) bool { return func(v float64) bool { return v >= n } }
func equals(n float64) func(float64) bool  { return func(v float64) bool { return v == n } }

// startOperatorScenario runs the real binary with a git remote that does
// not exist yet (pushes fail, then catch up once it does) and a tight rate
// limit for agent tokens, and drives proposals, reviews, reads, searches
// and REST calls through it.
func startOperatorScenario(t *testing.T) *operatorScenario {
	dataDir := t.TempDir()
	remote := filepath.Join(t.TempDir(), "remote.git")
	p := startBinary(t, dataDir, "--target=all", "--git-remote-url", remote,
		"--rate-limit", "0.1", "--rate-limit-burst", "2", "--http-read-header-timeout", "300ms")
	d := &deployment{grpcAddr: allAt(p.grpcAddr), httpAddr: p.httpAddr, dataDir: dataDir}
	o := &operatorScenario{d: d, remote: remote, scrape: func() scrape { return scrapeMetrics(t, p.httpAddr) }}

	svc := token(t, d, auth.RoleService)
	admin := token(t, d, auth.RoleAdmin) // reviews: admin tokens are not rate-limited
	// An applied proposal: one commit on main.
	code, resp := jsonCall(t, d, "POST", "/memory/ops-applied/propose", `{"runId":"run_o1",
	  "updates":[{"file":"snapshot.md","operation":"replace","content":"# Snapshot: ops-applied\n\nWatched by an operator.\n"},
	             {"file":"facts.md","operation":"append","section":"Ops","content":"- The pelican dashboard shows the apply queue"}]}`, svc)
	require.Equal(t, http.StatusOK, code, resp)
	code, resp = jsonCall(t, d, "POST", "/proposals/"+resp["proposalId"].(string)+":approve", `{}`, admin)
	require.Equal(t, http.StatusOK, code, resp)
	// Two proposals that wait for a person, for two reasons: no policy
	// auto-approves (awaiting_review), and an entity ref the semantic guard
	// does not know (flagged).
	code, resp = jsonCall(t, d, "POST", "/memory/ops-waiting/propose", `{"runId":"run_o2",
	  "updates":[{"file":"facts.md","operation":"append","section":"Ops","content":"- Waits for a reviewer"}]}`, svc)
	require.Equal(t, http.StatusOK, code, resp)
	require.Equal(t, "awaiting_review", resp["reason"])
	code, resp = jsonCall(t, d, "POST", "/memory/ops-flagged/propose", `{"runId":"run_o3", "entityRefs":["nowhere-known"],
	  "updates":[{"file":"facts.md","operation":"append","section":"Ops","content":"- Names an unknown entity"}]}`, svc)
	require.Equal(t, http.StatusOK, code, resp)
	require.Equal(t, "flagged", resp["reason"])

	// Reads (the second and later are served from the caches), a search,
	// an unknown path.
	require.Eventually(t, func() bool {
		code, _ := jsonCall(t, d, "GET", "/memory/ops-applied/read?mode=wide", "", svc)
		return code == http.StatusOK
	}, 30*time.Second, 20*time.Millisecond)
	for range 30 {
		code, resp = jsonCall(t, d, "GET", "/memory/ops-applied/read?mode=basic", "", svc)
		require.Equal(t, http.StatusOK, code, resp)
	}
	require.Eventually(t, func() bool {
		_, res := jsonCall(t, d, "GET", "/memory/search?q=pelican+dashboard&agent_id=ops-applied", "", svc)
		hits, _ := res["results"].([]any)
		return len(hits) > 0
	}, 30*time.Second, 20*time.Millisecond)
	code, _, raw := call(t, d, "GET", "/no/such/path", "", svc)
	require.Equal(t, http.StatusNotFound, code, raw)

	// An agent token over its rate limit (burst 2): cut with 429.
	agentTok := mintAs(t, d, "ops-agent-run", []string{"ops-applied"}, auth.RoleAgent)
	limited := 0
	for range 4 {
		code, _, _ := call(t, d, "GET", "/memory/ops-applied/read?mode=basic", "", agentTok)
		if code == http.StatusTooManyRequests {
			limited++
		}
	}
	require.Positive(t, limited)

	// A client that starts a request and never finishes its headers: cut.
	conn, err := net.Dial("tcp", p.httpAddr)
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	_, err = conn.Write([]byte("GET /memory/ops-applied/read HTTP/1.1\r\nHost: x\r\n"))
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	_, err = io.ReadAll(conn)
	require.NoError(t, err, "the server closes the connection")
	return o
}

// commitPushing proposes and approves one more change of ops-applied,
// which also asks the pusher to push now.
func (o *operatorScenario) commitPushing(t *testing.T, n int) {
	t.Helper()
	svc, admin := token(t, o.d, auth.RoleService), token(t, o.d, auth.RoleAdmin)
	code, resp := jsonCall(t, o.d, "POST", "/memory/ops-applied/propose", fmt.Sprintf(`{"runId":"run_p%d",
	  "updates":[{"file":"facts.md","operation":"append","section":"Ops","content":"- Pushed fact number %d"}]}`, n, n), svc)
	require.Equal(t, http.StatusOK, code, resp)
	code, resp = jsonCall(t, o.d, "POST", "/proposals/"+resp["proposalId"].(string)+":approve", `{}`, admin)
	require.Equal(t, http.StatusOK, code, resp)
}

func TestOperatorMetrics(t *testing.T) {
	o := startOperatorScenario(t)
	scope := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}

	t.Run("git remote down: push lag and git errors show it, commits go on", func(t *testing.T) {
		o.eventually(t, "memory_git_errors_total", scope("op", "push"), atLeast(1), "failed pushes are counted")
		o.eventually(t, "memory_git_push_commits_behind", nil, atLeast(2), "the init commit and the applied proposal are not on the remote")
		o.eventually(t, "memory_git_push_lag_seconds", nil, atLeast(1), "the oldest unpushed commit ages")
		// The remote comes back: the next commit's push catches up.
		out, err := exec.Command("git", "init", "-q", "--bare", "--initial-branch=main", o.remote).CombinedOutput()
		require.NoError(t, err, string(out))
		o.commitPushing(t, 1)
		o.eventually(t, "memory_git_push_commits_behind", nil, equals(0), "pushes caught up")
		o.eventually(t, "memory_git_push_lag_seconds", nil, equals(0), "nothing waits to be pushed")
		require.Equal(t, revParse(t, filepath.Join(o.d.dataDir, "memory.git"), "main"), revParse(t, o.remote, "main"))
	})

	t.Run("apply queue depth", func(t *testing.T) {
		s := o.eventually(t, "memory_apply_queue_depth", nil, equals(0), "every approved proposal was applied")
		finished, _ := s.sum("memory_proposals_finished_total", scope("status", "applied"))
		require.GreaterOrEqual(t, finished, 2.0)
	})

	t.Run("proposals awaiting review by agent and reason", func(t *testing.T) {
		s := o.eventually(t, "memory_proposals_awaiting_review", scope("agent", "ops-waiting", "reason", "awaiting_review"), equals(1), "a pending proposal")
		v, ok := s.sum("memory_proposals_awaiting_review", scope("agent", "ops-flagged", "reason", "flagged"))
		require.True(t, ok && v == 1, "the flagged proposal: %v %v", v, ok)
		_, ok = s.sum("memory_proposals_awaiting_review", scope("agent", "ops-applied"))
		require.False(t, ok, "an applied proposal waits for nobody")
	})

	t.Run("index and graph lag", func(t *testing.T) {
		for _, name := range []string{"memory_search_index_commits_behind", "memory_search_index_lag_seconds",
			"memory_entity_graph_commits_behind", "memory_entity_graph_lag_seconds"} {
			o.eventually(t, name, nil, equals(0), "the read plane caught up with main")
		}
		for _, kind := range []string{"nodes", "edges", "fact_changes"} {
			o.eventually(t, "memory_entity_graph_size", scope("kind", kind), atLeast(0), "what the graph holds, which grows with history")
		}
		o.eventually(t, "memory_entity_graph_file_bytes", nil, atLeast(0), "the bytes of the graph's file")
	})

	t.Run("object-store operations and errors by op", func(t *testing.T) {
		s := o.scrape()
		for _, op := range []string{"put", "get", "stat", "list", "delete"} {
			v, ok := s.sum("memory_objects_errors_total", scope("op", op))
			require.True(t, ok, "errors of %s are exported from zero, so rate() works before the first", op)
			require.Zero(t, v, op)
		}
		puts, ok := s.sum("memory_objects_duration_seconds_count", scope("op", "put"))
		require.True(t, ok && puts >= 3, "proposals were stored: %v", puts)
		_, ok = s.sum("memory_git_errors_total", scope("op", "commit"))
		require.True(t, ok, "commit errors are exported from zero")
	})

	t.Run("rate-limit and slow-client cuts", func(t *testing.T) {
		v, _ := o.scrape().sum("rpc_server_rate_limited_total", scope("class", "token"))
		require.GreaterOrEqual(t, v, 1.0)
		o.eventually(t, "memory_http_slow_client_cuts_total", scope("kind", "header"), atLeast(1), "the half-sent request was cut")
	})

	t.Run("open streams", func(t *testing.T) {
		method := scope("rpc_method", "gardenbloom.memory.v1.ProposalApplyService/WatchCommits")
		before, _ := o.scrape().sum("rpc_server_active_streams", method)
		ctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(context.Background(),
			"authorization", "Bearer "+token(t, o.d, auth.RoleService)))
		pa := memoryv1.NewProposalApplyServiceClient(dial(t, o.d.grpcAddr[memoryv1.ProposalApplyService_ServiceDesc.ServiceName]))
		_, err := pa.WatchCommits(ctx, &memoryv1.WatchCommitsRequest{})
		require.NoError(t, err)
		o.eventually(t, "rpc_server_active_streams", method, equals(before+1), "the test's stream is open")
		cancel()
		o.eventually(t, "rpc_server_active_streams", method, equals(before), "and closed again")
	})

	t.Run("REST edge request metrics by route template", func(t *testing.T) {
		s := o.scrape()
		read := scope("http_request_method", "GET", "http_route", "/memory/{agent_id}/read", "http_response_status_code", "200")
		n, ok := s.sum("http_server_request_duration_seconds_count", read)
		require.True(t, ok && n >= 30, "reads by their route template: %v", n)
		n, _ = s.sum("http_server_request_duration_seconds_count", scope("http_route", "/memory/{agent_id}/read", "http_response_status_code", "429"))
		require.GreaterOrEqual(t, n, 1.0, "the rate-limited reads")
		n, _ = s.sum("http_server_request_duration_seconds_count", scope("http_route", "/proposals/{proposal_id}:approve", "http_request_method", "POST"))
		require.GreaterOrEqual(t, n, 2.0)
		n, _ = s.sum("http_server_request_duration_seconds_count", scope("http_response_status_code", "404"))
		require.GreaterOrEqual(t, n, 1.0, "an unknown path is counted")
		for _, x := range s.find("http_server_request_duration_seconds_count", nil) {
			require.NotContains(t, x.labels["http_route"], "ops-", "the route is the template, never the raw path: %v", x.labels)
			require.NotContains(t, x.labels["http_route"], "/no/such", "an unknown path has no route: %v", x.labels)
		}
		_, ok = s.sum("http_server_active_requests", nil)
		require.True(t, ok, "requests in flight at the edge")
	})

	t.Run("cache bytes, hits, misses and evictions", func(t *testing.T) {
		s := o.scrape()
		for _, cache := range []string{"context_assembly.read_folders", "git.trees", "git.commits", "auth.verified_tokens"} {
			bytes, ok := s.sum("memory_cache_size_bytes", scope("cache", cache))
			require.True(t, ok && bytes > 0, "%s holds something: %v", cache, bytes)
			limit, ok := s.sum("memory_cache_max_size_bytes", scope("cache", cache))
			require.True(t, ok && limit >= bytes, "%s: %v of %v", cache, bytes, limit)
			hits, _ := s.sum("memory_cache_hits_total", scope("cache", cache))
			require.Positive(t, hits, "%s was hit", cache)
			_, ok = s.sum("memory_cache_misses_total", scope("cache", cache))
			require.True(t, ok, cache)
			_, ok = s.sum("memory_cache_evictions_total", scope("cache", cache))
			require.True(t, ok, cache)
			_, ok = s.sum("memory_cache_entries", scope("cache", cache))
			require.True(t, ok, cache)
		}
	})

	t.Run("histogram buckets fit the values", func(t *testing.T) {
		s := o.scrape()
		// Reads are sub-millisecond: boundaries from 50 µs, and a cached
		// read lands below 1 ms.
		reads := s.buckets(t, "rpc_server_call_duration_seconds", scope("rpc_method", "gardenbloom.memory.v1.ContextAssemblyService/ReadMemory"))
		b := bounds(reads)
		require.NotEmpty(t, b)
		require.LessOrEqual(t, b[0], 0.00005, "the first bucket resolves tens of microseconds: %v", b)
		require.GreaterOrEqual(t, countBetween(b, 0, 0.001), 4, "several buckets below 1 ms: %v", b)
		require.Positive(t, reads[0.001], "cached reads finish in under a millisecond: %v", reads)
		// Applies take seconds: boundaries up to tens of seconds, several
		// of them between 100 ms and a minute.
		applies := s.buckets(t, "memory_apply_duration_seconds", nil)
		b = bounds(applies)
		require.NotEmpty(t, b)
		require.GreaterOrEqual(t, b[len(b)-1], 30.0, "applies of tens of seconds are resolved: %v", b)
		require.GreaterOrEqual(t, countBetween(b, 0.1, 60), 6, "seconds-long applies spread over buckets: %v", b)
		require.Equal(t, b, bounds(s.buckets(t, "http_server_request_duration_seconds", nil)), "one set of duration buckets")
		require.Equal(t, b, bounds(s.buckets(t, "memory_objects_duration_seconds", nil)))
	})
}

func countBetween(b []float64, lo, hi float64) int {
	n := 0
	for _, x := range b {
		if x > lo && x <= hi {
			n++
		}
	}
	return n
}

// Metrics named by the deploy files that a scenario cannot make appear
// here, and why.
var metricsNotExportedByTheScenario = map[string]string{
	// Prometheus's own series for a scrape target.
	"up": "written by Prometheus for every target",
}

// TestDeployFilesUseExportedMetrics: every metric the Grafana dashboard
// and the Prometheus alerts query is one memoryd exports (a renamed metric
// would leave a blank panel and an alert that never fires).
func TestDeployFilesUseExportedMetrics(t *testing.T) {
	queries := deployQueries(t)
	require.NotEmpty(t, queries)
	o := startOperatorScenario(t)
	o.eventually(t, "memory_git_errors_total", map[string]string{"op": "push"}, atLeast(1), "a failed push")
	o.eventually(t, "memory_http_slow_client_cuts_total", nil, atLeast(1), "a cut connection")
	exported := o.scrape().names()
	var missing []string
	for _, q := range queries {
		for _, name := range promQLMetricNames(q.expr) {
			if _, ok := metricsNotExportedByTheScenario[name]; ok || exported[name] {
				continue
			}
			missing = append(missing, fmt.Sprintf("%s: %s", q.where, name))
		}
	}
	require.Empty(t, missing, "metrics the deploy files query that memoryd does not export")
}

type deployQuery struct{ where, expr string }

// deployQueries reads every PromQL expression of the dashboard and the
// alert rules (and checks the files' shape on the way).
func deployQueries(t *testing.T) []deployQuery {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "grafana", "memory-dashboard.json"))
	require.NoError(t, err)
	var dash struct {
		Title         string `json:"title"`
		UID           string `json:"uid"`
		SchemaVersion int    `json:"schemaVersion"`
		Templating    struct {
			List []struct {
				Name, Type string
			} `json:"list"`
		} `json:"templating"`
		Panels []json.RawMessage `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash), "the dashboard is JSON")
	require.NotEmpty(t, dash.Title)
	require.NotEmpty(t, dash.UID)
	require.GreaterOrEqual(t, dash.SchemaVersion, 36)
	require.True(t, slices.ContainsFunc(dash.Templating.List, func(v struct{ Name, Type string }) bool { return v.Type == "datasource" }),
		"a datasource variable, so the dashboard imports into any Grafana")
	var out []deployQuery
	var walk func(panels []json.RawMessage)
	walk = func(panels []json.RawMessage) {
		for _, p := range panels {
			var panel struct {
				Title   string            `json:"title"`
				Type    string            `json:"type"`
				Panels  []json.RawMessage `json:"panels"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			}
			require.NoError(t, json.Unmarshal(p, &panel))
			walk(panel.Panels)
			if panel.Type == "row" {
				continue
			}
			require.NotEmpty(t, panel.Targets, "panel %q queries something", panel.Title)
			for _, tg := range panel.Targets {
				require.NotEmpty(t, tg.Expr, "panel %q", panel.Title)
				out = append(out, deployQuery{"dashboard panel " + strconv.Quote(panel.Title), tg.Expr})
			}
		}
	}
	walk(dash.Panels)

	raw, err = os.ReadFile(filepath.Join("..", "..", "deploy", "prometheus", "alerts.yaml"))
	require.NoError(t, err)
	var rules struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &rules))
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Expr, "alert %s", r.Alert)
			out = append(out, deployQuery{"alert " + r.Alert, r.Expr})
		}
	}
	return out
}

var (
	promQLString = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	// Label matchers and the [range:step] / offset parts name no metric.
	promQLBraces = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	// by (...) / without (...) / on (...) / ignoring (...) / group_left (...)
	// list label names.
	promQLGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promQLIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promQLKeywords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true,
		"group_right": true, "bool": true, "and": true, "or": true, "unless": true, "offset": true, "inf": true, "nan": true}
)

// promQLMetricNames are the metric names an expression selects: the
// identifiers left once strings, label matchers, ranges and grouping
// clauses are removed that are neither functions (followed by '('),
// keywords, numbers nor Grafana variables ($__rate_interval).
func promQLMetricNames(expr string) []string {
	e := promQLString.ReplaceAllString(expr, `""`)
	e = promQLBraces.ReplaceAllString(e, " ")
	e = promQLGrouping.ReplaceAllString(e, " ")
	var out []string
	for _, loc := range promQLIdent.FindAllStringIndex(e, -1) {
		name := e[loc[0]:loc[1]]
		if loc[0] > 0 && (e[loc[0]-1] == '$' || e[loc[0]-1] == '.' || (e[loc[0]-1] >= '0' && e[loc[0]-1] <= '9')) {
			continue // a variable, or the exponent/suffix of a number (1e3, 5m)
		}
		rest := strings.TrimLeft(e[loc[1]:], " \t\n")
		if strings.HasPrefix(rest, "(") || promQLKeywords[strings.ToLower(name)] {
			continue
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

func TestPromQLMetricNames(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []string
	}{
		{`sum by (agent, reason) (memory_proposals_awaiting_review{job=~"$job"})`, []string{"memory_proposals_awaiting_review"}},
		{`histogram_quantile(0.95, sum by (le, http_route) (rate(http_server_request_duration_seconds_bucket{instance=~"$instance"}[$__rate_interval])))`,
			[]string{"http_server_request_duration_seconds_bucket"}},
		{`sum(rate(memory_objects_errors_total[5m])) / sum(rate(memory_objects_duration_seconds_count[5m])) > 0.05`,
			[]string{"memory_objects_errors_total", "memory_objects_duration_seconds_count"}},
		{`min_over_time(memory_proposals_awaiting_review[1d]) > 0 and on (agent) up == 1`, []string{"memory_proposals_awaiting_review", "up"}},
		{`memory_git_push_lag_seconds > 15 * 60 offset 5m`, []string{"memory_git_push_lag_seconds"}},
		{`1e3 * rate(x_total[5m])`, []string{"x_total"}},
	} {
		require.Equal(t, c.want, promQLMetricNames(c.expr), c.expr)
	}
}
