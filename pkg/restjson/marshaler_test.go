package restjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/apipb"
	"google.golang.org/protobuf/types/known/sourcecontextpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/typepb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/garden-bloom/memory/pkg/restjson"
)

// itemFullJSON is an Item in standard protojson (full enum names) that
// touches every shape the rewrite has to handle.
const itemFullJSON = `{
  "agentId": "a1",
  "prio": "PRIORITY_HIGH",
  "statuses": ["PROPOSAL_STATUS_PENDING", "PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW"],
  "priorities": {"z": "PRIORITY_NORMAL", "a": "PRIORITY_HIGH"},
  "children": {"c": {"kind": "KIND_HTTP_CALL", "inner": {"priority": "PRIORITY_NORMAL"}}},
  "onePriority": "PRIORITY_NORMAL",
  "kind": "KIND_HTTP_CALL",
  "created": "2026-01-02T03:04:05Z",
  "meta": {"priority": "PRIORITY_HIGH", "list": [1, "PRIORITY_NORMAL"]},
  "extra": {"@type": "type.googleapis.com/restjson.test.Inner", "priority": "PRIORITY_HIGH"},
  "note": "PRIORITY_NORMAL",
  "ttl": "1.5s",
  "parent": {"prio": "PRIORITY_NORMAL", "methods": ["HTTP_METHOD_GET"]},
  "q": "search",
  "layer": "LAYER_2",
  "inner": {"statuses": ["PROPOSAL_STATUS_PENDING"]},
  "methods": ["HTTP_METHOD_POST"],
  "mode": "READ_MODE_WIDE",
  "entity_id": "e1"
}`

// itemRESTJSON is what the REST contract shows for itemFullJSON: protojson's
// field order, short enum values, well-known types (Struct, Any, wrappers)
// untouched.
const itemRESTJSON = `{"agentId":"a1","prio":"high","statuses":["pending","needs_human_review"],` +
	`"priorities":{"a":"high","z":"normal"},"children":{"c":{"kind":"http_call","inner":{"priority":"normal"}}},` +
	`"onePriority":"normal","kind":"http_call","created":"2026-01-02T03:04:05Z",` +
	`"meta":{"list":[1,"PRIORITY_NORMAL"],"priority":"PRIORITY_HIGH"},` +
	`"extra":{"@type":"type.googleapis.com/restjson.test.Inner","priority":"PRIORITY_HIGH"},` +
	`"note":"PRIORITY_NORMAL","ttl":"1.500s","parent":{"prio":"normal","methods":["get"]},"q":"search",` +
	`"layer":"2","inner":{"statuses":["pending"]},"methods":["post"],"mode":"wide","entity_id":"e1"}`

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	require.NoError(t, err)
	return a
}

