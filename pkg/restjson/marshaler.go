package restjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/garden-bloom/memory/pkg/enumname"
)

// DefaultMaxDepth is the nesting limit for request JSON when
// Marshaler.MaxDepth is not set. Our API nests a handful of levels; the limit
// only has to stop hostile input early.
const DefaultMaxDepth = 64

// outputDepthLimit bounds the parse of protojson's own output and of
// non-proto values. It matches protobuf's default recursion limit, so any
// message protojson can write can also be rewritten.
const outputDepthLimit = 10000

// Marshaler is a grpc-gateway runtime.Marshaler with the semantics of
// runtime.JSONPb (protojson), except that enum values use the REST short
// form: it writes "normal" for PRIORITY_NORMAL and reads "normal", "NORMAL",
// "PRIORITY_NORMAL" or 1. The zero value is ready to use and equals
// protojson's defaults (JSON names, no unpopulated fields, unknown fields
// rejected). It is safe for concurrent use.
type Marshaler struct {
	// MarshalOptions control protojson output. Multiline and Indent are
	// applied after the enum rewrite; output is compact otherwise.
	MarshalOptions protojson.MarshalOptions
	// UnmarshalOptions control protojson input. With DiscardUnknown,
	// unknown enum names are dropped (as protojson does) instead of
	// rejected.
	UnmarshalOptions protojson.UnmarshalOptions
	// MaxDepth limits how deeply request JSON may nest objects and arrays;
	// zero or negative means DefaultMaxDepth. Deeper input fails with an
	// error wrapping ErrMaxDepth.
	MaxDepth int
}

var (
	_ runtime.Marshaler = (*Marshaler)(nil)
	_ runtime.Delimited = (*Marshaler)(nil)
)

// ContentType returns "application/json" for every value.
func (*Marshaler) ContentType(_ any) string { return "application/json" }

// Delimiter separates messages of a server stream: one JSON document per
// line, as runtime.JSONPb does.
func (*Marshaler) Delimiter() []byte { return []byte("\n") }

func (m *Marshaler) maxDepth() int {
	if m.MaxDepth <= 0 {
		return DefaultMaxDepth
	}
	return m.MaxDepth
}

// Marshal encodes v. A proto.Message goes through protojson and the enum
// rewrite. grpc-gateway also passes other values: response_body fields
// (slices, maps, enums, scalars) and stream chunks such as
// map[string]any{"result": msg}. Those are walked so that any message or
// enum inside slices, arrays, maps and pointers still gets the REST
// encoding; everything else (including structs) is encoding/json.
func (m *Marshaler) Marshal(v any) ([]byte, error) {
	b, err := m.marshalValue(v, 0)
	if err != nil {
		return nil, err
	}
	if m.MarshalOptions.Multiline || m.MarshalOptions.Indent != "" {
		indent := m.MarshalOptions.Indent
		if indent == "" {
			indent = "  " // protojson's default for Multiline
		}
		var buf bytes.Buffer
		if err := json.Indent(&buf, b, "", indent); err != nil {
			return nil, err
		}
		b = buf.Bytes()
	}
	return b, nil
}

func (m *Marshaler) marshalProto(msg proto.Message) ([]byte, error) {
	if directOptions(m.MarshalOptions) {
		if rm := msg.ProtoReflect(); rm.IsValid() {
			if b, err := marshalDirect(rm); err == nil {
				return b, nil
			}
		}
	}
	return m.marshalIndirect(msg)
}

