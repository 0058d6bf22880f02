package grpcserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/garden-bloom/memory/pkg/telemetry"
)

const (
	testService  = "memory.test.v1.Test"
	methodEcho   = "/" + testService + "/Echo"
	methodPanic  = "/" + testService + "/Panic"
	methodBlock  = "/" + testService + "/Block"
	methodPanicS = "/" + testService + "/PanicStream"
	methodEchoS  = "/" + testService + "/EchoStream"
	waitFor      = 10 * time.Second
	tick         = 10 * time.Millisecond
)

const testProtoFile = "memory/test/v1/test.proto"

// init registers a descriptor for the test service, as generated code
// would, so reflection can describe it and DefaultServiceConfig sees the
// idempotency_level annotations.
func init() {
	method := func(name, in, out string, lvl *descriptorpb.MethodOptions_IdempotencyLevel, serverStream bool) *descriptorpb.MethodDescriptorProto {
		m := &descriptorpb.MethodDescriptorProto{Name: proto.String(name), InputType: proto.String(in), OutputType: proto.String(out)}
		if lvl != nil {
			m.Options = &descriptorpb.MethodOptions{IdempotencyLevel: lvl}
		}
		if serverStream {
			m.ServerStreaming = proto.Bool(true)
		}
		return m
	}
	const (
		bytesT = ".google.protobuf.BytesValue"
		emptyT = ".google.protobuf.Empty"
	)
	noSideEffects := descriptorpb.MethodOptions_NO_SIDE_EFFECTS.Enum()
	fdp := &descriptorpb.FileDescriptorProto{
		Name:       proto.String(testProtoFile),
		Package:    proto.String("memory.test.v1"),
		Syntax:     proto.String("proto3"),
		Dependency: []string{"google/protobuf/wrappers.proto", "google/protobuf/empty.proto"},
		Service: []*descriptorpb.ServiceDescriptorProto{{
			Name: proto.String("Test"),
			Method: []*descriptorpb.MethodDescriptorProto{
				method("Echo", bytesT, bytesT, noSideEffects, false),
				method("Panic", emptyT, emptyT, nil, false),
				method("Flaky", emptyT, emptyT, descriptorpb.MethodOptions_IDEMPOTENT.Enum(), false),
				method("Unsafe", emptyT, emptyT, nil, false),
				method("Block", emptyT, emptyT, nil, false),
				method("PanicStream", emptyT, emptyT, nil, true),
				method("EchoStream", bytesT, bytesT, noSideEffects, true),
			},
		}},
	}
	fd, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
	if err != nil {
		panic(err)
	}
	if err := protoregistry.GlobalFiles.RegisterFile(fd); err != nil {
		panic(err)
	}
}

// testImpl backs a hand-written ServiceDesc so the tests need no generated code.
type testImpl struct {
	entered     chan struct{} // receives once per Block call that started
	flakyCalls  atomic.Int32
	unsafeCalls atomic.Int32
	release     chan struct{} // closed by unblock to let Block calls return
	once        sync.Once
}

func (ti *testImpl) unblock() { ti.once.Do(func() { close(ti.release) }) }

// unary adapts a typed handler to grpc.MethodDesc, as generated code would,
// including running the server's interceptor chain.
func unary[T any, PT interface {
	*T
	proto.Message
}](name string, fn func(context.Context, PT) (proto.Message, error)) grpc.MethodDesc {
	return grpc.MethodDesc{
		MethodName: name,
		Handler: func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
			in := PT(new(T))
			if err := dec(in); err != nil {
				return nil, err
			}
			h := func(ctx context.Context, req any) (any, error) { return fn(ctx, req.(PT)) }
			if ic == nil {
				return h(ctx, in)
			}
			return ic(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: "/" + testService + "/" + name}, h)
		},
	}
}

