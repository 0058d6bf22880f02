package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// rule says about one argument what its Go type cannot: the values it
// takes, its default (the SDK fills it in before the handler runs, and the
// model reads it in the schema) and its bounds.
type rule struct {
	enum     []any
	def      any
	min, max *float64
	minItems *int
}

func bound(v float64) *float64 { return &v }

func atLeast(n int) *int { return &n }

// inputSchema is In's JSON Schema — descriptions from the jsonschema struct
// tags, optional fields marked omitempty — refined by rules, keyed by
// argument path ("query", "updates[].operation", "episode.outcome.status").
// The types and rules are fixed at compile time, so a mistake in them is a
// programming error and panics when the server is built (every test builds
// it).
func inputSchema[In any](rules map[string]rule) *jsonschema.Schema {
	s, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: input schema: %v", err))
	}
	for path, r := range rules {
		p := property(s, path)
		if p == nil {
			panic(fmt.Sprintf("mcpserver: input schema %T has no property %q", *new(In), path))
		}
		p.Enum = r.enum
		if r.def != nil {
			raw, err := json.Marshal(r.def)
			if err != nil {
				panic(fmt.Sprintf("mcpserver: default of %q: %v", path, err))
			}
			p.Default = raw
		}
		p.Minimum, p.Maximum, p.MinItems = r.min, r.max, r.minItems
	}
	return s
}

// property finds the schema of path in s: dots go into object properties,
// a "[]" suffix into an array's items.
func property(s *jsonschema.Schema, path string) *jsonschema.Schema {
	for seg := range strings.SplitSeq(path, ".") {
		name, items := strings.CutSuffix(seg, "[]")
		if s = s.Properties[name]; s == nil {
			return nil
		}
		if items {
			if s = s.Items; s == nil {
				return nil
			}
		}
	}
	return s
}
