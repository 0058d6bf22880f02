package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
)

// Slow and flooding clients: the limits of TestEdgeSlowClients and
// TestRateLimit (issue #25), met by one rude client each, on a suite of
// their own whose limits are small enough to reach in a test: a burst of 5
// calls then one every 5 s per agent token, 4 HTTP and 16 gRPC
// connections per client address, 2 s for headers, 1 s for each read of a
// body, 2 s for a whole body. Each connection comes from its own loopback
// address (127.0.0.x), so the cases do not share a connection cap.

const (
	floodBurst       = 5
	floodHTTPConns   = 4
	floodGRPCConns   = 16
	floodHeader      = 2 * time.Second
	floodBodyPerRead = time.Second
	floodBody        = 2 * time.Second
)

// hLoopback is the local address 127.0.0.n.
func hLoopback(n int) *net.TCPAddr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(n))} }

// floodEnv is the flooding group's suite.
type floodEnv struct {
	d      *deployment
	svc    string
	expect func(t *testing.T) // nothing was written since the group started
}

// testHostileFlood runs the slow and flooding clients group and returns how
// many cases it ran.
func testHostileFlood(t *testing.T) int {
	d := startInProcessWith(t, "--rate-limit", "0.2", "--rate-limit-burst", strconv.Itoa(floodBurst),
		"--http-max-conns-per-ip", strconv.Itoa(floodHTTPConns), "--grpc-max-conns-per-ip", strconv.Itoa(floodGRPCConns),
		"--http-read-header-timeout", floodHeader.String(), "--http-body-read-timeout", floodBodyPerRead.String(),
		"--http-body-timeout", floodBody.String(), "--auto-approve-default")
	f := &floodEnv{d: d, svc: mintAs(t, d, "flood-orchestrator", []string{auth.AllAgents}, auth.RoleService)}
	// One proposal, so that "unchanged" is not trivially empty.
	code, resp := jsonCall(t, d, "POST", "/memory/flood/propose", `{"runId":"run_f1","updates":[{"file":"facts.md","operation":"append","section":"Notes","content":"- a fact"}]}`, f.svc)
	require.Equal(t, http.StatusOK, code, resp)
	require.Eventually(t, func() bool {
		_, got := jsonCall(t, d, "GET", "/proposals/"+resp["proposalId"].(string), "", f.svc)
		return got["status"] == "applied"
	}, 20*time.Second, 20*time.Millisecond, "the flood agent has memory")
	before := f.state(t)
	f.expect = func(t *testing.T) { require.Equal(t, before, f.state(t), "nothing was written") }

	cases := []struct {
		name     string
		parallel bool // slow: runs beside the other slow cases
		run      func(t *testing.T)
	}{
		{"burst beyond the rate limit", false, f.burst},
		{"a fresh token for the same subject", false, f.sameSubject},
		{"the same subject over gRPC", false, f.sameSubjectGRPC},
		{"a propose beyond the rate limit", false, f.proposeFlood},
		{"HTTP connections beyond the per-address cap", false, func(t *testing.T) { f.connCap(t, 3, nil) }},
		{"X-Forwarded-For does not lift the cap", false, func(t *testing.T) { f.connCap(t, 4, http.Header{"X-Forwarded-For": {"10.0.0.1"}}) }},
		{"gRPC connections beyond the per-address cap", false, f.grpcConnCap},
		{"slow headers", true, f.slowHeaders},
		{"a body that stops", true, f.stalledBody},
		{"a body that trickles", true, f.trickledBody},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.parallel {
				t.Parallel()
			}
			c.run(t)
			f.expect(t)
		})
	}
	return len(cases)
}

