package gateway

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestJSONTooDeep(t *testing.T) {
	nest := func(open, close string, n int) string {
		return strings.Repeat(open, n) + strings.Repeat(close, n)
	}
	tests := []struct {
		name string
		in   string
		max  int
		deep bool
	}{
		{name: "empty", in: "", max: 1},
		{name: "scalar", in: `"x"`, max: 1},
		{name: "flat object", in: `{"a":1,"b":[1,2]}`, max: 2},
		{name: "one too many", in: `{"a":1,"b":[1,2]}`, max: 1, deep: true},
		{name: "exactly the limit", in: nest("[", "]", 64), max: 64},
		{name: "past the limit", in: nest("[", "]", 65), max: 64, deep: true},
		{name: "objects past the limit", in: strings.Repeat(`{"a":`, 65) + "1" + strings.Repeat("}", 65), max: 64, deep: true},
		{name: "siblings do not add up", in: "[" + strings.Repeat("[[]],", 100) + "[]]", max: 3},
		{name: "brackets in strings", in: `{"a":"` + strings.Repeat("[{", 100) + `"}`, max: 1},
		{name: "escaped quote keeps the string open", in: `["\"[[[[", "x"]`, max: 1},
		{name: "escaped backslash closes the string", in: `["\\", [[]]]`, max: 2, deep: true},
		{name: "unicode escapes", in: `["\u005b\u005b\u0022", []]`, max: 2},
		{name: "stray closers do not go negative", in: "]]]]" + nest("[", "]", 3), max: 2, deep: true},
		{name: "unterminated string", in: `["` + strings.Repeat("[", 100), max: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			deep, _ := scanJSON([]byte(tt.in), tt.max)
			require.Equal(t, tt.deep, deep)
		})
	}
}

func BenchmarkJSONTooDeep(b *testing.B) {
	body := []byte(`{"agentId":"a","updates":[` + strings.Repeat(`{"file":"facts.md","content":"- a \"quoted\" fact [x]"},`, 20000) + `{}]}`)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if deep, _ := scanJSON(body, MaxJSONDepth); deep {
			b.Fatal("not deep")
		}
	}
}

func TestScanJSONFindsTrailingValues(t *testing.T) {
	for in, want := range map[string]bool{
		`{"a":1}`:           false,
		"{\"a\":1} \n\t\r":  false,
		`{"a":"}"} {"b":2}`: true,
		`{"a":1}}`:          true,
		`[1,[2]] x`:         true,
		`{"s":"{}"}`:        false,
		"":                  false,
		`{"a":[1,2]} {"b":`: true,
	} {
		_, trailing := scanJSON([]byte(in), MaxJSONDepth)
		require.Equal(t, want, trailing, "%q", in)
	}
}
