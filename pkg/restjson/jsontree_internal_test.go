package restjson

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseJSONRoundTrip(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{}`, `{}`},
		{` { "b" : 1 , "a" : [ 1 , 2.5e-3 , -0 ] } `, `{"b":1,"a":[1,2.5e-3,-0]}`},
		{`{"dup":1,"dup":2}`, `{"dup":1,"dup":2}`},
		{`"\u00e9\n\"x\""`, `"\u00e9\n\"x\""`},
		{`[true,false,null,"",{}]`, `[true,false,null,"",{}]`},
		{"\"caf\xc3\xa9 <&>\"", "\"caf\xc3\xa9 <&>\""},
		{`12345678901234567890`, `12345678901234567890`},
	}
	for _, tt := range tests {
		v, err := parseJSON([]byte(tt.in), 64)
		require.NoError(t, err, tt.in)
		require.Equal(t, tt.want, string(v.appendJSON(nil)), tt.in)
	}
}

func TestParseJSONStringDecoding(t *testing.T) {
	v, err := parseJSON([]byte(`{"a\u0062":"x\ty"}`), 64)
	require.NoError(t, err)
	require.Equal(t, "ab", v.members[0].key())
	require.Equal(t, "x\ty", v.members[0].val.str())
}

func TestParseJSONErrors(t *testing.T) {
	for _, in := range []string{
		``, `   `, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{a:1}`,
		`"abc`, `"\x"`, `"\u12"`, "\"a\x01\"", `01`, `1.`, `1e`, `-`, `+1`, `.5`,
		`tru`, `nul`, `{} {}`, `[] x`, `'a'`, `NaN`,
	} {
		_, err := parseJSON([]byte(in), 64)
		require.Error(t, err, "%q", in)
		var se *SyntaxError
		require.True(t, errors.As(err, &se), "%q: %v", in, err)
	}
}

func TestParseJSONDepth(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	_, err := parseJSON([]byte(nest(64)), 64)
	require.NoError(t, err)
	_, err = parseJSON([]byte(nest(65)), 64)
	require.ErrorIs(t, err, ErrMaxDepth)
	_, err = parseJSON([]byte(`{"a":{"b":{"c":1}}}`), 3)
	require.NoError(t, err)
	_, err = parseJSON([]byte(`{"a":{"b":{"c":{}}}}`), 3)
	require.ErrorIs(t, err, ErrMaxDepth)
	// Far deeper than any stack could hold if the parser did not stop.
	_, err = parseJSON([]byte(strings.Repeat(`{"a":[`, 1<<20)), 64)
	require.ErrorIs(t, err, ErrMaxDepth)
}
