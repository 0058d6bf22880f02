package contextassembly

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/memread"
	"github.com/garden-bloom/memory/pkg/memread/memreadtest"
	"github.com/garden-bloom/memory/pkg/restjson"
	"github.com/garden-bloom/memory/pkg/tokens"
)

// The budgets of issue #23, every one of them checked in every mode.
var budgetGrid = []int32{1, 2, 5, 10, 50, 100, 500, 1000, 2000, 4000, 8000, 13000, 32000}

func budgets(seed int64) []int32 {
	r := rand.New(rand.NewSource(seed))
	out := append([]int32{}, budgetGrid...)
	for i := 0; i < 5; i++ {
		out = append(out, 1+r.Int31n(32000))
	}
	return out
}

type budgetEnv struct {
	*env
	count  func(string) int
	agents []string
	first  map[string]string // agent -> sha of its first commit
}

// newBudgetEnv commits realistic agents: a small first version, then one at
// the Layer 1 limits with ALWAYS_LOAD blocks in Layer 1 and in Layer 2.
func newBudgetEnv(t *testing.T) *budgetEnv {
	c, err := tokens.New(tokens.DefaultEncoding)
	require.NoError(t, err)
	be := &budgetEnv{env: newEnv(t), count: c.Count, first: map[string]string{}}
	for i, a := range []struct {
		id   string
		size memreadtest.Size
	}{{"full", memreadtest.Full}, {"small", memreadtest.Small}} {
		seed, latest := memreadtest.Agent(int64(100+i), a.id, a.size, c.Count)
		be.first[a.id] = be.commit("memory-update: "+a.id+" / run_0 / proposal_0\n", prefixed(a.id, seed)).String()
		be.commit("memory-update: "+a.id+" / run_1 / proposal_1\n", prefixed(a.id, latest))
		be.agents = append(be.agents, a.id)
	}
	return be
}

func prefixed(agent string, files map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range files {
		out["memory/"+agent+"/"+k] = v
	}
	return out
}

// readCounted is the rule of ReadMemory's doc comment, computed from the
// response alone: the meta block, each file's header and content, each
// warning, and each temporal diff not already carried as a file.
func readCounted(count func(string) int, r *memoryv1.ReadMemoryResponse) int {
	n := count(callerMetaText(r.GetMeta()))
	carried := map[string]bool{}
	for _, f := range r.GetFiles() {
		n += count(memread.Header(f.GetFile())) + count(f.GetContent())
		carried[f.GetContent()] = true
	}
	for _, w := range r.GetWarnings() {
		n += count(w)
	}
	for k, d := range r.GetDiffs() {
		if !carried[d] {
			n += count(memread.Header(k)) + count(d)
		}
	}
	return n
}

