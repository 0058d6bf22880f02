// Package descriptor is the API's protos with their comments, for server
// reflection (pkg/grpcserver): memory.binpb is a FileDescriptorSet of every
// proto of the buf workspace — proto/gardenbloom, the vendored googleapis
// (google/api, google/rpc) and the google/protobuf files they import — that
// keeps SourceCodeInfo, which the Go code generated into gen/go leaves out.
//
// `make generate` writes memory.binpb (`buf build -o`); this file is
// hand-written. buf empties only the plugins' output folders (gen/go,
// gen/openapi), never this one.
package descriptor

import _ "embed"

// FileDescriptorSet is gen/descriptor/memory.binpb, a serialized
// google.protobuf.FileDescriptorSet with source info. Callers must not
// modify it.
//
//go:embed memory.binpb
var FileDescriptorSet []byte