func TestMarshal(t *testing.T) {
	tests := []struct {
		name string
		m    *restjson.Marshaler
		msg  proto.Message
		want string
	}{
		{
			name: "nested enums of FieldDescriptorProto",
			msg: &descriptorpb.FieldDescriptorProto{
				Name: proto.String("f"), Number: proto.Int32(1), JsonName: proto.String("f"),
				Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
				Type:  descriptorpb.FieldDescriptorProto_TYPE_INT32.Enum(),
			},
			want: `{"name":"f","number":1,"label":"optional","type":"int32","jsonName":"f"}`,
		},
		{
			name: "repeated nested messages with enums",
			msg: &descriptorpb.FileDescriptorProto{
				Name: proto.String("x.proto"),
				MessageType: []*descriptorpb.DescriptorProto{{
					Name: proto.String("M"),
					Field: []*descriptorpb.FieldDescriptorProto{
						{Name: proto.String("a"), Label: descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum(), Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()},
						{Name: proto.String("b"), Type: descriptorpb.FieldDescriptorProto_TYPE_ENUM.Enum(), Options: &descriptorpb.FieldOptions{Ctype: descriptorpb.FieldOptions_STRING_PIECE.Enum()}},
					},
				}},
				Options: &descriptorpb.FileOptions{OptimizeFor: descriptorpb.FileOptions_CODE_SIZE.Enum()},
			},
			want: `{"name":"x.proto","messageType":[{"name":"M","field":[` +
				`{"name":"a","label":"repeated","type":"string"},` +
				`{"name":"b","type":"enum","options":{"ctype":"string_piece"}}]}],` +
				`"options":{"optimizeFor":"code_size"}}`,
		},
		{
			name: "enums without common prefix",
			msg:  &descriptorpb.FieldOptions{Ctype: descriptorpb.FieldOptions_CORD.Enum(), Jstype: descriptorpb.FieldOptions_JS_STRING.Enum()},
			want: `{"ctype":"cord","jstype":"string"}`,
		},
		{
			name: "extension field",
			msg:  fieldOptionsFromProtoJSON(t, `{"ctype":"CORD","[restjson.test.field_priority]":"PRIORITY_HIGH"}`),
			want: `{"ctype":"cord","[restjson.test.field_priority]":"high"}`,
		},
		{
			name: "unknown number of a closed enum stays a number",
			msg:  &descriptorpb.FieldDescriptorProto{Type: descriptorpb.FieldDescriptorProto_Type(99).Enum()},
			want: `{"type":99}`,
		},
		{
			name: "unknown number of an open enum stays a number",
			msg:  itemFromProtoJSON(t, `{"prio":9,"methods":["HTTP_METHOD_POST",5]}`),
			want: `{"prio":9,"methods":["post",5]}`,
		},
		{
			name: "typepb with Any values left alone",
			msg: &typepb.Type{
				Name: "T",
				Fields: []*typepb.Field{{
					Kind: typepb.Field_TYPE_STRING, Cardinality: typepb.Field_CARDINALITY_REPEATED, Number: 1, Name: "tags",
					Options: []*typepb.Option{{Name: "o", Value: mustAny(t, wrapperspb.String("TYPE_STRING"))}},
				}},
				Options:       []*typepb.Option{{Name: "opt", Value: mustAny(t, &descriptorpb.FieldOptions{Ctype: descriptorpb.FieldOptions_CORD.Enum()})}},
				SourceContext: &sourcecontextpb.SourceContext{FileName: "t.proto"},
				Syntax:        typepb.Syntax_SYNTAX_PROTO3,
			},
			want: `{"name":"T","fields":[{"kind":"string","cardinality":"repeated","number":1,"name":"tags",` +
				`"options":[{"name":"o","value":{"@type":"type.googleapis.com/google.protobuf.StringValue","value":"TYPE_STRING"}}]}],` +
				`"options":[{"name":"opt","value":{"@type":"type.googleapis.com/google.protobuf.FieldOptions","ctype":"CORD"}}],` +
				`"sourceContext":{"fileName":"t.proto"},"syntax":"proto3"}`,
		},
		{
			name: "apipb",
			msg: &apipb.Api{
				Name:    "svc",
				Methods: []*apipb.Method{{Name: "Get", RequestTypeUrl: "type.googleapis.com/x.Req", Syntax: typepb.Syntax_SYNTAX_PROTO3}},
				Syntax:  typepb.Syntax_SYNTAX_EDITIONS,
			},
			want: `{"name":"svc","methods":[{"name":"Get","requestTypeUrl":"type.googleapis.com/x.Req","syntax":"proto3"}],"syntax":"editions"}`,
		},
		{
			name: "maps, oneofs, custom json_name and well-known types",
			msg:  itemFromProtoJSON(t, itemFullJSON),
			want: itemRESTJSON,
		},
		{
			name: "proto names",
			m:    &restjson.Marshaler{MarshalOptions: protojson.MarshalOptions{UseProtoNames: true}},
			msg:  itemFromProtoJSON(t, `{"prio":"PRIORITY_HIGH","mode":"READ_MODE_WIDE","onePriority":"PRIORITY_HIGH","q":"x"}`),
			want: `{"priority":"high","one_priority":"high","query":"x","read_mode":"wide"}`,
		},
		{
			name: "EmitUnpopulated shows the zero value as unspecified",
			m:    &restjson.Marshaler{MarshalOptions: protojson.MarshalOptions{EmitUnpopulated: true}},
			msg:  itemFromProtoJSON(t, `{"inner":{}}`),
			want: `{"agentId":"","prio":"unspecified","statuses":[],"priorities":{},"children":{},"kind":"unspecified",` +
				`"created":null,"meta":null,"extra":null,"note":null,"ttl":null,"parent":null,"nothing":null,"q":"",` +
				`"layer":"unspecified","inner":{"priority":"unspecified","statuses":[]},"methods":[],"mode":"basic","entity_id":""}`,
		},
		{
			name: "message without enums",
			msg:  &descriptorpb.SourceCodeInfo_Location{Path: []int32{1, 2}, LeadingComments: proto.String("<b>&")},
			want: `{"path":[1,2],"leadingComments":"<b>&"}`,
		},
		{
			name: "well-known type at top level",
			msg:  timestamppb.New(time.Unix(1700000000, 0)),
			want: `"2023-11-14T22:13:20Z"`,
		},
		{
			name: "empty message",
			msg:  &descriptorpb.FieldDescriptorProto{},
			want: `{}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.m
			if m == nil {
				m = &restjson.Marshaler{}
			}
			got, err := m.Marshal(tt.msg)
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
		})
	}
}

func TestMarshalDeterministic(t *testing.T) {
	msg := itemFromProtoJSON(t, `{"priorities":{"e":"PRIORITY_HIGH","d":"PRIORITY_NORMAL","c":"PRIORITY_HIGH","b":"PRIORITY_NORMAL","a":"PRIORITY_HIGH"},"children":{"y":{"prio":"PRIORITY_HIGH"},"x":{"kind":"KIND_HTTP_CALL"}},"statuses":["PROPOSAL_STATUS_PENDING"]}`)
	m := &restjson.Marshaler{}
	first, err := m.Marshal(msg)
	require.NoError(t, err)
	for range 50 {
		again, err := m.Marshal(proto.Clone(msg))
		require.NoError(t, err)
		require.Equal(t, first, again)
	}
	// Field order is protojson's (declaration order), map keys sorted.
	require.Equal(t, `{"statuses":["pending"],"priorities":{"a":"high","b":"normal","c":"high","d":"normal","e":"high"},`+
		`"children":{"x":{"kind":"http_call"},"y":{"prio":"high"}}}`, string(first))
}

func TestMarshalIndent(t *testing.T) {
	m := &restjson.Marshaler{MarshalOptions: protojson.MarshalOptions{Multiline: true}}
	got, err := m.Marshal(&descriptorpb.FieldDescriptorProto{Name: proto.String("f"), Type: descriptorpb.FieldDescriptorProto_TYPE_BOOL.Enum()})
	require.NoError(t, err)
	require.Equal(t, "{\n  \"name\": \"f\",\n  \"type\": \"bool\"\n}", string(got))

	m = &restjson.Marshaler{MarshalOptions: protojson.MarshalOptions{Indent: "\t"}}
	got, err = m.Marshal(map[string]any{"result": &descriptorpb.FieldOptions{Ctype: descriptorpb.FieldOptions_CORD.Enum()}})
	require.NoError(t, err)
	require.Equal(t, "{\n\t\"result\": {\n\t\t\"ctype\": \"cord\"\n\t}\n}", string(got))
}

func TestMarshalNonProto(t *testing.T) {
	int32Type := descriptorpb.FieldDescriptorProto_TYPE_INT32
	field := &descriptorpb.FieldDescriptorProto{Type: int32Type.Enum()}
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"stream chunk", map[string]any{"result": field}, `{"result":{"type":"int32"}}`},
		{"stream error chunk", map[string]proto.Message{"error": &descriptorpb.FieldOptions{Jstype: descriptorpb.FieldOptions_JS_NUMBER.Enum()}}, `{"error":{"jstype":"number"}}`},
		{"repeated message body", []*descriptorpb.FieldDescriptorProto{field, {Label: descriptorpb.FieldDescriptorProto_LABEL_REQUIRED.Enum()}}, `[{"type":"int32"},{"label":"required"}]`},
		{"enum body", int32Type, `"int32"`},
		{"enum pointer body", &int32Type, `"int32"`},
		{"repeated enum body", []descriptorpb.FieldDescriptorProto_Type{int32Type, descriptorpb.FieldDescriptorProto_TYPE_BYTES}, `["int32","bytes"]`},
		{"unknown enum number", descriptorpb.FieldDescriptorProto_Type(77), `77`},
		{"map of enums sorted", map[string]descriptorpb.FieldDescriptorProto_Type{"b": int32Type, "a": descriptorpb.FieldDescriptorProto_TYPE_BOOL}, `{"a":"bool","b":"int32"}`},
		{"int keys", map[int32]string{10: "x", 2: "y"}, `{"10":"x","2":"y"}`},
		{"nil", nil, `null`},
		{"nil message", (*descriptorpb.FieldDescriptorProto)(nil), `{}`},
		{"nil enum pointer", (*descriptorpb.FieldDescriptorProto_Type)(nil), `null`},
		{"nil slice", []*descriptorpb.FieldDescriptorProto(nil), `null`},
		{"string", "x<y", `"x\u003cy"`},
		{"bytes", []byte("hi"), `"aGk="`},
		{"struct via encoding/json", struct {
			A int `json:"a"`
		}{1}, `{"a":1}`},
		{"json.RawMessage", json.RawMessage(`{"k":1}`), `{"k":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := (&restjson.Marshaler{}).Marshal(tt.v)
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
		})
	}
}

