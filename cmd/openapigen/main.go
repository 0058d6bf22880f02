// Command openapigen writes the OpenAPI 3.1 document of the REST API,
// gen/openapi/memory.openapi.json, from the contract: `make generate` runs
// it right after `buf generate`.
//
// Its inputs are both generated from proto/, nothing is written by hand:
//
//   - the Swagger 2.0 document of protoc-gen-openapiv2 (-swagger), which
//     already has grpc-gateway's HTTP mapping of every RPC (path, query and
//     body parameters, response_body) and the proto comments;
//   - the file descriptors of `buf build` (-descriptors), to know the enums
//     behind the Swagger enum lists and their value comments.
//
// What it changes so that the document matches the wire (pkg/restjson, the
// REST edge's error handler) rather than protoc-gen-openapiv2's view:
//
//   - enum values are the REST short forms of enumname.Short
//     ("pending", not "PROPOSAL_STATUS_PENDING");
//   - every operation needs a bearer JWT (components.securitySchemes
//     bearerAuth, global), except the unauthenticated endpoints;
//   - errors: explicit 4xx/5xx responses with the Error schema the edge
//     writes ({code, message, details}), whose first detail is a
//     google.rpc.ErrorInfo with the reasons enumerated as apierr sends them
//     ("VERSION_CONFLICT");
//   - /health, /metrics, /status/config, /openapi.json and /docs, which are
//     served outside grpc-gateway, are described;
//   - schema names lose protoc-gen-openapiv2's package prefix (v1Proposal ->
//     Proposal) and $refs point into components.schemas.
//
// Output is deterministic (sorted keys), so `make check-generated` can
// compare it byte for byte.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/enumname"
)

// APIVersion is info.version: the version of the REST contract
// (gardenbloom.memory.v1). It is not the build's VERSION (git describe),
// which changes with every commit and would make gen/ stale after each one;
// raise the minor version when the contract gains something, the patch
// version for documentation-only changes.
const APIVersion = "1.0.0"

func main() {
	swagger := flag.String("swagger", "gen/openapi/memory.swagger.json", "the Swagger 2.0 document of protoc-gen-openapiv2")
	descriptors := flag.String("descriptors", "", "a FileDescriptorSet (or buf image) of proto/ with source info: `buf build -o FILE`")
	out := flag.String("out", "gen/openapi/memory.openapi.json", "where to write the OpenAPI 3.1 document")
	version := flag.String("version", APIVersion, "info.version")
	flag.Parse()
	if *descriptors == "" {
		fmt.Fprintln(os.Stderr, "usage: openapigen -descriptors FILE [-swagger FILE] [-out FILE]")
		os.Exit(2)
	}
	if err := run(*swagger, *descriptors, *out, *version); err != nil {
		fmt.Fprintln(os.Stderr, "openapigen:", err)
		os.Exit(1)
	}
}

func run(swaggerPath, descriptorsPath, out, version string) error {
	sw, err := os.ReadFile(swaggerPath)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(descriptorsPath)
	if err != nil {
		return err
	}
	var fds descriptorpb.FileDescriptorSet
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(raw, &fds); err != nil {
		return fmt.Errorf("%s: %w", descriptorsPath, err)
	}
	files, err := protodesc.NewFiles(&fds)
	if err != nil {
		return fmt.Errorf("%s: %w", descriptorsPath, err)
	}
	doc, err := Generate(sw, files, version)
	if err != nil {
		return err
	}
	return os.WriteFile(out, doc, 0o644)
}

