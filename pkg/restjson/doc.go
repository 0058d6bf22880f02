// Package restjson is the JSON codec of the REST gateway (grpc-gateway v2).
//
// The gRPC API's enum values carry their enum's name as an UPPER_SNAKE
// prefix (PRIORITY_NORMAL); the REST contract uses the lowercase short form
// instead ("normal", see package enumname). protojson only knows the full
// names, so this package sits between grpc-gateway and protojson and
// translates enum values in both directions, guided by the message
// descriptors:
//
//   - [Marshaler] is a runtime.Marshaler: responses get short enum names,
//     request bodies accept short names, full names and numbers.
//   - [QueryParser] does the same for query parameters.
//   - [ServeMuxOptions] wires both into a runtime.ServeMux.
//
// Everything else is protojson's behaviour: output uses lowerCamelCase JSON
// names (or the field's json_name), input accepts JSON names and proto names,
// unknown fields are rejected. ServeMuxOptions writes every field of a
// response, zero values and empty lists included (EmitUnpopulated).
//
// # Enum values
//
// What a value is called (its short form, and which forms parse back to it)
// is package enumname's knowledge, not this codec's: see its naming rule.
// The codec only applies it where enums appear in JSON. The zero value
// PRIORITY_UNSPECIFIED is written as "unspecified", although protojson omits
// zero values unless EmitUnpopulated is set. A numeric short form (LAYER_1 ->
// "1") is still a JSON string. Unknown enum numbers are written by protojson
// as JSON numbers and left as they are. Request bodies and query parameters
// accept every form enumname.Parse does; anything else is an error that
// names the field and lists the allowed short forms.
//
// google.protobuf well-known types with a special JSON mapping (Any,
// Timestamp, Duration, Struct/Value/ListValue, FieldMask, wrappers, Empty,
// NullValue) are left exactly as protojson writes and reads them. In
// particular, enums inside an Any payload keep their full names.
package restjson