// state is the repository's refs, the stored proposals and the proposals
// as listed.
func (f *floodEnv) state(t *testing.T) string {
	t.Helper()
	r := edgeCall(t, f.d, "GET", "/proposals", nil, f.svc)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	var list struct {
		Proposals []struct {
			ProposalID string `json:"proposalId"`
			Status     string `json:"status"`
		} `json:"proposals"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.raw), &list))
	return settledState(t, f.d) + fmt.Sprint(list.Proposals)
}

// hLimited checks a 429 answer: RATE_LIMITED with a RetryInfo and a
// Retry-After of whole seconds, no more than the 5 s a token takes.
func hLimited(t *testing.T, r edgeResponse) {
	t.Helper()
	require.Equal(t, http.StatusTooManyRequests, r.status, r.raw)
	require.Equal(t, int(codes.ResourceExhausted), r.err.Code, r.raw)
	require.Equal(t, "RATE_LIMITED", r.reason(), r.raw)
	secs, err := strconv.Atoi(r.header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After is whole seconds: %q", r.header.Get("Retry-After"))
	require.True(t, secs >= 1 && secs <= 5, "Retry-After %d", secs)
	require.Len(t, r.err.Details, 2, r.raw)
	require.Equal(t, "type.googleapis.com/google.rpc.RetryInfo", r.err.Details[1].Type, r.raw)
}

// spend makes the burst's calls with tok.
func (f *floodEnv) spend(t *testing.T, tok string) {
	t.Helper()
	for i := range floodBurst {
		r := edgeCall(t, f.d, "GET", "/memory/flood/read?mode=basic", nil, tok)
		require.Equal(t, http.StatusOK, r.status, "call %d is within the burst: %s", i, r.raw)
	}
}

func (f *floodEnv) burst(t *testing.T) {
	tok := mintAs(t, f.d, "flood-burst", []string{"flood"}, auth.RoleAgent)
	f.spend(t, tok)
	hLimited(t, edgeCall(t, f.d, "GET", "/memory/flood/read?mode=basic", nil, tok))
	// Another subject has its own bucket.
	r := edgeCall(t, f.d, "GET", "/memory/flood/read?mode=basic", nil, mintAs(t, f.d, "flood-other", []string{"flood"}, auth.RoleAgent))
	require.Equal(t, http.StatusOK, r.status, r.raw)
}

// sameSubject: minting a new token does not refill the bucket; the limit
// is the subject's.
func (f *floodEnv) sameSubject(t *testing.T) {
	f.spend(t, mintAs(t, f.d, "flood-remint", []string{"flood"}, auth.RoleAgent))
	hLimited(t, edgeCall(t, f.d, "GET", "/memory/flood/read?mode=basic", nil, mintAs(t, f.d, "flood-remint", []string{"flood"}, auth.RoleAgent)))
}

func (f *floodEnv) sameSubjectGRPC(t *testing.T) {
	tok := mintAs(t, f.d, "flood-grpc", []string{"flood"}, auth.RoleAgent)
	f.spend(t, tok)
	ca := memoryv1.NewContextAssemblyServiceClient(dial(t, f.d.grpcAddr[memoryv1.ContextAssemblyService_ServiceDesc.ServiceName]))
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
	_, err := ca.ReadMemory(ctx, &memoryv1.ReadMemoryRequest{AgentId: "flood", Mode: memoryv1.ReadMode_READ_MODE_BASIC})
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	require.Equal(t, "RATE_LIMITED", apierr.Info(err).GetReason())
	var retry *errdetails.RetryInfo
	for _, det := range status.Convert(err).Details() {
		if ri, ok := det.(*errdetails.RetryInfo); ok {
			retry = ri
		}
	}
	require.NotNil(t, retry, "%v", err)
	require.Positive(t, retry.GetRetryDelay().AsDuration())
}

// proposeFlood: a write over the limit is refused before anything is
// stored.
func (f *floodEnv) proposeFlood(t *testing.T) {
	tok := mintAs(t, f.d, "flood-propose", []string{"flood"}, auth.RoleAgent)
	f.spend(t, tok)
	hLimited(t, edgeCall(t, f.d, "POST", "/memory/flood/propose", strings.NewReader(
		`{"runId":"run_f2","updates":[{"file":"facts.md","operation":"append","section":"Notes","content":"- one too many"}]}`), tok))
}

// connCap: with the cap's connections open from one address, the next one
// from it is closed at once without an answer, whatever it claims to come
// from; other addresses are served meanwhile, and the cut is counted.
func (f *floodEnv) connCap(t *testing.T, addr int, header http.Header) {
	cuts := slowClientCuts(t, f.d, "conn_limit")
	var held []net.Conn
	defer func() {
		for _, c := range held {
			_ = c.Close()
		}
	}()
	for range floodHTTPConns {
		c, err := (&net.Dialer{LocalAddr: hLoopback(addr)}).Dial("tcp", f.d.httpAddr)
		require.NoError(t, err)
		_, err = io.WriteString(c, "GET /health HTTP/1.1\r\n") // headers begun, never finished
		require.NoError(t, err)
		held = append(held, c)
	}
	var extra strings.Builder
	for k, vs := range header {
		for _, v := range vs {
			extra.WriteString(k + ": " + v + "\r\n")
		}
	}
	req := "GET /memory/flood/read?mode=basic HTTP/1.1\r\nHost: memoryd\r\nAuthorization: Bearer " + f.svc + "\r\n" + extra.String() + "\r\n"
	start := time.Now()
	a := hostileRaw(t, f.d.httpAddr, req, hLoopback(addr))
	require.True(t, a.closed, "the connection over the cap is closed without an answer, got %d %s", a.status, a.raw)
	require.Less(t, time.Since(start), floodHeader, "closed at once, not by a timeout")
	// Another address is served meanwhile.
	a = hostileRaw(t, f.d.httpAddr, req, hLoopback(addr+10))
	require.Equal(t, http.StatusOK, a.status, a.raw)
	require.Equal(t, cuts+1, slowClientCuts(t, f.d, "conn_limit"))
}

// grpcConnCap is connCap on the gRPC listener: connections that never send
// the HTTP/2 preface, then one more.
func (f *floodEnv) grpcConnCap(t *testing.T) {
	refused := func() int {
		return counterValue(t, f.d.httpAddr, "rpc_server_connections_refused_total", `reason="conn_limit"`)
	}
	before := refused()
	addr := f.d.grpcAddr[memoryv1.ProposalApplyService_ServiceDesc.ServiceName]
	open := func() net.Conn {
		c, err := (&net.Dialer{LocalAddr: hLoopback(5)}).Dial("tcp", addr)
		require.NoError(t, err)
		return c
	}
	// isClosed: the server closed c within d (what it wrote before, its
	// HTTP/2 settings, is read and dropped).
	isClosed := func(c net.Conn, d time.Duration) bool {
		_ = c.SetReadDeadline(time.Now().Add(d))
		_, err := io.Copy(io.Discard, c)
		var ne net.Error
		timedOut := errors.As(err, &ne) && ne.Timeout()
		return !timedOut
	}
	var held []net.Conn
	defer func() {
		for _, c := range held {
			_ = c.Close()
		}
	}()
	for range floodGRPCConns {
		held = append(held, open())
	}
	for i, c := range held {
		require.False(t, isClosed(c, 50*time.Millisecond), "connection %d is within the cap", i)
	}
	over := open()
	defer func() { _ = over.Close() }()
	require.True(t, isClosed(over, 2*time.Second), "the connection over the cap is closed at once")
	require.Equal(t, before+1, refused())
	// Calls from other addresses go on.
	si := memoryv1.NewSearchIndexServiceClient(dial(t, addr))
	_, err := si.GetIndexStatus(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+f.svc), &memoryv1.GetIndexStatusRequest{})
	require.NoError(t, err)
}

// slowHeaders: headers that keep coming, a line every 200 ms, are cut at
// --http-read-header-timeout, without an answer, and counted.
func (f *floodEnv) slowHeaders(t *testing.T) {
	c, err := (&net.Dialer{LocalAddr: hLoopback(7)}).Dial("tcp", f.d.httpAddr)
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	start := time.Now()
	_, err = io.WriteString(c, "GET /memory/flood/read HTTP/1.1\r\nHost: memoryd\r\n")
	require.NoError(t, err)
	got := make(chan []byte, 1)
	go func() {
		raw, _ := io.ReadAll(c)
		got <- raw
	}()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case raw := <-got:
			require.Empty(t, string(raw), "cut without an answer")
			after := time.Since(start)
			require.GreaterOrEqual(t, after, floodHeader-100*time.Millisecond)
			require.Less(t, after, floodHeader+3*time.Second)
			require.Eventually(t, func() bool { return slowClientCuts(t, f.d, "header") >= 1 }, 5*time.Second, 20*time.Millisecond)
			return
		case <-tick.C:
			_, _ = io.WriteString(c, "X-Slow: 1\r\n") // slowloris: one more header line now and then
		case <-time.After(floodHeader + 5*time.Second):
			t.Fatal("slow headers were never cut")
		}
	}
}

// slowProposeBody sends a propose's headers (Content-Length 100) and then
// the body as send says, and returns the answer and when it came.
func (f *floodEnv) slowProposeBody(t *testing.T, from int, send func(c net.Conn, stop <-chan struct{})) (hAnswer, time.Duration) {
	c, err := (&net.Dialer{LocalAddr: hLoopback(from)}).Dial("tcp", f.d.httpAddr)
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	_, err = io.WriteString(c, "POST /memory/flood/propose HTTP/1.1\r\nHost: memoryd\r\nAuthorization: Bearer "+f.svc+
		"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"runId\":")
	require.NoError(t, err)
	start := time.Now()
	stop := make(chan struct{})
	defer close(stop)
	go send(c, stop)
	_ = c.SetReadDeadline(start.Add(floodBody + 10*time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err, "an answer before the connection closes")
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(resp.Body)
	after := time.Since(start)
	// The connection is closed after the answer.
	_, err = c.Read(make([]byte, 1))
	require.Error(t, err)
	return hAnswer{status: resp.StatusCode, header: resp.Header, raw: string(raw), closing: resp.Close}, after
}

// hTimedOut checks a 408: the JSON status DEADLINE_EXCEEDED, whose reason is
// UNSPECIFIED (a deadline has no reason of its own), Connection: close.
func hTimedOut(t *testing.T, a hAnswer) {
	t.Helper()
	require.Equal(t, http.StatusRequestTimeout, a.status, a.raw)
	require.True(t, a.closing, "Connection: close")
	require.Equal(t, "application/json", a.header.Get("Content-Type"))
	var b hErrorBody
	require.NoError(t, json.Unmarshal([]byte(a.raw), &b), a.raw)
	require.Equal(t, int(codes.DeadlineExceeded), b.Code, a.raw)
	require.NotEmpty(t, b.Details, a.raw)
	require.Equal(t, "UNSPECIFIED", b.Details[0].Reason, a.raw)
}

// stalledBody: a body that stops is cut after --http-body-read-timeout.
func (f *floodEnv) stalledBody(t *testing.T) {
	cuts := slowClientCuts(t, f.d, "body")
	a, after := f.slowProposeBody(t, 8, func(net.Conn, <-chan struct{}) {})
	hTimedOut(t, a)
	require.GreaterOrEqual(t, after, floodBodyPerRead-100*time.Millisecond)
	require.Less(t, after, floodBody, "cut by the per-read deadline, before the whole body's")
	require.Eventually(t, func() bool { return slowClientCuts(t, f.d, "body") >= cuts+1 }, 5*time.Second, 20*time.Millisecond)
}

// trickledBody: a body that keeps coming, a byte every 200 ms, is cut at
// --http-body-timeout.
func (f *floodEnv) trickledBody(t *testing.T) {
	a, after := f.slowProposeBody(t, 9, func(c net.Conn, stop <-chan struct{}) {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := io.WriteString(c, " "); err != nil {
					return
				}
			}
		}
	})
	hTimedOut(t, a)
	require.GreaterOrEqual(t, after, floodBody-100*time.Millisecond)
	require.Less(t, after, floodBody+3*time.Second)
	require.Eventually(t, func() bool { return slowClientCuts(t, f.d, "body") >= 1 }, 5*time.Second, 20*time.Millisecond)
}