// Generate converts the Swagger 2.0 document sw into the OpenAPI 3.1
// document, with the enums of files.
func Generate(sw []byte, files *protoregistry.Files, version string) ([]byte, error) {
	var in map[string]any
	if err := json.Unmarshal(sw, &in); err != nil {
		return nil, fmt.Errorf("swagger: %w", err)
	}
	if in["swagger"] != "2.0" {
		return nil, fmt.Errorf("swagger: not a Swagger 2.0 document")
	}
	g := &generator{enums: indexEnums(files)}

	defs, _ := in["definitions"].(map[string]any)
	g.names = schemaNames(defs, in["tags"])
	schemas := map[string]any{}
	for name, s := range defs {
		if name == "rpcStatus" || name == "protobufAny" {
			continue // replaced by Error / ErrorDetail, the shape the edge writes
		}
		conv, err := g.schema(s)
		if err != nil {
			return nil, fmt.Errorf("definitions.%s: %w", name, err)
		}
		schemas[g.names[name]] = conv
	}
	if err := g.errorSchemas(schemas); err != nil {
		return nil, err
	}
	schemas["HealthReport"] = healthSchema()

	paths := map[string]any{}
	swPaths, _ := in["paths"].(map[string]any)
	for p, item := range swPaths {
		ops := map[string]any{}
		for method, op := range item.(map[string]any) {
			conv, err := g.operation(method, op.(map[string]any))
			if err != nil {
				return nil, fmt.Errorf("paths.%s.%s: %w", p, method, err)
			}
			ops[method] = conv
		}
		paths[p] = ops
	}
	for p, item := range edgePaths() {
		if _, dup := paths[p]; dup {
			return nil, fmt.Errorf("paths.%s: served by grpc-gateway and by memoryd itself", p)
		}
		paths[p] = item
	}

	tags := []any{}
	if t, ok := in["tags"].([]any); ok {
		tags = append(tags, t...)
	}
	tags = append(tags, map[string]any{
		"name":        opsTag,
		"description": "Endpoints of memoryd itself, outside the gRPC services: health, metrics, configuration and this API's description.",
	})

	out := map[string]any{
		"openapi":           "3.1.0",
		"jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
		"info": map[string]any{
			"title":   "Garden Bloom Memory API",
			"version": version,
			"summary": "Long-term memory for Garden Bloom's AI agents, kept in one git monorepo.",
			"description": "The REST edge of memoryd (grpc-gateway over the gRPC services of " +
				"gardenbloom.memory.v1). Agents propose memory updates; a proposal is reviewed (or " +
				"auto-approved by policy) and applied as exactly one git commit.\n\n" +
				"JSON follows protojson with the REST conventions of this API: lowerCamelCase field " +
				"names, enum values in their lowercase short form (`pending`, `normal`; requests also " +
				"accept the full names), 64-bit integers as strings, timestamps as RFC 3339 strings, " +
				"durations as strings such as `\"1.5s\"`.\n\n" +
				"Every call but the endpoints tagged `" + opsTag + "` needs a bearer JWT (`memoryd token`). " +
				"Every error has the body `Error`; its first detail is a `google.rpc.ErrorInfo` whose " +
				"`reason` is stable and meant to be branched on.\n\n" +
				"Generated by cmd/openapigen from proto/gardenbloom/memory/v1 — do not edit.",
		},
		"servers": []any{map[string]any{
			"url":         "http://127.0.0.1:8080",
			"description": "memoryd on its default --http-addr",
		}},
		"security": []any{map[string]any{"bearerAuth": []any{}}},
		"tags":     tags,
		"paths":    paths,
		"components": map[string]any{
			"schemas":   schemas,
			"responses": errorResponses(),
			"headers": map[string]any{
				"WWWAuthenticate": map[string]any{
					"description": "The RFC 6750 bearer challenge, e.g. `Bearer realm=\"garden-bloom-memory\", error=\"invalid_token\"`.",
					"schema":      map[string]any{"type": "string"},
				},
				"RetryAfter": map[string]any{
					"description": "Seconds to wait before retrying (from the error's google.rpc.RetryInfo).",
					"schema":      map[string]any{"type": "integer", "minimum": 1},
				},
			},
			"securitySchemes": map[string]any{
				"bearerAuth": map[string]any{
					"type":         "http",
					"scheme":       "bearer",
					"bearerFormat": "JWT",
					"description": "A JWT signed with the server's key, carrying roles (agent, reviewer, " +
						"admin, service) and the agents it may act for; mint one with " +
						"`memoryd token --data-dir DIR --role ROLE --agent AGENT`.",
				},
			},
		},
	}
	g.rewriteDescriptions(out)
	pruneSchemas(out, schemas)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

const opsTag = "Operations"

type generator struct {
	enums map[string]protoreflect.EnumDescriptor // full value name -> its enum
	names map[string]string                      // Swagger definition name -> schema name
}

// indexEnums maps every enum value name of the API's own packages to its
// enum. buf lint's ENUM_VALUE_PREFIX makes value names unique per package.
func indexEnums(files *protoregistry.Files) map[string]protoreflect.EnumDescriptor {
	idx := map[string]protoreflect.EnumDescriptor{}
	var addEnums func(es protoreflect.EnumDescriptors)
	var addMsgs func(ms protoreflect.MessageDescriptors)
	addEnums = func(es protoreflect.EnumDescriptors) {
		for i := 0; i < es.Len(); i++ {
			ed := es.Get(i)
			for j := 0; j < ed.Values().Len(); j++ {
				idx[string(ed.Values().Get(j).Name())] = ed
			}
		}
	}
	addMsgs = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len(); i++ {
			addEnums(ms.Get(i).Enums())
			addMsgs(ms.Get(i).Messages())
		}
	}
	files.RangeFilesByPackage("gardenbloom.memory.v1", func(fd protoreflect.FileDescriptor) bool {
		addEnums(fd.Enums())
		addMsgs(fd.Messages())
		return true
	})
	return idx
}