func TestUnmarshal(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want proto.Message
	}{
		{"short", `{"type":"int32","label":"optional"}`, &descriptorpb.FieldDescriptorProto{Type: descriptorpb.FieldDescriptorProto_TYPE_INT32.Enum(), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()}},
		{"short, other case", `{"type":"INT32"}`, &descriptorpb.FieldDescriptorProto{Type: descriptorpb.FieldDescriptorProto_TYPE_INT32.Enum()}},
		{"full name", `{"type":"TYPE_INT32"}`, &descriptorpb.FieldDescriptorProto{Type: descriptorpb.FieldDescriptorProto_TYPE_INT32.Enum()}},
		{"number", `{"type":5}`, &descriptorpb.FieldDescriptorProto{Type: descriptorpb.FieldDescriptorProto_TYPE_INT32.Enum()}},
		{"number as string", `{"type":"5"}`, &descriptorpb.FieldDescriptorProto{Type: descriptorpb.FieldDescriptorProto_TYPE_INT32.Enum()}},
		{"snake_case keys", `{"json_name":"x","type_name":".a.B","type":"message"}`, &descriptorpb.FieldDescriptorProto{JsonName: proto.String("x"), TypeName: proto.String(".a.B"), Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum()}},
		{"json names", `{"jsonName":"x","typeName":".a.B"}`, &descriptorpb.FieldDescriptorProto{JsonName: proto.String("x"), TypeName: proto.String(".a.B")}},
		{"null enum", `{"type":null}`, &descriptorpb.FieldDescriptorProto{}},
		{
			"nested and repeated, snake_case",
			`{"message_type":[{"name":"M","field":[{"type":"string","label":"repeated"},{"type":"TYPE_BOOL","options":{"ctype":"cord","jstype":"JS_STRING"}}]}],"options":{"optimize_for":"lite_runtime"}}`,
			&descriptorpb.FileDescriptorProto{
				MessageType: []*descriptorpb.DescriptorProto{{
					Name: proto.String("M"),
					Field: []*descriptorpb.FieldDescriptorProto{
						{Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(), Label: descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()},
						{Type: descriptorpb.FieldDescriptorProto_TYPE_BOOL.Enum(), Options: &descriptorpb.FieldOptions{Ctype: descriptorpb.FieldOptions_CORD.Enum(), Jstype: descriptorpb.FieldOptions_JS_STRING.Enum()}},
					},
				}},
				Options: &descriptorpb.FileOptions{OptimizeFor: descriptorpb.FileOptions_LITE_RUNTIME.Enum()},
			},
		},
		{
			"typepb with Any",
			`{"fields":[{"kind":"string","cardinality":"optional"}],"options":[{"name":"o","value":{"@type":"type.googleapis.com/google.protobuf.FieldOptions","ctype":"CORD"}}],"syntax":"proto3"}`,
			&typepb.Type{
				Fields:  []*typepb.Field{{Kind: typepb.Field_TYPE_STRING, Cardinality: typepb.Field_CARDINALITY_OPTIONAL}},
				Options: []*typepb.Option{{Name: "o", Value: mustAny(t, &descriptorpb.FieldOptions{Ctype: descriptorpb.FieldOptions_CORD.Enum()})}},
				Syntax:  typepb.Syntax_SYNTAX_PROTO3,
			},
		},
		{"extension field", `{"[restjson.test.field_priority]":"normal"}`, fieldOptionsFromProtoJSON(t, `{"[restjson.test.field_priority]":"PRIORITY_NORMAL"}`)},
		{"REST output of an Item", itemRESTJSON, itemFromProtoJSON(t, itemFullJSON)},
		{"Item full names", itemFullJSON, itemFromProtoJSON(t, itemFullJSON)},
		{
			"Item proto names and mixed forms",
			`{"priority":"HIGH","read_mode":"1","query":"x","one_priority":2,"priorities":{"k":"normal"},"methods":["get","HTTP_METHOD_POST",2],"layer":"1","entity_id":"e"}`,
			itemFromProtoJSON(t, `{"prio":"PRIORITY_HIGH","mode":"READ_MODE_WIDE","q":"x","onePriority":"PRIORITY_HIGH","priorities":{"k":"PRIORITY_NORMAL"},"methods":["HTTP_METHOD_GET","HTTP_METHOD_POST","HTTP_METHOD_POST"],"layer":"LAYER_1","entity_id":"e"}`),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.want.ProtoReflect().New().Interface()
			require.NoError(t, (&restjson.Marshaler{}).Unmarshal([]byte(tt.in), got))
			require.True(t, proto.Equal(tt.want, got), "got %v\nwant %v", got, tt.want)
		})
	}
}

