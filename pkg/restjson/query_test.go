package restjson_test

import (
	"errors"
	"net/url"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/grpc-ecosystem/grpc-gateway/v2/utilities"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/garden-bloom/memory/pkg/restjson"
)

func TestQueryParser(t *testing.T) {
	tests := []struct {
		name   string
		msg    func() proto.Message
		values url.Values
		filter *utilities.DoubleArray
		want   proto.Message
	}{
		{
			name:   "short, full and plain values",
			msg:    func() proto.Message { return &descriptorpb.FieldDescriptorProto{} },
			values: url.Values{"type": {"int32"}, "label": {"LABEL_REPEATED"}, "json_name": {"x"}},
			want: &descriptorpb.FieldDescriptorProto{
				Type: descriptorpb.FieldDescriptorProto_TYPE_INT32.Enum(), Label: descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum(), JsonName: proto.String("x"),
			},
		},
		{
			name:   "json name key, upper-case short form, number",
			msg:    func() proto.Message { return &descriptorpb.FieldDescriptorProto{} },
			values: url.Values{"jsonName": {"y"}, "type": {"BOOL"}, "label": {"2"}},
			want: &descriptorpb.FieldDescriptorProto{
				JsonName: proto.String("y"), Type: descriptorpb.FieldDescriptorProto_TYPE_BOOL.Enum(), Label: descriptorpb.FieldDescriptorProto_LABEL_REQUIRED.Enum(),
			},
		},
		{
			name:   "nested path with proto and json names",
			msg:    func() proto.Message { return &descriptorpb.FieldDescriptorProto{} },
			values: url.Values{"options.ctype": {"cord"}, "options.jstype": {"JS_NUMBER"}},
			want: &descriptorpb.FieldDescriptorProto{
				Options: &descriptorpb.FieldOptions{Ctype: descriptorpb.FieldOptions_CORD.Enum(), Jstype: descriptorpb.FieldOptions_JS_NUMBER.Enum()},
			},
		},
		{
			name:   "nested json name",
			msg:    func() proto.Message { return &descriptorpb.FileDescriptorProto{} },
			values: url.Values{"options.optimizeFor": {"code_size"}, "syntax": {"proto3"}},
			want:   &descriptorpb.FileDescriptorProto{Options: &descriptorpb.FileOptions{OptimizeFor: descriptorpb.FileOptions_CODE_SIZE.Enum()}, Syntax: proto.String("proto3")},
		},
		{
			name: "fixture: custom json_name, repeated, map, nested enum",
			msg:  newItem,
			values: url.Values{
				"prio":           {"high"},
				"q":              {"find me"},
				"statuses":       {"pending", "NEEDS_HUMAN_REVIEW", "PROPOSAL_STATUS_PENDING"},
				"priorities[a]":  {"normal"},
				"inner.priority": {"high"},
				"kind":           {"http_call"},
				"layer":          {"2"},
				"mode":           {"wide"},
				"methods":        {"get"},
			},
			want: itemFromProtoJSON(t, `{"prio":"PRIORITY_HIGH","q":"find me",
				"statuses":["PROPOSAL_STATUS_PENDING","PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW","PROPOSAL_STATUS_PENDING"],
				"priorities":{"a":"PRIORITY_NORMAL"},"inner":{"priority":"PRIORITY_HIGH"},"kind":"KIND_HTTP_CALL",
				"layer":"LAYER_2","mode":"READ_MODE_WIDE","methods":["HTTP_METHOD_GET"]}`),
		},
		{
			name:   "fixture: proto names",
			msg:    newItem,
			values: url.Values{"priority": {"normal"}, "query": {"x"}, "read_mode": {"basic"}, "one_priority": {"high"}},
			want:   itemFromProtoJSON(t, `{"prio":"PRIORITY_NORMAL","q":"x","onePriority":"PRIORITY_HIGH"}`),
		},
		{
			name:   "filtered (path) parameters are not checked",
			msg:    func() proto.Message { return &descriptorpb.FieldDescriptorProto{} },
			values: url.Values{"type": {"not-a-type"}, "label": {"optional"}},
			filter: utilities.NewDoubleArray([][]string{{"type"}}),
			want:   &descriptorpb.FieldDescriptorProto{Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()},
		},
		{
			name:   "unknown parameters are ignored",
			msg:    func() proto.Message { return &descriptorpb.FieldDescriptorProto{} },
			values: url.Values{"access_token": {"x"}, "nope.type": {"int33"}},
			want:   &descriptorpb.FieldDescriptorProto{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			filter := tt.filter
			if filter == nil {
				filter = utilities.NewDoubleArray(nil)
			}
			before := cloneValues(tt.values)
			got := tt.msg()
			require.NoError(t, (&restjson.QueryParser{}).Parse(got, tt.values, filter))
			require.True(t, proto.Equal(tt.want, got), "got %v\nwant %v", got, tt.want)
			require.Equal(t, before, tt.values, "the caller's values must not change")
		})
	}
}