// schemaNames drops protoc-gen-openapiv2's prefixes: the proto package
// ("v1Proposal" -> "Proposal") and the service of a request body
// ("ProposalApplyServiceApproveProposalBody" -> "ApproveProposalBody"),
// unless two names would collide.
func schemaNames(defs map[string]any, tags any) map[string]string {
	var services []string
	if ts, ok := tags.([]any); ok {
		for _, t := range ts {
			if m, ok := t.(map[string]any); ok {
				services = append(services, fmt.Sprint(m["name"]))
			}
		}
	}
	short := func(n string) string {
		if rest, ok := strings.CutPrefix(n, "v1"); ok && rest != "" && rest[0] >= 'A' && rest[0] <= 'Z' {
			return rest
		}
		for _, s := range services {
			if rest, ok := strings.CutPrefix(n, s); ok && strings.HasSuffix(rest, "Body") && rest != "Body" {
				return rest
			}
		}
		return n
	}
	count := map[string]int{}
	for n := range defs {
		count[short(n)]++
	}
	for _, reserved := range []string{"Error", "ErrorDetail", "ErrorReason", "HealthReport"} {
		count[reserved]++
	}
	names := map[string]string{}
	for n := range defs {
		if s := short(n); count[s] == 1 {
			names[n] = s
		} else {
			names[n] = n
		}
	}
	return names
}

// schema converts a Swagger schema object into an OpenAPI 3.1 one.
func (g *generator) schema(v any) (any, error) {
	switch v := v.(type) {
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			c, err := g.schema(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			switch k {
			case "$ref":
				ref := fmt.Sprint(e)
				name, ok := strings.CutPrefix(ref, "#/definitions/")
				if !ok {
					return nil, fmt.Errorf("unexpected $ref %q", ref)
				}
				switch name {
				case "protobufAny":
					out[k] = "#/components/schemas/ErrorDetail"
				case "rpcStatus":
					out[k] = "#/components/schemas/Error"
				default:
					if _, ok := g.names[name]; !ok {
						return nil, fmt.Errorf("$ref to undefined %q", name)
					}
					out[k] = "#/components/schemas/" + g.names[name]
				}
			case "properties", "definitions":
				// Maps of names to schemas: the keys are not keywords.
				props := map[string]any{}
				for pn, ps := range e.(map[string]any) {
					c, err := g.schema(ps)
					if err != nil {
						return nil, fmt.Errorf("%s: %w", pn, err)
					}
					props[pn] = c
				}
				out[k] = props
			case "enum", "default", "description":
				out[k] = e // rewritten below, once the enum is known
			case "x-nullable", "collectionFormat", "discriminator":
				// Swagger-only keywords: none of these occur in our document
				// with a meaning that survives; nullable is expressed below.
			default:
				c, err := g.schema(e)
				if err != nil {
					return nil, err
				}
				out[k] = c
			}
		}
		if _, isRef := out["$ref"]; isRef {
			delete(out, "type") // {"type":"object","$ref":…}: the $ref says it all
		}
		if err := g.enum(out); err != nil {
			return nil, err
		}
		return out, nil
	default:
		return v, nil
	}
}

