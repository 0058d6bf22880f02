package restjson

import (
	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/encoding/protojson"
)

// ServeMuxOptions returns the options that make a runtime.ServeMux speak the
// REST JSON contract: a *Marshaler for "*" (the fallback for any
// Content-Type/Accept) and for "application/json", and a *QueryParser.
//
// The marshaler replaces the mux's default for "*", which is
// runtime.HTTPBodyMarshaler; our API has no google.api.HttpBody methods, so
// nothing is lost.
//
// Beware: grpc-gateway v2 has no per-mux query parser. The option is
// runtime.SetQueryParameterParser, which sets a process-wide variable used
// by the generated code for every ServeMux, so applying these options affects
// all muxes in the process.
//
// Responses carry every field of their message (issue #24): zero numbers,
// false, "", [] and {} are written, unset messages and timestamps as null,
// and an enum's zero value as its short form ("unspecified"). Only proto3
// `optional` fields that are unset are left out (protojson treats them as a
// oneof).
func ServeMuxOptions() []runtime.ServeMuxOption {
	m := &Marshaler{
		MarshalOptions:   protojson.MarshalOptions{EmitUnpopulated: true, UseProtoNames: false},
		UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
	}
	return []runtime.ServeMuxOption{
		runtime.WithMarshalerOption(runtime.MIMEWildcard, m),
		runtime.WithMarshalerOption("application/json", m),
		runtime.SetQueryParameterParser(&QueryParser{}),
	}
}
