package restjson

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/utilities"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/garden-bloom/memory/pkg/editdist"
)

// QueryAlias gives a top-level request field extra query parameter names,
// one name per concept across routes whose messages spell the field
// differently. Names[0] is the documented name, shown in suggestions; every
// name, the field's proto name and its JSON name set the field. An alias
// applies to a route only where the field is a query parameter.
type QueryAlias struct {
	// Field is the proto name of the field, e.g. "agent_id".
	Field string
	// Names are the accepted spellings, the documented one first.
	Names []string
}

// QueryAliases are the aliases of a route table.
type QueryAliases []QueryAlias

// queryParams is what a route takes in its query string, derived the way
// grpc-gateway's query parser maps parameters to fields: each dotted
// segment a proto name or a JSON name, through singular message fields;
// fields bound by the path or the body are not query parameters, and a
// route whose body is "*" takes none.
type queryParams struct {
	route *Route
	// byName maps every accepted spelling to its field.
	byName map[string]*queryField
	// fields in message order.
	fields []*queryField
	// aliasOf maps every alias to its field's proto name, also where the
	// field is not a query parameter (to say why).
	aliasOf map[string]string
}

type queryField struct {
	protoPath string // dotted proto names: what the query parser is given
	display   string // the documented name
	fd        protoreflect.FieldDescriptor
}

// wellKnownLeaf: google.protobuf messages have a string form in queries
// (Timestamp, Duration, FieldMask, wrappers) and are not walked into.
const wellKnownPrefix = "google.protobuf."

func newQueryParams(r *Route, aliases QueryAliases) (*queryParams, error) {
	q := &queryParams{route: r, byName: map[string]*queryField{}, aliasOf: map[string]string{}}
	if r.Body == "*" {
		return q, nil
	}
	bound := slices.Clone(r.pathFields)
	if r.Body != "" {
		bound = append(bound, r.Body)
	}
	var walk func(md protoreflect.MessageDescriptor, protoPrefix string, spellings []string, displayPrefix string, depth int)
	walk = func(md protoreflect.MessageDescriptor, protoPrefix string, spellings []string, displayPrefix string, depth int) {
		for i := 0; i < md.Fields().Len(); i++ {
			fd := md.Fields().Get(i)
			pp := protoPrefix + string(fd.Name())
			if slices.ContainsFunc(bound, func(b string) bool { return b == pp || strings.HasPrefix(pp, b+".") }) {
				continue
			}
			names := []string{string(fd.Name())}
			if j := fd.JSONName(); j != names[0] {
				names = append(names, j)
			}
			var sp []string
			for _, s := range spellings {
				for _, n := range names {
					sp = append(sp, s+n)
				}
			}
			display := displayPrefix + fd.JSONName()
			msg := fd.Message()
			switch {
			case msg != nil && !fd.IsList() && !fd.IsMap() && !strings.HasPrefix(string(msg.FullName()), wellKnownPrefix):
				if depth < 8 { // deeper than any request; stops recursive types
					dots := make([]string, len(sp))
					for k, s := range sp {
						dots[k] = s + "."
					}
					walk(msg, pp+".", dots, display+".", depth+1)
				}
				continue
			case fd.IsMap() && fd.MapValue().Message() != nil:
				continue // grpc-gateway cannot set these from a query
			case fd.IsList() && msg != nil && !strings.HasPrefix(string(msg.FullName()), wellKnownPrefix):
				continue
			}
			f := &queryField{protoPath: pp, display: display, fd: fd}
			q.fields = append(q.fields, f)
			for _, s := range sp {
				q.byName[s] = f
			}
		}
	}
	walk(r.Request, "", []string{""}, "", 0)
	for _, a := range aliases {
		for _, n := range a.Names {
			q.aliasOf[n] = a.Field
		}
		f, ok := q.byName[a.Field]
		if !ok || f.protoPath != a.Field || len(a.Names) == 0 {
			continue
		}
		f.display = a.Names[0]
		for _, n := range a.Names {
			if other, taken := q.byName[n]; taken && other != f {
				return nil, fmt.Errorf("alias %q of %s on %s %s is already the name of %s", n, a.Field, r.Method, r.Pattern, other.protoPath)
			}
			q.byName[n] = f
		}
	}
	return q, nil
}