// enum rewrites an enum list of full value names (and its default) into the
// REST short forms and appends the values' comments to the description.
func (g *generator) enum(s map[string]any) error {
	list, ok := s["enum"].([]any)
	if !ok || len(list) == 0 {
		return nil
	}
	first, ok := list[0].(string)
	if !ok {
		return nil
	}
	ed, ok := g.enums[first]
	if !ok {
		return fmt.Errorf("enum value %q belongs to no enum of gardenbloom.memory.v1", first)
	}
	short := func(v any) (string, error) {
		name, _ := v.(string)
		ev := ed.Values().ByName(protoreflect.Name(name))
		if ev == nil {
			return "", fmt.Errorf("enum value %q is not in %s", name, ed.FullName())
		}
		return enumname.Short(ed, ev.Number()), nil
	}
	out := make([]any, len(list))
	for i, v := range list {
		s, err := short(v)
		if err != nil {
			return err
		}
		out[i] = s
	}
	s["enum"] = out
	if d, ok := s["default"]; ok {
		sd, err := short(d)
		if err != nil {
			return err
		}
		s["default"] = sd
	}
	return nil
}

// pruneSchemas drops the schemas no operation refers to, directly or
// through other schemas: the response messages of RPCs whose REST binding
// has a response_body (only that field is on the wire).
func pruneSchemas(doc map[string]any, schemas map[string]any) {
	used := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for k, e := range v {
				if r, ok := e.(string); ok && k == "$ref" {
					if name, ok := strings.CutPrefix(r, "#/components/schemas/"); ok && !used[name] {
						used[name] = true
						walk(schemas[name])
					}
					continue
				}
				walk(e)
			}
		}
	}
	walk(doc["paths"])
	walk(doc["components"].(map[string]any)["responses"])
	for name := range schemas {
		if !used[name] {
			delete(schemas, name)
		}
	}
}

// fullValueName is an enum value name in a description, maybe in backticks.
var fullValueName = regexp.MustCompile("`?\\b([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\\b`?")

// rewriteDescriptions replaces the full enum value names that proto
// comments (and protoc-gen-openapiv2's lists of enum values) use in every
// description with the names on the wire: "READ_MODE_BASIC" -> "`basic`".
func (g *generator) rewriteDescriptions(v any) {
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			g.rewriteDescriptions(e)
		}
	case map[string]any:
		for k, e := range v {
			if s, ok := e.(string); ok && (k == "description" || k == "summary") {
				v[k] = fullValueName.ReplaceAllStringFunc(s, func(m string) string {
					name := strings.Trim(m, "`")
					ed, ok := g.enums[name]
					if !ok {
						return m
					}
					ev := ed.Values().ByName(protoreflect.Name(name))
					if ed.FullName() == "gardenbloom.memory.v1.ErrorReason" {
						return "`" + apierr.ReasonString(memoryv1.ErrorReason(ev.Number())) + "`"
					}
					return "`" + enumname.Short(ed, ev.Number()) + "`"
				})
				continue
			}
			g.rewriteDescriptions(e)
		}
	}
}

// enumValuesDoc lists the commented values of ed as Markdown, each under
// the name it has on the wire.
func enumValuesDoc(ed protoreflect.EnumDescriptor, wire func(protoreflect.EnumValueDescriptor) string) string {
	var lines []string
	for i := 0; i < ed.Values().Len(); i++ {
		ev := ed.Values().Get(i)
		c := comment(ev)
		if c == "" {
			continue
		}
		lines = append(lines, "- `"+wire(ev)+"`: "+c)
	}
	return strings.Join(lines, "\n")
}

var spaces = regexp.MustCompile(`\s+`)

func comment(d protoreflect.Descriptor) string {
	loc := d.ParentFile().SourceLocations().ByDescriptor(d)
	return strings.TrimSpace(spaces.ReplaceAllString(loc.LeadingComments, " "))
}

