package restjson_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/grpc-ecosystem/grpc-gateway/v2/utilities"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/garden-bloom/memory/pkg/restjson"
)

// newTestMux builds a ServeMux with ServeMuxOptions and routes that do what
// protoc-gen-grpc-gateway's generated handlers do, echoing the request
// message instead of calling a gRPC server.
func newTestMux(t *testing.T) *runtime.ServeMux {
	t.Helper()
	// The query parser option sets a process-wide variable; put the
	// default back so other tests see grpc-gateway's behaviour.
	t.Cleanup(func() { runtime.SetQueryParameterParser(&runtime.DefaultQueryParser{})(nil) })
	mux := runtime.NewServeMux(restjson.ServeMuxOptions()...)

	echo := func(w http.ResponseWriter, r *http.Request, decodeBody bool) {
		ctx := runtime.NewServerMetadataContext(r.Context(), runtime.ServerMetadata{})
		inbound, outbound := runtime.MarshalerForRequest(mux, r)
		msg := &descriptorpb.FieldDescriptorProto{}
		if decodeBody {
			if err := inbound.NewDecoder(r.Body).Decode(msg); err != nil && !errors.Is(err, io.EOF) {
				runtime.HTTPError(ctx, mux, outbound, w, r, status.Errorf(codes.InvalidArgument, "%v", err))
				return
			}
		}
		if err := runtime.PopulateQueryParameters(msg, r.URL.Query(), utilities.NewDoubleArray(nil)); err != nil {
			runtime.HTTPError(ctx, mux, outbound, w, r, status.Errorf(codes.InvalidArgument, "%v", err))
			return
		}
		runtime.ForwardResponseMessage(ctx, mux, outbound, w, r, msg)
	}
	require.NoError(t, mux.HandlePath(http.MethodGet, "/v1/field", func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		echo(w, r, false)
	}))
	require.NoError(t, mux.HandlePath(http.MethodPost, "/v1/field", func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		echo(w, r, true)
	}))
	require.NoError(t, mux.HandlePath(http.MethodGet, "/v1/stream", func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		_, outbound := runtime.MarshalerForRequest(mux, r)
		msgs := []proto.Message{
			&descriptorpb.FieldDescriptorProto{Type: descriptorpb.FieldDescriptorProto_TYPE_INT32.Enum()},
			&descriptorpb.FieldDescriptorProto{Label: descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()},
		}
		// Generated handlers put the gRPC metadata in the context; streams need it.
		ctx := runtime.NewServerMetadataContext(r.Context(), runtime.ServerMetadata{})
		runtime.ForwardResponseStream(ctx, mux, outbound, w, r, func() (proto.Message, error) {
			if len(msgs) == 0 {
				return nil, io.EOF
			}
			m := msgs[0]
			msgs = msgs[1:]
			return m, nil
		})
	}))
	return mux
}

