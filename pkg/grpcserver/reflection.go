package grpcserver

import (
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/garden-bloom/memory/gen/descriptor"
)

// registerReflection serves server reflection (v1 and v1alpha, for older
// clients) from the API's descriptors with their comments, so
// `grpcurl describe` shows what each service, method and field is for. The
// descriptors compiled into gen/go have no comments (protoc-gen-go drops
// SourceCodeInfo); gen/descriptor has them. Files it does not hold (health,
// reflection itself) come from the Go registry, without comments.
func registerReflection(s *grpc.Server) error {
	files, err := apiDescriptors()
	opts := reflection.ServerOptions{Services: s}
	if err == nil {
		opts.DescriptorResolver = layeredResolver{files, protoregistry.GlobalFiles}
	} // else the default, protoregistry.GlobalFiles: no comments, still usable
	reflectionv1.RegisterServerReflectionServer(s, reflection.NewServerV1(opts))
	reflectionv1alpha.RegisterServerReflectionServer(s, reflection.NewServer(opts))
	return err
}

// apiDescriptors parses gen/descriptor's FileDescriptorSet once.
var apiDescriptors = sync.OnceValues(func() (*protoregistry.Files, error) {
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(descriptor.FileDescriptorSet, &set); err != nil {
		return nil, fmt.Errorf("gen/descriptor: %w", err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		return nil, fmt.Errorf("gen/descriptor: %w", err)
	}
	return files, nil
})

// layeredResolver finds a file or a name in first, else in then. A file is
// served whole from one of them, imports included (FileDescriptor.Imports),
// so the two never mix within a file.
type layeredResolver struct {
	first, then *protoregistry.Files
}

func (r layeredResolver) FindFileByPath(path string) (protoreflect.FileDescriptor, error) {
	fd, err := r.first.FindFileByPath(path)
	if errors.Is(err, protoregistry.NotFound) {
		return r.then.FindFileByPath(path)
	}
	return fd, err
}

func (r layeredResolver) FindDescriptorByName(name protoreflect.FullName) (protoreflect.Descriptor, error) {
	d, err := r.first.FindDescriptorByName(name)
	if errors.Is(err, protoregistry.NotFound) {
		return r.then.FindDescriptorByName(name)
	}
	return d, err
}
