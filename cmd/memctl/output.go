package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"
	"gopkg.in/yaml.v3"

	"github.com/garden-bloom/memory/pkg/enumname"
	"github.com/garden-bloom/memory/pkg/restjson"
)

// Output formats of -o.
const (
	formatTable = "table"
	formatJSON  = "json"
	formatYAML  = "yaml"
)

var formats = []string{formatTable, formatJSON, formatYAML}

// restJSON writes messages exactly as the REST edge does (pkg/restjson with
// the gateway's options: every field, short enum names, lowerCamelCase or
// the field's json_name), so `memctl -o json` and curl agree.
var restJSON = &restjson.Marshaler{MarshalOptions: protojson.MarshalOptions{EmitUnpopulated: true, Indent: "  "}}

// printer writes a command's result in the chosen format.
type printer struct {
	format string
	out    io.Writer
	color  bool // only on a terminal, and not with NO_COLOR
}

// message prints a response message; table renders it for people.
func (p *printer) message(m proto.Message, table func(t *table)) error {
	if p.format == formatTable {
		return p.table(table)
	}
	b, err := restJSON.Marshal(m)
	if err != nil {
		return err
	}
	return p.document(b)
}

// value prints a result memctl composed from several calls (search
// --expand, export-onboarding): its JSON is encoding/json of v.
func (p *printer) value(v any, table func(t *table)) error {
	if p.format == formatTable {
		return p.table(table)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return p.document(b)
}

// document writes a JSON document as JSON or as the same document in YAML.
func (p *printer) document(b []byte) error {
	if p.format == formatYAML {
		y, err := jsonToYAML(b)
		if err != nil {
			return err
		}
		_, err = p.out.Write(y)
		return err
	}
	_, err := fmt.Fprintf(p.out, "%s\n", b)
	return err
}

func (p *printer) table(fill func(t *table)) error {
	t := &table{color: p.color}
	t.w = tabwriter.NewWriter(p.out, 0, 4, 2, ' ', 0)
	fill(t)
	if t.err != nil {
		return t.err
	}
	return t.w.Flush()
}

// jsonToYAML re-encodes a JSON document as block-style YAML, keeping the
// key order (JSON is YAML, so the node tree is read as it is).
func jsonToYAML(b []byte) ([]byte, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(b, &n); err != nil {
		return nil, err
	}
	var clear func(*yaml.Node)
	clear = func(n *yaml.Node) {
		n.Style &^= yaml.FlowStyle
		if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
			n.Style &^= yaml.DoubleQuotedStyle
		}
		for _, c := range n.Content {
			clear(c)
		}
	}
	clear(&n)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// table is an aligned table (text/tabwriter), or key: value lines.
type table struct {
	w     *tabwriter.Writer
	color bool
	err   error
}

// row writes one row; cells may be any value, formatted with cell.
func (t *table) row(cells ...any) {
	if t.err != nil {
		return
	}
	s := make([]string, len(cells))
	for i, c := range cells {
		s[i] = cell(c)
	}
	_, t.err = fmt.Fprintln(t.w, strings.Join(s, "\t"))
}

// header writes the column names, upper-cased as kubectl and gh do.
func (t *table) header(names ...string) {
	cells := make([]any, len(names))
	for i, n := range names {
		cells[i] = strings.ToUpper(n)
	}
	t.row(cells...)
}

// kv writes "key: value" lines (one record).
func (t *table) kv(key string, value any) {
	t.row(key+":", value)
}

// text writes free text below the table (flushed first so it is not aligned).
func (t *table) text(s string) {
	if t.err != nil {
		return
	}
	if t.err = t.w.Flush(); t.err != nil {
		return
	}
	_, t.err = io.WriteString(t.w, s)
}

// more says how to ask for the next page, when there is one.
func (t *table) more(nextPageToken string) {
	if nextPageToken != "" {
		t.text("more: --page-token " + nextPageToken + "\n")
	}
}

// status colours a proposal status on a terminal.
func (t *table) status(s string) string {
	if !t.color {
		return s
	}
	code := ""
	switch s {
	case "applied":
		code = "32"
	case "failed", "rejected":
		code = "31"
	case "pending", "needs_human_review", "approved", "applying":
		code = "33"
	}
	if code == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// cell formats a table value: enums by their REST short name, times in
// RFC 3339 UTC, empty values as "-".
func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		if x == "" {
			return "-"
		}
		return oneLine(x)
	case protoreflect.Enum:
		return enumname.Short(x.Descriptor(), x.Number())
	case *timestamppb.Timestamp:
		if x == nil {
			return "-"
		}
		return x.AsTime().UTC().Format(time.RFC3339)
	case time.Time:
		if x.IsZero() {
			return "-"
		}
		return x.UTC().Format(time.RFC3339)
	case []string:
		if len(x) == 0 {
			return "-"
		}
		return oneLine(strings.Join(x, ", "))
	case float64:
		return fmt.Sprintf("%.3f", x)
	default:
		return fmt.Sprint(x)
	}
}

// oneLine keeps a table cell on its line and short.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 100 {
		return string(r[:99]) + "…"
	}
	return s
}

// short returns an enum's REST short name ("applied", "basic").
func short(e protoreflect.Enum) string { return enumname.Short(e.Descriptor(), e.Number()) }

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
