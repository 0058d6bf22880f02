package restjson

import (
	"encoding/json"
	"errors"
	"fmt"
)

// The rewriter needs to change a few string values inside a JSON document
// without disturbing anything else: protojson's key order must survive (a Go
// map would reorder it) and every other token must keep its exact bytes (a
// re-encode would change number spellings or string escapes). So the document
// is parsed into this small ordered tree whose leaves keep their raw bytes,
// and written back compactly. The parser is recursive but refuses to go
// deeper than its limit, so hostile input cannot exhaust the stack.

// ErrMaxDepth is returned (wrapped) when a JSON document nests objects and
// arrays deeper than the configured limit.
var ErrMaxDepth = errors.New("restjson: JSON nesting too deep")

type jsonKind uint8

const (
	jsonObject jsonKind = iota + 1
	jsonArray
	jsonString
	jsonLiteral // number, true, false or null
)

type jsonValue struct {
	kind    jsonKind
	raw     []byte // jsonString (with quotes) and jsonLiteral: the exact bytes
	members []jsonMember
	elems   []*jsonValue
}

type jsonMember struct {
	rawKey []byte // with quotes, exactly as in the input
	val    *jsonValue
}

// str decodes a jsonString's value.
func (v *jsonValue) str() string {
	return decodeJSONString(v.raw)
}

func (v *jsonValue) isNull() bool {
	return v.kind == jsonLiteral && string(v.raw) == "null"
}

// setString replaces the value with the JSON string s. Only used with enum
// value names, which protobuf restricts to [A-Za-z0-9_], so no escaping is
// needed.
func (v *jsonValue) setString(s string) {
	v.kind = jsonString
	v.raw = append(append(append(make([]byte, 0, len(s)+2), '"'), s...), '"')
}

func (v *jsonValue) isNumber() bool {
	return v.kind == jsonLiteral && (v.raw[0] == '-' || (v.raw[0] >= '0' && v.raw[0] <= '9'))
}

func (v *jsonValue) kindName() string {
	switch {
	case v.kind == jsonObject:
		return "object"
	case v.kind == jsonArray:
		return "array"
	case v.kind == jsonString:
		return "string"
	case v.isNumber():
		return "number"
	}
	return string(v.raw) // true, false, null
}

func (m *jsonMember) key() string {
	return decodeJSONString(m.rawKey)
}

func decodeJSONString(raw []byte) string {
	inner := raw[1 : len(raw)-1]
	for _, c := range inner {
		if c == '\\' {
			var s string
			// The parser has validated the escapes, so this cannot fail.
			_ = json.Unmarshal(raw, &s)
			return s
		}
	}
	return string(inner)
}

// appendJSON writes v compactly.
func (v *jsonValue) appendJSON(b []byte) []byte {
	switch v.kind {
	case jsonObject:
		b = append(b, '{')
		for i, m := range v.members {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, m.rawKey...)
			b = append(b, ':')
			b = m.val.appendJSON(b)
		}
		return append(b, '}')
	case jsonArray:
		b = append(b, '[')
		for i, e := range v.elems {
			if i > 0 {
				b = append(b, ',')
			}
			b = e.appendJSON(b)
		}
		return append(b, ']')
	default:
		return append(b, v.raw...)
	}
}

// parseJSON parses exactly one JSON value (surrounded by optional
// whitespace) from data. maxDepth bounds the nesting of objects and arrays.
// The returned leaves alias data.
func parseJSON(data []byte, maxDepth int) (*jsonValue, error) {
	p := &jsonParser{data: data, maxDepth: maxDepth}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return nil, p.errorf("invalid character %q after top-level value", p.data[p.pos])
	}
	return v, nil
}

type jsonParser struct {
	data     []byte
	pos      int
	maxDepth int
}

// SyntaxError reports malformed JSON and where it was found.
type SyntaxError struct {
	Offset int // byte offset in the input
	msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("restjson: invalid JSON at offset %d: %s", e.Offset, e.msg)
}

