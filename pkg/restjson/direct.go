package restjson

import (
	"cmp"
	"encoding/base64"
	"errors"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/garden-bloom/memory/pkg/enumname"
)

// The REST edge's responses were protojson's output parsed again to give
// enum values their short names (and compacted): on a REST ReadMemory that
// was 19 % of the process's CPU, and much of its garbage (issue #30). The
// direct encoder writes the same bytes in one pass, straight from the
// message: protojson's rules with EmitUnpopulated (every field in
// declaration order; unset message fields and proto2 optionals null; unset
// oneof members and proto3 optionals left out; zero values and empty lists
// and maps written), enum values by their short names (enumname), 64-bit
// integers quoted, floats as encoding/json writes them, bytes as base64,
// map keys sorted, Timestamp and Duration in their RFC 3339 forms. A
// message whose fields can hold any other well-known type (Any, Struct,
// wrappers …) goes the old way, and so does anything the direct encoder
// refuses (invalid UTF-8, a timestamp out of range), so protojson reports
// it as before. TestDirectIsTheOldEncoding compares the two on every
// message of the API.

// errIndirect makes the caller encode the message the old way.
var errIndirect = errors.New("restjson: not encoded directly")

// directOptions says whether opts are the REST edge's (ServeMuxOptions):
// the only options the direct encoder writes.
func directOptions(opts protojson.MarshalOptions) bool {
	return opts.EmitUnpopulated && !opts.UseProtoNames && !opts.UseEnumNumbers && !opts.EmitDefaultValues && opts.Resolver == nil
}

// directPlans holds, per message descriptor, how to write it (*directPlan),
// or nil when it cannot be written directly.
var directPlans sync.Map // protoreflect.FullName -> *directPlan

type directPlan struct {
	fields []directField
	// avgSize is a running average of the message's JSON size, so that
	// its buffer is allocated once, not grown by doubling.
	avgSize atomic.Int64
}

// buffer returns a buffer likely to hold the next message of p whole.
func (p *directPlan) buffer() []byte {
	return make([]byte, 0, max(512, p.avgSize.Load()*5/4))
}

// wrote records the size of a message of p written.
func (p *directPlan) wrote(n int) {
	avg := p.avgSize.Load()
	p.avgSize.Store(avg + (int64(n)-avg)/8) // racy updates only blur the average
}

type directField struct {
	fd   protoreflect.FieldDescriptor
	name []byte // `"jsonName":`
	// oneof: set for members of a oneof, real or synthetic (proto3
	// optional): left out when unset.
	oneof bool
}

// planFor returns md's plan, nil when it holds a type the direct encoder
// does not write.
func planFor(md protoreflect.MessageDescriptor) *directPlan {
	if p, ok := directPlans.Load(md.FullName()); ok {
		return p.(*directPlan)
	}
	p := buildPlan(md, map[protoreflect.FullName]bool{})
	directPlans.Store(md.FullName(), p)
	return p
}

func buildPlan(md protoreflect.MessageDescriptor, visiting map[protoreflect.FullName]bool) *directPlan {
	visiting[md.FullName()] = true
	fds := md.Fields()
	p := &directPlan{}
	for i := range fds.Len() {
		fd := fds.Get(i)
		if fd.IsExtension() {
			return nil
		}
		for _, sub := range []protoreflect.FieldDescriptor{fd, fd.MapValue()} {
			if sub == nil || sub.Message() == nil {
				continue
			}
			smd := sub.Message()
			switch {
			case smd.FullName() == timestampName || smd.FullName() == durationName || smd.FullName() == emptyName:
			case wellKnown[smd.FullName()]:
				return nil
			case visiting[smd.FullName()]: // recursive: planned above
			default:
				if sp, ok := directPlans.Load(smd.FullName()); ok {
					if sp.(*directPlan) == nil {
						return nil
					}
				} else if buildPlan(smd, visiting) == nil {
					return nil
				}
			}
		}
		name, _ := appendJSONString(nil, fd.JSONName())
		p.fields = append(p.fields, directField{fd: fd, name: append(name, ':'), oneof: fd.ContainingOneof() != nil})
	}
	return p
}

const (
	timestampName protoreflect.FullName = "google.protobuf.Timestamp"
	durationName  protoreflect.FullName = "google.protobuf.Duration"
	emptyName     protoreflect.FullName = "google.protobuf.Empty"
)