// operation converts one Swagger operation.
func (g *generator) operation(method string, op map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for _, k := range []string{"operationId", "summary", "description", "tags", "deprecated"} {
		if v, ok := op[k]; ok {
			out[k] = v
		}
	}
	if _, ok := out["summary"]; !ok {
		out["summary"] = op["operationId"]
	}
	var params []any
	hasBody := false
	if ps, ok := op["parameters"].([]any); ok {
		for _, p := range ps {
			p := p.(map[string]any)
			if p["in"] == "body" {
				schema, err := g.schema(p["schema"])
				if err != nil {
					return nil, fmt.Errorf("body: %w", err)
				}
				body := map[string]any{
					"required": true,
					"content":  map[string]any{"application/json": map[string]any{"schema": schema}},
				}
				if d, ok := p["description"]; ok {
					body["description"] = d
				}
				out["requestBody"] = body
				hasBody = true
				continue
			}
			conv, err := g.parameter(p)
			if err != nil {
				return nil, fmt.Errorf("parameter %v: %w", p["name"], err)
			}
			params = append(params, conv)
		}
	}
	if params != nil {
		out["parameters"] = params
	}
	responses := map[string]any{}
	for code, r := range op["responses"].(map[string]any) {
		if code == "default" {
			continue // replaced by the explicit error responses
		}
		r := r.(map[string]any)
		conv := map[string]any{"description": r["description"]}
		if s, ok := r["schema"]; ok {
			schema, err := g.schema(s)
			if err != nil {
				return nil, fmt.Errorf("response %s: %w", code, err)
			}
			conv["content"] = map[string]any{"application/json": map[string]any{"schema": schema}}
		}
		responses[code] = conv
	}
	for _, code := range errorCodes(hasBody) {
		responses[code] = map[string]any{"$ref": "#/components/responses/" + errorResponseName[code]}
	}
	responses["default"] = map[string]any{"$ref": "#/components/responses/UnexpectedError"}
	out["responses"] = responses
	return out, nil
}

// parameter converts a Swagger path or query parameter.
func (g *generator) parameter(p map[string]any) (map[string]any, error) {
	out := map[string]any{}
	schema := map[string]any{}
	for k, v := range p {
		switch k {
		case "name", "in", "required", "description":
			out[k] = v
		case "collectionFormat":
			if v != "multi" {
				return nil, fmt.Errorf("collectionFormat %v", v)
			}
			out["style"], out["explode"] = "form", true // ?kinds=a&kinds=b
		case "allowEmptyValue":
		default:
			schema[k] = v
		}
	}
	conv, err := g.schema(schema)
	if err != nil {
		return nil, err
	}
	out["schema"] = conv
	return out, nil
}

// errorCodes are the error statuses an operation can answer with: those of
// the edge (limits, authentication, rate limit, unknown route, wrong method)
// and grpc-gateway's mapping of the services' codes.
func errorCodes(hasBody bool) []string {
	codes := []string{"400", "401", "403", "404", "405", "409", "414", "429", "500", "503", "504"}
	if hasBody {
		codes = append(codes, "408", "413")
	}
	slices.Sort(codes)
	return codes
}

var errorResponseName = map[string]string{
	"400": "BadRequest",
	"401": "Unauthenticated",
	"403": "PermissionDenied",
	"404": "NotFound",
	"405": "MethodNotAllowed",
	"408": "RequestTimeout",
	"409": "Conflict",
	"413": "PayloadTooLarge",
	"414": "URITooLong",
	"429": "TooManyRequests",
	"500": "Internal",
	"503": "Unavailable",
	"504": "GatewayTimeout",
}

var errorResponseDoc = map[string]string{
	"400": "The request is malformed (INVALID_ARGUMENT, INVALID_AGENT_ID, INVALID_PATH, INVALID_OPERATION, INVALID_CONTENT, TOKEN_LIMIT_EXCEEDED, …); `metadata.field` names the field when there is one.",
	"401": "No, malformed or expired bearer token (UNAUTHENTICATED, TOKEN_EXPIRED).",
	"403": "The token's roles or agents do not allow this call (PERMISSION_DENIED).",
	"404": "The agent, proposal, revision, entity or snapshot does not exist, or no route matches the path (AGENT_NOT_FOUND, PROPOSAL_NOT_FOUND, REVISION_NOT_FOUND, ENTITY_NOT_FOUND, SNAPSHOT_NOT_FOUND; NOT_FOUND for a path that is no route).",
	"405": "The path exists but not with this HTTP method (METHOD_NOT_ALLOWED); `Allow` lists the methods it takes.",
	"408": "The request body did not arrive before the request's deadline.",
	"409": "The state changed under the call (VERSION_CONFLICT, INVALID_TRANSITION, ALREADY_EXISTS).",
	"413": "The request body or a field is larger than allowed (REQUEST_TOO_LARGE; `metadata.limit` is the limit in bytes).",
	"414": "The request URL is longer than allowed (REQUEST_TOO_LARGE).",
	"429": "Too many requests for this token (RATE_LIMITED); retry after `Retry-After` seconds.",
	"500": "An internal error (MEMORY_CORRUPTED, UNSPECIFIED).",
	"503": "A service, the git repository or the object store cannot be reached (REPOSITORY_UNAVAILABLE, OBJECT_STORE_UNAVAILABLE, UNSPECIFIED); retry after `Retry-After` seconds.",
	"504": "The call did not complete within the edge's timeout.",
}

