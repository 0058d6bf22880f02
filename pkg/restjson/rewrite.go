package restjson

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/garden-bloom/memory/pkg/enumname"
)

// EnumValueError reports an enum value in a request that is not one of the
// enum's values. grpc-gateway turns it into InvalidArgument (HTTP 400); the
// fields let callers build a structured error detail instead.
type EnumValueError struct {
	// Field is where the value was found: a JSON path such as
	// "messageType[0].field[1].type" for bodies (empty for a body that is
	// the bare enum), or the query parameter name.
	Field string
	// Enum is the enum's full proto name.
	Enum protoreflect.FullName
	// Value is the rejected value as sent.
	Value string
	// Allowed are the accepted short forms, in declaration order.
	Allowed []string
}

func (e *EnumValueError) Error() string {
	where := "enum " + string(e.Enum)
	if e.Field != "" {
		where = fmt.Sprintf("field %q (enum %s)", e.Field, e.Enum)
	}
	return fmt.Sprintf("restjson: invalid value %q for %s; allowed values: %s",
		e.Value, where, strings.Join(e.Allowed, ", "))
}

// CheckEnums reports the first enum value in the JSON body of a request
// message md that is not one of the enum's values, as an *EnumValueError
// naming where it is, before the body is decoded: grpc-gateway would turn
// the decoder's error into a bare InvalidArgument, losing the field. A
// body that is not JSON is left to the decoder, which says what is wrong.
func CheckEnums(md protoreflect.MessageDescriptor, body []byte) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	tree, err := parseJSON(body, DefaultMaxDepth)
	if err != nil {
		return nil
	}
	rw := &rewriter{}
	return rw.message(md, tree)
}

// nullValueEnum has its own JSON mapping (JSON null) and is never rewritten.
const nullValueEnum protoreflect.FullName = "google.protobuf.NullValue"

func newEnumValueError(field string, ed protoreflect.EnumDescriptor, value string) *EnumValueError {
	return &EnumValueError{
		Field:   field,
		Enum:    ed.FullName(),
		Value:   value,
		Allowed: enumname.Allowed(ed),
	}
}

// wellKnown are the google.protobuf messages whose JSON form is not an
// object of their fields. protojson owns their encoding; walking into them
// would misread e.g. a Struct's keys as field names.
var wellKnown = map[protoreflect.FullName]bool{
	"google.protobuf.Any":         true,
	"google.protobuf.Timestamp":   true,
	"google.protobuf.Duration":    true,
	"google.protobuf.Struct":      true,
	"google.protobuf.Value":       true,
	"google.protobuf.ListValue":   true,
	"google.protobuf.FieldMask":   true,
	"google.protobuf.Empty":       true,
	"google.protobuf.BoolValue":   true,
	"google.protobuf.BytesValue":  true,
	"google.protobuf.DoubleValue": true,
	"google.protobuf.FloatValue":  true,
	"google.protobuf.Int32Value":  true,
	"google.protobuf.Int64Value":  true,
	"google.protobuf.StringValue": true,
	"google.protobuf.UInt32Value": true,
	"google.protobuf.UInt64Value": true,
}

// rewriter walks a parsed JSON document alongside a message descriptor and
// translates enum values: full -> short for output, any accepted form ->
// full for input.
type rewriter struct {
	toREST         bool
	discardUnknown bool // input only: leave unknown names for protojson to drop
	resolver       protoregistry.ExtensionTypeResolver
	path           []string // JSON path segments, joined only for errors
	changed        bool
}

func (rw *rewriter) fieldPath() string {
	return strings.TrimPrefix(strings.Join(rw.path, ""), ".")
}

func (rw *rewriter) message(md protoreflect.MessageDescriptor, v *jsonValue) error {
	if v.kind != jsonObject || wellKnown[md.FullName()] {
		// Not an object: protojson reports the type mismatch (input) or it
		// is a well-known type's special form (output).
		return nil
	}
	for i := range v.members {
		m := &v.members[i]
		key := m.key()
		fd := rw.lookup(md, key)
		if fd == nil {
			continue // unknown field: protojson rejects or discards it
		}
		rw.path = append(rw.path, "."+key)
		err := rw.field(fd, m.val)
		rw.path = rw.path[:len(rw.path)-1]
		if err != nil {
			return err
		}
	}
	return nil
}

// lookup resolves a JSON object key the way protojson does: JSON name
// first (covers custom json_name), then proto name, then "[ext.name]".
func (rw *rewriter) lookup(md protoreflect.MessageDescriptor, key string) protoreflect.FieldDescriptor {
	fields := md.Fields()
	if fd := fields.ByJSONName(key); fd != nil {
		return fd
	}
	if fd := fields.ByTextName(key); fd != nil {
		return fd
	}
	if len(key) > 2 && key[0] == '[' && key[len(key)-1] == ']' && rw.resolver != nil {
		xt, err := rw.resolver.FindExtensionByName(protoreflect.FullName(key[1 : len(key)-1]))
		if err == nil && xt.TypeDescriptor().ContainingMessage().FullName() == md.FullName() {
			return xt.TypeDescriptor()
		}
	}
	return nil
}