func TestServeMux(t *testing.T) {
	mux := newTestMux(t)
	tests := []struct {
		name        string
		method      string
		target      string
		contentType string
		body        string
		wantCode    int
		wantBody    string   // exact, if set
		wantSubstrs []string // otherwise
	}{
		{
			name: "query parameters in all forms", method: http.MethodGet,
			target:   "/v1/field?type=int32&label=LABEL_REPEATED&json_name=x",
			wantCode: http.StatusOK, wantBody: `{"label":"repeated","type":"int32","jsonName":"x"}`,
		},
		{
			name: "query: json names and nested enum", method: http.MethodGet,
			target:   "/v1/field?jsonName=y&options.jstype=number&type=6",
			wantCode: http.StatusOK, wantBody: `{"type":"fixed64","jsonName":"y","options":{"jstype":"number"}}`,
		},
		{
			name: "query: unknown enum value is 400", method: http.MethodGet,
			target:   "/v1/field?type=int33",
			wantCode: http.StatusBadRequest, wantSubstrs: []string{`"code":3`, `invalid value \"int33\"`, "allowed values: double, float"},
		},
		{
			name: "body with short values", method: http.MethodPost, target: "/v1/field",
			contentType: "application/json", body: `{"type":"bool","label":"optional","json_name":"b"}`,
			wantCode: http.StatusOK, wantBody: `{"label":"optional","type":"bool","jsonName":"b"}`,
		},
		{
			name: "body with charset parameter and full names", method: http.MethodPost, target: "/v1/field",
			contentType: "application/json; charset=utf-8", body: `{"type":"TYPE_STRING"}`,
			wantCode: http.StatusOK, wantBody: `{"type":"string"}`,
		},
		{
			name: "body and query together", method: http.MethodPost, target: "/v1/field?label=required",
			body:     `{"type":"bytes"}`,
			wantCode: http.StatusOK, wantBody: `{"label":"required","type":"bytes"}`,
		},
		{
			name: "body: unknown enum value is 400", method: http.MethodPost, target: "/v1/field",
			contentType: "application/json", body: `{"type":"varchar"}`,
			wantCode: http.StatusBadRequest, wantSubstrs: []string{`"code":3`, `field \"type\"`},
		},
		{
			name: "body: too deep is 400", method: http.MethodPost, target: "/v1/field",
			body:     strings.Repeat(`{"options":`, 70) + "{}" + strings.Repeat("}", 70),
			wantCode: http.StatusBadRequest, wantSubstrs: []string{"nesting too deep"},
		},
		{
			name: "server stream", method: http.MethodGet, target: "/v1/stream",
			wantCode: http.StatusOK, wantBody: "{\"result\":{\"type\":\"int32\"}}\n{\"result\":{\"label\":\"repeated\"}}\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.target, strings.NewReader(tt.body))
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			require.Equal(t, tt.wantCode, rec.Code, rec.Body.String())
			require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
			if tt.wantBody != "" {
				// The test messages are proto2 (every field has presence),
				// so the mux's EmitUnpopulated writes each unset one as null
				// and each empty list as [] (issue #24); compare the populated part.
				want, got := strings.Split(tt.wantBody, "\n"), strings.Split(rec.Body.String(), "\n")
				require.Len(t, got, len(want), rec.Body.String())
				for i := range want {
					if want[i] == "" {
						require.Empty(t, got[i])
						continue
					}
					require.JSONEq(t, want[i], dropNulls(t, got[i]))
				}
			}
			for _, s := range tt.wantSubstrs {
				require.Contains(t, rec.Body.String(), s)
			}
			if tt.wantCode != http.StatusOK {
				require.True(t, json.Valid(rec.Body.Bytes()), rec.Body.String())
			}
		})
	}
}

func TestServeMuxOptions(t *testing.T) {
	t.Cleanup(func() { runtime.SetQueryParameterParser(&runtime.DefaultQueryParser{})(nil) })
	opts := restjson.ServeMuxOptions()
	require.Len(t, opts, 3)
	mux := runtime.NewServeMux(opts...)
	for _, h := range []map[string]string{
		{},
		{"Accept": "application/json"},
		{"Content-Type": "application/json"},
		{"Content-Type": "text/plain", "Accept": "*/*"},
	} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		in, out := runtime.MarshalerForRequest(mux, req)
		require.IsType(t, &restjson.Marshaler{}, in, "%v", h)
		require.IsType(t, &restjson.Marshaler{}, out, "%v", h)
	}
}

// dropNulls removes the null and [] members of a JSON document's objects.
func dropNulls(t *testing.T, doc string) string {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(doc), &v), doc)
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if a, ok := e.([]any); e == nil || ok && len(a) == 0 {
					delete(x, k)
				} else {
					x[k] = walk(e)
				}
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		}
		return v
	}
	b, err := json.Marshal(walk(v))
	require.NoError(t, err)
	return string(b)
}