// marshalIndirect is protojson's output, compacted, with the enum values
// rewritten to their short names (direct.go writes the same in one pass).
func (m *Marshaler) marshalIndirect(msg proto.Message) ([]byte, error) {
	opts := m.MarshalOptions
	opts.Multiline, opts.Indent = false, "" // formatting is applied once, at the end
	b, err := opts.Marshal(msg)
	if err != nil {
		return nil, err
	}
	md := msg.ProtoReflect().Descriptor()
	if !needsRewrite(md) {
		// protojson randomly varies its whitespace between builds to
		// discourage byte comparisons; compact it so the output is stable.
		var buf bytes.Buffer
		if err := json.Compact(&buf, b); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	tree, err := parseJSON(b, outputDepthLimit)
	if err != nil {
		return nil, fmt.Errorf("restjson: parsing protojson output of %s: %w", md.FullName(), err)
	}
	rw := &rewriter{toREST: true, resolver: extensionResolver(opts.Resolver)}
	if err := rw.message(md, tree); err != nil {
		return nil, err
	}
	return tree.appendJSON(make([]byte, 0, len(b))), nil
}

var textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()

func (m *Marshaler) marshalValue(v any, depth int) ([]byte, error) {
	if depth > outputDepthLimit {
		return nil, fmt.Errorf("%w: value nests more than %d levels", ErrMaxDepth, outputDepthLimit)
	}
	if v == nil {
		return []byte("null"), nil
	}
	if msg, ok := v.(proto.Message); ok {
		return m.marshalProto(msg) // a nil message pointer is "{}", as in JSONPb
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && rv.IsNil() {
		return []byte("null"), nil
	}
	switch x := v.(type) {
	case protoreflect.Enum:
		return enumJSON(x.Descriptor(), x.Number()), nil
	case json.Marshaler, encoding.TextMarshaler:
		return json.Marshal(v)
	}
	switch rv.Kind() {
	case reflect.Pointer:
		return m.marshalValue(rv.Elem().Interface(), depth+1)
	case reflect.Slice, reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return json.Marshal(v) // bytes are base64, as in encoding/json
		}
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			if m.MarshalOptions.EmitUnpopulated {
				return []byte("[]"), nil
			}
			return []byte("null"), nil
		}
		b := []byte{'['}
		for i := 0; i < rv.Len(); i++ {
			if i > 0 {
				b = append(b, ',')
			}
			e, err := m.marshalValue(rv.Index(i).Interface(), depth+1)
			if err != nil {
				return nil, err
			}
			b = append(b, e...)
		}
		return append(b, ']'), nil
	case reflect.Map:
		return m.marshalMap(rv, depth)
	default:
		return json.Marshal(v)
	}
}

// marshalMap writes a map with keys sorted like encoding/json does, so
// the output is deterministic.
func (m *Marshaler) marshalMap(rv reflect.Value, depth int) ([]byte, error) {
	kt := rv.Type().Key()
	switch kt.Kind() {
	case reflect.String:
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if kt.Implements(textMarshalerType) {
			return json.Marshal(rv.Interface())
		}
	default:
		return json.Marshal(rv.Interface())
	}
	if rv.IsNil() {
		return []byte("null"), nil
	}
	type entry struct {
		key string
		val reflect.Value
	}
	entries := make([]entry, 0, rv.Len())
	for it := rv.MapRange(); it.Next(); {
		k := it.Key()
		var ks string
		switch k.Kind() {
		case reflect.String:
			ks = k.String()
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			ks = strconv.FormatInt(k.Int(), 10)
		default:
			ks = strconv.FormatUint(k.Uint(), 10)
		}
		entries = append(entries, entry{ks, it.Value()})
	}
	slices.SortFunc(entries, func(a, b entry) int {
		if a.key < b.key {
			return -1
		}
		if a.key > b.key {
			return 1
		}
		return 0
	})
	b := []byte{'{'}
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		kb, err := json.Marshal(e.key)
		if err != nil {
			return nil, err
		}
		b = append(append(b, kb...), ':')
		vb, err := m.marshalValue(e.val.Interface(), depth+1)
		if err != nil {
			return nil, err
		}
		b = append(b, vb...)
	}
	return append(b, '}'), nil
}