// What the server writes, a client can send back unchanged.
func TestRoundTrip(t *testing.T) {
	m := &restjson.Marshaler{}
	// The descriptor of descriptor.proto itself uses most of its enums.
	fdp := protodesc.ToFileDescriptorProto(descriptorpb.File_google_protobuf_descriptor_proto)
	for _, msg := range []proto.Message{itemFromProtoJSON(t, itemFullJSON), fdp} {
		b, err := m.Marshal(msg)
		require.NoError(t, err)
		got := msg.ProtoReflect().New().Interface()
		require.NoError(t, m.Unmarshal(b, got))
		require.True(t, proto.Equal(msg, got))
	}
}

func TestUnmarshalErrors(t *testing.T) {
	tests := []struct {
		name    string
		m       *restjson.Marshaler
		in      string
		msg     proto.Message
		field   string   // EnumValueError.Field, if an enum error is expected
		errIs   error    // errors.Is target
		substrs []string // in the message
	}{
		{
			name: "unknown short value", in: `{"type":"int33"}`, msg: &descriptorpb.FieldDescriptorProto{}, field: "type",
			substrs: []string{`invalid value "int33"`, `field "type"`, "google.protobuf.FieldDescriptorProto.Type", "allowed values: double, float, int64, uint64, int32,"},
		},
		{
			name: "unknown value deep inside", in: `{"message_type":[{"field":[{"type":"int32"},{"label":"sometimes"}]}]}`,
			msg: &descriptorpb.FileDescriptorProto{}, field: "message_type[0].field[1].label",
			substrs: []string{"allowed values: optional, repeated, required"},
		},
		{
			name: "unknown map value", in: `{"priorities":{"k":"urgent"}}`, msg: newItem(), field: `priorities["k"]`,
			substrs: []string{"allowed values: unspecified, normal, high"},
		},
		{name: "extension", in: `{"[restjson.test.field_priority]":"low"}`, msg: &descriptorpb.FieldOptions{}, field: "[restjson.test.field_priority]"},
		{name: "custom json_name in path", in: `{"prio":"urgent"}`, msg: newItem(), field: "prio"},
		{name: "repeated", in: `{"statuses":["pending","done"]}`, msg: newItem(), field: "statuses[1]", substrs: []string{"allowed values: unspecified, pending, needs_human_review"}},
		{name: "undeclared number", in: `{"type":99}`, msg: &descriptorpb.FieldDescriptorProto{}, field: "type"},
		{name: "undeclared number in open enum", in: `{"prio":9}`, msg: newItem(), field: "prio"},
		{name: "fractional number", in: `{"type":1.5}`, msg: &descriptorpb.FieldDescriptorProto{}, field: "type"},
		{name: "lowercase full name", in: `{"prio":"priority_high"}`, msg: newItem(), field: "prio"},
		{name: "wrong JSON type left to protojson", in: `{"type":true}`, msg: &descriptorpb.FieldDescriptorProto{}, substrs: []string{"type"}},
		{name: "invalid JSON", in: `{"type":"int32"`, msg: &descriptorpb.FieldDescriptorProto{}, substrs: []string{"invalid JSON"}},
		{name: "trailing data", in: `{} {}`, msg: &descriptorpb.FieldDescriptorProto{}, substrs: []string{"after top-level value"}},
		{name: "unknown field", in: `{"nope":1}`, msg: &descriptorpb.FieldDescriptorProto{}, substrs: []string{"nope"}},
		{name: "duplicate field via both names", in: `{"json_name":"a","jsonName":"b"}`, msg: &descriptorpb.FieldDescriptorProto{}, substrs: []string{"duplicate"}},
		{name: "invalid UTF-8", in: "{\"name\":\"\xff\"}", msg: &descriptorpb.FieldDescriptorProto{}, substrs: []string{"UTF-8"}},
		{name: "too deep: messages", in: nestedParents(64), msg: newItem(), errIs: restjson.ErrMaxDepth},
		{name: "too deep: Struct", in: `{"meta":{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}}`, msg: newItem(), errIs: restjson.ErrMaxDepth},
		{name: "too deep: custom limit", m: &restjson.Marshaler{MaxDepth: 2}, in: `{"parent":{"parent":{}}}`, msg: newItem(), errIs: restjson.ErrMaxDepth},
		{name: "empty body", in: " \n", msg: newItem(), errIs: io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.m
			if m == nil {
				m = &restjson.Marshaler{}
			}
			err := m.Unmarshal([]byte(tt.in), tt.msg)
			require.Error(t, err)
			if tt.field != "" {
				var ee *restjson.EnumValueError
				require.True(t, errors.As(err, &ee), "%v", err)
				require.Equal(t, tt.field, ee.Field)
			}
			if tt.errIs != nil {
				require.ErrorIs(t, err, tt.errIs)
			}
			for _, s := range tt.substrs {
				require.Contains(t, err.Error(), s)
			}
		})
	}
}

