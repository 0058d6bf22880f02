package grpcserver

import (
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// reflectionClient serves the search service behind New's reflection on a
// real socket and returns a reflection v1 stream to it, as grpcurl opens.
func reflectionClient(t *testing.T) reflectionpb.ServerReflection_ServerReflectionInfoClient {
	t.Helper()
	conn := serveSearch(t, memoryv1.UnimplementedSearchIndexServiceServer{})
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctxT(t))
	require.NoError(t, err)
	return stream
}

// serveSearch serves impl as the search service on a real socket, from a
// server built by New, and returns a client connection to it.
func serveSearch(t *testing.T, impl memoryv1.SearchIndexServiceServer) *grpc.ClientConn {
	t.Helper()
	srv := New(Options{Name: "api-test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	memoryv1.RegisterSearchIndexServiceServer(srv.GRPC(), impl)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.GRPC().Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// describe asks for the file that declares symbol, as grpcurl describe
// does, and returns the symbol's descriptor built from what came back on
// the stream so far (a file is sent once per stream), kept in set.
func describe(t *testing.T, stream reflectionpb.ServerReflection_ServerReflectionInfoClient, set *descriptorpb.FileDescriptorSet, symbol string) protoreflect.Descriptor {
	t.Helper()
	require.NoError(t, stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: symbol}}))
	resp, err := stream.Recv()
	require.NoError(t, err)
	require.Nil(t, resp.GetErrorResponse(), symbol)
	for _, b := range resp.GetFileDescriptorResponse().GetFileDescriptorProto() {
		fd := &descriptorpb.FileDescriptorProto{}
		require.NoError(t, proto.Unmarshal(b, fd))
		set.File = append(set.File, fd)
	}
	files, err := protodesc.NewFiles(set)
	require.NoError(t, err, "the answers hold the file and all its imports")
	d, err := files.FindDescriptorByName(protoreflect.FullName(symbol))
	require.NoError(t, err)
	return d
}

func leading(d protoreflect.Descriptor) string {
	return strings.TrimSpace(d.ParentFile().SourceLocations().ByDescriptor(d).LeadingComments)
}

// Reflection serves the protos' comments, so grpcurl describe shows what a
// service, a method or a field is for (issue #24, point 7).
func TestReflectionServesComments(t *testing.T) {
	stream := reflectionClient(t)
	set := &descriptorpb.FileDescriptorSet{}

	require.NoError(t, stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{ListServices: "*"}}))
	resp, err := stream.Recv()
	require.NoError(t, err)
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	require.Contains(t, names, "gardenbloom.memory.v1.SearchIndexService")

	svc := describe(t, stream, set, "gardenbloom.memory.v1.SearchIndexService").(protoreflect.ServiceDescriptor)
	require.True(t, strings.HasPrefix(leading(svc), "SearchIndexService is BM25 search over the monorepo"), leading(svc))
	search := svc.Methods().ByName("Search")
	require.NotNil(t, search)
	require.NotEmpty(t, leading(search), "a method's comment")
	require.NotEmpty(t, leading(search.Input().Fields().ByName("query")), "a field's comment, from the imported file")

	// A message from another of our files, and the error details every
	// error status carries, from the vendored googleapis.
	msg := describe(t, stream, set, "gardenbloom.memory.v1.AssembleContextRequest").(protoreflect.MessageDescriptor)
	require.NotEmpty(t, leading(msg.Fields().ByName("query_hint")))
	info := describe(t, stream, set, "google.rpc.ErrorInfo")
	require.True(t, strings.HasPrefix(leading(info), "Describes the cause of the error with structured details."), leading(info))

	// Files outside gen/descriptor still resolve (from the Go registry).
	require.NotNil(t, describe(t, stream, set, "grpc.health.v1.Health"))
	require.NoError(t, stream.CloseSend())
}

// gen/descriptor is what gen/go was generated from: the same descriptors
// but for the comments. A stale memory.binpb (proto changed, `make
// generate` not run) would make reflection describe another API.
func TestReflectionDescriptorsMatchGeneratedCode(t *testing.T) {
	files, err := apiDescriptors()
	require.NoError(t, err)
	_ = memoryv1.File_gardenbloom_memory_v1_search_index_proto // linked in, registered
	checked := 0
	protoregistry.GlobalFiles.RangeFilesByPackage("gardenbloom.memory.v1", func(generated protoreflect.FileDescriptor) bool {
		embedded, err := files.FindFileByPath(generated.Path())
		require.NoError(t, err, "%s is missing from gen/descriptor/memory.binpb: run make generate", generated.Path())
		want := protodesc.ToFileDescriptorProto(generated)
		got := protodesc.ToFileDescriptorProto(embedded)
		require.NotNil(t, got.GetSourceCodeInfo(), "comments are kept")
		got.SourceCodeInfo = nil
		require.True(t, proto.Equal(want, got), "%s in gen/descriptor/memory.binpb differs from gen/go: run make generate", generated.Path())
		checked++
		return true
	})
	require.Positive(t, checked)
	require.Equal(t, checked, files.NumFilesByPackage("gardenbloom.memory.v1"))
}
