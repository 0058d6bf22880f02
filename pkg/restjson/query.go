package restjson

import (
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/grpc-ecosystem/grpc-gateway/v2/utilities"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/garden-bloom/memory/pkg/enumname"
)

// QueryParser is a runtime.QueryParameterParser that accepts REST short
// enum values in query parameters (?priority=high). For every parameter whose
// field path (dotted, each segment a proto name or a JSON name, including a
// custom json_name) ends in an enum field, singular or repeated, or in a map
// with enum values (?labels[k]=v), it replaces the values by the full enum
// names and then hands all parameters to Delegate, so everything else keeps
// grpc-gateway's behaviour. A value that is not one of the enum's values is
// an *EnumValueError, which grpc-gateway reports as InvalidArgument (400).
//
// The caller's url.Values are not modified.
type QueryParser struct {
	// Delegate does the actual parsing; nil means runtime.DefaultQueryParser.
	Delegate runtime.QueryParameterParser
}

var _ runtime.QueryParameterParser = (*QueryParser)(nil)

// mapKeyRegexp matches "field[key]", the map syntax DefaultQueryParser uses.
var mapKeyRegexp = regexp.MustCompile(`^(.*)\[(.*)\]$`)

// Parse rewrites enum values in values and populates msg via Delegate.
// Parameters that filter excludes (those bound from the URL path) are left
// alone, as the delegate ignores them.
func (p *QueryParser) Parse(msg proto.Message, values url.Values, filter *utilities.DoubleArray) error {
	md := msg.ProtoReflect().Descriptor()
	var rewritten url.Values // copy-on-write of values
	// Sorted so that, with several bad parameters, the error is always the
	// same one.
	for _, key := range slices.Sorted(maps.Keys(values)) {
		vals := values[key]
		fieldKey, isMapEntry := key, false
		if m := mapKeyRegexp.FindStringSubmatch(key); m != nil {
			fieldKey, isMapEntry = m[1], true
		}
		fd, protoPath := resolveFieldPath(md, strings.Split(fieldKey, "."))
		if fd == nil || (filter != nil && filter.HasCommonPrefix(protoPath)) {
			continue
		}
		var target protoreflect.FieldDescriptor
		switch {
		case isMapEntry && fd.IsMap():
			target = fd.MapValue()
		case !isMapEntry && !fd.IsMap():
			target = fd
		}
		if target == nil || target.Kind() != protoreflect.EnumKind || target.Enum().FullName() == nullValueEnum {
			continue
		}
		ed := target.Enum()
		var out []string
		for i, s := range vals {
			n, ok := enumname.Parse(ed, s)
			if !ok {
				return newEnumValueError(key, ed, s)
			}
			full := string(ed.Values().ByNumber(n).Name())
			if full == s {
				continue
			}
			if out == nil {
				out = slices.Clone(vals)
			}
			out[i] = full
		}
		if out == nil {
			continue
		}
		if rewritten == nil {
			rewritten = maps.Clone(values)
		}
		rewritten[key] = out
	}
	if rewritten == nil {
		rewritten = values
	}
	delegate := p.Delegate
	if delegate == nil {
		delegate = &runtime.DefaultQueryParser{}
	}
	return delegate.Parse(msg, rewritten, filter)
}

// resolveFieldPath follows path through md the way DefaultQueryParser does:
// each segment is a proto name or a JSON name, and every segment but the last
// must be a singular message field. It returns the last field and the path in
// proto names (what filters are written in), or nil if the path does not
// resolve; such parameters are left to the delegate, which ignores them.
func resolveFieldPath(md protoreflect.MessageDescriptor, path []string) (protoreflect.FieldDescriptor, []string) {
	protoPath := make([]string, 0, len(path))
	var fd protoreflect.FieldDescriptor
	for i, seg := range path {
		if i > 0 {
			if fd.Message() == nil || fd.IsList() || fd.IsMap() {
				return nil, nil
			}
			md = fd.Message()
		}
		fields := md.Fields()
		fd = fields.ByTextName(seg)
		if fd == nil {
			fd = fields.ByJSONName(seg)
		}
		if fd == nil {
			return nil, nil
		}
		protoPath = append(protoPath, string(fd.Name()))
	}
	return fd, protoPath
}