func fieldOptionsFromProtoJSON(t *testing.T, js string) *descriptorpb.FieldOptions {
	t.Helper()
	m := &descriptorpb.FieldOptions{}
	require.NoError(t, protojson.Unmarshal([]byte(js), m))
	return m
}

// nestedParents is an Item whose parent chain makes the JSON n+1 levels deep.
func nestedParents(n int) string {
	return strings.Repeat(`{"parent":`, n) + `{}` + strings.Repeat(`}`, n)
}

func TestUnmarshalDepthLimitBoundary(t *testing.T) {
	m := &restjson.Marshaler{}
	require.NoError(t, m.Unmarshal([]byte(nestedParents(63)), newItem()), "64 levels are allowed")
	require.ErrorIs(t, m.Unmarshal([]byte(nestedParents(64)), newItem()), restjson.ErrMaxDepth)
	m = &restjson.Marshaler{MaxDepth: 200}
	require.NoError(t, m.Unmarshal([]byte(nestedParents(150)), newItem()))
}

func TestUnmarshalDiscardUnknown(t *testing.T) {
	m := &restjson.Marshaler{UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: true}}
	got := &descriptorpb.FieldDescriptorProto{}
	require.NoError(t, m.Unmarshal([]byte(`{"type":"int33","label":"repeated","nope":1}`), got))
	require.True(t, proto.Equal(&descriptorpb.FieldDescriptorProto{Label: descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()}, got), "%v", got)
}

