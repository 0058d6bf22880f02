// Package episodefile reads the episodes `memctl ingest` sends: one JSON or
// YAML document, a JSON array, a JSONL file (one episode a line), or a
// folder of such files. Each document is an Episode in the API's JSON
// (episode.proto: the spec's snake_case names, so the spec's §12 example is
// one as written) or a whole IngestEpisodeRequest ({"agent_id": …,
// "episode": {…}}) when one file feeds several agents. Parsing is
// protojson's, strict: an unknown field is an error naming the file and
// line, and nothing is sent.
package episodefile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"gopkg.in/yaml.v3"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// Item is one episode to ingest and where it came from.
type Item struct {
	// Source names the document: "episodes.jsonl:12", "ep.yaml",
	// "ep.yaml#2" (the second YAML document), "-" (stdin).
	Source  string
	Request *memoryv1.IngestEpisodeRequest
}

// Stdin is the path that means standard input.
const Stdin = "-"

// maxLine bounds one JSONL line (an episode is a few KB; 8 MiB is the
// server's largest request).
const maxLine = 8 << 20

// Read reads the episodes of path (a file, a folder, or "-" for stdin).
func Read(path string, stdin io.Reader) ([]Item, error) {
	if path == Stdin {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("reading stdin: %w", err)
		}
		return parse(Stdin, sniff(b), b)
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return readFile(path)
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && kindOf(p) != "" {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	var items []Item
	for _, f := range files {
		got, err := readFile(f)
		if err != nil {
			return nil, err
		}
		items = append(items, got...)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%s: no .json, .jsonl or .yaml episode files", path)
	}
	return items, nil
}

func readFile(path string) ([]Item, error) {
	kind := kindOf(path)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if kind == "" {
		kind = sniff(b)
	}
	return parse(path, kind, b)
}

// Document kinds.
const (
	kindJSON  = "json"
	kindJSONL = "jsonl"
	kindYAML  = "yaml"
)

func kindOf(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".ndjson":
		return kindJSONL
	case ".json":
		return kindJSON
	case ".yaml", ".yml":
		return kindYAML
	}
	return ""
}

// sniff guesses the kind of unnamed input: JSON when it starts with { or [
// and is one document, JSONL when it is several, else YAML.
func sniff(b []byte) string {
	t := bytes.TrimSpace(b)
	if len(t) == 0 || (t[0] != '{' && t[0] != '[') {
		return kindYAML
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	var first json.RawMessage
	if dec.Decode(&first) == nil && !dec.More() {
		return kindJSON
	}
	return kindJSONL
}

func parse(source, kind string, b []byte) ([]Item, error) {
	switch kind {
	case kindJSONL:
		return parseJSONL(source, b)
	case kindYAML:
		return parseYAML(source, b)
	default:
		return parseJSON(source, b)
	}
}

func parseJSONL(source string, b []byte) ([]Item, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var items []Item
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		where := fmt.Sprintf("%s:%d", source, n)
		it, err := decode(where, line)
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%s: no episodes", source)
	}
	return items, nil
}

func parseJSON(source string, b []byte) ([]Item, error) {
	t := bytes.TrimSpace(b)
	if len(t) > 0 && t[0] == '[' {
		var docs []json.RawMessage
		if err := json.Unmarshal(t, &docs); err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		if len(docs) == 0 {
			return nil, fmt.Errorf("%s: no episodes", source)
		}
		items := make([]Item, 0, len(docs))
		for i, d := range docs {
			it, err := decode(fmt.Sprintf("%s[%d]", source, i), d)
			if err != nil {
				return nil, err
			}
			items = append(items, it)
		}
		return items, nil
	}
	it, err := decode(source, t)
	if err != nil {
		return nil, err
	}
	return []Item{it}, nil
}

// parseYAML reads one or more YAML documents (separated by ---), each an
// episode, or a list of them; YAML becomes JSON first, so the rules (and
// the field names) are the JSON ones.
func parseYAML(source string, b []byte) ([]Item, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var items []Item
	for doc := 1; ; doc++ {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		where := source
		if doc > 1 {
			where = fmt.Sprintf("%s#%d", source, doc)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if v == nil {
			continue
		}
		docs := []any{v}
		if list, ok := v.([]any); ok {
			docs = list
		}
		for i, d := range docs {
			w := where
			if len(docs) > 1 {
				w = fmt.Sprintf("%s[%d]", where, i)
			}
			j, err := json.Marshal(d)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", w, err)
			}
			it, err := decode(w, j)
			if err != nil {
				return nil, err
			}
			items = append(items, it)
		}
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%s: no episodes", source)
	}
	return items, nil
}

// strict is protojson with unknown fields rejected.
var strict = protojson.UnmarshalOptions{DiscardUnknown: false}

// decode reads one document: an IngestEpisodeRequest when it has a
// top-level "episode" key, else an Episode.
func decode(where string, doc []byte) (Item, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil {
		return Item{}, fmt.Errorf("%s: not a JSON object: %w", where, err)
	}
	req := &memoryv1.IngestEpisodeRequest{}
	if _, wrapped := top["episode"]; wrapped {
		if err := strict.Unmarshal(doc, req); err != nil {
			return Item{}, fmt.Errorf("%s: %s", where, cleanErr(err))
		}
	} else {
		req.Episode = &memoryv1.Episode{}
		if err := strict.Unmarshal(doc, req.Episode); err != nil {
			return Item{}, fmt.Errorf("%s: %s", where, cleanErr(err))
		}
	}
	if req.GetEpisode() == nil {
		return Item{}, fmt.Errorf("%s: \"episode\" is empty", where)
	}
	return Item{Source: where, Request: req}, nil
}

// cleanErr drops protojson's "proto: " prefix and its unstable spacing.
func cleanErr(err error) string {
	s := strings.TrimPrefix(err.Error(), "proto:")
	return strings.Join(strings.Fields(s), " ")
}
