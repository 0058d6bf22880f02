package restjson

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Routes is the REST route table of a set of gRPC services, built from the
// google.api.http options in their descriptors: the same rules grpc-gateway's
// generated code registers, but inspectable. runtime.ServeMux has no public
// route table, and an edge in front of it needs one to answer 405 with an
// Allow header, to tell an unknown path from a wrong method, and to know
// which query parameters a route takes (see [Route.Query]).
//
// Path templates are those of google.api.HttpRule as far as this API uses
// them: literal segments, single-segment variables ({name} or {name=*}, name
// possibly dotted), a trailing {name=**}, and a custom verb (":approve").
type Routes struct {
	routes []*Route
}

// Route is one HTTP binding of one RPC.
type Route struct {
	// Method is the HTTP method, Pattern the path template as written.
	Method, Pattern string
	// RPC is the method's full name.
	RPC protoreflect.FullName
	// Request is the request message.
	Request protoreflect.MessageDescriptor
	// Body is the rule's body: "", "*" or a field name.
	Body string

	segments []segment
	verb     string
	// pathFields are the proto paths bound by the template, dotted.
	pathFields []string
	query      *queryParams
}

type segment struct {
	literal  string
	variable bool // a single segment
	rest     bool // ** : any number of segments, last only
}

// NewRoutes reads the HTTP rules (primary and additional bindings) of every
// method of services; aliases are passed to [Route.Query] (see
// [QueryAliases]). It fails on a template it cannot read.
func NewRoutes(services []protoreflect.ServiceDescriptor, aliases QueryAliases) (*Routes, error) {
	rt := &Routes{}
	for _, sd := range services {
		for i := 0; i < sd.Methods().Len(); i++ {
			md := sd.Methods().Get(i)
			opts := md.Options()
			if opts == nil || !proto.HasExtension(opts, annotations.E_Http) {
				continue
			}
			rule, _ := proto.GetExtension(opts, annotations.E_Http).(*annotations.HttpRule)
			for _, r := range append([]*annotations.HttpRule{rule}, rule.GetAdditionalBindings()...) {
				route, err := newRoute(md, r, aliases)
				if err != nil {
					return nil, fmt.Errorf("restjson: %s: %w", md.FullName(), err)
				}
				rt.routes = append(rt.routes, route)
			}
		}
	}
	return rt, nil
}

func newRoute(md protoreflect.MethodDescriptor, r *annotations.HttpRule, aliases QueryAliases) (*Route, error) {
	route := &Route{RPC: md.FullName(), Request: md.Input(), Body: r.GetBody()}
	switch p := r.GetPattern().(type) {
	case *annotations.HttpRule_Get:
		route.Method, route.Pattern = http.MethodGet, p.Get
	case *annotations.HttpRule_Post:
		route.Method, route.Pattern = http.MethodPost, p.Post
	case *annotations.HttpRule_Put:
		route.Method, route.Pattern = http.MethodPut, p.Put
	case *annotations.HttpRule_Patch:
		route.Method, route.Pattern = http.MethodPatch, p.Patch
	case *annotations.HttpRule_Delete:
		route.Method, route.Pattern = http.MethodDelete, p.Delete
	case *annotations.HttpRule_Custom:
		route.Method, route.Pattern = p.Custom.GetKind(), p.Custom.GetPath()
	default:
		return nil, fmt.Errorf("an HTTP rule without a pattern")
	}
	if err := route.parse(); err != nil {
		return nil, err
	}
	q, err := newQueryParams(route, aliases)
	if err != nil {
		return nil, err
	}
	route.query = q
	return route, nil
}

// parse reads the path template.
func (r *Route) parse() error {
	tmpl, ok := strings.CutPrefix(r.Pattern, "/")
	if !ok {
		return fmt.Errorf("template %q does not start with /", r.Pattern)
	}
	// The verb follows the last ':' outside braces.
	if i := strings.LastIndexByte(tmpl, ':'); i >= 0 && !strings.Contains(tmpl[i:], "}") {
		tmpl, r.verb = tmpl[:i], tmpl[i+1:]
	}
	parts := strings.Split(tmpl, "/")
	for i, part := range parts {
		if !strings.HasPrefix(part, "{") {
			if strings.ContainsAny(part, "{}*") {
				return fmt.Errorf("template %q: unsupported segment %q", r.Pattern, part)
			}
			r.segments = append(r.segments, segment{literal: part})
			continue
		}
		inner, ok := strings.CutSuffix(part[1:], "}")
		if !ok {
			return fmt.Errorf("template %q: unsupported segment %q", r.Pattern, part)
		}
		name, sub, _ := strings.Cut(inner, "=")
		switch {
		case sub == "" || sub == "*":
			r.segments = append(r.segments, segment{variable: true})
		case sub == "**" && i == len(parts)-1:
			r.segments = append(r.segments, segment{rest: true})
		default:
			return fmt.Errorf("template %q: unsupported variable %q", r.Pattern, part)
		}
		if fd, _ := resolveFieldPath(r.Request, strings.Split(name, ".")); fd == nil {
			return fmt.Errorf("template %q: %s has no field %q", r.Pattern, r.Request.FullName(), name)
		}
		r.pathFields = append(r.pathFields, name)
	}
	return nil
}

// match reports whether path's components (split on '/', without the
// leading empty one) fit the template. A route with a verb matches only a
// last component ending in ":verb"; a route without one matches such a
// component only when strict is false.
func (r *Route) match(comps []string, strict bool) bool {
	if r.verb != "" {
		last := comps[len(comps)-1]
		stem, ok := strings.CutSuffix(last, ":"+r.verb)
		if !ok || stem == "" {
			return false
		}
		comps = append(slices.Clone(comps[:len(comps)-1]), stem)
	} else if strict && strings.Contains(comps[len(comps)-1], ":") {
		return false
	}
	for i, s := range r.segments {
		switch {
		case s.rest:
			return true
		case i >= len(comps):
			return false
		case !s.variable && comps[i] != s.literal:
			return false
		}
	}
	return len(comps) == len(r.segments)
}

// Match finds the route of method and path (r.URL.Path). When no route of
// that method matches, allowed lists the methods of the routes whose
// template matches path (sorted; empty for an unknown path).
//
// Custom verbs are reserved: when path ends in the ":verb" of any route
// ("/proposals/p1:approve"), routes without a verb whose last variable
// would swallow ":approve" do not match, so a GET there is a wrong method
// rather than a lookup of proposal "p1:approve".
func (rt *Routes) Match(method, path string) (route *Route, allowed []string) {
	rest, ok := strings.CutPrefix(path, "/")
	if !ok {
		return nil, nil
	}
	comps := strings.Split(rest, "/")
	last := comps[len(comps)-1]
	strict := slices.ContainsFunc(rt.routes, func(r *Route) bool { return r.verb != "" && strings.HasSuffix(last, ":"+r.verb) })
	for _, r := range rt.routes {
		if !r.match(comps, strict) {
			continue
		}
		if r.Method == method {
			return r, nil
		}
		if !slices.Contains(allowed, r.Method) {
			allowed = append(allowed, r.Method)
		}
	}
	slices.Sort(allowed)
	return nil, allowed
}

// All returns every route, in descriptor order.
func (rt *Routes) All() []*Route { return slices.Clone(rt.routes) }

// PathParams returns the proto paths (dotted) the template's variables
// bind, in template order.
func (r *Route) PathParams() []string { return slices.Clone(r.pathFields) }