func TestQueryParserErrors(t *testing.T) {
	tests := []struct {
		name    string
		msg     proto.Message
		values  url.Values
		field   string // EnumValueError.Field, if an enum error is expected
		substrs []string
	}{
		{
			name: "unknown value", msg: &descriptorpb.FieldDescriptorProto{}, values: url.Values{"type": {"int33"}}, field: "type",
			substrs: []string{`invalid value "int33"`, "allowed values: double, float,"},
		},
		{name: "nested", msg: &descriptorpb.FieldDescriptorProto{}, values: url.Values{"options.ctype": {"rope"}}, field: "options.ctype", substrs: []string{"allowed values: string, cord, string_piece"}},
		{name: "one bad repeated value", msg: newItem(), values: url.Values{"statuses": {"pending", "done"}}, field: "statuses"},
		{name: "map value", msg: newItem(), values: url.Values{"priorities[k]": {"urgent"}}, field: "priorities[k]"},
		{name: "empty value", msg: newItem(), values: url.Values{"prio": {""}}, field: "prio"},
		{name: "undeclared number", msg: newItem(), values: url.Values{"prio": {"9"}}, field: "prio"},
		// DefaultQueryParser (v2.32) refuses two keys for one field, e.g. the
		// proto name and the JSON name; the delegate's error passes through.
		{name: "proto name and json name together", msg: &descriptorpb.FieldDescriptorProto{}, values: url.Values{"json_name": {"x"}, "jsonName": {"y"}}, substrs: []string{"duplicate field"}},
		{name: "too many values for singular enum", msg: &descriptorpb.FieldDescriptorProto{}, values: url.Values{"type": {"int32", "int64"}}, substrs: []string{"too many values"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := (&restjson.QueryParser{}).Parse(tt.msg, tt.values, utilities.NewDoubleArray(nil))
			require.Error(t, err)
			if tt.field != "" {
				var ee *restjson.EnumValueError
				require.True(t, errors.As(err, &ee), "%v", err)
				require.Equal(t, tt.field, ee.Field)
			}
			for _, s := range tt.substrs {
				require.Contains(t, err.Error(), s)
			}
		})
	}
}

type recordingParser struct{ got url.Values }

func (r *recordingParser) Parse(_ proto.Message, values url.Values, _ *utilities.DoubleArray) error {
	r.got = values
	return nil
}

func TestQueryParserDelegate(t *testing.T) {
	rec := &recordingParser{}
	p := &restjson.QueryParser{Delegate: rec}
	require.NoError(t, p.Parse(newItem(), url.Values{"prio": {"high"}, "statuses": {"pending", "7"}, "q": {"high"}}, nil))
	require.Equal(t, url.Values{
		"prio":     {"PRIORITY_HIGH"},
		"statuses": {"PROPOSAL_STATUS_PENDING", "PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW"},
		"q":        {"high"},
	}, rec.got)
	var _ runtime.QueryParameterParser = p
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}