func TestDecoder(t *testing.T) {
	m := &restjson.Marshaler{}

	t.Run("stream of messages", func(t *testing.T) {
		dec := m.NewDecoder(strings.NewReader("{\"type\":\"int32\"}\n{\"type\":\"TYPE_INT64\"}\n"))
		var got []descriptorpb.FieldDescriptorProto_Type
		for {
			msg := &descriptorpb.FieldDescriptorProto{}
			err := dec.Decode(msg)
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			got = append(got, msg.GetType())
		}
		require.Equal(t, []descriptorpb.FieldDescriptorProto_Type{descriptorpb.FieldDescriptorProto_TYPE_INT32, descriptorpb.FieldDescriptorProto_TYPE_INT64}, got)
	})

	t.Run("empty body is io.EOF", func(t *testing.T) {
		err := m.NewDecoder(strings.NewReader("")).Decode(&descriptorpb.FieldDescriptorProto{})
		require.Equal(t, io.EOF, err)
	})

	t.Run("body field: unallocated message", func(t *testing.T) {
		req := &descriptorpb.FieldDescriptorProto{}
		require.NoError(t, m.NewDecoder(strings.NewReader(`{"ctype":"cord"}`)).Decode(&req.Options))
		require.Equal(t, descriptorpb.FieldOptions_CORD, req.GetOptions().GetCtype())
	})

	t.Run("body field: enum", func(t *testing.T) {
		req := &descriptorpb.FieldDescriptorProto{}
		require.NoError(t, m.NewDecoder(strings.NewReader(`"sint32"`)).Decode(&req.Type))
		require.Equal(t, descriptorpb.FieldDescriptorProto_TYPE_SINT32, req.GetType())

		var typ descriptorpb.FieldDescriptorProto_Type
		require.NoError(t, m.NewDecoder(strings.NewReader(`"TYPE_BOOL"`)).Decode(&typ))
		require.Equal(t, descriptorpb.FieldDescriptorProto_TYPE_BOOL, typ)

		err := m.NewDecoder(strings.NewReader(`"sint33"`)).Decode(&typ)
		var ee *restjson.EnumValueError
		require.True(t, errors.As(err, &ee), "%v", err)
		require.Empty(t, ee.Field)
		require.Contains(t, err.Error(), "allowed values: double,")
	})

	t.Run("body field: repeated messages", func(t *testing.T) {
		req := &descriptorpb.DescriptorProto{}
		require.NoError(t, m.NewDecoder(strings.NewReader(`[{"type":"int32"},{"label":"repeated"}]`)).Decode(&req.Field))
		require.Len(t, req.Field, 2)
		require.Equal(t, descriptorpb.FieldDescriptorProto_TYPE_INT32, req.Field[0].GetType())
		require.Equal(t, descriptorpb.FieldDescriptorProto_LABEL_REPEATED, req.Field[1].GetLabel())

		err := m.NewDecoder(strings.NewReader(`[{"type":"int32"},{"label":"never"}]`)).Decode(&req.Field)
		var ee *restjson.EnumValueError
		require.True(t, errors.As(err, &ee), "%v", err)
		require.Equal(t, "[1].label", ee.Field)
	})

	t.Run("body field: repeated enums and maps", func(t *testing.T) {
		var enums []descriptorpb.FieldDescriptorProto_Type
		require.NoError(t, m.NewDecoder(strings.NewReader(`["int32","TYPE_BOOL",3]`)).Decode(&enums))
		require.Equal(t, []descriptorpb.FieldDescriptorProto_Type{5, 8, 3}, enums)

		var byName map[string]descriptorpb.FieldDescriptorProto_Type
		require.NoError(t, m.NewDecoder(strings.NewReader(`{"a":"int32"}`)).Decode(&byName))
		require.Equal(t, map[string]descriptorpb.FieldDescriptorProto_Type{"a": 5}, byName)

		var byNum map[int64]*descriptorpb.FieldOptions
		require.NoError(t, m.NewDecoder(strings.NewReader(`{"7":{"jstype":"number"}}`)).Decode(&byNum))
		require.Equal(t, descriptorpb.FieldOptions_JS_NUMBER, byNum[7].GetJstype())
	})

	t.Run("body field: scalars via encoding/json", func(t *testing.T) {
		var s string
		require.NoError(t, m.NewDecoder(strings.NewReader(`"x"`)).Decode(&s))
		require.Equal(t, "x", s)
		var b []byte
		require.NoError(t, m.NewDecoder(strings.NewReader(`"aGk="`)).Decode(&b))
		require.Equal(t, []byte("hi"), b)
		require.Error(t, m.NewDecoder(strings.NewReader(`"x"`)).Decode(s))
	})

	t.Run("body field: type mismatches", func(t *testing.T) {
		var fields []*descriptorpb.FieldDescriptorProto
		err := m.NewDecoder(strings.NewReader(`{"type":"int32"}`)).Decode(&fields)
		require.ErrorContains(t, err, "cannot decode a JSON object into []*descriptorpb.FieldDescriptorProto")

		var byNum map[int32]descriptorpb.FieldDescriptorProto_Type
		err = m.NewDecoder(strings.NewReader(`{"x":"int32"}`)).Decode(&byNum)
		require.ErrorContains(t, err, `map key "x"`)

		nested := map[string][]descriptorpb.FieldDescriptorProto_Type{}
		err = m.NewDecoder(strings.NewReader(`{"k":"int32"}`)).Decode(&nested)
		require.ErrorContains(t, err, `field "[\"k\"]": cannot decode a JSON string`)

		require.Error(t, m.NewDecoder(strings.NewReader(`{}`)).Decode(nil))
	})

	t.Run("depth limit", func(t *testing.T) {
		err := m.NewDecoder(strings.NewReader(nestedParents(100))).Decode(newItem())
		require.ErrorIs(t, err, restjson.ErrMaxDepth)
		err = m.NewDecoder(strings.NewReader(strings.Repeat("[", 1<<20))).Decode(newItem())
		require.Error(t, err)
	})

	t.Run("invalid JSON", func(t *testing.T) {
		require.Error(t, m.NewDecoder(strings.NewReader(`{"type":`)).Decode(&descriptorpb.FieldDescriptorProto{}))
	})
}

func TestEncoder(t *testing.T) {
	m := &restjson.Marshaler{}
	var buf bytes.Buffer
	enc := m.NewEncoder(&buf)
	require.NoError(t, enc.Encode(&descriptorpb.FieldDescriptorProto{Type: descriptorpb.FieldDescriptorProto_TYPE_INT32.Enum()}))
	require.NoError(t, enc.Encode(map[string]any{"result": &descriptorpb.FieldOptions{Ctype: descriptorpb.FieldOptions_CORD.Enum()}}))
	require.Equal(t, "{\"type\":\"int32\"}\n{\"result\":{\"ctype\":\"cord\"}}\n", buf.String())
	require.Equal(t, []byte("\n"), m.Delimiter())
	require.Equal(t, "application/json", m.ContentType(nil))
}
