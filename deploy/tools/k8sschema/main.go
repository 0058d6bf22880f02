// Command k8sschema turns the OpenAPI v2 document of a Kubernetes release
// (api/openapi-spec/swagger.json of the k8s.io/kubernetes module) into the
// standalone, strict JSON schemas kubeconform reads, offline:
//
//	k8sschema -module k8s.io/kubernetes@v1.36.3 -out .cache/k8s-schemas/v1.36.3
//	kubeconform -strict -schema-location '.cache/k8s-schemas/v1.36.3/{{ .ResourceKind }}{{ .KindSuffix }}.json' f.yaml
//
// It does what openapi2jsonschema does for kubernetes-json-schema's
// "-standalone-strict" flavour:
//   - one file per group/version/kind, named as kubeconform's
//     {{ .ResourceKind }}{{ .KindSuffix }} expands: lowercased kind, then
//     "-<first label of the group>" unless the group is core, then
//     "-<version>" (deployment-apps-v1.json, service-v1.json,
//     networkpolicy-networking-v1.json);
//   - standalone: every definition the kind reaches is copied into the file's
//     own "definitions", so "#/definitions/..." references resolve inside the
//     file (recursive types such as JSONSchemaProps included);
//   - strict: every object schema with properties gets
//     additionalProperties: false, so an unknown or misspelt field is an error;
//   - int-or-string fields accept a string or an integer and quantities a
//     string or a number, as the API server does; any value below the
//     document may be null (the API server reads null as unset), as
//     openapi2jsonschema's output allows.
//
// Descriptions and x-kubernetes-* extensions are dropped: kubeconform does
// not use them and the files stay small.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

const (
	refPrefix    = "#/definitions/"
	quantityName = "io.k8s.apimachinery.pkg.api.resource.Quantity"
	draft4       = "http://json-schema.org/draft-04/schema#"
)

func main() {
	swagger := flag.String("swagger", "", "path of a Kubernetes swagger.json (OpenAPI v2)")
	module := flag.String("module", "", "instead of -swagger: a module@version whose api/openapi-spec/swagger.json to use, fetched with `go mod download`")
	out := flag.String("out", "", "output directory (replaced as a whole)")
	flag.Parse()
	if *out == "" || (*swagger == "") == (*module == "") {
		fmt.Fprintln(os.Stderr, "usage: k8sschema (-swagger FILE | -module k8s.io/kubernetes@vX.Y.Z) -out DIR")
		os.Exit(2)
	}
	if err := run(*swagger, *module, *out); err != nil {
		fmt.Fprintln(os.Stderr, "k8sschema:", err)
		os.Exit(1)
	}
}

func run(swaggerPath, module, out string) error {
	if module != "" {
		dir, err := moduleDir(module)
		if err != nil {
			return err
		}
		swaggerPath = filepath.Join(dir, "api", "openapi-spec", "swagger.json")
	}
	data, err := os.ReadFile(swaggerPath)
	if err != nil {
		return err
	}
	files, err := Generate(data)
	if err != nil {
		return fmt.Errorf("%s: %w", swaggerPath, err)
	}
	// Write next to the target and swap, so an interrupted run never leaves
	// a half-filled folder that looks complete.
	tmp := out + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), body, 0o644); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	fmt.Printf("k8sschema: %d schemas from %s in %s\n", len(files), swaggerPath, out)
	return nil
}

// moduleDir downloads module@version into the module cache and returns its
// folder. It runs outside any module so that no go.mod or go.sum is touched.
func moduleDir(module string) (string, error) {
	goBin := os.Getenv("GO")
	if goBin == "" {
		goBin = "go"
	}
	cmd := exec.Command(goBin, "mod", "download", "-json", module)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(outb, &info); jerr == nil && info.Error != "" {
		return "", fmt.Errorf("go mod download %s: %s", module, info.Error)
	}
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %v: %s", module, err, strings.TrimSpace(stderr.String()))
	}
	if info.Dir == "" {
		return "", fmt.Errorf("go mod download %s: no Dir in %q", module, outb)
	}
	return info.Dir, nil
}

// GVK is one x-kubernetes-group-version-kind entry.
type GVK struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

// APIVersion is the apiVersion a manifest of this kind carries.
func (g GVK) APIVersion() string {
	if g.Group == "" {
		return g.Version
	}
	return g.Group + "/" + g.Version
}

// FileName is the name kubeconform's '{{ .ResourceKind }}{{ .KindSuffix }}.json'
// expands to for this kind (pkg/registry/registry.go schemaPath in
// kubeconform v0.8.0).
func (g GVK) FileName() string {
	groupParts := strings.Split(g.APIVersion(), "/")
	versionParts := strings.Split(groupParts[0], ".")
	suffix := "-" + strings.ToLower(versionParts[0])
	if len(groupParts) > 1 {
		suffix += "-" + strings.ToLower(groupParts[1])
	}
	return strings.ToLower(g.Kind) + suffix + ".json"
}