func (p *jsonParser) errorf(format string, args ...any) error {
	return &SyntaxError{Offset: p.pos, msg: fmt.Sprintf(format, args...)}
}

func (p *jsonParser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (*jsonValue, error) {
	if p.pos >= len(p.data) {
		return nil, p.errorf("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{' || c == '[':
		if depth >= p.maxDepth {
			return nil, fmt.Errorf("%w: more than %d levels at offset %d", ErrMaxDepth, p.maxDepth, p.pos)
		}
		if c == '{' {
			return p.object(depth + 1)
		}
		return p.array(depth + 1)
	case c == '"':
		raw, err := p.str()
		if err != nil {
			return nil, err
		}
		return &jsonValue{kind: jsonString, raw: raw}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if len(p.data)-p.pos >= len(lit) && string(p.data[p.pos:p.pos+len(lit)]) == lit {
				v := &jsonValue{kind: jsonLiteral, raw: p.data[p.pos : p.pos+len(lit)]}
				p.pos += len(lit)
				return v, nil
			}
		}
		return nil, p.errorf("invalid character %q looking for beginning of value", c)
	}
}

func (p *jsonParser) object(depth int) (*jsonValue, error) {
	p.pos++ // '{'
	v := &jsonValue{kind: jsonObject}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return v, nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.errorf("expected object key string")
		}
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errorf("expected ':' after object key")
		}
		p.pos++
		p.skipSpace()
		val, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		v.members = append(v.members, jsonMember{rawKey: key, val: val})
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errorf("unexpected end of input in object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return v, nil
		default:
			return nil, p.errorf("expected ',' or '}' in object")
		}
	}
}

func (p *jsonParser) array(depth int) (*jsonValue, error) {
	p.pos++ // '['
	v := &jsonValue{kind: jsonArray}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return v, nil
	}
	for {
		p.skipSpace()
		e, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		v.elems = append(v.elems, e)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errorf("unexpected end of input in array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return v, nil
		default:
			return nil, p.errorf("expected ',' or ']' in array")
		}
	}
}

// str scans a string token and returns its raw bytes including the quotes.
// Invalid UTF-8 is passed through untouched so that protojson, which rejects
// it, gets to see it.
func (p *jsonParser) str() ([]byte, error) {
	start := p.pos
	p.pos++ // opening quote
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return p.data[start:p.pos], nil
		case c == '\\':
			if p.pos+1 >= len(p.data) {
				return nil, p.errorf("unexpected end of input in string escape")
			}
			switch p.data[p.pos+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.pos += 2
			case 'u':
				if p.pos+6 > len(p.data) {
					return nil, p.errorf("unexpected end of input in \\u escape")
				}
				for _, h := range p.data[p.pos+2 : p.pos+6] {
					if !isHex(h) {
						return nil, p.errorf("invalid \\u escape")
					}
				}
				p.pos += 6
			default:
				return nil, p.errorf("invalid escape character %q", p.data[p.pos+1])
			}
		case c < 0x20:
			return nil, p.errorf("invalid control character in string")
		default:
			p.pos++
		}
	}
	return nil, p.errorf("unexpected end of input in string")
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *jsonParser) number() (*jsonValue, error) {
	start := p.pos
	if p.data[p.pos] == '-' {
		p.pos++
	}
	switch {
	case p.pos < len(p.data) && p.data[p.pos] == '0':
		p.pos++
	case p.pos < len(p.data) && p.data[p.pos] >= '1' && p.data[p.pos] <= '9':
		p.digits()
	default:
		return nil, p.errorf("invalid number")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if p.digits() == 0 {
			return nil, p.errorf("invalid number: no digits after decimal point")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if p.digits() == 0 {
			return nil, p.errorf("invalid number: no digits in exponent")
		}
	}
	return &jsonValue{kind: jsonLiteral, raw: p.data[start:p.pos]}, nil
}

func (p *jsonParser) digits() int {
	n := 0
	for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
		p.pos++
		n++
	}
	return n
}
