package grpcserver

import (
	"context"
	"io"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Local (issue #30: the REST edge called its own process's services over
// a loopback socket) answers as the network does: the same answers and
// errors, the caller's metadata seen by the interceptors as incoming and
// not passed on as outgoing, headers and trailers back, the access log
// and rpc.server metrics written, size limits kept, copies both ways, and
// streams over the network.
func TestLocalCallsAnswerAsTheNetwork(t *testing.T) {
	type seen struct {
		auth     []string
		outgoing bool
		peer     string
	}
	var last seen
	h := start(t, func(o *Options) {
		o.MaxRecvMsgBytes, o.MaxSendMsgBytes = 4<<10, 2<<10
		o.UnaryInterceptors = []grpc.UnaryServerInterceptor{
			func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
				md, _ := metadata.FromIncomingContext(ctx)
				omd, _ := metadata.FromOutgoingContext(ctx)
				p, _ := peer.FromContext(ctx)
				last = seen{auth: md.Get("authorization"), outgoing: omd.Len() > 0, peer: p.Addr.Network()}
				if info.FullMethod == methodEcho {
					if err := grpc.SetHeader(ctx, metadata.Pairs("x-echo", "1")); err != nil {
						return nil, err
					}
					if err := grpc.SetTrailer(ctx, metadata.Pairs("x-done", "yes")); err != nil {
						return nil, err
					}
				}
				return handler(ctx, req)
			},
		}
	})
	local := h.srv.Local(h.conn)
	ctx := metadata.AppendToOutgoingContext(ctxT(t), "authorization", "Bearer t0k3n", RequestIDHeader, "req-local-1")

	for _, tc := range []struct {
		name, peer string
		conn       grpc.ClientConnInterface
	}{{"network", "tcp", h.conn}, {"local", "local", local}} {
		conn := tc.conn
		t.Run(tc.name, func(t *testing.T) {
			in := wrapperspb.Bytes([]byte("hello"))
			out := &wrapperspb.BytesValue{}
			var hdr, trailer metadata.MD
			require.NoError(t, conn.Invoke(ctx, methodEcho, in, out, grpc.Header(&hdr), grpc.Trailer(&trailer)))
			assert.Equal(t, "hello", string(out.GetValue()))
			out.Value[0] = 'J'
			assert.Equal(t, "hello", string(in.GetValue()), "the answer is a copy of the request the handler echoed")
			assert.Equal(t, tc.peer, last.peer, "the call's peer says how it came")
			assert.Equal(t, []string{"Bearer t0k3n"}, last.auth, "the interceptors see the caller's metadata")
			assert.False(t, last.outgoing, "and do not pass it on")
			assert.Equal(t, []string{"1"}, hdr.Get("x-echo"))
			assert.Equal(t, []string{"req-local-1"}, hdr.Get(RequestIDHeader))
			assert.Equal(t, []string{"yes"}, trailer.Get("x-done"))

			_, err := grpcInvoke(ctx, conn, methodPanic)
			assert.Equal(t, codes.Internal, status.Code(err))
			assert.NotContains(t, err.Error(), "secret detail")

			err = conn.Invoke(ctx, methodEcho, wrapperspb.Bytes(make([]byte, 8<<10)), &wrapperspb.BytesValue{})
			assert.Equal(t, codes.ResourceExhausted, status.Code(err), "request over the limit: %v", err)
			err = conn.Invoke(ctx, methodEcho, wrapperspb.Bytes(make([]byte, 3<<10)), &wrapperspb.BytesValue{})
			assert.Equal(t, codes.ResourceExhausted, status.Code(err), "answer over the limit: %v", err)

			done, cancel := context.WithCancel(ctx)
			cancel()
			_, err = grpcInvoke(done, conn, methodEcho)
			assert.Equal(t, codes.Canceled, status.Code(err), "a call whose context ended is not made: %v", err)

			cs, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, methodEchoS)
			require.NoError(t, err)
			require.NoError(t, cs.SendMsg(wrapperspb.Bytes([]byte("s"))))
			require.NoError(t, cs.CloseSend())
			got := &wrapperspb.BytesValue{}
			require.NoError(t, cs.RecvMsg(got))
			assert.Equal(t, "s", string(got.GetValue()))
			assert.ErrorIs(t, cs.RecvMsg(got), io.EOF)
		})
	}

	// Both kinds of call are in the access log and the metrics.
	logged := 0
	for _, l := range h.logs.lines(t, "grpc call") {
		if l["method"] == methodEcho && l["request_id"] == "req-local-1" && l["peer"] == "local" {
			logged++
		}
	}
	assert.Equal(t, 2, logged, "the local Echo calls are logged (a request over the limit is refused before the interceptors, as over the network)")
	rec := httptest.NewRecorder()
	h.tel.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	m := regexp.MustCompile(`rpc_server_call_duration_seconds_count\{[^}]*rpc_method="memory.test.v1.Test/Echo"[^}]*\} (\d+)`).FindAllStringSubmatch(rec.Body.String(), -1)
	total := 0
	for _, x := range m {
		n, _ := strconv.Atoi(x[1])
		total += n
	}
	assert.Equal(t, 6, total, "three Echo calls each way are measured: %v", m)
}

func grpcInvoke(ctx context.Context, conn grpc.ClientConnInterface, method string) (*emptypb.Empty, error) {
	out := &emptypb.Empty{}
	return out, conn.Invoke(ctx, method, &emptypb.Empty{}, out)
}
