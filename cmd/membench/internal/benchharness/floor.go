package benchharness

import (
	"context"
	"net"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// The floor is what a read costs when the server does nothing: a gRPC
// server in the harness process (same grpc-go, loopback TCP, a bearer token
// header checked for its prefix only) that answers each method with a
// response captured from the real service, pre-serialized, so it sends the
// same bytes without marshalling anything. The client side is the real
// generated client, so the floor includes decoding the response.

// rawCodec passes pre-serialized messages through; requests are read as
// bytes and ignored.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }

func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = data
	return nil
}

// floorServer serves canned responses for the read methods.
type floorServer struct {
	srv  *grpc.Server
	addr string
	conn *grpc.ClientConn
}

// floorMethods maps a read scenario to its gRPC service and method.
var floorMethods = map[string][2]string{
	ScReadBasic: {memoryv1.ContextAssemblyService_ServiceDesc.ServiceName, "ReadMemory"},
	ScReadWide:  {memoryv1.ContextAssemblyService_ServiceDesc.ServiceName, "ReadMemory"},
	ScAssemble:  {memoryv1.ContextAssemblyService_ServiceDesc.ServiceName, "AssembleContext"},
	ScSearch:    {memoryv1.SearchIndexService_ServiceDesc.ServiceName, "Search"},
	ScGetEntity: {memoryv1.EntityGraphService_ServiceDesc.ServiceName, "GetEntity"},
}

// startFloor serves payload for one read scenario.
func startFloor(scenario string, payload []byte) (*floorServer, error) {
	sm := floorMethods[scenario]
	srv := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.MaxSendMsgSize(16<<20))
	srv.RegisterService(&grpc.ServiceDesc{
		ServiceName: sm[0],
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: sm[1], Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			var in []byte
			if err := dec(&in); err != nil {
				return nil, err
			}
			md, _ := metadata.FromIncomingContext(ctx)
			if a := md.Get("authorization"); len(a) == 0 || !strings.HasPrefix(a[0], "Bearer ") {
				return nil, status.Error(codes.Unauthenticated, "no bearer token")
			}
			out := payload
			return &out, nil
		}}},
	}, struct{}{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() { _ = srv.Serve(lis) }()
	f := &floorServer{srv: srv, addr: lis.Addr().String()}
	if f.conn, err = grpc.NewClient(f.addr, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		srv.Stop()
		return nil, err
	}
	return f, nil
}

func (f *floorServer) target() readTarget {
	return readTarget{ca: memoryv1.NewContextAssemblyServiceClient(f.conn), si: memoryv1.NewSearchIndexServiceClient(f.conn),
		eg: memoryv1.NewEntityGraphServiceClient(f.conn)}
}

func (f *floorServer) stop() {
	_ = f.conn.Close()
	f.srv.Stop()
}
