package grpcserver

import (
	"context"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// A process that serves the REST edge beside the services (all, read)
// called them over gRPC on its own socket: on a REST read that was a
// quarter of the CPU — HTTP/2 framing both ways, the protobuf encoding
// both ways, the loopback's system calls (issue #30). Local calls the
// services' unary methods in the process instead, and otherwise as the
// network would: the server's stats handler (spans, rpc.server.*
// metrics) and interceptor chain (request id, errors, recovery, access
// log, authentication, rate limits) run, the handler sees the caller's
// metadata as incoming and a peer, headers and trailers come back
// through the call options, and the request and answer are copies, so
// neither side shares a message with the other. Streams, and methods
// not registered through RegisterService, go over the network.

// localMethod is a unary method registered through RegisterService.
type localMethod struct {
	impl    any
	handler grpc.MethodHandler
}

// RegisterService registers a service on the gRPC server and keeps its
// unary methods for Local (grpc.ServiceRegistrar).
func (s *Server) RegisterService(desc *grpc.ServiceDesc, impl any) {
	s.grpc.RegisterService(desc, impl)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.local == nil {
		s.local = map[string]localMethod{}
	}
	for _, m := range desc.Methods {
		s.local["/"+desc.ServiceName+"/"+m.MethodName] = localMethod{impl: impl, handler: m.Handler}
	}
}

// Local returns a connection to this server's services that calls their
// unary methods in the process; everything else goes over remote (a
// client connection to this very server).
func (s *Server) Local(remote grpc.ClientConnInterface) grpc.ClientConnInterface {
	return &localConn{s: s, remote: remote}
}

type localConn struct {
	s      *Server
	remote grpc.ClientConnInterface
}

// localAddr is the peer address a local call shows the server.
type localAddr struct{}

func (localAddr) Network() string { return "local" }
func (localAddr) String() string  { return "local" }

var _ net.Addr = localAddr{}

func (c *localConn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return c.remote.NewStream(ctx, desc, method, opts...)
}

func (c *localConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	c.s.mu.Lock()
	m, ok := c.s.local[method]
	c.s.mu.Unlock()
	if !ok {
		return c.remote.Invoke(ctx, method, args, reply, opts...)
	}
	if err := ctx.Err(); err != nil {
		return status.FromContextError(err).Err() // a client sends nothing then
	}
	ctx = withOutgoingRequestID(ctx) // the client interceptor's part

	// The server's side of the call: the caller's metadata incoming, none
	// outgoing (the handler's own calls carry their own credentials), a
	// peer, a stream that keeps headers and trailers.
	md, _ := metadata.FromOutgoingContext(ctx)
	sctx := metadata.NewIncomingContext(ctx, md.Copy())
	sctx = metadata.NewOutgoingContext(sctx, metadata.MD{})
	sctx = peer.NewContext(sctx, &peer.Peer{Addr: localAddr{}, LocalAddr: localAddr{}})
	st := &localStream{method: method}
	sctx = grpc.NewContextWithServerTransportStream(sctx, st)
	begin := time.Now()
	if c.s.stats != nil {
		sctx = c.s.stats.TagRPC(sctx, &stats.RPCTagInfo{FullMethodName: method})
		c.s.stats.HandleRPC(sctx, &stats.Begin{BeginTime: begin})
	}

	var resp any
	var err error
	if n := proto.Size(args.(proto.Message)); n > c.s.maxRecv {
		// Refused before the interceptors, as the server refuses it.
		err = status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", n, c.s.maxRecv)
	} else {
		resp, err = m.handler(m.impl, sctx, func(in any) error {
			proto.Merge(in.(proto.Message), args.(proto.Message))
			return nil
		}, c.s.unary)
	}
	if err == nil {
		if n := proto.Size(resp.(proto.Message)); n > c.s.maxSend {
			err = status.Errorf(codes.ResourceExhausted, "grpc: trying to send message larger than max (%d vs. %d)", n, c.s.maxSend)
		}
	}
	if err != nil {
		err = status.Convert(err).Err() // what a client over the network gets
	}
	if c.s.stats != nil {
		c.s.stats.HandleRPC(sctx, &stats.End{BeginTime: begin, EndTime: time.Now(), Trailer: st.trailer, Error: err})
	}

	for _, o := range opts {
		switch o := o.(type) {
		case grpc.HeaderCallOption:
			*o.HeaderAddr = st.header
		case grpc.TrailerCallOption:
			*o.TrailerAddr = st.trailer
		case grpc.PeerCallOption:
			*o.PeerAddr = peer.Peer{Addr: localAddr{}, LocalAddr: localAddr{}}
		}
	}
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return status.FromContextError(err).Err() // a client stops waiting then
	}
	proto.Merge(reply.(proto.Message), resp.(proto.Message))
	return nil
}

// localStream keeps what a handler sets with grpc.SetHeader, SendHeader
// and SetTrailer. A unary handler runs on one goroutine.
type localStream struct {
	method          string
	header, trailer metadata.MD
}

func (s *localStream) Method() string { return s.method }

func (s *localStream) SetHeader(md metadata.MD) error {
	s.header = metadata.Join(s.header, md)
	return nil
}

func (s *localStream) SendHeader(md metadata.MD) error { return s.SetHeader(md) }

func (s *localStream) SetTrailer(md metadata.MD) error {
	s.trailer = metadata.Join(s.trailer, md)
	return nil
}
