package main

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The names kubeconform v0.8.0 looks up with
// '{{ .ResourceKind }}{{ .KindSuffix }}.json'.
func TestFileName(t *testing.T) {
	for _, c := range []struct {
		gvk  GVK
		want string
	}{
		{GVK{"", "v1", "Service"}, "service-v1.json"},
		{GVK{"apps", "v1", "StatefulSet"}, "statefulset-apps-v1.json"},
		{GVK{"autoscaling", "v2", "HorizontalPodAutoscaler"}, "horizontalpodautoscaler-autoscaling-v2.json"},
		{GVK{"networking.k8s.io", "v1", "NetworkPolicy"}, "networkpolicy-networking-v1.json"},
		{GVK{"policy", "v1", "PodDisruptionBudget"}, "poddisruptionbudget-policy-v1.json"},
	} {
		if got := c.gvk.FileName(); got != c.want {
			t.Errorf("%+v: %s, want %s", c.gvk, got, c.want)
		}
	}
}

const tinySwagger = `{"definitions": {
  "io.k8s.api.demo.v1.Thing": {
    "description": "a thing",
    "type": "object",
    "required": ["spec"],
    "properties": {
      "apiVersion": {"type": "string"},
      "kind": {"type": "string"},
      "spec": {"$ref": "#/definitions/io.k8s.api.demo.v1.ThingSpec", "description": "d"}
    },
    "x-kubernetes-group-version-kind": [{"group": "demo.example.com", "kind": "Thing", "version": "v1"}]
  },
  "io.k8s.api.demo.v1.ThingSpec": {
    "type": "object",
    "properties": {
      "description": {"type": "string", "description": "a property called description"},
      "port": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.util.intstr.IntOrString"},
      "limits": {"type": "object", "additionalProperties": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.api.resource.Quantity"}},
      "children": {"type": "array", "items": {"$ref": "#/definitions/io.k8s.api.demo.v1.ThingSpec"}}
    }
  },
  "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string"},
  "io.k8s.apimachinery.pkg.api.resource.Quantity": {"type": "string"},
  "io.k8s.api.demo.v1.Unused": {"type": "object", "properties": {"a": {"type": "string"}}}
}}`

func TestGenerate(t *testing.T) {
	files, err := Generate([]byte(tinySwagger))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 {
		t.Fatalf("files %v, want thing-demo-v1.json only", keys(files))
	}
	var got map[string]any
	if err := json.Unmarshal(files["thing-demo-v1.json"], &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"$schema":              draft4,
		"type":                 "object",
		"required":             []any{"spec"},
		"additionalProperties": false,
		"properties": map[string]any{
			"apiVersion": map[string]any{"type": "string", "enum": []any{"demo.example.com/v1"}},
			"kind":       map[string]any{"type": "string", "enum": []any{"Thing"}},
			"spec":       map[string]any{"$ref": "#/definitions/io.k8s.api.demo.v1.ThingSpec"},
		},
		"definitions": map[string]any{
			"io.k8s.api.demo.v1.ThingSpec": map[string]any{
				"type":                 []any{"object", "null"},
				"additionalProperties": false,
				"properties": map[string]any{
					"description": map[string]any{"type": []any{"string", "null"}},
					"port":        map[string]any{"$ref": "#/definitions/io.k8s.apimachinery.pkg.util.intstr.IntOrString"},
					"limits": map[string]any{
						"type":                 []any{"object", "null"},
						"additionalProperties": map[string]any{"$ref": "#/definitions/io.k8s.apimachinery.pkg.api.resource.Quantity"},
					},
					"children": map[string]any{
						"type":  []any{"array", "null"},
						"items": map[string]any{"$ref": "#/definitions/io.k8s.api.demo.v1.ThingSpec"},
					},
				},
			},
			"io.k8s.apimachinery.pkg.util.intstr.IntOrString": map[string]any{"type": []any{"string", "integer", "null"}},
			"io.k8s.apimachinery.pkg.api.resource.Quantity":   map[string]any{"type": []any{"string", "number", "null"}},
		},
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		t.Errorf("schema:\n%s", g)
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