func (ti *testImpl) desc() *grpc.ServiceDesc {
	return &grpc.ServiceDesc{
		ServiceName: testService,
		HandlerType: (*any)(nil),
		Metadata:    testProtoFile,
		Methods: []grpc.MethodDesc{
			unary("Echo", func(ctx context.Context, in *wrapperspb.BytesValue) (proto.Message, error) {
				return in, nil
			}),
			unary("Panic", func(ctx context.Context, _ *emptypb.Empty) (proto.Message, error) {
				panic("boom: secret detail")
			}),
			unary("Flaky", func(ctx context.Context, _ *emptypb.Empty) (proto.Message, error) {
				if ti.flakyCalls.Add(1) < 3 {
					return nil, status.Error(codes.Unavailable, "try again")
				}
				return &emptypb.Empty{}, nil
			}),
			unary("Unsafe", func(ctx context.Context, _ *emptypb.Empty) (proto.Message, error) {
				ti.unsafeCalls.Add(1)
				return nil, status.Error(codes.Unavailable, "try again")
			}),
			unary("Block", func(ctx context.Context, _ *emptypb.Empty) (proto.Message, error) {
				ti.entered <- struct{}{}
				<-ti.release // deliberately ignores ctx: only Stop may abandon it
				return &emptypb.Empty{}, nil
			}),
		},
		Streams: []grpc.StreamDesc{
			{
				StreamName:    "PanicStream",
				ServerStreams: true,
				Handler:       func(any, grpc.ServerStream) error { panic("stream boom") },
			},
			{
				StreamName:    "EchoStream",
				ServerStreams: true,
				Handler: func(_ any, ss grpc.ServerStream) error {
					in := &wrapperspb.BytesValue{}
					if err := ss.RecvMsg(in); err != nil {
						return err
					}
					return ss.SendMsg(in)
				},
			},
		},
	}
}

// syncBuffer is written by server goroutines while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lines returns the JSON log records whose msg equals msg.
func (b *syncBuffer) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l == "" {
			continue
		}
		m := map[string]any{}
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

type harness struct {
	srv      *Server
	conn     *grpc.ClientConn
	addr     string
	logs     *syncBuffer
	tel      *telemetry.Telemetry
	impl     *testImpl
	serveErr chan error
}

func start(t *testing.T, mutate func(*Options)) *harness {
	t.Helper()
	t.Setenv(telemetry.EnvOTLPEndpoint, "")
	logs := &syncBuffer{}
	logger := telemetry.NewLogger(logs, slog.LevelDebug)
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{ServiceName: "grpcserver-test", Logger: logger})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })

	opts := Options{Name: "test", Logger: logger, Telemetry: tel}
	if mutate != nil {
		mutate(&opts)
	}
	srv := New(opts)
	impl := &testImpl{entered: make(chan struct{}, 8), release: make(chan struct{})}
	srv.RegisterService(impl.desc(), impl)

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(lis) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	// Registered after Shutdown so it runs first (cleanups are LIFO): a
	// still-blocked handler would otherwise hold the final GracefulStop.
	t.Cleanup(impl.unblock)

	conn, err := Dial(lis.Addr().String(), tel)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return &harness{srv: srv, conn: conn, addr: lis.Addr().String(), logs: logs, tel: tel, impl: impl, serveErr: serveErr}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	t.Cleanup(cancel)
	return ctx
}

func (h *harness) echo(ctx context.Context, payload []byte, opts ...grpc.CallOption) (*wrapperspb.BytesValue, error) {
	out := &wrapperspb.BytesValue{}
	err := h.conn.Invoke(ctx, methodEcho, wrapperspb.Bytes(payload), out, opts...)
	return out, err
}

func healthStatus(t *testing.T, conn *grpc.ClientConn, service string) healthgrpc.HealthCheckResponse_ServingStatus {
	t.Helper()
	resp, err := healthgrpc.NewHealthClient(conn).Check(ctxT(t), &healthgrpc.HealthCheckRequest{Service: service})
	require.NoError(t, err)
	return resp.GetStatus()
}