// marshalDirect returns m's REST JSON, or fails as appendDirect.
func marshalDirect(m protoreflect.Message) ([]byte, error) {
	p := planFor(m.Descriptor())
	if p == nil {
		return nil, errIndirect
	}
	b, err := appendDirect(p.buffer(), m)
	if err == nil {
		p.wrote(len(b))
	}
	return b, err
}

// appendDirect appends m's REST JSON to b, or fails with errIndirect (or
// an error protojson would report in other words).
func appendDirect(b []byte, m protoreflect.Message) ([]byte, error) {
	md := m.Descriptor()
	switch md.FullName() {
	case timestampName:
		return appendTimestamp(b, m)
	case durationName:
		return appendDuration(b, m)
	case emptyName:
		return append(b, "{}"...), nil
	}
	p := planFor(md)
	if p == nil {
		return b, errIndirect
	}
	b = append(b, '{')
	first := true
	for _, f := range p.fields {
		var v protoreflect.Value
		switch {
		case m.Has(f.fd):
			v = m.Get(f.fd)
		case f.oneof:
			continue
		case f.fd.HasPresence():
			// v stays invalid: null
		default:
			v = m.Get(f.fd)
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, f.name...)
		var err error
		switch {
		case f.fd.IsList():
			b, err = appendList(b, v.List(), f.fd)
		case f.fd.IsMap():
			b, err = appendMap(b, v.Map(), f.fd)
		default:
			b, err = appendSingular(b, v, f.fd)
		}
		if err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

func appendList(b []byte, l protoreflect.List, fd protoreflect.FieldDescriptor) ([]byte, error) {
	b = append(b, '[')
	for i := range l.Len() {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendSingular(b, l.Get(i), fd); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

func appendMap(b []byte, mp protoreflect.Map, fd protoreflect.FieldDescriptor) ([]byte, error) {
	keys := make([]protoreflect.MapKey, 0, mp.Len())
	mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
		keys = append(keys, k)
		return true
	})
	slices.SortFunc(keys, compareKeys) // protojson's order.GenericKeyOrder
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendJSONString(b, k.String()); err != nil {
			return b, err
		}
		b = append(b, ':')
		if b, err = appendSingular(b, mp.Get(k), fd.MapValue()); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// compareKeys orders map keys as protojson does: false before true,
// numbers ascending, strings by their bytes.
func compareKeys(x, y protoreflect.MapKey) int {
	switch xv := x.Interface().(type) {
	case bool:
		switch {
		case xv == y.Bool():
			return 0
		case !xv:
			return -1
		}
		return 1
	case int32, int64:
		return cmp.Compare(x.Int(), y.Int())
	case uint32, uint64:
		return cmp.Compare(x.Uint(), y.Uint())
	default:
		return strings.Compare(x.String(), y.String())
	}
}

func appendSingular(b []byte, v protoreflect.Value, fd protoreflect.FieldDescriptor) ([]byte, error) {
	if !v.IsValid() {
		return append(b, "null"...), nil
	}
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return strconv.AppendBool(b, v.Bool()), nil
	case protoreflect.StringKind:
		return appendJSONString(b, v.String())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return strconv.AppendInt(b, v.Int(), 10), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return strconv.AppendUint(b, v.Uint(), 10), nil
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		b = append(b, '"')
		return append(strconv.AppendInt(b, v.Int(), 10), '"'), nil
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		b = append(b, '"')
		return append(strconv.AppendUint(b, v.Uint(), 10), '"'), nil
	case protoreflect.FloatKind:
		return appendFloat(b, v.Float(), 32), nil
	case protoreflect.DoubleKind:
		return appendFloat(b, v.Float(), 64), nil
	case protoreflect.BytesKind:
		b = append(b, '"')
		return append(base64.StdEncoding.AppendEncode(b, v.Bytes()), '"'), nil
	case protoreflect.EnumKind:
		ed := fd.Enum()
		if ed.FullName() == nullValueEnum {
			return append(b, "null"...), nil
		}
		if ed.Values().ByNumber(v.Enum()) == nil {
			return strconv.AppendInt(b, int64(v.Enum()), 10), nil
		}
		return appendJSONString(b, enumname.Short(ed, v.Enum()))
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return appendDirect(b, v.Message())
	}
	return b, errIndirect
}

// appendJSONString appends s quoted as protojson writes strings: only
// '"', '\\' and control characters escaped (\b \f \n \r \t, else \u00xx),
// everything else as it is; invalid UTF-8 is refused.
func appendJSONString(b []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return b, errIndirect // protojson names the field in its error
	}
	b = append(b, '"')
	start := 0
	for i := nextEscape(s, 0); i < len(s); i = nextEscape(s, i+1) {
		c := s[i]
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u')
			b = append(b, "0000"[1+(bits.Len32(uint32(c))-1)/4:]...)
			b = strconv.AppendUint(b, uint64(c), 16)
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"'), nil
}

// nextEscape is the index of the first byte at or after i that a JSON
// string escapes ('"', '\\', below ' '), or len(s). It tests eight bytes
// at a time: Markdown has a newline every line, but long runs between.
func nextEscape(s string, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		// A byte is below 0x20, or equal to '"' or '\\', when the
		// subtraction borrows into its high bit while its own high bit
		// (or that of its XOR with the character) is clear.
		ctl := (x - ones*0x20) &^ x
		quote := ((x ^ (ones * '"')) - ones) &^ (x ^ (ones * '"'))
		slash := ((x ^ (ones * '\\')) - ones) &^ (x ^ (ones * '\\'))
		if (ctl|quote|slash)&highs != 0 {
			break
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < ' ' || c == '"' || c == '\\' {
			return i
		}
	}
	return len(s)
}

// appendFloat is protojson's float form: encoding/json's, with NaN and the
// infinities as strings.
func appendFloat(b []byte, n float64, bitSize int) []byte {
	switch {
	case math.IsNaN(n):
		return append(b, `"NaN"`...)
	case math.IsInf(n, +1):
		return append(b, `"Infinity"`...)
	case math.IsInf(n, -1):
		return append(b, `"-Infinity"`...)
	}
	format := byte('f')
	if abs := math.Abs(n); abs != 0 {
		if bitSize == 64 && (abs < 1e-6 || abs >= 1e21) ||
			bitSize == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, n, format, -1, bitSize)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// Timestamp and Duration ranges (protojson's).
const (
	minTimestampSeconds  = -62135596800
	maxTimestampSeconds  = 253402300799
	maxSecondsInDuration = 315576000000
	secondsInNanos       = 999999999
)

// secondsAndNanos reads a Timestamp's or Duration's two fields.
func secondsAndNanos(m protoreflect.Message) (secs, nanos int64) {
	fds := m.Descriptor().Fields()
	return m.Get(fds.ByNumber(1)).Int(), m.Get(fds.ByNumber(2)).Int()
}

// trimFraction leaves 0, 3, 6 or 9 fractional digits, as protojson does.
func trimFraction(x string) string {
	x = strings.TrimSuffix(x, "000")
	x = strings.TrimSuffix(x, "000")
	return strings.TrimSuffix(x, ".000")
}

func appendTimestamp(b []byte, m protoreflect.Message) ([]byte, error) {
	secs, nanos := secondsAndNanos(m)
	if secs < minTimestampSeconds || secs > maxTimestampSeconds || nanos < 0 || nanos > secondsInNanos {
		return b, errIndirect // protojson says what is out of range
	}
	x := trimFraction(time.Unix(secs, nanos).UTC().Format("2006-01-02T15:04:05.000000000"))
	b = append(b, '"')
	return append(append(b, x...), 'Z', '"'), nil
}

func appendDuration(b []byte, m protoreflect.Message) ([]byte, error) {
	secs, nanos := secondsAndNanos(m)
	if secs < -maxSecondsInDuration || secs > maxSecondsInDuration || nanos < -secondsInNanos || nanos > secondsInNanos ||
		(secs > 0 && nanos < 0) || (secs < 0 && nanos > 0) {
		return b, errIndirect
	}
	b = append(b, '"')
	if secs < 0 || nanos < 0 {
		b = append(b, '-')
		secs, nanos = -secs, -nanos
	}
	frac := strconv.AppendInt(nil, nanos+1e9, 10) // 1 and nine digits
	x := trimFraction(strconv.FormatInt(secs, 10) + "." + string(frac[1:]))
	return append(append(b, x...), 's', '"'), nil
}