// QueryParamError is a query parameter a route does not take, or one given
// twice with different values under two spellings.
type QueryParamError struct {
	// Param is the parameter as sent.
	Param string
	// Suggestion is the documented name of a parameter close to Param, or "".
	Suggestion string
	// Valid are the documented names of the route's query parameters.
	Valid []string
	// Route is "METHOD /template".
	Route string
	// BoundBy is "path" or "body" when Param names a field set there.
	BoundBy string
	// ConflictsWith is another spelling of the same field with another value.
	ConflictsWith string
	// Invalid says why a value of a known parameter does not parse as its
	// field's type (an int32 that is not a number, an unknown enum value,
	// a timestamp that is not RFC 3339, …).
	Invalid string
}

func (e *QueryParamError) Error() string {
	switch {
	case e.Invalid != "":
		return fmt.Sprintf("query parameter %q: %s", e.Param, e.Invalid)
	case e.ConflictsWith != "":
		return fmt.Sprintf("query parameters %q and %q set the same field to different values", e.ConflictsWith, e.Param)
	case e.BoundBy != "":
		return fmt.Sprintf("query parameter %q is not allowed on %s: the %s sets it", e.Param, e.Route, e.BoundBy)
	case e.Suggestion != "":
		return fmt.Sprintf("unknown query parameter %q: did you mean %q?", e.Param, e.Suggestion)
	case len(e.Valid) == 0:
		return fmt.Sprintf("unknown query parameter %q: %s takes no query parameters", e.Param, e.Route)
	default:
		return fmt.Sprintf("unknown query parameter %q: %s takes %s", e.Param, e.Route, strings.Join(e.Valid, ", "))
	}
}

// Query checks values against the route's query parameters and returns them
// keyed by proto path, aliases resolved, so the query parser sees one name
// per field. Nothing is silently dropped: a parameter the route does not
// take is a *QueryParamError naming it (with the closest documented name,
// if one is close), as is a field given under two spellings with different
// values; the same value under two spellings counts once. Map entries
// (field[key]) keep their key. Every value must parse as its field's type,
// with the mux's own query parser ([QueryParser]): one that does not is a
// *QueryParamError with Invalid set, so the caller learns which parameter
// is wrong before anything is called.
func (r *Route) Query(values url.Values) (url.Values, error) {
	q := r.query
	out := make(url.Values, len(values))
	firstName := map[string]string{} // proto path → first spelling seen
	for _, key := range slices.Sorted(maps.Keys(values)) {
		vals := values[key]
		name, mapKey, isMap := key, "", false
		if m := mapKeyRegexp.FindStringSubmatch(key); m != nil {
			name, mapKey, isMap = m[1], m[2], true
		}
		f, ok := q.byName[name]
		if !ok || f.fd.IsMap() != isMap {
			return nil, q.unknown(key, name)
		}
		target := f.protoPath
		if isMap {
			target += "[" + mapKey + "]"
		}
		if why := r.checkValues(f, target, vals); why != "" {
			return nil, &QueryParamError{Param: key, Invalid: why, Route: r.Method + " " + r.Pattern}
		}
		prev, seen := out[target]
		if !seen {
			out[target] = slices.Clone(vals)
			firstName[target] = key
			continue
		}
		if f.fd.IsList() {
			out[target] = append(prev, vals...)
			continue
		}
		// A singular field under two spellings: fine when they agree.
		for _, v := range vals {
			if v != prev[0] {
				return nil, &QueryParamError{Param: key, ConflictsWith: firstName[target], Route: r.Method + " " + r.Pattern}
			}
		}
	}
	return out, nil
}

// Params returns the documented names of the route's query parameters.
func (r *Route) Params() []string {
	names := make([]string, 0, len(r.query.fields))
	for _, f := range r.query.fields {
		names = append(names, f.display)
	}
	slices.Sort(names)
	return names
}