func errorResponses() map[string]any {
	out := map[string]any{}
	content := map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}}
	for code, name := range errorResponseName {
		r := map[string]any{"description": errorResponseDoc[code], "content": content}
		switch code {
		case "429", "503":
			r["headers"] = map[string]any{"Retry-After": map[string]any{"$ref": "#/components/headers/RetryAfter"}}
		case "401", "403":
			r["headers"] = map[string]any{"WWW-Authenticate": map[string]any{"$ref": "#/components/headers/WWWAuthenticate"}}
		}
		out[name] = r
	}
	out["UnexpectedError"] = map[string]any{
		"description": "Any other error status (e.g. 499 when the client went away, 501 NOT_IMPLEMENTED), with the same body.",
		"content":     content,
	}
	return out
}

// errorSchemas adds Error (the JSON status grpc-gateway writes), its
// ErrorDetail and the ErrorReason strings of google.rpc.ErrorInfo.reason.
func (g *generator) errorSchemas(schemas map[string]any) error {
	ed, ok := g.enums["ERROR_REASON_UNSPECIFIED"]
	if !ok {
		return fmt.Errorf("gardenbloom.memory.v1.ErrorReason not found")
	}
	wire := func(ev protoreflect.EnumValueDescriptor) string {
		// As the server sends it: apierr.ReasonString of the compiled enum.
		return apierr.ReasonString(memoryv1.ErrorReason(ev.Number()))
	}
	var reasons []any
	for i := 0; i < ed.Values().Len(); i++ {
		ev := ed.Values().Get(i)
		r := wire(ev)
		if r != strings.TrimPrefix(string(ev.Name()), "ERROR_REASON_") {
			return fmt.Errorf("ErrorReason %s is %q in the compiled enum: gen/go is stale", ev.Name(), r)
		}
		reasons = append(reasons, r)
	}
	schemas["ErrorReason"] = map[string]any{
		"type": "string",
		"enum": reasons,
		"description": "The `reason` of the google.rpc.ErrorInfo of every error (gardenbloom.memory.v1.ErrorReason " +
			"without its ERROR_REASON_ prefix, in upper case as sent). UNSPECIFIED is sent when the status " +
			"code is all there is to go by. New reasons may be added; treat unknown ones like UNSPECIFIED.\n\n" +
			enumValuesDoc(ed, wire),
	}
	schemas["ErrorDetail"] = map[string]any{
		"type": "object",
		"description": "A google.protobuf.Any detail of an error, in protojson form: `@type` says which message " +
			"the other fields belong to. The first detail of every error is a google.rpc.ErrorInfo " +
			"(`reason`, `domain`, `metadata`); errors worth retrying also carry a google.rpc.RetryInfo " +
			"(`retryDelay`).",
		"required": []any{"@type"},
		"properties": map[string]any{
			"@type": map[string]any{
				"type": "string",
				"examples": []any{
					"type.googleapis.com/google.rpc.ErrorInfo",
					"type.googleapis.com/google.rpc.RetryInfo",
				},
			},
			"reason": map[string]any{"$ref": "#/components/schemas/ErrorReason"},
			"domain": map[string]any{
				"type":        "string",
				"description": "google.rpc.ErrorInfo: always `" + apierr.Domain + "`.",
				"examples":    []any{apierr.Domain},
			},
			"metadata": map[string]any{
				"type":                 "object",
				"description":          "google.rpc.ErrorInfo: facts about the error, e.g. `field`, `limit`, `currentVersion`.",
				"additionalProperties": map[string]any{"type": "string"},
			},
			"retryDelay": map[string]any{
				"type":        "string",
				"description": "google.rpc.RetryInfo: how long to wait, as a protojson Duration (\"1s\").",
				"examples":    []any{"1s"},
			},
		},
		"additionalProperties": true,
	}
	schemas["Error"] = map[string]any{
		"type":        "object",
		"description": "The body of every error response: a google.rpc.Status in JSON.",
		"required":    []any{"code", "message", "details"},
		"properties": map[string]any{
			"code": map[string]any{
				"type":        "integer",
				"format":      "int32",
				"description": "The gRPC status code (3 INVALID_ARGUMENT, 5 NOT_FOUND, 16 UNAUTHENTICATED, …).",
			},
			"message": map[string]any{"type": "string", "description": "For people; branch on details[0].reason instead."},
			"details": map[string]any{
				"type":     "array",
				"minItems": 1,
				"items":    map[string]any{"$ref": "#/components/schemas/ErrorDetail"},
			},
		},
	}
	return nil
}

