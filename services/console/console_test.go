package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/authz"
)

// The handler tests run the console against small stand-ins of the
// services, served over real gRPC on a socket behind the real auth
// interceptor: what the console sends (the caller's token) is what the
// services see, and their refusals come back as they would.

var testSecret = []byte("console-test-secret-0123456789abcdef-0123456789")

// fakes are the stand-in services; each answers from fixed data and checks
// the caller as the real one does (authz).
type fakes struct {
	memoryv1.UnimplementedContextAssemblyServiceServer
	memoryv1.UnimplementedProposalApplyServiceServer
	memoryv1.UnimplementedEntityGraphServiceServer
	memoryv1.UnimplementedSearchIndexServiceServer

	mu       sync.Mutex
	approved []string // "<proposal> by <subject>"
	rejected []string // "<proposal>: <reason>"
	facts    string
	proposal *memoryv1.Proposal
	// agents are the agents with memory, in id order (ListAgents).
	agents []string
	// listAgentsCalls counts ListAgents calls (one per Agents page).
	listAgentsCalls int
	// entityPageSize pages GetEntity's edges as memoryd does, offset
	// tokens (0: every edge on one page).
	entityPageSize int
}

var readRoles = []auth.Role{auth.RoleAgent, auth.RoleService, auth.RoleAdmin}

func (f *fakes) ReadMemory(ctx context.Context, req *memoryv1.ReadMemoryRequest) (*memoryv1.ReadMemoryResponse, error) {
	if _, err := authz.RequireAgent(ctx, req.GetAgentId(), readRoles...); err != nil {
		return nil, err
	}
	content := map[string]string{
		"snapshot.md":   "# Snapshot: cur\n\n## Role\nCurator <img src=x onerror=alert(2)>\n",
		"facts.md":      f.facts,
		"open_loops.md": "# Open Loops: cur\n\n## Open\n- [ ] loop_001: Confirm <b>versioning</b> — opened 2026-02-15 | priority: high\n## Closed\n- [x] loop_002: Old — closed 2026-02-16 | run_a | opened 2026-02-15 | priority: low | resolution: done\n",
	}
	resp := &memoryv1.ReadMemoryResponse{AgentId: req.GetAgentId(), Commit: "abc123abc123"}
	for _, file := range req.GetIncludeFiles() {
		resp.Files = append(resp.Files, &memoryv1.FileContent{File: file, Content: content[file]})
	}
	return resp, nil
}

func (f *fakes) GetAgentStatus(ctx context.Context, req *memoryv1.GetAgentStatusRequest) (*memoryv1.GetAgentStatusResponse, error) {
	if _, err := authz.RequireAgent(ctx, req.GetAgentId(), readRoles...); err != nil {
		return nil, err
	}
	return &memoryv1.GetAgentStatusResponse{AgentId: req.GetAgentId(), Meta: &memoryv1.MemoryMeta{Version: 3, OpenLoopsCount: 1},
		Layer1:       []*memoryv1.LayerUsage{{File: "snapshot.md", Tokens: 120, Limit: 2000}, {File: "facts.md", Tokens: 7900, Limit: 8000}, {File: "open_loops.md", Tokens: 40, Limit: 2000}},
		Layer1Tokens: 8060, Layer1Limit: 12000}, nil
}

// ListAgents pages through f.agents as the real service does: the caller's
// visible agents, the query as a case-insensitive substring, page tokens
// that are the last id of the previous page.
func (f *fakes) ListAgents(ctx context.Context, req *memoryv1.ListAgentsRequest) (*memoryv1.ListAgentsResponse, error) {
	roles := append(slices.Clone(readRoles), auth.RoleReviewer)
	c, err := authz.RequireRole(ctx, roles...)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listAgentsCalls++
	visible := authz.VisibleAgents(c, roles...)
	var ids []string
	for _, id := range f.agents {
		if (visible == nil || slices.Contains(visible, id)) && strings.Contains(id, strings.ToLower(req.GetQuery())) {
			ids = append(ids, id)
		}
	}
	resp := &memoryv1.ListAgentsResponse{TotalSize: int32(len(ids)), Commit: "abc123abc123"}
	from := 0
	for from < len(ids) && ids[from] <= req.GetPageToken() {
		from++
	}
	to := min(from+int(req.GetPageSize()), len(ids))
	for _, id := range ids[from:to] {
		resp.Agents = append(resp.Agents, &memoryv1.AgentSummary{AgentId: id,
			Meta:   &memoryv1.MemoryMeta{AgentId: id, Version: 3, OpenLoopsCount: 1, LastRunId: "run_1", LastUpdate: timestamppb.New(time.Now().Add(-3 * time.Hour))},
			Layer1: []*memoryv1.LayerUsage{{File: "snapshot.md", Tokens: 120, Limit: 2000}, {File: "facts.md", Tokens: 7900, Limit: 8000}, {File: "open_loops.md", Tokens: 40, Limit: 2000}}})
	}
	if to < len(ids) {
		resp.NextPageToken = ids[to-1]
	}
	return resp, nil
}

// Search answers every query with two hits of cur, as the real service
// would to a token that may read cur, and none to one that may not.
func (f *fakes) Search(ctx context.Context, req *memoryv1.SearchRequest) (*memoryv1.SearchResponse, error) {
	c, err := authz.RequireRole(ctx, readRoles...)
	if err != nil {
		return nil, err
	}
	if visible := authz.VisibleAgents(c, readRoles...); visible != nil && !slices.Contains(visible, "cur") {
		return &memoryv1.SearchResponse{}, nil
	}
	if req.GetAgentId() != "" && req.GetAgentId() != "cur" {
		return &memoryv1.SearchResponse{}, nil
	}
	return &memoryv1.SearchResponse{TotalHits: 2, Results: []*memoryv1.SearchResult{
		{Score: 3.5, File: "memory/cur/facts.md", AgentId: "cur", Kind: "facts", Layer: 1, Span: &memoryv1.Span{StartLine: 4, EndLine: 5},
			Excerpt: "- «MinIO» keeps <b>versions</b> «" + req.GetQuery() + "»"},
		{Score: 1.25, File: "memory/cur/open_loops.md", AgentId: "cur", Kind: "open_loops", Layer: 1, Span: &memoryv1.Span{StartLine: 4, EndLine: 4},
			Excerpt: "Confirm «MinIO» versioning"},
	}}, nil
}