func TestHealthFollowsServices(t *testing.T) {
	h := start(t, nil)
	const (
		serving    = healthgrpc.HealthCheckResponse_SERVING
		notServing = healthgrpc.HealthCheckResponse_NOT_SERVING
	)

	// Not ready until a service says so.
	assert.Equal(t, notServing, healthStatus(t, h.conn, ""))

	h.srv.SetServing(testService)
	assert.Equal(t, serving, healthStatus(t, h.conn, ""))
	assert.Equal(t, serving, healthStatus(t, h.conn, testService))

	h.srv.SetServing("other")
	h.srv.SetNotServing("other")
	assert.Equal(t, notServing, healthStatus(t, h.conn, ""), "one unready service makes the process unready")
	assert.Equal(t, serving, healthStatus(t, h.conn, testService))

	h.srv.SetServing("other")
	assert.Equal(t, serving, healthStatus(t, h.conn, ""))

	_, err := healthgrpc.NewHealthClient(h.conn).Check(ctxT(t), &healthgrpc.HealthCheckRequest{Service: "nope"})
	assert.Equal(t, codes.NotFound, status.Code(err))
}

func TestReflectionListsServices(t *testing.T) {
	h := start(t, nil)
	stream, err := reflectionpb.NewServerReflectionClient(h.conn).ServerReflectionInfo(ctxT(t))
	require.NoError(t, err)

	require.NoError(t, stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{ListServices: "*"},
	}))
	resp, err := stream.Recv()
	require.NoError(t, err)
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	assert.Contains(t, names, "grpc.health.v1.Health")
	assert.Contains(t, names, "grpc.reflection.v1.ServerReflection")
	assert.Contains(t, names, testService)

	// grpcurl "describe" needs descriptors, not only names.
	require.NoError(t, stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: "grpc.health.v1.Health"},
	}))
	resp, err = stream.Recv()
	require.NoError(t, err)
	assert.NotEmpty(t, resp.GetFileDescriptorResponse().GetFileDescriptorProto())
	require.NoError(t, stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: testService},
	}))
	resp, err = stream.Recv()
	require.NoError(t, err)
	assert.NotEmpty(t, resp.GetFileDescriptorResponse().GetFileDescriptorProto(), "%v", resp.GetErrorResponse())
	require.NoError(t, stream.CloseSend())
}

func TestPanicReturnsInternalAndServerKeepsServing(t *testing.T) {
	h := start(t, nil)
	ctx := ctxT(t)

	var trailer metadata.MD
	err := h.conn.Invoke(ctx, methodPanic, &emptypb.Empty{}, &emptypb.Empty{}, grpc.Trailer(&trailer))
	st := status.Convert(err)
	assert.Equal(t, codes.Internal, st.Code())
	assert.Equal(t, "internal error", st.Message(), "panic details must not leak to clients")
	require.Len(t, trailer.Get(RequestIDHeader), 1, "failed calls carry the request id in the trailer")

	// Streams are covered too.
	cs, err := h.conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, methodPanicS)
	require.NoError(t, err)
	require.NoError(t, cs.SendMsg(&emptypb.Empty{}))
	require.NoError(t, cs.CloseSend())
	assert.Equal(t, codes.Internal, status.Code(cs.RecvMsg(&emptypb.Empty{})))
	assert.Len(t, cs.Trailer().Get(RequestIDHeader), 1)

	out, err := h.echo(ctx, []byte("still alive"))
	require.NoError(t, err)
	assert.Equal(t, "still alive", string(out.GetValue()))

	panics := h.logs.lines(t, "grpc handler panic")
	require.Len(t, panics, 2)
	assert.Equal(t, "ERROR", panics[0]["level"])
	assert.Equal(t, methodPanic, panics[0]["method"])
	assert.Equal(t, "Internal", panics[0]["code"])
	assert.Equal(t, trailer.Get(RequestIDHeader)[0], panics[0]["request_id"])
	assert.Contains(t, panics[0]["panic"], "secret detail")
	assert.Contains(t, panics[0]["stack"], "runtime/debug.Stack")
	assert.NotEmpty(t, panics[0][telemetry.TraceIDKey])

	body := scrape(t, h.tel)
	assert.Regexp(t, `rpc_server_panics_total\{[^}]*rpc_method="Panic"[^}]*\} 1\b`, body)
	assert.Regexp(t, `rpc_server_panics_total\{[^}]*rpc_method="PanicStream"[^}]*\} 1\b`, body)
	// The otelgrpc stats handler records call metrics on the same registry.
	assert.Contains(t, body, "rpc_server_call_duration")
}

func scrape(t *testing.T, tel *telemetry.Telemetry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	tel.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	return rec.Body.String()
}

