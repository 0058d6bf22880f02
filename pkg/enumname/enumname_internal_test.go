package enumname

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

func TestUpperSnake(t *testing.T) {
	tests := map[string]string{
		"Priority":       "PRIORITY",
		"ProposalStatus": "PROPOSAL_STATUS",
		"HTTPMethod":     "HTTP_METHOD",
		"APIKeyType":     "API_KEY_TYPE",
		"JSType":         "JS_TYPE",
		"CType":          "C_TYPE",
		"Layer2Mode":     "LAYER2_MODE",
		"Type":           "TYPE",
		"already_SNAKE":  "ALREADY_SNAKE",
	}
	for in, want := range tests {
		require.Equal(t, want, upperSnake(in), in)
	}
}

func TestEnumPrefix(t *testing.T) {
	tests := []struct {
		name     string
		enumName string
		values   []string
		want     string
	}{
		{"enum name rule", "ReadMode", []string{"READ_MODE_UNSPECIFIED", "READ_MODE_BASIC"}, "READ_MODE_"},
		// The name rule keeps short forms stable when all values share
		// more than the enum prefix; the common-prefix rule would drop
		// BASIC_ and change every value once a third one is added.
		{"name rule beats longer common prefix", "ReadMode", []string{"READ_MODE_BASIC_FAST", "READ_MODE_BASIC_SLOW"}, "READ_MODE_"},
		{"common prefix when the name does not fit", "Kind", []string{"TYPE_UNKNOWN", "TYPE_DOUBLE"}, "TYPE_"},
		{"common prefix ends at an underscore", "X", []string{"STATUS_UNSPECIFIED", "STATUS_UNKNOWN"}, "STATUS_"},
		{"no common prefix", "CType", []string{"STRING", "CORD", "STRING_PIECE"}, ""},
		{"single value without the name prefix", "X", []string{"ONLY_VALUE"}, ""},
		{"single value with the name prefix", "Foo", []string{"FOO_UNSPECIFIED"}, "FOO_"},
		{"prefix must leave a rest", "Foo", []string{"FOO_", "FOO_BAR"}, ""},
		{"acronym enum name", "HTTPMethod", []string{"HTTP_METHOD_GET", "HTTP_METHOD_POST"}, "HTTP_METHOD_"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, enumPrefix(tt.enumName, tt.values))
		})
	}
}

// An enum whose short forms would collide keeps its full names, so that
// rendering and parsing stay inverse to each other.
func TestAmbiguousEnumFallsBackToFullNames(t *testing.T) {
	ed := buildEnum(t, "E", "E_A", "e_a")
	require.Equal(t, "E_A", Short(ed, 0))
	require.Equal(t, "e_a", Short(ed, 1))
	for _, n := range []protoreflect.EnumNumber{0, 1} {
		got, ok := Parse(ed, Short(ed, n))
		require.True(t, ok)
		require.Equal(t, n, got)
	}
}

func buildEnum(t *testing.T, name string, values ...string) protoreflect.EnumDescriptor {
	t.Helper()
	edp := &descriptorpb.EnumDescriptorProto{Name: &name}
	for i, v := range values {
		edp.Value = append(edp.Value, &descriptorpb.EnumValueDescriptorProto{Name: &v, Number: ptr(int32(i))})
	}
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name:     ptr("enumname/internal_" + name + ".proto"),
		Package:  ptr("enumname.internal"),
		Syntax:   ptr("proto2"), // proto3 already rejects such enums
		EnumType: []*descriptorpb.EnumDescriptorProto{edp},
	}, nil)
	require.NoError(t, err)
	return fd.Enums().Get(0)
}

func ptr[T any](v T) *T { return &v }
