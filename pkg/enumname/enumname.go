// Package enumname knows what the values of the API's enums are called in
// the REST contract, for the REST JSON codec (pkg/restjson), the OpenAPI
// generator and the services' logs, metrics and messages. It is its own
// package so that knowing a value's name does not mean depending on the
// codec (and through it on grpc-gateway).
//
// The gRPC API follows buf lint STANDARD, so enum values carry their enum's
// name as an UPPER_SNAKE prefix (PRIORITY_NORMAL, PROPOSAL_STATUS_PENDING).
// The REST contract in the specs uses the lowercase short form instead
// ("normal", "pending").
//
// # Naming rule
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
// The zero value PRIORITY_UNSPECIFIED is "unspecified". A remainder may be
// numeric (LAYER_1 -> "1").
//
// Parsing accepts, in this order: the exact full name (PRIORITY_NORMAL), the
// short form in any letter case ("normal", "NORMAL"), or the decimal number
// of a declared value.
package enumname

import (
	"strconv"
	"strings"
	"sync"
	"unicode"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Short returns the REST short form of the value v of enum ed
// (PRIORITY_NORMAL -> "normal"); see the package documentation for the rule.
// A number that is not declared in ed is returned as its decimal string,
// because there is no name to shorten; protojson writes such values as JSON
// numbers and callers producing JSON should do the same.
func Short(ed protoreflect.EnumDescriptor, v protoreflect.EnumNumber) string {
	if s, ok := tableFor(ed).short[v]; ok {
		return s
	}
	return strconv.FormatInt(int64(v), 10)
}

// Parse parses s as a value of enum ed. It accepts the exact full
// value name ("PRIORITY_NORMAL"), the short form in any letter case
// ("normal", "Normal"), or the decimal number of a declared value ("1"), in
// that order of precedence, so a numeric short form such as "1" for LAYER_1
// means that value rather than the number 1. Numbers that are not declared in
// ed are rejected: the REST contract only has the declared values.
func Parse(ed protoreflect.EnumDescriptor, s string) (protoreflect.EnumNumber, bool) {
	if ev := ed.Values().ByName(protoreflect.Name(s)); ev != nil {
		return ev.Number(), true
	}
	t := tableFor(ed)
	if n, ok := t.byShort[strings.ToLower(s)]; ok {
		return n, true
	}
	if i, err := strconv.ParseInt(s, 10, 32); err == nil {
		if ev := ed.Values().ByNumber(protoreflect.EnumNumber(i)); ev != nil {
			return ev.Number(), true
		}
	}
	return 0, false
}

// Allowed lists the short forms of ed in declaration order, for error
// messages that tell a client what it could have sent. The slice is the
// caller's.
func Allowed(ed protoreflect.EnumDescriptor) []string {
	return append([]string(nil), tableFor(ed).allowed...)
}

// enumTable is the precomputed translation of one enum, so the per-value
// work during marshalling is a map lookup.
type enumTable struct {
	short   map[protoreflect.EnumNumber]string // number -> short form (first name for aliases)
	byShort map[string]protoreflect.EnumNumber // lowercased short form -> number
	allowed []string                           // short forms in declaration order
}

// enumTables caches enumTable by descriptor. Descriptors are long-lived
// (generated code registers them once), so the cache stays small.
var enumTables sync.Map // protoreflect.EnumDescriptor -> *enumTable

func tableFor(ed protoreflect.EnumDescriptor) *enumTable {
	if t, ok := enumTables.Load(ed); ok {
		return t.(*enumTable)
	}
	t, _ := enumTables.LoadOrStore(ed, buildEnumTable(ed))
	return t.(*enumTable)
}

func buildEnumTable(ed protoreflect.EnumDescriptor) *enumTable {
	values := ed.Values()
	names := make([]string, values.Len())
	for i := range names {
		names[i] = string(values.Get(i).Name())
	}
	if t, ok := tryEnumTable(ed, enumPrefix(string(ed.Name()), names), true); ok {
		return t
	}
	// The short forms would be ambiguous; full names always round-trip.
	t, _ := tryEnumTable(ed, "", false)
	return t
}

// tryEnumTable builds the table for the given prefix and reports whether
// every short form maps back to exactly its own value.
func tryEnumTable(ed protoreflect.EnumDescriptor, prefix string, lower bool) (*enumTable, bool) {
	values := ed.Values()
	t := &enumTable{
		short:   make(map[protoreflect.EnumNumber]string, values.Len()),
		byShort: make(map[string]protoreflect.EnumNumber, values.Len()),
		allowed: make([]string, 0, values.Len()),
	}
	ok := true
	for i := 0; i < values.Len(); i++ {
		ev := values.Get(i)
		s := strings.TrimPrefix(string(ev.Name()), prefix)
		if lower {
			s = strings.ToLower(s)
		}
		key := strings.ToLower(s)
		if n, dup := t.byShort[key]; dup && n != ev.Number() {
			ok = false
		}
		// Parse tries full names first, so a short form that is
		// another value's full name would parse as that other value.
		if other := values.ByName(protoreflect.Name(s)); other != nil && other.Number() != ev.Number() {
			ok = false
		}
		if _, seen := t.short[ev.Number()]; !seen {
			t.short[ev.Number()] = s
		}
		if _, seen := t.byShort[key]; !seen {
			t.byShort[key] = ev.Number()
		}
		t.allowed = append(t.allowed, s)
	}
	return t, ok
}

// enumPrefix picks the prefix to strip from names, the value names of the
// enum called enumName; the rule is documented on the package.
func enumPrefix(enumName string, names []string) string {
	if p := upperSnake(enumName) + "_"; stripsAll(p, names) {
		return p
	}
	if len(names) < 2 {
		return ""
	}
	common := names[0]
	for _, n := range names[1:] {
		i := 0
		for i < len(common) && i < len(n) && common[i] == n[i] {
			i++
		}
		common = common[:i]
	}
	p := common[:strings.LastIndexByte(common, '_')+1]
	if p != "" && stripsAll(p, names) {
		return p
	}
	return ""
}

// stripsAll reports whether every name starts with prefix and keeps a
// non-empty rest, so that no value ends up with an empty short form.
func stripsAll(prefix string, names []string) bool {
	if len(names) == 0 {
		return false
	}
	for _, n := range names {
		if len(n) <= len(prefix) || !strings.HasPrefix(n, prefix) {
			return false
		}
	}
	return true
}

// upperSnake converts a CamelCase identifier to UPPER_SNAKE_CASE the way
// buf lint derives enum value prefixes: a word starts at an upper-case
// letter that follows a lower-case letter or digit, and at the last letter of
// an acronym that is followed by a lower-case letter (HTTPMethod ->
// HTTP_METHOD). Digits do not start a word (Layer2 -> LAYER2).
func upperSnake(s string) string {
	rs := []rune(s)
	var b strings.Builder
	for i, r := range rs {
		if i > 0 && unicode.IsUpper(r) && rs[i-1] != '_' {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

// Name is e's value in the REST form ("normal" for PRIORITY_NORMAL), for
// logs, metrics labels and messages that should read like the API.
func Name(e protoreflect.Enum) string {
	return Short(e.Descriptor(), e.Number())
}
