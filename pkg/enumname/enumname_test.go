package enumname_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/apipb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/typepb"

	"github.com/garden-bloom/memory/pkg/enumname"
)

func TestShort(t *testing.T) {
	fieldType := descriptorpb.FieldDescriptorProto_TYPE_INT32.Descriptor()
	label := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Descriptor()
	ctype := descriptorpb.FieldOptions_CORD.Descriptor()
	jstype := descriptorpb.FieldOptions_JS_NORMAL.Descriptor()
	tests := []struct {
		name string
		ed   protoreflect.EnumDescriptor
		v    protoreflect.EnumNumber
		want string
	}{
		{"nested enum named after its prefix", fieldType, 5, "int32"},
		{"multi-word rest", fieldType, protoreflect.EnumNumber(descriptorpb.FieldDescriptorProto_TYPE_SFIXED64), "sfixed64"},
		{"label", label, protoreflect.EnumNumber(descriptorpb.FieldDescriptorProto_LABEL_REPEATED), "repeated"},
		{"no common prefix: CType STRING", ctype, protoreflect.EnumNumber(descriptorpb.FieldOptions_STRING), "string"},
		{"no common prefix: CType CORD", ctype, protoreflect.EnumNumber(descriptorpb.FieldOptions_CORD), "cord"},
		{"no common prefix: CType STRING_PIECE", ctype, protoreflect.EnumNumber(descriptorpb.FieldOptions_STRING_PIECE), "string_piece"},
		{"common prefix differs from name: JSType", jstype, protoreflect.EnumNumber(descriptorpb.FieldOptions_JS_NUMBER), "number"},
		{"no common prefix: OptimizeMode", descriptorpb.FileOptions_SPEED.Descriptor(), protoreflect.EnumNumber(descriptorpb.FileOptions_CODE_SIZE), "code_size"},
		{"numeric rest keeps digits", descriptorpb.Edition_EDITION_2023.Descriptor(), protoreflect.EnumNumber(descriptorpb.Edition_EDITION_2023), "2023"},
		{"typepb Kind uses TYPE_ prefix", typepb.Field_TYPE_STRING.Descriptor(), protoreflect.EnumNumber(typepb.Field_TYPE_STRING), "string"},
		{"typepb Cardinality", typepb.Field_CARDINALITY_REPEATED.Descriptor(), protoreflect.EnumNumber(typepb.Field_CARDINALITY_REPEATED), "repeated"},
		{"typepb Syntax", typepb.Syntax_SYNTAX_PROTO2.Descriptor(), protoreflect.EnumNumber(typepb.Syntax_SYNTAX_PROTO2), "proto2"},
		{"buf STANDARD", fixtureEnum("Priority"), 1, "normal"},
		{"zero value", fixtureEnum("Priority"), 0, "unspecified"},
		{"two-word prefix", fixtureEnum("ProposalStatus"), 7, "needs_human_review"},
		{"acronym enum name", fixtureEnum("HTTPMethod"), 2, "post"},
		{"numeric short form", fixtureEnum("Layer"), 1, "1"},
		{"without UNSPECIFIED", fixtureEnum("ReadMode"), 0, "basic"},
		{"nested enum in message", fixtureMessage("Item").Enums().ByName("Kind"), 1, "http_call"},
		{"NullValue", structpb.NullValue_NULL_VALUE.Descriptor(), 0, "null_value"},
		{"unknown number", fixtureEnum("Priority"), 42, "42"},
		{"unknown negative number", fieldType, -3, "-3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, enumname.Short(tt.ed, tt.v))
		})
	}
}