// edgePaths describes what memoryd serves beside grpc-gateway on the same
// HTTP listener (cmd/memoryd/app setupHTTP, services/gateway).
func edgePaths() map[string]any {
	public := []any{}
	get := func(id, summary, desc string, responses map[string]any) map[string]any {
		responses["405"] = map[string]any{"description": "Only GET and HEAD are served here."}
		return map[string]any{"get": map[string]any{
			"operationId": id,
			"summary":     summary,
			"description": desc,
			"tags":        []any{opsTag},
			"security":    public,
			"responses":   responses,
		}}
	}
	text := func(desc string) map[string]any {
		return map[string]any{"description": desc, "content": map[string]any{"text/plain": map[string]any{"schema": map[string]any{"type": "string"}}}}
	}
	health := map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/HealthReport"}}}
	paths := map[string]any{
		"/health": get("Health", "Health of every service this process runs or routes to.",
			"gRPC health of each service module, checked with a 2 s timeout. No token needed.",
			map[string]any{
				"200": map[string]any{"description": "Every service is SERVING.", "content": health},
				"503": map[string]any{"description": "At least one service is not SERVING or cannot be reached.", "content": health},
			}),
		"/metrics": get("Metrics", "Prometheus metrics.",
			"The OpenTelemetry metrics of this process in the Prometheus text exposition format. No token needed.",
			map[string]any{"200": text("Prometheus text format (version 0.0.4).")}),
		"/status/config": get("StatusConfig", "The effective configuration.",
			"Every flag of this process as `name: \"value\"`, one per line, sorted; secrets are redacted. No token needed.",
			map[string]any{"200": text("One `name: \"value\"` line per flag.")}),
		"/openapi.json": get("OpenAPI", "This document.",
			"The OpenAPI 3.1 description of the REST API, with an ETag for revalidation. No token needed.",
			map[string]any{
				"200": map[string]any{"description": "The OpenAPI document.", "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"type": "object"}}}},
				"304": map[string]any{"description": "Not modified (If-None-Match matched the ETag)."},
			}),
		"/docs": get("Docs", "Browsable API reference.",
			"This document rendered as HTML by the server, from assets compiled into the binary (no JavaScript, no CDN). No token needed.",
			map[string]any{"200": map[string]any{"description": "The API reference.", "content": map[string]any{"text/html": map[string]any{"schema": map[string]any{"type": "string"}}}}}),
	}
	return paths
}

// healthSchema is pkg/healthcheck's Report.
func healthSchema() map[string]any {
	return map[string]any{
		"type":     "object",
		"required": []any{"status", "services", "degraded", "dependencies"},
		"properties": map[string]any{
			"status": map[string]any{"type": "string", "enum": []any{"SERVING", "NOT_SERVING"}, "description": "SERVING when every service is, else NOT_SERVING. A dependency that is down does not change it."},
			"degraded": map[string]any{"type": "array", "items": map[string]any{"type": "string"},
				"description": "The dependencies that are down (e.g. object-store): the services serve what they can without them."},
			"dependencies": map[string]any{
				"type": "object",
				"additionalProperties": map[string]any{
					"type":     "object",
					"required": []any{"status", "since"},
					"properties": map[string]any{
						"status": map[string]any{"type": "string", "enum": []any{"SERVING", "UNAVAILABLE"}},
						"since":  map[string]any{"type": "string", "format": "date-time", "description": "When it entered this state."},
						"error":  map[string]any{"type": "string", "description": "What took it down."},
					},
				},
			},
			"services": map[string]any{
				"type": "object",
				"additionalProperties": map[string]any{
					"type":     "object",
					"required": []any{"status", "address"},
					"properties": map[string]any{
						"status":  map[string]any{"type": "string", "description": "The gRPC health status (SERVING, NOT_SERVING, SERVICE_UNKNOWN, …) or UNREACHABLE.", "examples": []any{"SERVING"}},
						"address": map[string]any{"type": "string"},
						"error":   map[string]any{"type": "string"},
					},
				},
			},
		},
	}
}