func (f *fakes) ListHistory(ctx context.Context, req *memoryv1.ListHistoryRequest) (*memoryv1.ListHistoryResponse, error) {
	if _, err := authz.RequireAgent(ctx, req.GetAgentId(), readRoles...); err != nil {
		return nil, err
	}
	return &memoryv1.ListHistoryResponse{Commits: []*memoryv1.CommitInfo{
		{Sha: "feedfacefeedfacefeedfacefeedfacefeedface", Time: timestamppb.Now(), Author: "person <p@example.org>", Message: "fix by hand", HumanEdit: true},
		{Sha: "abc123abc123abc123abc123abc123abc123abcd", Time: timestamppb.Now(), Author: "memoryd", Message: "memory-update: cur / run_1 / proposal_1", ProposalId: "proposal_1", RunId: "run_1"},
	}}, nil
}

func (f *fakes) ListProposals(ctx context.Context, req *memoryv1.ListProposalsRequest) (*memoryv1.ListProposalsResponse, error) {
	roles := []auth.Role{auth.RoleReviewer, auth.RoleAdmin, auth.RoleAgent, auth.RoleService}
	c, err := authz.RequireRole(ctx, roles...)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	visible := authz.VisibleAgents(c, roles...)
	if (req.GetStatus() != memoryv1.ProposalStatus_PROPOSAL_STATUS_UNSPECIFIED && req.GetStatus() != f.proposal.GetStatus()) ||
		(visible != nil && !slices.Contains(visible, f.proposal.GetAgentId())) {
		return &memoryv1.ListProposalsResponse{}, nil
	}
	return &memoryv1.ListProposalsResponse{Proposals: []*memoryv1.Proposal{f.proposal}}, nil
}

func (f *fakes) GetProposal(ctx context.Context, req *memoryv1.GetProposalRequest) (*memoryv1.GetProposalResponse, error) {
	if _, err := authz.RequireRole(ctx, auth.RoleReviewer, auth.RoleAdmin); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.GetProposalId() != f.proposal.GetProposalId() {
		return nil, apierr.ProposalNotFound(req.GetProposalId())
	}
	return &memoryv1.GetProposalResponse{Proposal: f.proposal}, nil
}

func (f *fakes) ApproveProposal(ctx context.Context, req *memoryv1.ApproveProposalRequest) (*memoryv1.ApproveProposalResponse, error) {
	c, err := authz.RequireRole(ctx, auth.RoleReviewer, auth.RoleAdmin)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.approved = append(f.approved, req.GetProposalId()+" by "+c.Subject)
	f.proposal.Status = memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED
	return &memoryv1.ApproveProposalResponse{Proposal: f.proposal}, nil
}

func (f *fakes) RejectProposal(ctx context.Context, req *memoryv1.RejectProposalRequest) (*memoryv1.RejectProposalResponse, error) {
	if _, err := authz.RequireRole(ctx, auth.RoleReviewer, auth.RoleAdmin); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rejected = append(f.rejected, req.GetProposalId()+": "+req.GetReason())
	return &memoryv1.RejectProposalResponse{Proposal: f.proposal}, nil
}

func (f *fakes) RetryProposal(ctx context.Context, req *memoryv1.RetryProposalRequest) (*memoryv1.RetryProposalResponse, error) {
	c, err := authz.RequireRole(ctx, auth.RoleReviewer, auth.RoleAdmin)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.proposal.GetStatus() != memoryv1.ProposalStatus_PROPOSAL_STATUS_FAILED {
		return nil, apierr.New(codes.FailedPrecondition, memoryv1.ErrorReason_ERROR_REASON_INVALID_TRANSITION, "proposal is pending", nil)
	}
	f.approved = append(f.approved, req.GetProposalId()+" retried by "+c.Subject)
	f.proposal.Status = memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED
	return &memoryv1.RetryProposalResponse{Proposal: f.proposal}, nil
}

func (f *fakes) PreviewProposal(context.Context, *memoryv1.PreviewProposalRequest) (*memoryv1.PreviewProposalResponse, error) {
	return nil, apierr.NotImplemented("PreviewProposal", 28)
}

// graphEntities are the stand-in entity graph's entities.
var graphEntities = []*memoryv1.Entity{
	{EntityId: "cur", Type: memoryv1.EntityType_ENTITY_TYPE_AGENT, Label: "cur"},
	{EntityId: "minio", Type: memoryv1.EntityType_ENTITY_TYPE_CONCEPT, Label: "MinIO <script>alert(3)</script>"},
	{EntityId: "2026-02-17-use-minio", Type: memoryv1.EntityType_ENTITY_TYPE_DECISION, Label: "Use MinIO"},
}

// graphEdges: cur mentions minio (still), the decision refers to minio
// (ended).
var graphEdges = []*memoryv1.Edge{
	{FromEntityId: "cur", ToEntityId: "minio", Relation: memoryv1.Relation_RELATION_MENTIONS, ValidFrom: timestamppb.New(time.Date(2026, 2, 15, 10, 0, 0, 0, time.UTC)),
		Evidence: []*memoryv1.Evidence{{File: "memory/cur/facts.md", Commit: "abc123abc123abc123abc123abc123abc123abcd", Span: &memoryv1.Span{StartLine: 5, EndLine: 5}}}},
	{FromEntityId: "2026-02-17-use-minio", ToEntityId: "minio", Relation: memoryv1.Relation_RELATION_REFERS_TO,
		ValidFrom: timestamppb.New(time.Date(2026, 2, 17, 9, 0, 0, 0, time.UTC)), ValidTo: timestamppb.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))},
}

func (f *fakes) ListEntities(_ context.Context, req *memoryv1.ListEntitiesRequest) (*memoryv1.ListEntitiesResponse, error) {
	resp := &memoryv1.ListEntitiesResponse{}
	for _, e := range graphEntities {
		if (req.GetType() == 0 || req.GetType() == e.GetType()) && strings.HasPrefix(strings.ToLower(e.GetLabel()), strings.ToLower(req.GetQuery())) {
			resp.Entities = append(resp.Entities, e)
		}
	}
	return resp, nil
}

