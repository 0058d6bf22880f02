package auth

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// recorder is an interceptor placed after the auth interceptor; it captures
// what a real handler would see.
type recorder struct {
	mu      sync.Mutex
	calls   int
	claims  []*Claims // nil entry: handler ran without claims
	headers []string
}

func (r *recorder) record(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	c, _ := ClaimsFromContext(ctx)
	r.claims = append(r.claims, c)
	md, _ := metadata.FromIncomingContext(ctx)
	r.headers = append(r.headers, md.Get(MetadataKey)...)
}

func (r *recorder) snapshot() (int, []*Claims, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls, append([]*Claims(nil), r.claims...), append([]string(nil), r.headers...)
}

func (r *recorder) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	r.record(ctx)
	return h(ctx, req)
}

func (r *recorder) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	r.record(ss.Context())
	return h(srv, ss)
}

// startHealthServer serves the standard health service on a real loopback
// TCP listener, protected by the auth interceptors.
func startHealthServer(tb testing.TB, v *Verifier, skip func(string) bool) (string, *recorder) {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	rec := &recorder{}
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(UnaryServerInterceptor(v, skip), rec.unary),
		grpc.ChainStreamInterceptor(StreamServerInterceptor(v, skip), rec.stream),
	)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(lis) }()
	tb.Cleanup(srv.Stop)
	return lis.Addr().String(), rec
}

func dialHealth(tb testing.TB, addr string, opts ...grpc.DialOption) healthpb.HealthClient {
	tb.Helper()
	opts = append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)
	conn, err := grpc.NewClient(addr, opts...)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = conn.Close() })
	return healthpb.NewHealthClient(conn)
}

func callCtx(tb testing.TB) context.Context {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	tb.Cleanup(cancel)
	return ctx
}

// requireUnauthenticated asserts err is Unauthenticated with our ErrorInfo.
func requireUnauthenticated(tb testing.TB, err error, reason string) {
	tb.Helper()
	st, ok := status.FromError(err)
	require.True(tb, ok, "not a gRPC status: %v", err)
	require.Equal(tb, codes.Unauthenticated, st.Code(), "status: %v", st)
	var infos []*errdetails.ErrorInfo
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			infos = append(infos, info)
		}
	}
	require.Len(tb, infos, 1, "want exactly one ErrorInfo detail")
	require.Equal(tb, ErrorDomain, infos[0].GetDomain())
	require.Equal(tb, reason, infos[0].GetReason())
}

func TestInterceptorsOverGRPC(t *testing.T) {
	clk := newFakeClock()
	s, v := newPair(t, testSecret(t), clk)
	addr, rec := startHealthServer(t, v, nil)

	// "expired" is verified 10 minutes after minting, far beyond its ttl
	// plus leeway; the other tokens are minted at verification time.
	expired, err := s.Mint("agent-42", []Role{RoleAgent}, []string{"agent-42"}, time.Second)
	require.NoError(t, err)
	clk.Advance(10 * time.Minute)
	good, err := s.Mint("agent-42", []Role{RoleAgent}, []string{"agent-42"}, time.Hour)
	require.NoError(t, err)
	otherSigner, err := NewSigner([]byte("another-secret-another-secret-another"), WithSignerClock(clk.Now))
	require.NoError(t, err)
	forged, err := otherSigner.Mint("admin", []Role{RoleAdmin}, []string{"*"}, time.Hour)
	require.NoError(t, err)

	tests := []struct {
		name       string
		md         metadata.MD // raw metadata, to test header parsing as the server sees it
		wantReason string      // "" means success
	}{
		{name: "no token", md: nil, wantReason: ReasonUnauthenticated},
		{name: "garbage token", md: metadata.Pairs(MetadataKey, "Bearer not-a-jwt"), wantReason: ReasonUnauthenticated},
		{name: "wrong secret", md: metadata.Pairs(MetadataKey, "Bearer "+forged), wantReason: ReasonUnauthenticated},
		{name: "expired", md: metadata.Pairs(MetadataKey, "Bearer "+expired), wantReason: ReasonTokenExpired},
		{name: "wrong scheme", md: metadata.Pairs(MetadataKey, "Basic "+good), wantReason: ReasonUnauthenticated},
		{name: "scheme only", md: metadata.Pairs(MetadataKey, "Bearer"), wantReason: ReasonUnauthenticated},
		{name: "token without scheme", md: metadata.Pairs(MetadataKey, good), wantReason: ReasonUnauthenticated},
		{name: "two values", md: metadata.Pairs(MetadataKey, "Bearer "+good, MetadataKey, "Bearer "+good), wantReason: ReasonUnauthenticated},
		{name: "good", md: metadata.Pairs(MetadataKey, "Bearer "+good)},
		{name: "good lower-case scheme", md: metadata.Pairs(MetadataKey, "bearer "+good)},
		{name: "good upper-case scheme", md: metadata.Pairs(MetadataKey, "BEARER  "+good)},
	}
	client := dialHealth(t, addr)
	for _, tt := range tests {
		t.Run(tt.name+"/unary", func(t *testing.T) {
			before, _, _ := rec.snapshot()
			ctx := metadata.NewOutgoingContext(callCtx(t), tt.md)
			resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
			after, claims, _ := rec.snapshot()
			if tt.wantReason != "" {
				requireUnauthenticated(t, err, tt.wantReason)
				require.Equal(t, before, after, "handler must not run")
				return
			}
			require.NoError(t, err)
			require.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus())
			require.Equal(t, before+1, after)
			got := claims[len(claims)-1]
			require.NotNil(t, got, "handler must see claims")
			require.Equal(t, "agent-42", got.Subject)
			require.True(t, got.HasRole(RoleAgent))
			require.True(t, got.CanAccessAgent("agent-42"))
		})
		t.Run(tt.name+"/stream", func(t *testing.T) {
			before, _, _ := rec.snapshot()
			ctx := metadata.NewOutgoingContext(callCtx(t), tt.md)
			stream, err := client.Watch(ctx, &healthpb.HealthCheckRequest{})
			require.NoError(t, err, "stream errors surface on Recv")
			resp, err := stream.Recv()
			after, claims, _ := rec.snapshot()
			if tt.wantReason != "" {
				requireUnauthenticated(t, err, tt.wantReason)
				require.Equal(t, before, after, "handler must not run")
				return
			}
			require.NoError(t, err)
			require.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus())
			require.Equal(t, before+1, after)
			got := claims[len(claims)-1]
			require.NotNil(t, got, "stream handler must see claims")
			require.Equal(t, "agent-42", got.Subject)
		})
	}
}

