package ratelimit

import (
	"context"
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
)

const testMethod = "/gardenbloom.memory.v1.ContextAssemblyService/ReadMemory"

func as(sub string, roles ...auth.Role) context.Context {
	c := &auth.Claims{Roles: roles, Agents: []string{"a"}}
	c.Subject = sub
	return auth.ContextWithClaims(context.Background(), c)
}

func callUnary(i *Interceptors, ctx context.Context) error {
	_, err := i.Unary()(ctx, nil, &grpc.UnaryServerInfo{FullMethod: testMethod},
		func(context.Context, any) (any, error) { return "ok", nil })
	return err
}

func TestInterceptorLimitsPerSubject(t *testing.T) {
	clk := newClock()
	i := New(Config{Rate: 2, Burst: 2}, Options{Now: clk.now})

	agent := as("curator-run", auth.RoleAgent)
	require.NoError(t, callUnary(i, agent))
	require.NoError(t, callUnary(i, agent))
	err := callUnary(i, agent)
	require.Equal(t, codes.ResourceExhausted, status.Code(err))
	require.Equal(t, "RATE_LIMITED", apierr.Info(err).GetReason())
	var retry *errdetails.RetryInfo
	for _, d := range status.Convert(err).Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			retry = r
		}
	}
	require.NotNil(t, retry, "the client is told when to retry")
	require.Equal(t, 500*time.Millisecond, retry.GetRetryDelay().AsDuration())
	require.Contains(t, status.Convert(err).Message(), "retry in 500ms")

	// Same subject, another token (e.g. a reviewer role): the same bucket.
	require.Equal(t, codes.ResourceExhausted, status.Code(callUnary(i, as("curator-run", auth.RoleReviewer))))
	require.NoError(t, callUnary(i, as("other-run", auth.RoleAgent)), "other subjects are not affected")

	clk.advance(500 * time.Millisecond)
	require.NoError(t, callUnary(i, agent), "a token is back after the retry delay")
}

func TestInterceptorPrivilegedClass(t *testing.T) {
	clk := newClock()
	i := New(Config{Rate: 1, Burst: 1}, Options{Now: clk.now})
	for _, ctx := range []context.Context{
		as("memoryd/context-assembly", auth.RoleService),
		as("orchestrator", auth.RoleService),
		as("ops", auth.RoleAdmin),
		as("dev", auth.RoleAdmin, auth.RoleReviewer, auth.RoleService),
	} {
		for range 500 {
			require.NoError(t, callUnary(i, ctx), "service and admin tokens are unlimited by default")
		}
	}
	// The subject prefix alone lifts nothing.
	spoof := as("memoryd/not-really", auth.RoleAgent)
	require.NoError(t, callUnary(i, spoof))
	require.Equal(t, codes.ResourceExhausted, status.Code(callUnary(i, spoof)))

	// With --rate-limit-service the privileged class has its own, higher limit.
	i = New(Config{Rate: 1, Burst: 1, PrivilegedRate: 10}, Options{Now: clk.now})
	svc := as("orchestrator", auth.RoleService)
	for range 20 { // bursts of two seconds' worth
		require.NoError(t, callUnary(i, svc))
	}
	require.Equal(t, codes.ResourceExhausted, status.Code(callUnary(i, svc)))
	require.NoError(t, callUnary(i, as("orchestrator", auth.RoleAgent)), "classes keep separate buckets")
}

func TestInterceptorPassesCallsWithoutClaims(t *testing.T) {
	i := New(Config{Rate: 1, Burst: 1}, Options{})
	for range 10 {
		require.NoError(t, callUnary(i, context.Background()), "health checks and the like carry no token")
	}
}

type fakeStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s fakeStream) Context() context.Context   { return s.ctx }
func (fakeStream) SetHeader(metadata.MD) error  { return nil }
func (fakeStream) SendHeader(metadata.MD) error { return nil }
func (fakeStream) SetTrailer(metadata.MD)       {}
func (fakeStream) SendMsg(any) error            { return nil }
func (fakeStream) RecvMsg(any) error            { return nil }

func TestStreamInterceptorCountsStreamOpens(t *testing.T) {
	i := New(Config{Rate: 1, Burst: 2}, Options{Now: newClock().now})
	ss := fakeStream{ctx: as("watcher", auth.RoleAgent)}
	info := &grpc.StreamServerInfo{FullMethod: "/gardenbloom.memory.v1.ProposalApplyService/WatchCommits", IsServerStream: true}
	calls := 0
	handler := func(any, grpc.ServerStream) error { calls++; return nil }
	require.NoError(t, i.Stream()(nil, ss, info, handler))
	require.NoError(t, i.Stream()(nil, ss, info, handler))
	err := i.Stream()(nil, ss, info, handler)
	require.Equal(t, codes.ResourceExhausted, status.Code(err))
	require.Equal(t, 2, calls, "a refused stream never reaches the handler")
}

func TestConfigFlags(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	c.RegisterFlags(fs)
	require.NoError(t, fs.Parse(nil))
	require.Equal(t, Config{Rate: DefaultRate, Burst: DefaultBurst}, c)
	require.NoError(t, c.Validate())

	for _, tt := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"--rate-limit", "0", "--rate-limit-burst", "0"}, true},
		{[]string{"--rate-limit", "0.5", "--rate-limit-burst", "1"}, true},
		{[]string{"--rate-limit", "5", "--rate-limit-burst", "0"}, false},
		{[]string{"--rate-limit", "-1"}, false},
		{[]string{"--rate-limit-service", "-1"}, false},
		{[]string{"--rate-limit", "NaN"}, false},
		{[]string{"--rate-limit-service", "+Inf"}, false},
	} {
		var c Config
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		c.RegisterFlags(fs)
		require.NoError(t, fs.Parse(tt.args))
		if tt.ok {
			require.NoError(t, c.Validate(), tt.args)
		} else {
			require.Error(t, c.Validate(), tt.args)
		}
	}
}
