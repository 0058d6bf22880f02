package restjson_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	// Register the well-known types the fixture file imports.
	_ "google.golang.org/protobuf/types/known/anypb"
	_ "google.golang.org/protobuf/types/known/durationpb"
	_ "google.golang.org/protobuf/types/known/structpb"
	_ "google.golang.org/protobuf/types/known/timestamppb"
	_ "google.golang.org/protobuf/types/known/wrapperspb"
)

// fixtureProto mirrors the shapes of our API (buf STANDARD enums, custom
// json_name, maps, oneofs, nested enums, well-known types) without code
// generation. Types are registered globally because DefaultQueryParser and
// protojson's Any handling look enums and messages up there.
const fixtureProto = `
name: "restjson/fixture.proto"
package: "restjson.test"
dependency: "google/protobuf/timestamp.proto"
dependency: "google/protobuf/struct.proto"
dependency: "google/protobuf/any.proto"
dependency: "google/protobuf/wrappers.proto"
dependency: "google/protobuf/duration.proto"
dependency: "google/protobuf/descriptor.proto"
syntax: "proto3"
enum_type {
  name: "Priority"
  value { name: "PRIORITY_UNSPECIFIED" number: 0 }
  value { name: "PRIORITY_NORMAL" number: 1 }
  value { name: "PRIORITY_HIGH" number: 2 }
}
enum_type {
  name: "ProposalStatus"
  value { name: "PROPOSAL_STATUS_UNSPECIFIED" number: 0 }
  value { name: "PROPOSAL_STATUS_PENDING" number: 1 }
  value { name: "PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW" number: 7 }
}
enum_type {
  name: "Layer"
  value { name: "LAYER_UNSPECIFIED" number: 0 }
  value { name: "LAYER_1" number: 1 }
  value { name: "LAYER_2" number: 2 }
}
enum_type {
  name: "HTTPMethod"
  value { name: "HTTP_METHOD_UNSPECIFIED" number: 0 }
  value { name: "HTTP_METHOD_GET" number: 1 }
  value { name: "HTTP_METHOD_POST" number: 2 }
}
enum_type {
  name: "ReadMode"
  value { name: "READ_MODE_BASIC" number: 0 }
  value { name: "READ_MODE_WIDE" number: 1 }
}
message_type {
  name: "Item"
  field { name: "agent_id" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
  field { name: "priority" number: 2 label: LABEL_OPTIONAL type: TYPE_ENUM type_name: ".restjson.test.Priority" json_name: "prio" }
  field { name: "statuses" number: 3 label: LABEL_REPEATED type: TYPE_ENUM type_name: ".restjson.test.ProposalStatus" }
  field { name: "priorities" number: 4 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".restjson.test.Item.PrioritiesEntry" }
  field { name: "children" number: 5 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".restjson.test.Item.ChildrenEntry" }
  field { name: "one_priority" number: 6 label: LABEL_OPTIONAL type: TYPE_ENUM type_name: ".restjson.test.Priority" oneof_index: 0 }
  field { name: "one_text" number: 7 label: LABEL_OPTIONAL type: TYPE_STRING oneof_index: 0 }
  field { name: "kind" number: 8 label: LABEL_OPTIONAL type: TYPE_ENUM type_name: ".restjson.test.Item.Kind" }
  field { name: "created" number: 9 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".google.protobuf.Timestamp" }
  field { name: "meta" number: 10 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".google.protobuf.Struct" }
  field { name: "extra" number: 11 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".google.protobuf.Any" }
  field { name: "note" number: 12 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".google.protobuf.StringValue" }
  field { name: "ttl" number: 13 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".google.protobuf.Duration" }
  field { name: "parent" number: 14 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".restjson.test.Item" }
  field { name: "nothing" number: 15 label: LABEL_OPTIONAL type: TYPE_ENUM type_name: ".google.protobuf.NullValue" }
  field { name: "query" number: 16 label: LABEL_OPTIONAL type: TYPE_STRING json_name: "q" }
  field { name: "layer" number: 17 label: LABEL_OPTIONAL type: TYPE_ENUM type_name: ".restjson.test.Layer" }
  field { name: "inner" number: 18 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".restjson.test.Inner" }
  field { name: "methods" number: 19 label: LABEL_REPEATED type: TYPE_ENUM type_name: ".restjson.test.HTTPMethod" }
  field { name: "read_mode" number: 20 label: LABEL_OPTIONAL type: TYPE_ENUM type_name: ".restjson.test.ReadMode" json_name: "mode" }
  field { name: "entity_id" number: 21 label: LABEL_OPTIONAL type: TYPE_STRING json_name: "entity_id" }
  nested_type {
    name: "PrioritiesEntry"
    field { name: "key" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
    field { name: "value" number: 2 label: LABEL_OPTIONAL type: TYPE_ENUM type_name: ".restjson.test.Priority" }
    options { map_entry: true }
  }
  nested_type {
    name: "ChildrenEntry"
    field { name: "key" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
    field { name: "value" number: 2 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".restjson.test.Item" }
    options { map_entry: true }
  }
  enum_type {
    name: "Kind"
    value { name: "KIND_UNSPECIFIED" number: 0 }
    value { name: "KIND_HTTP_CALL" number: 1 }
  }
  oneof_decl { name: "choice" }
}
extension {
  name: "field_priority" number: 50000 label: LABEL_OPTIONAL type: TYPE_ENUM
  type_name: ".restjson.test.Priority" extendee: ".google.protobuf.FieldOptions"
}
message_type {
  name: "Inner"
  field { name: "priority" number: 1 label: LABEL_OPTIONAL type: TYPE_ENUM type_name: ".restjson.test.Priority" }
  field { name: "statuses" number: 2 label: LABEL_REPEATED type: TYPE_ENUM type_name: ".restjson.test.ProposalStatus" }
}
message_type {
  name: "Plain"
  field { name: "name" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
  field { name: "created" number: 2 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".google.protobuf.Timestamp" }
  field { name: "children" number: 3 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".restjson.test.Plain" }
}
`