func TestInterceptorErrorsDoNotLeakDetails(t *testing.T) {
	_, v := newPair(t, testSecret(t), newFakeClock())
	addr, _ := startHealthServer(t, v, nil)
	client := dialHealth(t, addr, grpc.WithPerRPCCredentials(StaticToken("a.b.c")))

	_, err := client.Check(callCtx(t), &healthpb.HealthCheckRequest{})
	requireUnauthenticated(t, err, ReasonUnauthenticated)
	require.Equal(t, "invalid token: malformed token", status.Convert(err).Message())
}

func TestInterceptorsDefaultSkip(t *testing.T) {
	_, v := newPair(t, testSecret(t), newFakeClock())
	addr, rec := startHealthServer(t, v, DefaultSkip)
	client := dialHealth(t, addr)

	resp, err := client.Check(callCtx(t), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus())

	stream, err := client.Watch(callCtx(t), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = stream.Recv()
	require.NoError(t, err)

	// Skipped methods run without claims, even though nothing failed.
	calls, claims, _ := rec.snapshot()
	require.Equal(t, 2, calls)
	require.Equal(t, []*Claims{nil, nil}, claims)
}

func TestDefaultSkip(t *testing.T) {
	tests := []struct {
		method string
		want   bool
	}{
		{"/grpc.health.v1.Health/Check", true},
		{"/grpc.health.v1.Health/Watch", true},
		{"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", true},
		{"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", true},
		{"/grpc.health.v1.HealthX/Check", false},
		{"/grpc.health.v2.Health/Check", false},
		{"/memory.v1.MemoryService/Get", false},
		{"grpc.health.v1.Health/Check", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			require.Equal(t, tt.want, DefaultSkip(tt.method))
		})
	}
}

func TestServiceCredentialsEndToEnd(t *testing.T) {
	clk := newFakeClock()
	s, v := newPair(t, testSecret(t), clk)
	addr, rec := startHealthServer(t, v, nil)
	client := dialHealth(t, addr, grpc.WithPerRPCCredentials(NewServiceCredentials(s, "ingest-svc")))

	check := func() {
		t.Helper()
		_, err := client.Check(callCtx(t), &healthpb.HealthCheckRequest{})
		require.NoError(t, err)
	}
	check()
	check()
	clk.Advance(3 * time.Minute) // still > 1 minute before expiry
	check()
	clk.Advance(time.Minute + time.Second) // inside the refresh window
	check()

	calls, claims, headers := rec.snapshot()
	require.Equal(t, 4, calls)
	require.Len(t, headers, 4)
	require.Equal(t, headers[0], headers[1], "token reused")
	require.Equal(t, headers[0], headers[2], "token reused until refresh window")
	require.NotEqual(t, headers[0], headers[3], "token refreshed near expiry")

	for _, c := range claims {
		require.NotNil(t, c)
		require.Equal(t, "ingest-svc", c.Subject)
		require.Equal(t, []Role{RoleService}, c.Roles)
		require.True(t, c.CanAccessAgent("any-agent"))
		require.Equal(t, ServiceTokenTTL, c.ExpiresAt.Sub(c.IssuedAt.Time))
	}
	require.Equal(t, t0, claims[0].IssuedAt.UTC())
	require.Equal(t, t0.Add(4*time.Minute+time.Second), claims[3].IssuedAt.UTC())
}
