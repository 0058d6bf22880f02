// Package gen holds what `buf generate` makes from proto/ (see
// buf.gen.yaml): Go packages under gen/go and the OpenAPI documents under
// gen/openapi.
//
// This file and gen/descriptor/descriptor.go are the hand-written ones. They sit beside the plugins'
// output directories, not inside them: buf empties those before generating
// (clean: true), while it leaves this folder's own files alone, so
// regenerating neither deletes nor changes it and `make check-generated`
// stays meaningful. go:embed cannot reach into a parent folder, so the
// embedding package has to live here rather than next to its user.
package gen

import _ "embed"

// OpenAPI is the OpenAPI 3.1 document of the REST API,
// gen/openapi/memory.openapi.json (written by cmd/openapigen from
// protoc-gen-openapiv2's memory.swagger.json and the proto descriptors, as
// part of `make generate`), compiled into the binary so the REST edge can
// serve it at /openapi.json and render it at /docs. Callers must not modify
// it.
//
//go:embed openapi/memory.openapi.json
var OpenAPI []byte
