// Package tokens counts tokens the way the model that reads memory does
// (tiktoken, one encoding, configurable), because every Layer 1 limit is a
// token limit.
package tokens

import (
	"fmt"

	"github.com/tiktoken-go/tokenizer"
)

// DefaultEncoding is the encoding limits are counted in unless configured.
const DefaultEncoding = "cl100k_base"

// Counter counts tokens in one encoding. It is safe for concurrent use.
type Counter struct {
	codec tokenizer.Codec
}

// New returns a counter for encoding (e.g. "cl100k_base", "o200k_base").
func New(encoding string) (*Counter, error) {
	if encoding == "" {
		encoding = DefaultEncoding
	}
	codec, err := tokenizer.Get(tokenizer.Encoding(encoding))
	if err != nil {
		return nil, fmt.Errorf("tokens: encoding %q: %w", encoding, err)
	}
	return &Counter{codec: codec}, nil
}

// Encoding is the name of the counter's encoding, recorded in meta.json.
func (c *Counter) Encoding() string { return c.codec.GetName() }

// Count returns the number of tokens in s.
func (c *Counter) Count(s string) int {
	if s == "" {
		return 0
	}
	n, err := c.codec.Count(s)
	if err != nil {
		// Count fails only on invalid UTF-8, which validation rejects before
		// anything is counted; a byte-based bound keeps limits safe anyway.
		return len(s)
	}
	return n
}