// enumJSON writes an enum the way it appears inside a message: the short
// form as a string, or a bare number if the value is not declared.
func enumJSON(ed protoreflect.EnumDescriptor, n protoreflect.EnumNumber) []byte {
	if ed.FullName() == nullValueEnum {
		return []byte("null")
	}
	if ed.Values().ByNumber(n) == nil {
		return strconv.AppendInt(nil, int64(n), 10)
	}
	s := enumname.Short(ed, n)
	return append(append([]byte{'"'}, s...), '"')
}

// Unmarshal decodes the JSON document data into v, which must be a pointer
// (see Marshaler.NewDecoder for what it may point to). Empty input returns
// io.EOF, like runtime.JSONPb, so grpc-gateway treats it as "no body".
func (m *Marshaler) Unmarshal(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return io.EOF
	}
	tree, err := parseJSON(data, m.maxDepth())
	if err != nil {
		return err
	}
	return m.decodeTree(tree, data, v)
}

// NewDecoder returns a Decoder that reads one JSON document from r per
// Decode call (client streams send several, newline-delimited). Decode
// accepts a proto.Message, as grpc-gateway passes for body "*", or a
// pointer to a request field for body "field": pointers to messages (also
// unallocated ones), enums, slices and maps of those are decoded with the
// REST rules, anything else with encoding/json. At end of input it returns
// io.EOF unwrapped.
func (m *Marshaler) NewDecoder(r io.Reader) runtime.Decoder {
	dec := json.NewDecoder(r)
	return runtime.DecoderFunc(func(v any) error {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		tree, err := parseJSON(raw, m.maxDepth())
		if err != nil {
			return err
		}
		return m.decodeTree(tree, raw, v)
	})
}

// NewEncoder returns an Encoder that writes each value as Marshal does,
// followed by the Delimiter, in a single Write.
func (m *Marshaler) NewEncoder(w io.Writer) runtime.Encoder {
	return runtime.EncoderFunc(func(v any) error {
		b, err := m.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, m.Delimiter()...))
		return err
	})
}

// decodeTree decodes a parsed document; raw is its source text, reused
// when nothing needs rewriting (nil forces re-serialisation).
func (m *Marshaler) decodeTree(tree *jsonValue, raw []byte, v any) error {
	if msg, ok := v.(proto.Message); ok {
		return m.unmarshalProto(tree, raw, msg, nil)
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("restjson: cannot decode into %T: need a non-nil pointer", v)
	}
	d := &valueDecoder{m: m}
	return d.into(tree, rv.Elem())
}

func (m *Marshaler) unmarshalProto(tree *jsonValue, raw []byte, msg proto.Message, path []string) error {
	rw := &rewriter{
		discardUnknown: m.UnmarshalOptions.DiscardUnknown,
		resolver:       extensionResolver(m.UnmarshalOptions.Resolver),
		path:           slices.Clone(path),
	}
	if err := rw.message(msg.ProtoReflect().Descriptor(), tree); err != nil {
		return err
	}
	if rw.changed || raw == nil {
		raw = tree.appendJSON(nil)
	}
	return m.UnmarshalOptions.Unmarshal(raw, msg)
}

// extensionResolver returns r, or the global registry that protojson also
// falls back to.
func extensionResolver(r protoregistry.ExtensionTypeResolver) protoregistry.ExtensionTypeResolver {
	if r == nil {
		return protoregistry.GlobalTypes
	}
	return r
}

var (
	protoMessageType = reflect.TypeFor[proto.Message]()
	protoEnumType    = reflect.TypeFor[protoreflect.Enum]()
)

// valueDecoder decodes into non-message Go values (body "field" targets),
// mirroring runtime.JSONPb's decodeNonProtoField but with REST enums.
type valueDecoder struct {
	m    *Marshaler
	path []string
}

func (d *valueDecoder) fieldPath() string {
	return (&rewriter{path: d.path}).fieldPath()
}