func (f *fakes) GetEntity(_ context.Context, req *memoryv1.GetEntityRequest) (*memoryv1.GetEntityResponse, error) {
	for _, e := range graphEntities {
		if e.GetEntityId() == req.GetEntityId() {
			resp := &memoryv1.GetEntityResponse{Entity: e, Refs: []string{"memory/cur/facts.md"}}
			for _, ed := range graphEdges {
				if ed.GetFromEntityId() == e.GetEntityId() || ed.GetToEntityId() == e.GetEntityId() {
					resp.Edges = append(resp.Edges, ed)
				}
			}
			resp.TotalEdges = int32(len(resp.Edges))
			f.mu.Lock()
			size := f.entityPageSize
			f.mu.Unlock()
			if size > 0 {
				skip, _ := strconv.Atoi(req.GetPageToken())
				resp.Edges = resp.Edges[skip:min(skip+size, len(resp.Edges))]
				if skip+size < int(resp.TotalEdges) {
					resp.NextPageToken = strconv.Itoa(skip + size)
				}
			}
			return resp, nil
		}
	}
	return nil, apierr.New(codes.NotFound, memoryv1.ErrorReason_ERROR_REASON_UNSPECIFIED, "entity "+req.GetEntityId()+" not found", nil)
}

func (f *fakes) GetNeighbors(_ context.Context, req *memoryv1.GetNeighborsRequest) (*memoryv1.GetNeighborsResponse, error) {
	if req.GetDepth() != 1 {
		return nil, apierr.InvalidArgument("depth", "the console asks for depth 1")
	}
	resp := &memoryv1.GetNeighborsResponse{}
	for _, e := range graphEntities {
		if e.GetEntityId() != req.GetEntityId() {
			resp.Entities = append(resp.Entities, e)
		}
	}
	return resp, nil
}

func (f *fakes) ExplainDecision(_ context.Context, req *memoryv1.ExplainDecisionRequest) (*memoryv1.ExplainDecisionResponse, error) {
	if req.GetDecisionId() != "2026-02-17-use-minio" && !strings.Contains(req.GetQuery(), "minio") {
		return &memoryv1.ExplainDecisionResponse{}, nil
	}
	return &memoryv1.ExplainDecisionResponse{
		Chain: []*memoryv1.Decision{{Id: "2026-02-17-use-minio", Title: "Use MinIO <b>now</b>", Status: "accepted", Decision: "Keep blobs in MinIO",
			Rationale: "versions", RunId: "run_1", Date: timestamppb.New(time.Date(2026, 2, 17, 0, 0, 0, 0, time.UTC))}},
		Entities: graphEntities[1:2],
		Edges:    graphEdges[1:],
	}, nil
}

func (f *fakes) calls() (approved, rejected []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.approved...), append([]string(nil), f.rejected...)
}

// env is a console in front of the fakes.
type env struct {
	f      *fakes
	srv    *httptest.Server
	signer *auth.Signer
}

func newEnv(t *testing.T) *env {
	t.Helper()
	verifier, err := auth.NewVerifier(testSecret)
	require.NoError(t, err)
	signer, err := auth.NewSigner(testSecret)
	require.NoError(t, err)
	f := &fakes{
		agents: []string{"cur", "other"},
		facts:  "# Facts: cur\n\n## Technical\n- <script>alert(1)</script> is not a fact\n- MinIO keeps versions\n",
		proposal: &memoryv1.Proposal{ProposalId: "proposal_1", AgentId: "cur", RunId: "run_1", Status: memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING,
			Reason: memoryv1.StatusReason_STATUS_REASON_FLAGGED, Priority: memoryv1.Priority_PRIORITY_HIGH, CreatedAt: timestamppb.Now(), UpdatedAt: timestamppb.Now(),
			Flags:   []string{"changes the agent's review policy", "semantic guard: unknown_entity_ref: minio"},
			Updates: []*memoryv1.FileUpdate{{File: "facts.md", Operation: memoryv1.Operation_OPERATION_APPEND, Content: "- <script>x</script>"}}},
	}
	gs := grpc.NewServer(grpc.UnaryInterceptor(auth.UnaryServerInterceptor(verifier, auth.DefaultSkip)))
	memoryv1.RegisterContextAssemblyServiceServer(gs, f)
	memoryv1.RegisterProposalApplyServiceServer(gs, f)
	memoryv1.RegisterEntityGraphServiceServer(gs, f)
	memoryv1.RegisterSearchIndexServiceServer(gs, f)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	srv, err := New(Clients{
		ContextAssembly: memoryv1.NewContextAssemblyServiceClient(conn),
		SearchIndex:     memoryv1.NewSearchIndexServiceClient(conn),
		EntityGraph:     memoryv1.NewEntityGraphServiceClient(conn),
		ProposalApply:   memoryv1.NewProposalApplyServiceClient(conn),
	}, Config{Enabled: true, Poll: time.Second}, Options{Verifier: verifier, Secret: testSecret, CallTimeout: 5 * time.Second, Version: "test"})
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &env{f: f, srv: hs, signer: signer}
}

func (e *env) token(t *testing.T, sub string, agents []string, roles ...auth.Role) string {
	t.Helper()
	tok, err := e.signer.Mint(sub, roles, agents, time.Hour)
	require.NoError(t, err)
	return tok
}

// client never follows redirects: the tests look at each answer.
func client() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// do sends a request with cookies and returns the answer and its body.
func (e *env) do(t *testing.T, method, path string, form url.Values, cookies []*http.Cookie, headers map[string]string) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, e.srv.URL+path, body)
	require.NoError(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client().Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRe.FindStringSubmatch(page)
	require.NotNil(t, m, "the page has a CSRF field:\n%s", page)
	return m[1]
}

