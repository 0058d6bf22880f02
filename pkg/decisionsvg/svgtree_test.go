package decisionsvg

import (
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// elem is an element of a parsed picture.
type elem struct {
	name     string
	attrs    map[string]string
	children []*elem
	// text is the element's own character data.
	text string
}

// parseSVG parses svg as strict XML and returns its root; a picture that
// is not well-formed fails the test.
func parseSVG(t testing.TB, svg string) *elem {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	d.Strict = true
	var stack []*elem
	var root *elem
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "the SVG is well-formed XML:\n%s", svg)
		switch tok := tok.(type) {
		case xml.StartElement:
			e := &elem{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			if len(stack) == 0 {
				require.Nil(t, root, "one root element")
				root = e
			} else {
				parent := stack[len(stack)-1]
				parent.children = append(parent.children, e)
			}
			stack = append(stack, e)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(tok)
			} else {
				require.Empty(t, strings.TrimSpace(string(tok)), "no text outside the root")
			}
		case xml.ProcInst, xml.Directive:
			t.Fatalf("unexpected %T in the SVG", tok)
		}
	}
	require.NotNil(t, root)
	require.Equal(t, "svg", root.name)
	require.Equal(t, "http://www.w3.org/2000/svg", root.attrs["xmlns"])
	return root
}

// walk calls fn for e and every element under it, depth first.
func (e *elem) walk(fn func(*elem)) {
	fn(e)
	for _, c := range e.children {
		c.walk(fn)
	}
}

// all returns the elements under e (e included) that match.
func (e *elem) all(match func(*elem) bool) []*elem {
	var out []*elem
	e.walk(func(x *elem) {
		if match(x) {
			out = append(out, x)
		}
	})
	return out
}

func (e *elem) child(name string) *elem {
	for _, c := range e.children {
		if c.name == name {
			return c
		}
	}
	return nil
}

func (e *elem) hasClass(c string) bool {
	return strings.Contains(" "+e.attrs["class"]+" ", " "+c+" ")
}

func (e *elem) num(t testing.TB, attr string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(e.attrs[attr], 64)
	require.NoError(t, err, "%s=%q", attr, e.attrs[attr])
	return v
}

// allowedElements are the only elements a picture may hold: no script, no
// foreignObject, no image, no style, no link to anything outside.
var allowedElements = map[string]bool{"svg": true, "title": true, "desc": true, "path": true, "g": true, "rect": true,
	"text": true, "line": true}

// requireSafe checks what a picture must be whatever went into it:
// well-formed, only drawing elements, the root's <title> first, no style or
// event attribute, no reference outside the document.
func requireSafe(t testing.TB, svg string) *elem {
	t.Helper()
	root := parseSVG(t, svg)
	require.NotEmpty(t, root.children)
	require.Equal(t, "title", root.children[0].name, "the picture's accessible name comes first")
	root.walk(func(e *elem) {
		require.True(t, allowedElements[e.name], "element <%s> in:\n%s", e.name, svg)
		for k, v := range e.attrs {
			require.NotContains(t, []string{"style", "href", "src"}, k)
			require.False(t, strings.HasPrefix(strings.ToLower(k), "on"), "event attribute %s", k)
			require.NotContains(t, strings.ToLower(v), "javascript:")
			require.NotContains(t, v, "url(", "no reference to anything")
		}
	})
	return root
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create %s", path)
	require.Equal(t, string(want), got, "%s differs; if the change is meant, run go test ./pkg/decisionsvg/ -update and look at the picture", path)
}
