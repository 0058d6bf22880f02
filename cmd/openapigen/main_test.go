package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
)

// compiledFiles is the descriptor set of the compiled gen/go packages (no
// comments, unlike `buf build`'s, but the same enums).
func compiledFiles(t *testing.T) *protoregistry.Files {
	t.Helper()
	var fds descriptorpb.FileDescriptorSet
	seen := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		for i := 0; i < fd.Imports().Len(); i++ {
			add(fd.Imports().Get(i).FileDescriptor)
		}
		fds.File = append(fds.File, protodesc.ToFileDescriptorProto(fd))
	}
	add(memoryv1.File_gardenbloom_memory_v1_proposal_apply_proto)
	add(memoryv1.File_gardenbloom_memory_v1_context_assembly_proto)
	add(memoryv1.File_gardenbloom_memory_v1_search_index_proto)
	add(memoryv1.File_gardenbloom_memory_v1_entity_graph_proto)
	files, err := protodesc.NewFiles(&fds)
	require.NoError(t, err)
	return files
}

func TestGenerateFromSwagger(t *testing.T) {
	sw, err := os.ReadFile("../../gen/openapi/memory.swagger.json")
	require.NoError(t, err)
	out, err := Generate(sw, compiledFiles(t), "9.9.9")
	require.NoError(t, err)
	checkDocument(t, out, "9.9.9")
}

// The checked-in document (make generate) has the same properties; that it
// is current is make check-generated's job.
func TestCheckedInDocument(t *testing.T) {
	doc, err := os.ReadFile("../../gen/openapi/memory.openapi.json")
	require.NoError(t, err)
	checkDocument(t, doc, APIVersion)
	require.Contains(t, string(doc), "- `basic`: snapshot.md", "enum value comments, under their wire names")
}

func checkDocument(t *testing.T, raw []byte, version string) {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.Equal(t, "3.1.0", doc["openapi"])
	info := doc["info"].(map[string]any)
	require.Equal(t, "Garden Bloom Memory API", info["title"])
	require.Equal(t, version, info["version"])
	require.NotContains(t, string(raw), "#/definitions/")
	require.NotContains(t, string(raw), "PROPOSAL_STATUS_", "enum names are the wire's short forms")
	require.NotContains(t, string(raw), "READ_MODE_")

	comps := doc["components"].(map[string]any)
	schemas := comps["schemas"].(map[string]any)
	require.Equal(t, map[string]any{"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
		without(comps["securitySchemes"].(map[string]any)["bearerAuth"].(map[string]any), "description"))
	require.Equal(t, []any{map[string]any{"bearerAuth": []any{}}}, doc["security"])

	status := schemas["ProposalStatus"].(map[string]any)
	require.Contains(t, status["enum"], "applied")
	require.Contains(t, status["enum"], "needs_human_review")
	priority := schemas["Priority"].(map[string]any)
	require.Contains(t, priority["enum"], "normal")

	// Every ErrorReason, as apierr puts it on the wire.
	var reasons []any
	ed := memoryv1.ErrorReason(0).Descriptor()
	for i := 0; i < ed.Values().Len(); i++ {
		reasons = append(reasons, apierr.ReasonString(memoryv1.ErrorReason(ed.Values().Get(i).Number())))
	}
	require.Equal(t, reasons, schemas["ErrorReason"].(map[string]any)["enum"])
	require.Contains(t, reasons, "VERSION_CONFLICT")
	detail := schemas["ErrorDetail"].(map[string]any)["properties"].(map[string]any)
	require.Equal(t, "#/components/schemas/ErrorReason", detail["reason"].(map[string]any)["$ref"])

	// Every $ref resolves.
	var refs []string
	collectRefs(doc, &refs)
	for _, r := range refs {
		parts := strings.Split(strings.TrimPrefix(r, "#/"), "/")
		var node any = doc
		for _, p := range parts {
			m, ok := node.(map[string]any)
			require.True(t, ok, r)
			node, ok = m[p]
			require.True(t, ok, "dangling $ref %s", r)
		}
	}

	paths := doc["paths"].(map[string]any)
	for _, public := range []string{"/health", "/metrics", "/status/config", "/openapi.json", "/docs"} {
		op := paths[public].(map[string]any)["get"].(map[string]any)
		require.Equal(t, []any{}, op["security"], public+" needs no token")
	}
	n := 0
	for p, item := range paths {
		for m, op := range item.(map[string]any) {
			op := op.(map[string]any)
			if _, public := op["security"]; public {
				continue
			}
			n++
			responses := op["responses"].(map[string]any)
			for _, code := range []string{"200", "400", "401", "403", "404", "405", "409", "429", "500", "503", "default"} {
				require.Contains(t, responses, code, "%s %s", m, p)
			}
			require.Equal(t, "#/components/responses/Unauthenticated", responses["401"].(map[string]any)["$ref"])
			if _, body := op["requestBody"]; body {
				require.Contains(t, responses, "413", "%s %s", m, p)
			}
		}
	}
	require.Greater(t, n, 30, "the gRPC services' operations")
	propose := paths["/memory/{agentId}/propose"].(map[string]any)["post"].(map[string]any)
	require.Equal(t, "#/components/schemas/ProposeBody",
		propose["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)["$ref"])
}

func without(m map[string]any, key string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

func collectRefs(v any, refs *[]string) {
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			collectRefs(e, refs)
		}
	case map[string]any:
		for k, e := range v {
			if s, ok := e.(string); ok && k == "$ref" {
				*refs = append(*refs, s)
				continue
			}
			collectRefs(e, refs)
		}
	}
}

func TestUnknownEnumFails(t *testing.T) {
	sw := []byte(`{"swagger":"2.0","paths":{},"definitions":{"v1X":{"type":"string","enum":["NOT_AN_ENUM_VALUE"]}}}`)
	_, err := Generate(sw, compiledFiles(t), "1")
	require.ErrorContains(t, err, "NOT_AN_ENUM_VALUE")
}