func TestParse(t *testing.T) {
	fieldType := descriptorpb.FieldDescriptorProto_TYPE_INT32.Descriptor()
	tests := []struct {
		name   string
		ed     protoreflect.EnumDescriptor
		in     string
		want   protoreflect.EnumNumber
		wantOK bool
	}{
		{"short", fieldType, "int32", 5, true},
		{"short upper case", fieldType, "INT32", 5, true},
		{"short mixed case", fieldType, "Int32", 5, true},
		{"full name", fieldType, "TYPE_INT32", 5, true},
		{"number", fieldType, "5", 5, true},
		{"short of fixture", fixtureEnum("ProposalStatus"), "needs_human_review", 7, true},
		{"full of fixture", fixtureEnum("ProposalStatus"), "PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW", 7, true},
		{"zero short", fixtureEnum("Priority"), "unspecified", 0, true},
		{"numeric short form beats number", descriptorpb.Edition_EDITION_2023.Descriptor(), "2023", protoreflect.EnumNumber(descriptorpb.Edition_EDITION_2023), true},
		{"numeric short form", fixtureEnum("Layer"), "2", 2, true},
		{"number of undeclared value", fieldType, "99", 0, false},
		{"number out of int32 range", fieldType, "4294967301", 0, false},
		{"lowercase full name is not a form", fieldType, "type_int32", 0, false},
		{"full name is case-sensitive prefix", fieldType, "Type_Int32", 0, false},
		{"unknown", fieldType, "int33", 0, false},
		{"empty", fieldType, "", 0, false},
		{"whitespace", fieldType, " int32", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := enumname.Parse(tt.ed, tt.in)
			require.Equal(t, tt.wantOK, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

// Allowed lists what a client may send, in declaration order, in a slice
// the caller may keep.
func TestAllowed(t *testing.T) {
	got := enumname.Allowed(fixtureEnum("ProposalStatus"))
	require.Equal(t, []string{"unspecified", "pending", "needs_human_review"}, got)
	got[0] = "changed"
	require.Equal(t, "unspecified", enumname.Allowed(fixtureEnum("ProposalStatus"))[0])
}

// Every value of every enum we can reach must survive a round trip through
// its REST form; otherwise a response could not be sent back as a request.
func TestEnumRoundTripAllValues(t *testing.T) {
	files := []protoreflect.FileDescriptor{
		descriptorpb.File_google_protobuf_descriptor_proto,
		typepb.File_google_protobuf_type_proto,
		apipb.File_google_protobuf_api_proto,
		structpb.File_google_protobuf_struct_proto,
		fixture,
	}
	var check func(eds protoreflect.EnumDescriptors, mds protoreflect.MessageDescriptors)
	check = func(eds protoreflect.EnumDescriptors, mds protoreflect.MessageDescriptors) {
		for i := 0; i < eds.Len(); i++ {
			ed := eds.Get(i)
			seen := map[string]bool{}
			for j := 0; j < ed.Values().Len(); j++ {
				ev := ed.Values().Get(j)
				s := enumname.Short(ed, ev.Number())
				require.NotEmpty(t, s, "%s", ev.FullName())
				require.False(t, seen[s], "duplicate short form %q in %s", s, ed.FullName())
				seen[s] = true
				n, ok := enumname.Parse(ed, s)
				require.True(t, ok, "%s -> %q", ev.FullName(), s)
				require.Equal(t, ev.Number(), n, "%s -> %q", ev.FullName(), s)
				n, ok = enumname.Parse(ed, string(ev.Name()))
				require.True(t, ok, "%s", ev.FullName())
				require.Equal(t, ev.Number(), n)
			}
		}
		for i := 0; i < mds.Len(); i++ {
			check(mds.Get(i).Enums(), mds.Get(i).Messages())
		}
	}
	for _, fd := range files {
		check(fd.Enums(), fd.Messages())
	}
}

// fixtureProto has enums shaped like our API's (buf STANDARD prefixes, an
// acronym, numeric remainders, one without UNSPECIFIED, a nested one),
// without code generation.
const fixtureProto = `
name: "enumname/fixture.proto"
package: "enumname.test"
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
  enum_type {
    name: "Kind"
    value { name: "KIND_UNSPECIFIED" number: 0 }
    value { name: "KIND_HTTP_CALL" number: 1 }
  }
}
`

var fixture = func() protoreflect.FileDescriptor {
	fdp := &descriptorpb.FileDescriptorProto{}
	if err := prototext.Unmarshal([]byte(fixtureProto), fdp); err != nil {
		panic(err)
	}
	fd, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		panic(err)
	}
	return fd
}()

func fixtureEnum(name protoreflect.Name) protoreflect.EnumDescriptor {
	return fixture.Enums().ByName(name)
}

func fixtureMessage(name protoreflect.Name) protoreflect.MessageDescriptor {
	return fixture.Messages().ByName(name)
}