// metaText is the meta block as a caller receives it: compact JSON.
func callerMetaText(m *memoryv1.MemoryMeta) string {
	if m == nil {
		return ""
	}
	b, err := protojson.Marshal(m)
	if err != nil {
		panic(err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		panic(err)
	}
	return buf.String()
}

var negative = regexp.MustCompile(`-\d`)

// checkBudgetError checks an answer that refused a budget: INVALID_ARGUMENT
// naming the smallest budget that works (ErrorInfo "min" and the message),
// never a negative figure. It returns that minimum.
func checkBudgetError(t *testing.T, name string, asked int32, err error) int32 {
	t.Helper()
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%s: %v", name, err)
	info := apierr.Info(err)
	require.NotNil(t, info, name)
	min, perr := strconv.Atoi(info.GetMetadata()["min"])
	require.NoError(t, perr, "%s: ErrorInfo names the minimum: %v", name, info.GetMetadata())
	require.Greater(t, int32(min), asked, name)
	msg := status.Convert(err).Message()
	require.Contains(t, msg, strconv.Itoa(min), name)
	require.NotRegexp(t, negative, msg, name)
	return int32(min)
}

func marshal(t *testing.T, m proto.Message) []byte {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	require.NoError(t, err)
	return b
}

// budgetCase runs call over every budget: each answer is within its budget
// and reports what it counted, repeats byte for byte, and a refused budget
// names one minimum that then works, for every budget below it only.
func budgetCase(t *testing.T, name string, bs []int32, call func(max int32) (proto.Message, int, int, error)) {
	t.Helper()
	min := int32(-1)
	for _, b := range bs {
		n := fmt.Sprintf("%s/max=%d", name, b)
		resp, got, reported, err := call(b)
		if err != nil {
			m := checkBudgetError(t, n, b, err)
			require.True(t, min < 0 || min == m, "%s: one minimum (%d vs %d)", n, min, m)
			min = m
			continue
		}
		require.LessOrEqual(t, got, int(b), "%s: within budget", n)
		require.Equal(t, got, reported, "%s: tokenCount = what was counted", n)
		again, _, _, err := call(b)
		require.NoError(t, err, n)
		require.Equal(t, marshal(t, resp), marshal(t, again), "%s: same HEAD, byte-identical", n)
		require.True(t, min < 0 || b >= min, "%s: works below the minimum %d", n, min)
	}
	if min >= 0 {
		_, got, _, err := call(min)
		require.NoError(t, err, "%s: the named minimum %d works", name, min)
		require.LessOrEqual(t, got, int(min), name)
		_, _, _, err = call(min - 1)
		require.Error(t, err, "%s: %d is the smallest", name, min)
	}
}

func TestReadMemoryNeverExceedsBudget(t *testing.T) {
	e := newBudgetEnv(t)
	modes := []memoryv1.ReadMode{memoryv1.ReadMode_READ_MODE_BASIC, memoryv1.ReadMode_READ_MODE_WIDE,
		memoryv1.ReadMode_READ_MODE_DEEP, memoryv1.ReadMode_READ_MODE_TEMPORAL}
	for _, agent := range e.agents {
		for mi, mode := range modes {
			req := &memoryv1.ReadMemoryRequest{AgentId: agent, Mode: mode}
			if mode == memoryv1.ReadMode_READ_MODE_TEMPORAL {
				req.From = e.first[agent]
			}
			budgetCase(t, agent+"/"+mode.String(), budgets(int64(mi)), func(max int32) (proto.Message, int, int, error) {
				r := proto.Clone(req).(*memoryv1.ReadMemoryRequest)
				r.MaxTokens = max
				resp, err := e.client.ReadMemory(e.svc(), r)
				if err != nil {
					return nil, 0, 0, err
				}
				require.Equal(t, len(resp.GetFiles()), len(resp.GetContent()), "content mirrors files")
				for _, f := range resp.GetFiles() {
					require.Equal(t, f.GetContent(), resp.GetContent()[f.GetFile()])
					require.Equal(t, int32(e.count(f.GetContent())), f.GetTokenCount(), f.GetFile())
				}
				if resp.GetTruncated() {
					require.NotEmpty(t, resp.GetWarnings(), "a cut is said")
				}
				return resp, readCounted(e.count, resp), int(resp.GetTokenCount()), nil
			})
		}
	}
}

func TestReadMemoryNeverAutoLoadsLayer2AlwaysLoad(t *testing.T) {
	e := newBudgetEnv(t)
	for _, mode := range []memoryv1.ReadMode{memoryv1.ReadMode_READ_MODE_BASIC, memoryv1.ReadMode_READ_MODE_WIDE,
		memoryv1.ReadMode_READ_MODE_DEEP, memoryv1.ReadMode_READ_MODE_TEMPORAL} {
		resp, err := e.client.ReadMemory(e.svc(), &memoryv1.ReadMemoryRequest{AgentId: "full", Mode: mode, From: e.first["full"]})
		require.NoError(t, err)
		sawLayer1 := false
		for _, f := range resp.GetFiles() {
			if rel, ok := strings.CutPrefix(f.GetFile(), memread.AlwaysLoadPrefix); ok {
				require.Contains(t, []string{"snapshot.md", "facts.md", "open_loops.md"}, rel, "%s: ALWAYS_LOAD comes from Layer 1 only", mode)
			}
			if strings.Contains(f.GetContent(), memreadtest.Layer1Marker("full")) {
				sawLayer1 = true
			}
			for _, l2 := range []string{"decisions.md", "changelog.md", "timeline/", "runs/"} {
				if strings.Contains(f.GetContent(), memreadtest.Marker("full", l2)) {
					require.True(t, strings.HasPrefix(f.GetFile(), l2) || strings.HasPrefix(f.GetFile(), "diffs/"+l2),
						"%s: %s's ALWAYS_LOAD block reached %s", mode, l2, f.GetFile())
				}
			}
			if mode == memoryv1.ReadMode_READ_MODE_BASIC || mode == memoryv1.ReadMode_READ_MODE_WIDE {
				for _, l2 := range []string{"decisions.md", "changelog.md", "timeline/", "runs/"} {
					require.NotContains(t, f.GetContent(), memreadtest.Marker("full", l2), "%s: %s", mode, f.GetFile())
				}
			}
		}
		if mode == memoryv1.ReadMode_READ_MODE_BASIC || mode == memoryv1.ReadMode_READ_MODE_WIDE {
			require.True(t, sawLayer1, "%s: Layer 1 ALWAYS_LOAD blocks still load", mode)
		}
	}
	st, err := e.client.GetAgentStatus(e.svc(), &memoryv1.GetAgentStatusRequest{AgentId: "full"})
	require.NoError(t, err)
	require.Equal(t, int32(1), st.GetAlwaysLoadBlocks(), "only facts.md's block is ever loaded")
}

func layer2Counted(count func(string) int, r *memoryv1.GetLayer2Response) int {
	n := 0
	for _, d := range r.GetDecisions() {
		for _, s := range []string{d.GetId(), d.GetTitle(), d.GetStatus(), d.GetContext(), d.GetDecision(), d.GetRationale(), d.GetConsequences(), d.GetRunId()} {
			n += count(s)
		}
	}
	n += count(r.GetChangelog())
	for _, d := range r.GetTimeline() {
		n += count(d.GetDate()) + count(d.GetContent())
	}
	for _, run := range r.GetRuns() {
		n += count(run.GetRunId()) + count(run.GetContent())
	}
	return n
}

func TestGetLayer2NeverExceedsBudget(t *testing.T) {
	e := newBudgetEnv(t)
	for _, agent := range e.agents {
		for i, req := range []*memoryv1.GetLayer2Request{
			{AgentId: agent},
			{AgentId: agent, DecisionsLimit: 30, Include: []string{"decisions", "changelog", "timeline", "runs"},
				TimelineFrom: "2026-02-01", TimelineTo: "2026-02-28", RunIds: []string{"run_1", "run_2", "run_3", "run_8"}},
		} {
			budgetCase(t, fmt.Sprintf("%s/layer2-%d", agent, i), budgets(int64(10+i)), func(max int32) (proto.Message, int, int, error) {
				r := proto.Clone(req).(*memoryv1.GetLayer2Request)
				r.MaxTokens = max
				resp, err := e.client.GetLayer2(e.svc(), r)
				if err != nil {
					return nil, 0, 0, err
				}
				for _, d := range resp.GetTimeline() {
					require.Equal(t, int32(e.count(d.GetContent())), d.GetTokenCount())
				}
				for _, run := range resp.GetRuns() {
					require.Equal(t, int32(e.count(run.GetContent())), run.GetTokenCount())
				}
				return resp, layer2Counted(e.count, resp), int(resp.GetTokenCount()), nil
			})
		}
	}
}

func diffCounted(count func(string) int, r *memoryv1.DiffMemoryResponse) int {
	n := count(r.GetSummary())
	for k, d := range r.GetDiff() {
		n += count(memread.Header(k)) + count(d)
	}
	for _, c := range r.GetChanges() {
		for _, s := range []string{c.GetItem(), c.GetFile(), c.GetSection(), c.GetBefore(), c.GetAfter()} {
			n += count(s)
		}
	}
	return n
}

func TestDiffMemoryNeverExceedsBudget(t *testing.T) {
	e := newBudgetEnv(t)
	for _, agent := range e.agents {
		for _, format := range []memoryv1.DiffFormat{memoryv1.DiffFormat_DIFF_FORMAT_UNIFIED, memoryv1.DiffFormat_DIFF_FORMAT_FACTS} {
			budgetCase(t, agent+"/"+format.String(), budgets(int64(format)), func(max int32) (proto.Message, int, int, error) {
				resp, err := e.client.DiffMemory(e.svc(), &memoryv1.DiffMemoryRequest{AgentId: agent, From: e.first[agent], Format: format, MaxTokens: max})
				if err != nil {
					return nil, 0, 0, err
				}
				return resp, diffCounted(e.count, resp), int(resp.GetTokenCount()), nil
			})
		}
	}
}

func assembleCounted(count func(string) int, r *memoryv1.AssembleContextResponse) int {
	n := 0
	for _, s := range r.GetSections() {
		n += count(memread.Header(s.GetFile())) + count(s.GetContent())
	}
	for _, w := range r.GetWarnings() {
		n += count(w)
	}
	return n
}

func TestAssembleContextNeverExceedsBudget(t *testing.T) {
	e := newBudgetEnv(t)
	for _, agent := range e.agents {
		budgetCase(t, agent+"/assemble", budgets(99), func(max int32) (proto.Message, int, int, error) {
			resp, err := e.client.AssembleContext(e.svc(), &memoryv1.AssembleContextRequest{AgentId: agent, Budget: max})
			if err != nil {
				return nil, 0, 0, err
			}
			for _, s := range resp.GetSections() {
				require.Equal(t, int32(e.count(s.GetContent())), s.GetTokens(), s.GetFile())
				require.NotContains(t, []int32{2}, s.GetLayer(), "Layer 2 is never assembled automatically")
			}
			return resp, assembleCounted(e.count, resp), int(resp.GetTotalTokens()), nil
		})
	}
}

// The issue's own example over REST: ≤ 100 tokens, or a precise 400.
func TestReadMemoryRESTBudget(t *testing.T) {
	e := newBudgetEnv(t)
	mux := runtime.NewServeMux(restjson.ServeMuxOptions()...)
	require.NoError(t, memoryv1.RegisterContextAssemblyServiceHandler(t.Context(), mux, e.server.Conn))
	md, _ := metadata.FromOutgoingContext(e.svc())
	for _, max := range budgetGrid {
		for _, mode := range []string{"basic", "wide", "deep"} {
			req := httptest.NewRequest(http.MethodGet, fmt.Sprintf("/memory/full/read?mode=%s&maxTokens=%d", mode, max), nil)
			req.Header.Set("Authorization", md.Get("authorization")[0])
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			body, _ := io.ReadAll(rec.Body)
			name := fmt.Sprintf("%s/%d", mode, max)
			if rec.Code == http.StatusBadRequest {
				require.NotRegexp(t, negative, string(body), name)
				require.Contains(t, string(body), `"min"`, name)
				continue
			}
			require.Equal(t, http.StatusOK, rec.Code, "%s: %s", name, body)
			var resp memoryv1.ReadMemoryResponse
			require.NoError(t, (&restjson.Marshaler{}).Unmarshal(body, &resp), name)
			got := readCounted(e.count, &resp)
			require.LessOrEqual(t, got, int(max), name)
			require.Equal(t, int32(got), resp.GetTokenCount(), name)
		}
	}
}