func (rw *rewriter) field(fd protoreflect.FieldDescriptor, v *jsonValue) error {
	if v.isNull() {
		return nil
	}
	switch {
	case fd.IsMap():
		if v.kind != jsonObject {
			return nil
		}
		for i := range v.members {
			m := &v.members[i]
			rw.path = append(rw.path, "["+strconv.Quote(m.key())+"]")
			err := rw.singular(fd.MapValue(), m.val)
			rw.path = rw.path[:len(rw.path)-1]
			if err != nil {
				return err
			}
		}
	case fd.IsList():
		if v.kind != jsonArray {
			return nil
		}
		for i, e := range v.elems {
			rw.path = append(rw.path, "["+strconv.Itoa(i)+"]")
			err := rw.singular(fd, e)
			rw.path = rw.path[:len(rw.path)-1]
			if err != nil {
				return err
			}
		}
	default:
		return rw.singular(fd, v)
	}
	return nil
}

func (rw *rewriter) singular(fd protoreflect.FieldDescriptor, v *jsonValue) error {
	switch fd.Kind() {
	case protoreflect.EnumKind:
		return rw.enum(fd.Enum(), v)
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return rw.message(fd.Message(), v)
	}
	return nil
}

func (rw *rewriter) enum(ed protoreflect.EnumDescriptor, v *jsonValue) error {
	if ed.FullName() == nullValueEnum || v.isNull() {
		return nil
	}
	if rw.toREST {
		// protojson writes declared values as their name and undeclared
		// ones as numbers; only the names have a short form.
		if v.kind == jsonString {
			name := v.str()
			if ev := ed.Values().ByName(protoreflect.Name(name)); ev != nil {
				if s := enumname.Short(ed, ev.Number()); s != name {
					v.setString(s)
					rw.changed = true
				}
			}
		}
		return nil
	}
	if v.kind != jsonString && !v.isNumber() {
		return nil // true/false/object/array: protojson reports the mismatch
	}
	n, ok := parseEnumJSON(ed, v)
	if !ok {
		if rw.discardUnknown {
			return nil // protojson drops unknown enum names with DiscardUnknown
		}
		return newEnumValueError(rw.fieldPath(), ed, enumValueText(v))
	}
	// Hand protojson the full name: it accepts nothing shorter.
	if full := string(ed.Values().ByNumber(n).Name()); v.kind != jsonString || v.str() != full {
		v.setString(full)
		rw.changed = true
	}
	return nil
}

// parseEnumJSON interprets a JSON string (any form enumname.Parse
// accepts) or an integral JSON number as a declared value of ed.
func parseEnumJSON(ed protoreflect.EnumDescriptor, v *jsonValue) (protoreflect.EnumNumber, bool) {
	switch {
	case v.kind == jsonString:
		return enumname.Parse(ed, v.str())
	case v.isNumber():
		f, err := strconv.ParseFloat(string(v.raw), 64)
		if err != nil || f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
			return 0, false
		}
		if ev := ed.Values().ByNumber(protoreflect.EnumNumber(int32(f))); ev != nil {
			return ev.Number(), true
		}
	}
	return 0, false
}

// enumValueText is the rejected value as the client wrote it, for errors.
func enumValueText(v *jsonValue) string {
	if v.kind == jsonString {
		return v.str()
	}
	return string(v.raw)
}

// rewriteNeeded caches, per message descriptor, whether any enum (or
// extension, which may hold one) is reachable from it, so messages without
// enums skip the parse/rewrite step on output.
var rewriteNeeded sync.Map // protoreflect.MessageDescriptor -> bool

func needsRewrite(md protoreflect.MessageDescriptor) bool {
	if v, ok := rewriteNeeded.Load(md); ok {
		return v.(bool)
	}
	need := reachesEnum(md, map[protoreflect.FullName]bool{})
	rewriteNeeded.Store(md, need)
	return need
}

func reachesEnum(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) bool {
	if seen[md.FullName()] || wellKnown[md.FullName()] {
		return false
	}
	seen[md.FullName()] = true
	if md.ExtensionRanges().Len() > 0 {
		return true
	}
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.IsMap() {
			fd = fd.MapValue()
		}
		switch fd.Kind() {
		case protoreflect.EnumKind:
			if fd.Enum().FullName() != nullValueEnum {
				return true
			}
		case protoreflect.MessageKind, protoreflect.GroupKind:
			if reachesEnum(fd.Message(), seen) {
				return true
			}
		}
	}
	return false
}