func TestRequestIDEchoedInHeader(t *testing.T) {
	h := start(t, nil)
	ctx := ctxT(t)

	t.Run("caller supplied", func(t *testing.T) {
		var hdr metadata.MD
		_, err := h.echo(metadata.AppendToOutgoingContext(ctx, RequestIDHeader, "req-abc-123"), nil, grpc.Header(&hdr))
		require.NoError(t, err)
		assert.Equal(t, []string{"req-abc-123"}, hdr.Get(RequestIDHeader))
	})
	t.Run("generated", func(t *testing.T) {
		var hdr metadata.MD
		_, err := h.echo(ctx, nil, grpc.Header(&hdr))
		require.NoError(t, err)
		require.Len(t, hdr.Get(RequestIDHeader), 1)
		assert.Regexp(t, `^[0-9a-f]{32}$`, hdr.Get(RequestIDHeader)[0])
	})
	t.Run("unsafe value replaced", func(t *testing.T) {
		var hdr metadata.MD
		bad := strings.Repeat("x", maxRequestIDLen+1)
		_, err := h.echo(metadata.AppendToOutgoingContext(ctx, RequestIDHeader, bad), nil, grpc.Header(&hdr))
		require.NoError(t, err)
		require.Len(t, hdr.Get(RequestIDHeader), 1)
		assert.Regexp(t, `^[0-9a-f]{32}$`, hdr.Get(RequestIDHeader)[0])
	})
	t.Run("stream", func(t *testing.T) {
		cs, err := h.conn.NewStream(metadata.AppendToOutgoingContext(ctx, RequestIDHeader, "stream-id"),
			&grpc.StreamDesc{ServerStreams: true}, methodEchoS)
		require.NoError(t, err)
		require.NoError(t, cs.SendMsg(wrapperspb.Bytes([]byte("x"))))
		require.NoError(t, cs.CloseSend())
		hdr, err := cs.Header()
		require.NoError(t, err)
		assert.Equal(t, []string{"stream-id"}, hdr.Get(RequestIDHeader))
		require.NoError(t, cs.RecvMsg(&wrapperspb.BytesValue{}))
		assert.ErrorIs(t, cs.RecvMsg(&wrapperspb.BytesValue{}), io.EOF)
	})
	t.Run("forwarded by Dial from a serving context", func(t *testing.T) {
		var hdr metadata.MD
		_, err := h.echo(contextWithRequestID(ctx, "upstream-id"), nil, grpc.Header(&hdr))
		require.NoError(t, err)
		assert.Equal(t, []string{"upstream-id"}, hdr.Get(RequestIDHeader))
	})
}

func TestMessageSizeLimits(t *testing.T) {
	h := start(t, func(o *Options) {
		o.MaxRecvMsgBytes = 4 << 10
		o.MaxSendMsgBytes = 1 << 10
	})
	ctx := ctxT(t)

	_, err := h.echo(ctx, make([]byte, 8<<10))
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "request over MaxRecvMsgBytes: %v", err)

	_, err = h.echo(ctx, make([]byte, 2<<10))
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "response over MaxSendMsgBytes: %v", err)

	_, err = h.echo(ctx, make([]byte, 512))
	require.NoError(t, err, "server keeps serving after rejecting oversized messages")
}

