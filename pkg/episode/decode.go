package episode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"gopkg.in/yaml.v3"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
)

// Decode parses one episode from JSON (a REST body, a line of a JSONL file)
// or YAML (anything that does not start with "{"), with the spec's
// snake_case field names (the lowerCamel ones are accepted too, as on every
// REST body). An unknown field or a value of the wrong type is an
// InvalidArgument naming the episode; the episode still has to go through
// Normalize.
func Decode(data []byte) (*memoryv1.Episode, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, apierr.InvalidArgument("episode", "episode is empty")
	}
	if trimmed[0] != '{' {
		var v any
		if err := yaml.Unmarshal(trimmed, &v); err != nil {
			return nil, apierr.InvalidArgument("episode", "episode is neither JSON nor YAML: "+err.Error())
		}
		j, err := json.Marshal(jsonable(v))
		if err != nil {
			return nil, apierr.InvalidArgument("episode", "episode YAML has values JSON cannot hold: "+err.Error())
		}
		trimmed = j
	}
	e := &memoryv1.Episode{}
	if err := protojson.Unmarshal(trimmed, e); err != nil {
		return nil, apierr.InvalidArgument("episode", fmt.Sprintf("episode is not a valid episode: %v", err))
	}
	return e, nil
}

// jsonable turns what yaml.v3 decodes into values encoding/json writes as
// the episode's JSON: times as RFC 3339 text, maps with string keys.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			x[k] = jsonable(val)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, val := range x {
			m[fmt.Sprint(k)] = jsonable(val)
		}
		return m
	case []any:
		for i, val := range x {
			x[i] = jsonable(val)
		}
		return x
	case time.Time:
		return x.Format(time.RFC3339Nano)
	}
	return v
}
