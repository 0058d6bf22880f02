// Package restjson is the JSON codec of the REST gateway (grpc-gateway v2).
//
// The gRPC API follows buf lint STANDARD, so enum values carry their enum's
// name as an UPPER_SNAKE prefix (PRIORITY_NORMAL, PROPOSAL_STATUS_PENDING).
// The REST contract in the specs uses the lowercase short form instead
// ("normal", "pending"). protojson only knows the full names, so this package
// sits between grpc-gateway and protojson and translates enum values in both
// directions, guided by the message descriptors:
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
// # Enum naming rule
//
// The short form of an enum value is its name with the enum's prefix removed,
// lowercased. The prefix is chosen per enum, once, from its descriptor:
//
//  1. The enum's own name in UPPER_SNAKE_CASE plus "_" (ProposalStatus ->
//     "PROPOSAL_STATUS_", HTTPMethod -> "HTTP_METHOD_"; for a nested enum
//     only its own name counts: FieldDescriptorProto.Type -> "TYPE_"), if
//     every value name starts with it. This is the prefix buf lint's
//     ENUM_VALUE_PREFIX rule demands, so it is what our API uses, and it
//     does not move when values are added.
//  2. Otherwise the longest common prefix of all value names that ends in
//     "_", when the enum has at least two values (typepb's Field.Kind with
//     TYPE_DOUBLE... -> "TYPE_"; FieldOptions.JSType with JS_NORMAL... ->
//     "JS_"). This covers enums whose prefix does not match their name.
//  3. Otherwise no prefix (FieldOptions.CType: STRING, CORD, STRING_PIECE ->
//     "string", "cord", "string_piece").
//
// A prefix is only used if it leaves every value a non-empty remainder. If
// the resulting short forms would be ambiguous (two values with the same
// short form, or a short form equal to another value's full name) the enum
// falls back to its full, unchanged value names, so that every rendered value
// always parses back to the value it came from.
//
// The zero value PRIORITY_UNSPECIFIED is "unspecified", although protojson
// omits zero values unless EmitUnpopulated is set. A remainder may be
// numeric (LAYER_1 -> "1"); it is still a JSON string. Unknown enum numbers
// are written by protojson as JSON numbers and left as they are.
//
// Parsing (bodies and query parameters) accepts, in this order: the exact
// full name (PRIORITY_NORMAL), the short form in any letter case ("normal",
// "NORMAL"), or the decimal number of a declared value. Anything else is an
// error that names the field and lists the allowed short forms.
//
// google.protobuf well-known types with a special JSON mapping (Any,
// Timestamp, Duration, Struct/Value/ListValue, FieldMask, wrappers, Empty,
// NullValue) are left exactly as protojson writes and reads them. In
// particular, enums inside an Any payload keep their full names.
package restjson