func TestAccessLogCarriesTraceID(t *testing.T) {
	h := start(t, nil)
	ctx, span := h.tel.TracerProvider().Tracer("test").Start(ctxT(t), "client-op")
	defer span.End()

	var hdr metadata.MD
	_, err := h.echo(ctx, []byte("hi"), grpc.Header(&hdr))
	require.NoError(t, err)
	_, err = healthgrpc.NewHealthClient(h.conn).Check(ctx, &healthgrpc.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = h.echo(ctx, make([]byte, 10), grpc.MaxCallSendMsgSize(1)) // fails client-side, never logged
	require.Error(t, err)

	// The access log is written after the response is sent.
	var calls []map[string]any
	require.Eventually(t, func() bool {
		calls = h.logs.lines(t, "grpc call")
		return len(calls) >= 2
	}, waitFor, tick)

	byMethod := map[string]map[string]any{}
	for _, c := range calls {
		byMethod[c["method"].(string)] = c
	}
	echo := byMethod[methodEcho]
	require.NotNil(t, echo)
	assert.Equal(t, "INFO", echo["level"])
	assert.Equal(t, "OK", echo["code"])
	assert.Equal(t, "test", echo["server"])
	assert.Equal(t, hdr.Get(RequestIDHeader)[0], echo["request_id"])
	assert.Contains(t, echo["peer"], "127.0.0.1:")
	assert.IsType(t, float64(0), echo["duration_ms"])
	// Same trace as the client span: the context crossed the wire.
	assert.Equal(t, span.SpanContext().TraceID().String(), echo[telemetry.TraceIDKey])
	assert.NotEmpty(t, echo[telemetry.SpanIDKey])

	hc := byMethod["/grpc.health.v1.Health/Check"]
	require.NotNil(t, hc)
	assert.Equal(t, "DEBUG", hc["level"], "successful probes are debug noise")
}

func TestLogLevelByCode(t *testing.T) {
	assert.Equal(t, slog.LevelInfo, levelFor(codes.OK))
	for _, c := range []codes.Code{codes.InvalidArgument, codes.NotFound, codes.PermissionDenied, codes.Unauthenticated, codes.ResourceExhausted, codes.Canceled, codes.DeadlineExceeded} {
		assert.Equal(t, slog.LevelWarn, levelFor(c), c.String())
	}
	for _, c := range []codes.Code{codes.Internal, codes.Unknown, codes.DataLoss, codes.Unavailable} {
		assert.Equal(t, slog.LevelError, levelFor(c), c.String())
	}
	assert.Equal(t, codes.Canceled, callStatus(context.Canceled).Code())
	assert.Equal(t, codes.Unknown, callStatus(errors.New("x")).Code())
}

func TestCallerInterceptorsRunAfterBuiltins(t *testing.T) {
	var seen string
	h := start(t, func(o *Options) {
		o.UnaryInterceptors = []grpc.UnaryServerInterceptor{
			func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
				seen = RequestIDFromContext(ctx)
				if info.FullMethod == methodEcho && len(req.(*wrapperspb.BytesValue).GetValue()) == 0 {
					return nil, status.Error(codes.Unauthenticated, "no token")
				}
				return handler(ctx, req)
			},
		}
	})
	var trailer metadata.MD
	_, err := h.echo(ctxT(t), nil, grpc.Trailer(&trailer))
	assert.Equal(t, codes.Unauthenticated, status.Code(err))
	require.Len(t, trailer.Get(RequestIDHeader), 1)
	assert.Equal(t, trailer.Get(RequestIDHeader)[0], seen)

	require.Eventually(t, func() bool {
		for _, l := range h.logs.lines(t, "grpc call") {
			if l["code"] == "Unauthenticated" {
				return l["level"] == "WARN" && l["error"] == "no token"
			}
		}
		return false
	}, waitFor, tick)
}

// startBlocked starts a Block call and waits until its handler is running.
func startBlocked(t *testing.T, h *harness) <-chan error {
	t.Helper()
	res := make(chan error, 1)
	go func() {
		res <- h.conn.Invoke(context.Background(), methodBlock, &emptypb.Empty{}, &emptypb.Empty{})
	}()
	select {
	case <-h.impl.entered:
	case <-time.After(waitFor):
		t.Fatal("Block handler never started")
	}
	return res
}