func (q *queryParams) unknown(key, name string) error {
	r := q.route
	e := &QueryParamError{Param: key, Route: r.Method + " " + r.Pattern, Valid: r.Params()}
	// A field that exists but is bound elsewhere.
	field := name
	if f, ok := q.aliasOf[name]; ok {
		field = f
	}
	if fd, protoPath := resolveFieldPath(r.Request, strings.Split(field, ".")); fd != nil {
		pp := strings.Join(protoPath, ".")
		under := func(b string) bool { return b == pp || strings.HasPrefix(pp, b+".") }
		switch {
		case slices.ContainsFunc(r.pathFields, under):
			e.BoundBy = "path"
		case r.Body != "" && (r.Body == "*" || under(r.Body)):
			e.BoundBy = "body"
		}
		if e.BoundBy != "" {
			return e
		}
	}
	e.Suggestion = q.suggest(name)
	return e
}

// suggest returns the documented name of the parameter closest to name:
// the same letters ignoring case and '_' / '-', or within edit distance 2
// (1 for names of up to 4 letters; never the whole name).
func (q *queryParams) suggest(name string) string {
	norm := func(s string) string {
		return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(s))
	}
	n := norm(name)
	limit := 2
	if len(n) <= 4 {
		limit = 1
	}
	limit = min(limit, len(n)-1)
	best, bestDist := "", limit+1
	for _, spelling := range slices.Sorted(maps.Keys(q.byName)) {
		f := q.byName[spelling]
		d := editdist.Levenshtein([]byte(n), []byte(norm(spelling)))
		if d < bestDist || (d == bestDist && best != "" && f.display < best) {
			best, bestDist = f.display, d
		}
	}
	if bestDist > limit {
		return ""
	}
	return best
}

// QueryParam is one query parameter of a route: its documented name and
// the request field it sets.
type QueryParam struct {
	Name  string
	Field protoreflect.FieldDescriptor
}

// QueryParams returns the route's query parameters, in message order.
func (r *Route) QueryParams() []QueryParam {
	out := make([]QueryParam, 0, len(r.query.fields))
	for _, f := range r.query.fields {
		out = append(out, QueryParam{Name: f.display, Field: f.fd})
	}
	return out
}

// checkValues parses each of vals alone into a fresh request message the
// way the mux will, and says why the first that fails does, or "".
func (r *Route) checkValues(f *queryField, target string, vals []string) string {
	var parser QueryParser
	none := utilities.NewDoubleArray(nil) // the delegate needs a filter
	for _, v := range vals {
		msg := newMessage(r.Request)
		if err := parser.Parse(msg, url.Values{target: {v}}, none); err != nil {
			var ee *EnumValueError
			if errors.As(err, &ee) {
				return fmt.Sprintf("%s is not a value of enum %s; allowed values: %s", clipQuoted(v), ee.Enum, strings.Join(ee.Allowed, ", "))
			}
			return fmt.Sprintf("%s is not a valid %s", clipQuoted(v), typeName(f.fd))
		}
	}
	return ""
}

// newMessage is an empty message of md: the generated type when there is
// one (the query parser sets well-known types as their Go types), else a
// dynamic one.
func newMessage(md protoreflect.MessageDescriptor) proto.Message {
	if mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName()); err == nil {
		return mt.New().Interface()
	}
	return dynamicpb.NewMessage(md)
}

// typeName is how an error names fd's type: "int32", "bool", "enum
// gardenbloom.memory.v1.ReadMode", "google.protobuf.Timestamp (RFC 3339)".
func typeName(fd protoreflect.FieldDescriptor) string {
	if fd.IsMap() {
		fd = fd.MapValue()
	}
	switch fd.Kind() {
	case protoreflect.EnumKind:
		return "enum " + string(fd.Enum().FullName())
	case protoreflect.MessageKind, protoreflect.GroupKind:
		switch name := fd.Message().FullName(); name {
		case "google.protobuf.Timestamp":
			return "timestamp (RFC 3339, e.g. 2024-05-01T12:00:00Z)"
		case "google.protobuf.Duration":
			return "duration (e.g. 1.5s)"
		default:
			return string(name)
		}
	default:
		return fd.Kind().String()
	}
}

// clipQuoted quotes a caller's value for a message, cut to 80 bytes.
func clipQuoted(v string) string {
	if len(v) > 80 {
		v = strings.ToValidUTF8(v[:80], "") + "…"
	}
	return strconv.Quote(v)
}