func cookieNamed(resp *http.Response, name string) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// signIn signs in with tok as a browser would and returns the session
// cookie and a page's CSRF token.
func (e *env) signIn(t *testing.T, tok string) (*http.Cookie, string) {
	t.Helper()
	resp, page := e.do(t, "GET", "/ui/login", nil, nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	login := cookieNamed(resp, loginCookie)
	require.NotNil(t, login)
	resp, _ = e.do(t, "POST", "/ui/login", url.Values{"csrf": {csrfOf(t, page)}, "token": {tok}, "next": {"/ui/inbox"}}, []*http.Cookie{login}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/ui/inbox", resp.Header.Get("Location"))
	sess := cookieNamed(resp, SessionCookie)
	require.NotNil(t, sess)
	resp, page = e.do(t, "GET", "/ui/inbox", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	return sess, csrfOf(t, page)
}

// Issue #28: the token is kept in an HttpOnly; Secure; SameSite=Strict
// cookie, for the token's remaining life.
func TestSignInKeepsTheTokenInAStrictCookie(t *testing.T) {
	e := newEnv(t)
	tok := e.token(t, "rev", []string{"*"}, auth.RoleReviewer)
	resp, page := e.do(t, "GET", "/ui/login", nil, nil, nil)
	login := cookieNamed(resp, loginCookie)
	resp, _ = e.do(t, "POST", "/ui/login", url.Values{"csrf": {csrfOf(t, page)}, "token": {"Bearer " + tok}}, []*http.Cookie{login}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/ui/", resp.Header.Get("Location"))
	var set string
	for _, h := range resp.Header.Values("Set-Cookie") {
		if strings.HasPrefix(h, SessionCookie+"=") {
			set = h
		}
	}
	for _, attr := range []string{"HttpOnly", "Secure", "SameSite=Strict", "Path=/ui/"} {
		require.Contains(t, set, attr)
	}
	c := cookieNamed(resp, SessionCookie)
	require.InDelta(t, time.Hour.Seconds(), float64(c.MaxAge), 5, "Max-Age is the token's remaining life")
	require.NotContains(t, c.Value, tok, "the token is sealed, not in clear")
	require.NotContains(t, c.Value, strings.Split(tok, ".")[1])
}

func TestSignInRefusesWhatIsNotAToken(t *testing.T) {
	e := newEnv(t)
	expired, err := e.signer.Sign(auth.Claims{Roles: []auth.Role{auth.RoleReviewer},
		RegisteredClaims: jwtClaims("rev", time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour))})
	require.NoError(t, err)
	other, err := auth.NewSigner([]byte(strings.Repeat("another-secret-", 4)))
	require.NoError(t, err)
	forged, err := other.Mint("rev", []auth.Role{auth.RoleAdmin}, []string{"*"}, time.Hour)
	require.NoError(t, err)
	for name, tok := range map[string]string{"empty": "", "junk": "not a token", "expired": expired, "signed by another key": forged} {
		t.Run(name, func(t *testing.T) {
			resp, page := e.do(t, "GET", "/ui/login", nil, nil, nil)
			resp, page = e.do(t, "POST", "/ui/login", url.Values{"csrf": {csrfOf(t, page)}, "token": {tok}}, []*http.Cookie{cookieNamed(resp, loginCookie)}, nil)
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			require.Nil(t, cookieNamed(resp, SessionCookie), "no session")
			require.Contains(t, page, `role="alert"`)
			require.Contains(t, page, `name="token"`, "the form again")
		})
	}
	t.Run("without the form's own cookie", func(t *testing.T) {
		_, page := e.do(t, "GET", "/ui/login", nil, nil, nil)
		resp, _ := e.do(t, "POST", "/ui/login", url.Values{"csrf": {csrfOf(t, page)}, "token": {e.token(t, "rev", nil, auth.RoleReviewer)}}, nil, nil)
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.Nil(t, cookieNamed(resp, SessionCookie))
	})
	t.Run("from another site", func(t *testing.T) {
		resp, page := e.do(t, "GET", "/ui/login", nil, nil, nil)
		resp, _ = e.do(t, "POST", "/ui/login", url.Values{"csrf": {csrfOf(t, page)}, "token": {e.token(t, "rev", nil, auth.RoleReviewer)}},
			[]*http.Cookie{cookieNamed(resp, loginCookie)}, map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.Nil(t, cookieNamed(resp, SessionCookie))
	})
}

func TestPagesNeedASession(t *testing.T) {
	e := newEnv(t)
	resp, _ := e.do(t, "GET", "/ui/proposals/proposal_1", nil, nil, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/ui/login?next=%2Fui%2Fproposals%2Fproposal_1", resp.Header.Get("Location"), "back to the page after sign-in")

	resp, _ = e.do(t, "GET", "/ui/inbox", nil, []*http.Cookie{{Name: SessionCookie, Value: "forged"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, -1, cookieNamed(resp, SessionCookie).MaxAge, "an unreadable cookie is dropped")

	resp, _ = e.do(t, "POST", "/ui/proposals/proposal_1/approve", url.Values{"csrf": {"x"}}, nil, nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp, body := e.do(t, "GET", "/ui/api/version?view=inbox", nil, nil, nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.JSONEq(t, `{"error":"signed out"}`, body)
	approved, _ := e.f.calls()
	require.Empty(t, approved)
}

// Issue #28: CSRF protection on every change. A POST without the
// session's token, with another session's, or from another origin is 403
// and reaches no service.
func TestEveryChangeNeedsTheSessionsCSRFToken(t *testing.T) {
	e := newEnv(t)
	sess, csrf := e.signIn(t, e.token(t, "alice", []string{"*"}, auth.RoleReviewer))
	_, otherCSRF := e.signIn(t, e.token(t, "mallory", []string{"*"}, auth.RoleReviewer))
	for name, c := range map[string]struct {
		form    url.Values
		headers map[string]string
	}{
		"no token":              {url.Values{"comment": {"ok"}}, nil},
		"empty token":           {url.Values{"csrf": {""}}, nil},
		"another session's":     {url.Values{"csrf": {otherCSRF}}, nil},
		"cross-site":            {url.Values{"csrf": {csrf}}, map[string]string{"Sec-Fetch-Site": "cross-site"}},
		"another origin":        {url.Values{"csrf": {csrf}}, map[string]string{"Origin": "http://evil.example"}},
		"another site referrer": {url.Values{"csrf": {csrf}}, map[string]string{"Referer": "http://evil.example/page"}},
	} {
		t.Run(name, func(t *testing.T) {
			resp, page := e.do(t, "POST", "/ui/proposals/proposal_1/approve", c.form, []*http.Cookie{sess}, c.headers)
			require.Equal(t, http.StatusForbidden, resp.StatusCode)
			require.Contains(t, page, "nothing was changed")
		})
	}
	resp, _ := e.do(t, "POST", "/ui/logout", url.Values{}, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "signing out is a change too")
	approved, _ := e.f.calls()
	require.Empty(t, approved, "no refused request reached the service")

	resp, _ = e.do(t, "POST", "/ui/proposals/proposal_1/approve", url.Values{"csrf": {csrf}, "comment": {"ok"}}, []*http.Cookie{sess},
		map[string]string{"Origin": e.srv.URL, "Sec-Fetch-Site": "same-origin"})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/ui/proposals/proposal_1?done=approved", resp.Header.Get("Location"))
	approved, _ = e.f.calls()
	require.Equal(t, []string{"proposal_1 by alice"}, approved, "the service saw the signed-in person's own token")
}

func TestRejectNeedsAComment(t *testing.T) {
	e := newEnv(t)
	sess, csrf := e.signIn(t, e.token(t, "alice", nil, auth.RoleReviewer))
	resp, page := e.do(t, "POST", "/ui/proposals/proposal_1/reject", url.Values{"csrf": {csrf}, "comment": {"  "}}, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, page, "A rejection needs a comment")
	resp, _ = e.do(t, "POST", "/ui/proposals/proposal_1/reject", url.Values{"csrf": {csrf}, "comment": {"duplicate of proposal_0"}}, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, rejected := e.f.calls()
	require.Equal(t, []string{"proposal_1: duplicate of proposal_0"}, rejected)
}

func TestRetryAFailedProposal(t *testing.T) {
	e := newEnv(t)
	sess, csrf := e.signIn(t, e.token(t, "alice", nil, auth.RoleReviewer))
	resp, page := e.do(t, "POST", "/ui/proposals/proposal_1/retry", url.Values{"csrf": {csrf}}, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusConflict, resp.StatusCode, "only a failed proposal is retried: the service says so")
	require.Contains(t, page, "INVALID_TRANSITION")

	e.f.mu.Lock()
	e.f.proposal.Status, e.f.proposal.Reason, e.f.proposal.Message = memoryv1.ProposalStatus_PROPOSAL_STATUS_FAILED, memoryv1.StatusReason_STATUS_REASON_APPLY_ERROR, "disk full"
	e.f.mu.Unlock()
	_, page = e.do(t, "GET", "/ui/proposals/proposal_1", nil, []*http.Cookie{sess}, nil)
	require.Contains(t, page, `id="retry"`)
	require.NotContains(t, page, `id="approve"`, "a failed proposal is retried, not approved")
	require.Contains(t, page, "apply error: disk full", "why it waits")
	resp, _ = e.do(t, "POST", "/ui/proposals/proposal_1/retry", url.Values{"csrf": {csrf}, "comment": {"disk freed"}}, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/ui/proposals/proposal_1?done=retried", resp.Header.Get("Location"))
	approved, _ := e.f.calls()
	require.Equal(t, []string{"proposal_1 retried by alice"}, approved)

	resp, _ = e.do(t, "POST", "/ui/proposals/proposal_1/delete", url.Values{"csrf": {csrf}}, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "no such action")
}

func TestSignOutDropsTheCookie(t *testing.T) {
	e := newEnv(t)
	sess, csrf := e.signIn(t, e.token(t, "alice", nil, auth.RoleReviewer))
	resp, _ := e.do(t, "POST", "/ui/logout", url.Values{"csrf": {csrf}}, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/ui/login?signed_out=1", resp.Header.Get("Location"))
	require.Equal(t, -1, cookieNamed(resp, SessionCookie).MaxAge)
}

// Memory is shown as text: no HTML from memory content ever reaches the
// page as markup.
func TestMemoryIsShownAsText(t *testing.T) {
	e := newEnv(t)
	sess, _ := e.signIn(t, e.token(t, "svc", []string{"*"}, auth.RoleAdmin, auth.RoleReviewer))
	for tab, want := range map[string]string{
		"facts":    "&lt;script&gt;alert(1)&lt;/script&gt; is not a fact",
		"snapshot": "Curator &lt;img src=x onerror=alert(2)&gt;",
		"loops":    "Confirm &lt;b&gt;versioning&lt;/b&gt;",
	} {
		resp, page := e.do(t, "GET", "/ui/agents/cur?tab="+tab, nil, []*http.Cookie{sess}, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, page)
		require.Contains(t, page, want, tab)
		require.NotContains(t, page, "<script>alert", tab)
		require.NotContains(t, page, "<img src=x", tab)
		require.NotContains(t, page, "<b>versioning", tab)
	}
	_, page := e.do(t, "GET", "/ui/proposals/proposal_1", nil, []*http.Cookie{sess}, nil)
	require.Contains(t, page, "- &lt;script&gt;x&lt;/script&gt;")
	require.NotContains(t, page, "<script>x")
}

func TestSecurityHeadersOnEveryAnswer(t *testing.T) {
	e := newEnv(t)
	sess, _ := e.signIn(t, e.token(t, "alice", nil, auth.RoleReviewer))
	for _, p := range []string{"/ui/login", "/ui/", "/ui/inbox", "/ui/proposals/proposal_1", "/ui/nope", "/ui/static/console.css", "/ui/api/version?view=inbox"} {
		resp, _ := e.do(t, "GET", p, nil, []*http.Cookie{sess}, nil)
		h := resp.Header
		require.Equal(t, "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
			h.Get("Content-Security-Policy"), p)
		require.Equal(t, "nosniff", h.Get("X-Content-Type-Options"), p)
		require.Equal(t, "same-origin", h.Get("Referrer-Policy"), p)
		// The server's own time, for benchmarks and developer tools.
		require.Regexp(t, `^app;dur=\d+\.\d{2}$`, h.Get("Server-Timing"), p)
	}
	resp, page := e.do(t, "GET", "/ui/inbox", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"), "pages show private memory")
	require.NotRegexp(t, `<script>|<style|style="|\son[a-z]+=`, page, "no inline script, style or handler: the CSP forbids them")
}

// A refusal of a service is a page that says why, with the service's
// reason, under the HTTP status the REST edge would give.
func TestARefusalIsAReadablePage(t *testing.T) {
	e := newEnv(t)
	sess, _ := e.signIn(t, e.token(t, "cur-run", []string{"cur"}, auth.RoleAgent))
	resp, page := e.do(t, "GET", "/ui/agents/other?tab=snapshot", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, page, "Not allowed")
	require.Contains(t, page, "the token does not grant access to this agent")
	require.Contains(t, page, "PERMISSION_DENIED")

	resp, page = e.do(t, "GET", "/ui/", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, `data-agent="cur"`, "an agent token sees its own agent")
	require.Equal(t, 1, strings.Count(page, `data-agent=`), "and only it")

	resp, page = e.do(t, "GET", "/ui/agents/cur?tab=nope", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, page, "There is no tab nope")
	resp, _ = e.do(t, "GET", "/ui/agents/cur?tab=snapshot&at=HEAD~1", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

// Until PreviewProposal lands, the proposal page says so in a box and
// still offers the review.
func TestProposalPageWithoutAPreview(t *testing.T) {
	e := newEnv(t)
	sess, _ := e.signIn(t, e.token(t, "alice", nil, auth.RoleReviewer))
	resp, page := e.do(t, "GET", "/ui/proposals/proposal_1", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, `id="preview-unavailable"`)
	require.Contains(t, page, "Preview unavailable: not available: PreviewProposal is not implemented yet")
	require.Contains(t, page, `id="approve"`)
	require.Contains(t, page, "policy change")
	require.Contains(t, page, "guard finding")
	require.Contains(t, page, "high priority always waits for a person")

	resp, page = e.do(t, "GET", "/ui/proposals/proposal_404", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Contains(t, page, "PROPOSAL_NOT_FOUND")
}

func TestInboxAndAgentsPages(t *testing.T) {
	e := newEnv(t)
	sess, _ := e.signIn(t, e.token(t, "ops", []string{"*"}, auth.RoleAdmin, auth.RoleReviewer))
	resp, page := e.do(t, "GET", "/ui/inbox", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, `data-proposal="proposal_1"`)
	require.Contains(t, page, `data-live="/ui/api/version?view=inbox"`)

	resp, page = e.do(t, "GET", "/ui/inbox?status=applied", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "only waiting statuses")
	require.Contains(t, page, "status must be pending, needs_human_review or failed")

	resp, page = e.do(t, "GET", "/ui/?q=cu", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, `data-agent="cur"`)
	require.NotContains(t, page, `data-agent="other"`, "?q= is ListAgents' query")
	require.Contains(t, page, `<meter min="0" max="8000" high="7200" optimum="0" value="7900"`, "Layer 1 gauges against the hard limits")
	require.Contains(t, page, "1 waiting")
	require.Contains(t, page, "v3")
	require.Contains(t, page, "updated 3 h ago", "the age of meta.json's last_update")
	_, page = e.do(t, "GET", "/ui/?q=zzz", nil, []*http.Cookie{sess}, nil)
	require.NotContains(t, page, `data-agent=`)

	resp, page = e.do(t, "GET", "/ui/agents/cur?tab=history", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, "human edit")
	require.Contains(t, page, `href="/ui/proposals/proposal_1"`)
	require.Contains(t, page, `data-live="/ui/api/version?agent=cur&amp;view=history"`)
}

// The Agents page is ListAgents: 50 agents a page, its page tokens, its
// query; one ListAgents call a page; "only waiting" filters the page.
func TestAgentsPageIsListAgents(t *testing.T) {
	e := newEnv(t)
	e.f.agents = nil
	for i := range 120 {
		e.f.agents = append(e.f.agents, fmt.Sprintf("agent-%03d", i))
	}
	e.f.agents = append(e.f.agents, "cur")
	sess, _ := e.signIn(t, e.token(t, "ops", []string{"*"}, auth.RoleAdmin, auth.RoleReviewer))
	rows := regexp.MustCompile(`data-agent="([^"]+)"`)
	next := regexp.MustCompile(`href="(/ui/\?page_token=[^"]+)">next`)

	resp, page := e.do(t, "GET", "/ui/", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Len(t, rows.FindAllStringSubmatch(page, -1), 50)
	require.Contains(t, page, "121 agents with memory")
	require.Contains(t, page, `data-agent="agent-000"`)
	require.Equal(t, 1, e.f.listAgentsCalls, "one ListAgents call a page")
	m := next.FindStringSubmatch(page)
	require.NotNil(t, m, page)
	require.Equal(t, "/ui/?page_token=agent-049", m[1])

	var seen []string
	for link := "/ui/"; link != ""; {
		_, page = e.do(t, "GET", strings.ReplaceAll(link, "&amp;", "&"), nil, []*http.Cookie{sess}, nil)
		for _, r := range rows.FindAllStringSubmatch(page, -1) {
			seen = append(seen, r[1])
		}
		link = ""
		if m := next.FindStringSubmatch(page); m != nil {
			link = m[1]
		}
	}
	require.Equal(t, e.f.agents, seen, "the pages together list every agent once, in order")
	require.Contains(t, page, `href="/ui/">← first page`)

	_, page = e.do(t, "GET", "/ui/?waiting=1", nil, []*http.Cookie{sess}, nil)
	require.Empty(t, rows.FindAllStringSubmatch(page, -1), "no agent of the first page has waiting proposals")
	_, page = e.do(t, "GET", "/ui/?q=CU&waiting=1", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, [][]string{{`data-agent="cur"`, "cur"}}, rows.FindAllStringSubmatch(page, -1))

	// An agent token sees only its agent: the service decides.
	sess, _ = e.signIn(t, e.token(t, "agent-007", []string{"agent-007"}, auth.RoleAgent))
	_, page = e.do(t, "GET", "/ui/", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, [][]string{{`data-agent="agent-007"`, "agent-007"}}, rows.FindAllStringSubmatch(page, -1))
}

// A proposal for an agent without memory yet shows on the page whose id
// range holds it.
func TestAgentsWithoutMemory(t *testing.T) {
	waiting := map[string]int{"b-new": 1, "d": 2, "z-new": 1}
	listed := []agentRow{{ID: "a"}, {ID: "c"}, {ID: "d"}}
	ids := func(rows []agentRow) (out []string) {
		for _, r := range rows {
			out = append(out, r.ID)
		}
		slices.Sort(out)
		return out
	}
	require.Equal(t, []string{"b-new"}, ids(agentsWithoutMemory(waiting, listed, "", "", "d")))
	require.Equal(t, []string{"b-new", "z-new"}, ids(agentsWithoutMemory(waiting, listed, "", "", "")))
	require.Equal(t, []string{"z-new"}, ids(agentsWithoutMemory(waiting, listed, "", "d", "")))
	require.Equal(t, []string{"z-new"}, ids(agentsWithoutMemory(waiting, listed, "Z", "", "")))
}

// Search shows the index's hits with their matches as <mark> and all else
// escaped, each linking to the agent tab that shows its file.
func TestSearchPage(t *testing.T) {
	e := newEnv(t)
	sess, _ := e.signIn(t, e.token(t, "ops", []string{"*"}, auth.RoleAdmin))
	resp, page := e.do(t, "GET", "/ui/search", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, `id="search-q"`)
	require.NotContains(t, page, `class="hit`)

	resp, page = e.do(t, "GET", "/ui/search?q="+url.QueryEscape("<script>"), nil, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, "2 hits")
	require.Contains(t, page, "- <mark>MinIO</mark> keeps &lt;b&gt;versions&lt;/b&gt; <mark>&lt;script&gt;</mark>", "marks become <mark>, the rest is escaped")
	require.NotContains(t, page, "<b>versions")
	require.NotContains(t, page, "«")
	require.Contains(t, page, `<a href="/ui/agents/cur?tab=facts">memory/cur/facts.md</a>`)
	require.Contains(t, page, `<a href="/ui/agents/cur?tab=loops">memory/cur/open_loops.md</a>`)
	require.Contains(t, page, "lines 4–5")
	require.Contains(t, page, `action="/ui/search" class="quick-search"`, "a query box in the header of every page")

	_, page = e.do(t, "GET", "/ui/search?q=minio&agent=other", nil, []*http.Cookie{sess}, nil)
	require.Contains(t, page, "Nothing matches")

	sess, _ = e.signIn(t, e.token(t, "other", []string{"other"}, auth.RoleAgent))
	_, page = e.do(t, "GET", "/ui/search?q=minio", nil, []*http.Cookie{sess}, nil)
	require.Contains(t, page, "Nothing matches", "an agent token finds only its own agent's files")
	require.NotContains(t, page, "memory/cur/")
}

func TestMarkedExcerpt(t *testing.T) {
	for in, want := range map[string]string{
		"plain & text":        "plain &amp; text",
		"«a» and «b»":         "<mark>a</mark> and <mark>b</mark>",
		"open « never closed": "open « never closed",
		"«<i>x</i>» <img>":    "<mark>&lt;i&gt;x&lt;/i&gt;</mark> &lt;img&gt;",
		"":                    "",
	} {
		require.Equal(t, want, string(markedExcerpt(in)), in)
	}
	require.Equal(t, "/ui/agents/cur?tab=timeline", fileURL("cur", "memory/cur/timeline/2026-02-15.md", ""))
	require.Equal(t, "", fileURL("", "sources/a.pdf", "source"))
}

// Entities: the list by label prefix and type; an entity's relations as a
// table with evidence links, its timeline picture inline, its neighbours.
func TestEntityPages(t *testing.T) {
	e := newEnv(t)
	sess, _ := e.signIn(t, e.token(t, "ops", []string{"*"}, auth.RoleAdmin))
	resp, page := e.do(t, "GET", "/ui/entities?q=min&type=concept", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, `<li data-entity="minio"><a href="/ui/entities/minio">MinIO &lt;script&gt;`)
	require.NotContains(t, page, `data-entity="cur"`)
	resp, page = e.do(t, "GET", "/ui/entities?type=planet", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, page, "type must be one of agent, concept")

	resp, page = e.do(t, "GET", "/ui/entities/minio", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Regexp(t, `<figure class="picture"><svg xmlns="http://www.w3.org/2000/svg" class="gb-svg gb-timeline"`, page, "the timeline picture, inline")
	require.NotContains(t, page, "<script>alert(3)")
	require.Contains(t, page, `<td>← mentions</td>`)
	require.Contains(t, page, `<a href="/ui/agents/cur?at=abc123abc123abc123abc123abc123abc123abcd&amp;tab=facts">memory/cur/facts.md</a>:5`, "evidence opens the file as of its commit")
	require.Contains(t, page, `<span class="muted">holds</span>`, "an edge without valid_to still holds")
	require.Contains(t, page, "2026-03-01 09:00:00 UTC", "valid_to")
	require.Contains(t, page, `<li data-neighbor="2026-02-17-use-minio"><a href="/ui/entities/2026-02-17-use-minio">`)
	require.Contains(t, page, `aria-current="page">Entities`)
	require.NotContains(t, page, "data-relations-page", "one page: no pager")

	resp, page = e.do(t, "GET", "/ui/entities/nope", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Contains(t, page, "entity nope not found")

	// GetEntity pages a shared entity's relations: the page says which it
	// shows and links the next and the first.
	e.f.mu.Lock()
	e.f.entityPageSize = 1
	e.f.mu.Unlock()
	resp, page = e.do(t, "GET", "/ui/entities/minio", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Regexp(t, `<p class="muted" data-relations-page>relations 1–1 of [2-9]</p>`, page)
	require.Contains(t, page, `<a href="/ui/entities/minio?page_token=1">next →</a>`)
	require.NotContains(t, page, "first page")
	resp, page = e.do(t, "GET", "/ui/entities/minio?page_token=1", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Regexp(t, `relations 2–2 of [2-9]`, page)
	require.Contains(t, page, `<a href="/ui/entities/minio">← first page</a>`)
}

// Decisions: ExplainDecision's chain drawn inline and listed.
func TestDecisionsPage(t *testing.T) {
	e := newEnv(t)
	sess, _ := e.signIn(t, e.token(t, "ops", []string{"*"}, auth.RoleAdmin))
	resp, page := e.do(t, "GET", "/ui/decisions", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.NotContains(t, page, "<svg")

	for _, q := range []string{"id=2026-02-17-use-minio", "query=minio"} {
		resp, page = e.do(t, "GET", "/ui/decisions?"+q, nil, []*http.Cookie{sess}, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, page)
		require.Contains(t, page, `class="gb-svg gb-chain"`, q)
		require.Contains(t, page, `<li class="card" data-decision="2026-02-17-use-minio">`)
		require.Contains(t, page, "Use MinIO &lt;b&gt;now&lt;/b&gt;", "titles are text, in the list and in the picture")
		require.NotContains(t, page, "<b>now")
	}
	_, page = e.do(t, "GET", "/ui/decisions?query=nothing", nil, []*http.Cookie{sess}, nil)
	require.Contains(t, page, "Nothing to draw.")
}

func TestVersionFollowsTheInbox(t *testing.T) {
	e := newEnv(t)
	sess, csrf := e.signIn(t, e.token(t, "alice", nil, auth.RoleReviewer))
	_, before := e.do(t, "GET", "/ui/api/version?view=inbox", nil, []*http.Cookie{sess}, nil)
	_, again := e.do(t, "GET", "/ui/api/version?view=inbox", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, before, again)
	e.do(t, "POST", "/ui/proposals/proposal_1/approve", url.Values{"csrf": {csrf}}, []*http.Cookie{sess}, nil)
	_, after := e.do(t, "GET", "/ui/api/version?view=inbox", nil, []*http.Cookie{sess}, nil)
	require.NotEqual(t, before, after, "the approved proposal left the inbox")
	resp, _ := e.do(t, "GET", "/ui/api/version?view=nope", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

func TestPastedToken(t *testing.T) {
	for _, in := range []string{"abc.def.ghi", "  abc.def.ghi\n", "Bearer abc.def.ghi", "export TOKEN=abc.def.ghi", "TOKEN='abc.def.ghi'", `export TOKEN="abc.def.ghi"`} {
		require.Equal(t, "abc.def.ghi", pastedToken(in), in)
	}
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"/ui/inbox": "/ui/inbox", "": "/ui/", "//evil.example/ui/": "/ui/", "https://evil.example/ui/": "/ui/",
		"/ui/\\evil": "/ui/", "/metrics": "/ui/", "/ui/proposals/p?done=1": "/ui/proposals/p?done=1",
	} {
		require.Equal(t, want, safeNext(in), in)
	}
}

func TestStaticFilesAreVersioned(t *testing.T) {
	e := newEnv(t)
	u, err := e.srv.Client().Get(e.srv.URL + "/ui/login")
	require.NoError(t, err)
	b, _ := io.ReadAll(u.Body)
	_ = u.Body.Close()
	css := regexp.MustCompile(`href="(/ui/static/console\.css\?v=[0-9a-f]+)"`).FindStringSubmatch(string(b))
	require.NotNil(t, css)
	resp, body := e.do(t, "GET", css[1], nil, nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/css")
	require.Contains(t, resp.Header.Get("Cache-Control"), "immutable")
	require.Contains(t, body, "prefers-color-scheme: dark", "light and dark")
	require.Contains(t, body, "max-width: 700px", "one column on a phone")
	resp, _ = e.do(t, "GET", "/ui/static/nope.js", nil, nil, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestHTTPStatusOfServiceErrors(t *testing.T) {
	for c, want := range map[codes.Code]int{codes.PermissionDenied: 403, codes.NotFound: 404, codes.InvalidArgument: 400,
		codes.FailedPrecondition: 409, codes.Unimplemented: 501, codes.Unavailable: 503, codes.Internal: 502} {
		got, _ := httpStatus(apierr.New(c, memoryv1.ErrorReason_ERROR_REASON_UNSPECIFIED, "x", nil))
		require.Equal(t, want, got, c.String())
	}
}

func jwtClaims(sub string, iat, exp time.Time) jwt.RegisteredClaims {
	return jwt.RegisteredClaims{Subject: sub, IssuedAt: jwt.NewNumericDate(iat), ExpiresAt: jwt.NewNumericDate(exp)}
}

// mintCode asks for a sign-in code as memctl console does.
func (e *env) mintCode(t *testing.T, tok string) (*http.Response, codeAnswer) {
	t.Helper()
	resp, body := e.do(t, "POST", "/ui/api/sign-in-codes", nil, nil, map[string]string{"Authorization": "Bearer " + tok})
	var a codeAnswer
	if resp.StatusCode == http.StatusOK {
		require.NoError(t, json.Unmarshal([]byte(body), &a), body)
	}
	return resp, a
}

// Issue #28: "memctl console opens the browser with a one-time code": the
// page shows who the code signs in as and waits for a click; the click
// signs in once; the code is no cookie, expires, and needs a good token.
func TestSignInWithAOneTimeCode(t *testing.T) {
	e := newEnv(t)
	tok := e.token(t, "alice", []string{"*"}, auth.RoleReviewer)
	resp, code := e.mintCode(t, tok)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	require.Equal(t, "/ui/login?code="+url.QueryEscape(code.Code), code.Path)
	require.WithinDuration(t, time.Now().Add(time.Minute), code.ExpiresAt, 5*time.Second)
	require.NotContains(t, code.Code, strings.Split(tok, ".")[1], "the token is sealed, not in clear")

	// Opening the link signs nobody in: it asks.
	resp, page := e.do(t, "GET", code.Path, nil, nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Nil(t, cookieNamed(resp, SessionCookie))
	require.Contains(t, page, "Continue as alice")
	require.Contains(t, page, "(reviewer)")
	login := cookieNamed(resp, loginCookie)
	form := url.Values{"csrf": {csrfOf(t, page)}, "code": {code.Code}, "next": {"/ui/inbox"}}

	// Without the form's CSRF cookie (another site's form), refused.
	resp, _ = e.do(t, "POST", "/ui/login", form, nil, nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	resp, _ = e.do(t, "POST", "/ui/login", form, []*http.Cookie{login}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/ui/inbox", resp.Header.Get("Location"))
	sess := cookieNamed(resp, SessionCookie)
	require.NotNil(t, sess)
	resp, page = e.do(t, "GET", "/ui/inbox", nil, []*http.Cookie{sess}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, "alice")

	// Once only.
	resp, page = e.do(t, "POST", "/ui/login", form, []*http.Cookie{login}, nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, page, "expired or was already used")
	require.Nil(t, cookieNamed(resp, SessionCookie))

	// A code is not a session cookie.
	resp, _ = e.do(t, "GET", "/ui/inbox", nil, []*http.Cookie{{Name: SessionCookie, Value: code.Code}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)

	// No, a malformed or a refused token: no code.
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer "}, {"Authorization": "Basic eA=="}, {"Authorization": "Bearer nope"}} {
		resp, body := e.do(t, "POST", "/ui/api/sign-in-codes", nil, nil, h)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%v", h)
		require.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
		require.Contains(t, body, `"error"`)
	}
	// A made-up code is refused on the page.
	resp, page = e.do(t, "GET", "/ui/login?code=abc", nil, nil, nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, page, "expired or was already used")

	// A code ends with its token, and at the latest after a minute.
	short, err := e.signer.Sign(auth.Claims{Roles: []auth.Role{auth.RoleReviewer},
		RegisteredClaims: jwtClaims("bob", time.Now().Add(-time.Minute), time.Now().Add(time.Second))})
	require.NoError(t, err)
	_, code = e.mintCode(t, short)
	require.WithinDuration(t, time.Now().Add(time.Second), code.ExpiresAt, 2*time.Second)
	require.Eventually(t, func() bool {
		resp, _ := e.do(t, "GET", code.Path, nil, nil, nil)
		return resp.StatusCode == http.StatusUnauthorized
	}, 10*time.Second, 100*time.Millisecond)
}