// into decodes t into rv, which must be settable.
func (d *valueDecoder) into(t *jsonValue, rv reflect.Value) error {
	if rv.Kind() == reflect.Pointer {
		if t.isNull() {
			rv.SetZero()
			return nil
		}
		if rv.IsNil() {
			rv.Set(reflect.New(rv.Type().Elem()))
		}
		if rv.Type().Implements(protoMessageType) {
			return d.m.unmarshalProto(t, nil, rv.Interface().(proto.Message), d.path)
		}
		return d.into(t, rv.Elem())
	}
	if rv.CanAddr() && rv.Addr().Type().Implements(protoMessageType) {
		return d.m.unmarshalProto(t, nil, rv.Addr().Interface().(proto.Message), d.path)
	}
	if rv.Type().Implements(protoEnumType) && rv.CanInt() {
		if t.isNull() {
			rv.SetZero()
			return nil
		}
		ed := rv.Interface().(protoreflect.Enum).Descriptor()
		n, ok := parseEnumJSON(ed, t)
		if !ok {
			return newEnumValueError(d.fieldPath(), ed, enumValueText(t))
		}
		rv.SetInt(int64(n))
		return nil
	}
	switch {
	case rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() != reflect.Uint8:
		if t.isNull() {
			rv.SetZero()
			return nil
		}
		if t.kind != jsonArray {
			return fmt.Errorf("restjson: %s: cannot decode a JSON %s into %s", d.where(), t.kindName(), rv.Type())
		}
		s := reflect.MakeSlice(rv.Type(), len(t.elems), len(t.elems))
		for i, e := range t.elems {
			d.path = append(d.path, "["+strconv.Itoa(i)+"]")
			err := d.into(e, s.Index(i))
			d.path = d.path[:len(d.path)-1]
			if err != nil {
				return err
			}
		}
		rv.Set(s)
		return nil
	case rv.Kind() == reflect.Map:
		if t.isNull() {
			rv.SetZero()
			return nil
		}
		if t.kind != jsonObject {
			return fmt.Errorf("restjson: %s: cannot decode a JSON %s into %s", d.where(), t.kindName(), rv.Type())
		}
		if rv.IsNil() {
			rv.Set(reflect.MakeMap(rv.Type()))
		}
		for i := range t.members {
			mem := &t.members[i]
			key := mem.key()
			k, err := mapKey(rv.Type().Key(), key)
			if err != nil {
				return fmt.Errorf("restjson: %s: map key %q: %w", d.where(), key, err)
			}
			val := reflect.New(rv.Type().Elem()).Elem()
			d.path = append(d.path, "["+strconv.Quote(key)+"]")
			err = d.into(mem.val, val)
			d.path = d.path[:len(d.path)-1]
			if err != nil {
				return err
			}
			rv.SetMapIndex(k, val)
		}
		return nil
	default:
		if !rv.CanAddr() {
			return fmt.Errorf("restjson: %s: cannot decode into unaddressable %s", d.where(), rv.Type())
		}
		return json.Unmarshal(t.appendJSON(nil), rv.Addr().Interface())
	}
}

func (d *valueDecoder) where() string {
	if p := d.fieldPath(); p != "" {
		return "field " + strconv.Quote(p)
	}
	return "body"
}

// mapKey converts a JSON object key to a Go map key of type kt; protobuf
// map keys are strings, integers or bools.
func mapKey(kt reflect.Type, s string) (reflect.Value, error) {
	k := reflect.New(kt).Elem()
	switch kt.Kind() {
	case reflect.String:
		k.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return k, err
		}
		k.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, err := strconv.ParseInt(s, 10, kt.Bits())
		if err != nil {
			return k, err
		}
		k.SetInt(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u, err := strconv.ParseUint(s, 10, kt.Bits())
		if err != nil {
			return k, err
		}
		k.SetUint(u)
	default:
		return k, fmt.Errorf("unsupported map key type %s", kt)
	}
	return k, nil
}