var fixture = mustRegisterFixture()

func mustRegisterFixture() protoreflect.FileDescriptor {
	fdp := &descriptorpb.FileDescriptorProto{}
	if err := prototext.Unmarshal([]byte(fixtureProto), fdp); err != nil {
		panic(err)
	}
	fd, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
	if err != nil {
		panic(err)
	}
	if err := protoregistry.GlobalFiles.RegisterFile(fd); err != nil {
		panic(err)
	}
	registerEnums(fd.Enums())
	registerMessages(fd.Messages())
	for i := 0; i < fd.Extensions().Len(); i++ {
		if err := protoregistry.GlobalTypes.RegisterExtension(dynamicpb.NewExtensionType(fd.Extensions().Get(i))); err != nil {
			panic(err)
		}
	}
	return fd
}

func registerEnums(eds protoreflect.EnumDescriptors) {
	for i := 0; i < eds.Len(); i++ {
		if err := protoregistry.GlobalTypes.RegisterEnum(dynamicpb.NewEnumType(eds.Get(i))); err != nil {
			panic(err)
		}
	}
}

func registerMessages(mds protoreflect.MessageDescriptors) {
	for i := 0; i < mds.Len(); i++ {
		md := mds.Get(i)
		if md.IsMapEntry() {
			continue
		}
		if err := protoregistry.GlobalTypes.RegisterMessage(dynamicpb.NewMessageType(md)); err != nil {
			panic(err)
		}
		registerEnums(md.Enums())
		registerMessages(md.Messages())
	}
}

func fixtureMessage(name protoreflect.Name) protoreflect.MessageDescriptor {
	return fixture.Messages().ByName(name)
}

// newItem returns an empty restjson.test.Item.
func newItem() proto.Message {
	return dynamicpb.NewMessage(fixtureMessage("Item"))
}

// itemFromProtoJSON builds an Item from standard protojson (full enum names),
// the reference the REST forms are compared with.
func itemFromProtoJSON(t *testing.T, js string) proto.Message {
	t.Helper()
	m := newItem()
	require.NoError(t, protojson.Unmarshal([]byte(js), m))
	return m
}