// Generate returns the schema files (name to JSON) for every kind in a
// swagger document.
func Generate(swagger []byte) (map[string][]byte, error) {
	var doc struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(swagger, &doc); err != nil {
		return nil, err
	}
	if len(doc.Definitions) == 0 {
		return nil, errors.New("no definitions")
	}
	// Transform every definition once; each file copies the ones it reaches.
	defs := make(map[string]any, len(doc.Definitions))
	for name, def := range doc.Definitions {
		if name == quantityName {
			defs[name] = map[string]any{"type": []any{"string", "number", "null"}}
			continue
		}
		// Any optional value may be written as null (`emptyDir:` with
		// nothing after it); the API server treats that as unset. The
		// document's own root is made non-null in standalone.
		defs[name] = transform(def, true)
	}

	names := make([]string, 0, len(doc.Definitions))
	for name := range doc.Definitions {
		names = append(names, name)
	}
	sort.Strings(names)
	files := map[string][]byte{}
	from := map[string]string{}
	for _, name := range names {
		raw, ok := doc.Definitions[name]["x-kubernetes-group-version-kind"]
		if !ok {
			continue
		}
		var gvks []GVK
		b, _ := json.Marshal(raw)
		if err := json.Unmarshal(b, &gvks); err != nil {
			return nil, fmt.Errorf("%s: x-kubernetes-group-version-kind: %w", name, err)
		}
		for _, gvk := range gvks {
			file := gvk.FileName()
			if prev, dup := from[file]; dup {
				return nil, fmt.Errorf("%s and %s both map to %s", prev, name, file)
			}
			from[file] = name
			body, err := json.Marshal(standalone(name, gvk, defs))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			files[file] = body
		}
	}
	if len(files) == 0 {
		return nil, errors.New("no definition carries x-kubernetes-group-version-kind")
	}
	return files, nil
}

// standalone is the schema of one kind with every definition it reaches.
func standalone(name string, gvk GVK, defs map[string]any) map[string]any {
	root := map[string]any{}
	for k, v := range defs[name].(map[string]any) {
		root[k] = v
	}
	// The document itself is never null, and it is exactly this kind.
	root["type"] = "object"
	if props, ok := root["properties"].(map[string]any); ok {
		p := make(map[string]any, len(props))
		for k, v := range props {
			p[k] = v
		}
		p["apiVersion"] = map[string]any{"type": "string", "enum": []any{gvk.APIVersion()}}
		p["kind"] = map[string]any{"type": "string", "enum": []any{gvk.Kind}}
		root["properties"] = p
	}
	reached := map[string]any{}
	var visit func(v any)
	visit = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			if ref, ok := t["$ref"].(string); ok && strings.HasPrefix(ref, refPrefix) {
				target := strings.TrimPrefix(ref, refPrefix)
				if _, seen := reached[target]; !seen {
					if def, ok := defs[target]; ok {
						reached[target] = def
						visit(def)
					}
				}
			}
			for _, c := range t {
				visit(c)
			}
		case []any:
			for _, c := range t {
				visit(c)
			}
		}
	}
	visit(root)
	root["$schema"] = draft4
	if len(reached) > 0 {
		root["definitions"] = reached
	}
	return root
}

// transform rewrites one schema node (and its sub-schemas). It walks by
// keyword, so a property that happens to be called "description" or
// "format" is left alone.
func transform(node map[string]any, nullable bool) map[string]any {
	if ref, ok := node["$ref"].(string); ok {
		// Draft 4 ignores keywords beside $ref; keep the reference alone
		// (the definition it names already allows null).
		return map[string]any{"$ref": ref}
	}
	if f, _ := node["format"].(string); f == "int-or-string" {
		return map[string]any{"type": []any{"string", "integer", "null"}}
	}
	out := map[string]any{}
	for k, v := range node {
		switch {
		case k == "description" || strings.HasPrefix(k, "x-") || k == "discriminator":
		case k == "properties":
			props := map[string]any{}
			for pname, ps := range v.(map[string]any) {
				props[pname] = transform(ps.(map[string]any), true)
			}
			out[k] = props
		case k == "items" || k == "not":
			if s, ok := v.(map[string]any); ok {
				out[k] = transform(s, true)
			} else {
				out[k] = v
			}
		case k == "additionalProperties":
			if s, ok := v.(map[string]any); ok {
				out[k] = transform(s, true)
			} else {
				out[k] = v
			}
		case k == "allOf" || k == "anyOf" || k == "oneOf":
			list := []any{}
			for _, s := range v.([]any) {
				list = append(list, transform(s.(map[string]any), false))
			}
			out[k] = list
		default:
			out[k] = v
		}
	}
	if t, ok := out["type"].(string); ok && nullable {
		out["type"] = []any{t, "null"}
	}
	// Strict: an object that lists its properties takes no others.
	if _, ok := out["properties"]; ok {
		if _, set := out["additionalProperties"]; !set {
			out["additionalProperties"] = false
		}
	}
	return out
}