func TestShutdownDrainsInFlightCalls(t *testing.T) {
	h := start(t, nil)
	h.srv.SetServing(testService)

	watch, err := healthgrpc.NewHealthClient(h.conn).Watch(ctxT(t), &healthgrpc.HealthCheckRequest{})
	require.NoError(t, err)
	first, err := watch.Recv()
	require.NoError(t, err)
	require.Equal(t, healthgrpc.HealthCheckResponse_SERVING, first.GetStatus())

	blocked := startBlocked(t, h)

	shutdownDone := make(chan struct{})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		h.srv.Shutdown(ctx)
		close(shutdownDone)
	}()

	// Watchers learn about the shutdown, then their stream ends cleanly so
	// it does not hold up GracefulStop.
	next, err := watch.Recv()
	require.NoError(t, err)
	assert.Equal(t, healthgrpc.HealthCheckResponse_NOT_SERVING, next.GetStatus())
	_, err = watch.Recv()
	assert.ErrorIs(t, err, io.EOF)

	resp, err := h.srv.Health().Check(context.Background(), &healthgrpc.HealthCheckRequest{Service: testService})
	require.NoError(t, err)
	assert.Equal(t, healthgrpc.HealthCheckResponse_NOT_SERVING, resp.GetStatus())

	// The listener is closed: no new connections.
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", h.addr)
		if err == nil {
			_ = c.Close()
		}
		return err != nil
	}, waitFor, tick)

	// The handler is still blocked, so GracefulStop cannot have finished.
	select {
	case <-shutdownDone:
		t.Fatal("Shutdown returned while a call was in flight")
	default:
	}

	h.impl.unblock()
	require.NoError(t, <-blocked, "in-flight call completes successfully")
	require.Eventually(t, func() bool {
		select {
		case <-shutdownDone:
			return true
		default:
			return false
		}
	}, waitFor, tick)
	require.NoError(t, <-h.serveErr)
	assert.Len(t, h.logs.lines(t, "grpc shutdown: stopped gracefully"), 1)
	assert.Empty(t, h.logs.lines(t, "grpc shutdown: deadline reached, forcing stop"))

	// Status changes after shutdown are ignored.
	h.srv.SetServing(testService)
	resp, err = h.srv.Health().Check(context.Background(), &healthgrpc.HealthCheckRequest{})
	require.NoError(t, err)
	assert.Equal(t, healthgrpc.HealthCheckResponse_NOT_SERVING, resp.GetStatus())
}

func TestShutdownForcesStopWhenContextEnds(t *testing.T) {
	for name, mkCtx := range map[string]func() (context.Context, context.CancelFunc){
		"already cancelled": func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		},
		"short deadline": func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		},
	} {
		t.Run(name, func(t *testing.T) {
			// DrainDelay is bounded by ctx as well.
			h := start(t, func(o *Options) { o.DrainDelay = time.Hour })
			blocked := startBlocked(t, h)

			done := make(chan struct{})
			go func() {
				ctx, cancel := mkCtx()
				defer cancel()
				h.srv.Shutdown(ctx)
				close(done)
			}()
			require.Eventually(t, func() bool {
				select {
				case <-done:
					return true
				default:
					return false
				}
			}, waitFor, tick, "Shutdown must not wait for a handler that never returns")

			err := <-blocked
			assert.Equal(t, codes.Unavailable, status.Code(err), "client sees the connection go away: %v", err)
			require.NoError(t, <-h.serveErr)
			assert.Len(t, h.logs.lines(t, "grpc shutdown: deadline reached, forcing stop"), 1)
		})
	}
}

func TestServeAfterShutdownReturnsNil(t *testing.T) {
	srv := New(Options{Logger: slog.New(slog.DiscardHandler)})
	srv.Shutdown(context.Background())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = lis.Close() }() // Serve may have closed it already
	require.NoError(t, srv.Serve(lis))
}

func TestDialRetriesOnlyIdempotentMethods(t *testing.T) {
	cfg := DefaultServiceConfig()
	assert.Contains(t, cfg, `{"service":"memory.test.v1.Test","method":"Echo"}`)
	assert.Contains(t, cfg, `{"service":"memory.test.v1.Test","method":"Flaky"}`)
	assert.NotContains(t, cfg, `"method":"Unsafe"`)
	assert.NotContains(t, cfg, `"method":"Block"`)

	h := start(t, nil)
	ctx := ctxT(t)

	// IDEMPOTENT: two UNAVAILABLEs are retried transparently.
	require.NoError(t, h.conn.Invoke(ctx, "/"+testService+"/Flaky", &emptypb.Empty{}, &emptypb.Empty{}))
	assert.EqualValues(t, 3, h.impl.flakyCalls.Load())

	// Not annotated: never replayed, the caller decides.
	err := h.conn.Invoke(ctx, "/"+testService+"/Unsafe", &emptypb.Empty{}, &emptypb.Empty{})
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.EqualValues(t, 1, h.impl.unsafeCalls.Load())
}
