package episode

import (
	"regexp"
	"strings"
	"unicode"
)

// SignatureWords is how many words of an error a derived failure-mode
// signature keeps.
const SignatureWords = 8

// The variable parts of error messages, in the order FailureSignature
// replaces them: what differs between two occurrences of the same failure.
// A match shorter than minLen is kept.
var signatureRules = []struct {
	re     *regexp.Regexp
	with   string
	minLen int
	// keepEnds keeps a leading separator and trailing punctuation of the
	// match around the replacement.
	keepEnds bool
}{
	// Quoted values: "…", `…`, “…”, and '…' opened at a word boundary (so
	// the apostrophe of "can't" opens nothing).
	{re: regexp.MustCompile("\"[^\"]*\"|`[^`]*`|“[^”]*”"), with: "{str}"},
	{re: regexp.MustCompile(`(^|[^\p{L}\p{N}])'[^']*'`), with: "${1}{str}"},
	{re: regexp.MustCompile(`[a-z][a-z0-9+.-]*://\S+`), with: "{url}"},
	{re: regexp.MustCompile(`\d{4}-\d{2}-\d{2}(?:[t ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?)?`), with: "{time}"},
	{re: regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), with: "{id}"},
	// A bracketed IPv6 address (with its port) is a number, as IPv4 ones
	// are below: "[::1]:6379" and "127.0.0.1:6379" read alike.
	{re: regexp.MustCompile(`\[[0-9a-f]*:[0-9a-f:.]*\](?::\d+)?`), with: "{n}"},
	// Paths: explicit ones (/x, ./x, ../x, ~/x, c:\x), any token with a
	// backslash, and a/b tokens that end in a file name with an extension
	// ("i/o timeout" is not a path). Punctuation that ends the token
	// ("config.yaml:") is the message's, not the path's.
	{re: regexp.MustCompile(`(?:^|[\s(=,])(?:[a-z]:\\|\.{1,2}/|~/|/)\S*|\S*\\\S+|\S+/\S*\.[a-z0-9]{1,8}\S*`), with: "{path}", keepEnds: true},
	{re: regexp.MustCompile(`\b0x[0-9a-f]+\b`), with: "{hex}"},
	{re: regexp.MustCompile(`\b[0-9a-f]*(?:[0-9][a-f]|[a-f][0-9])[0-9a-f]*\b`), with: "{hex}", minLen: 7},
	{re: regexp.MustCompile(`(^|[^\p{L}\p{N}._])\d+(?:[.,:]\d+)*`), with: "${1}{n}"},
}

// FailureSignature derives a failure mode's signature from an error
// message, deterministically, so the same failure seen twice is one
// FailureMode node:
//
//  1. lowercase;
//  2. replace the variable parts, in this order: quoted values ("…", '…',
//     `…`, “…”) by {str}; URLs by {url}; dates and times by {time}; UUIDs by
//     {id}; bracketed IPv6 addresses (and port) by {n}; file paths by
//     {path}; hex values (0x…, or runs of 7 or more hex digits mixing
//     letters and digits) by {hex}; numbers not glued to a word (with . , :
//     inside, so IP:port too) by {n} — "30s" becomes "{n}s", while "e2e",
//     "go1.26" and "v2" stay;
//  3. "[" "]" and "<" ">" become "(" ")", and "|" becomes "/" (a wiki
//     link cannot hold them);
//  4. keep the first SignatureWords whitespace-separated words, and drop
//     trailing punctuation (: ; , .).
//
// E.g. `dial tcp 10.0.3.7:5432: connect: connection refused` →
// "dial tcp {n}: connect: connection refused".
func FailureSignature(msg string) string {
	s := strings.ToLower(msg)
	for _, r := range signatureRules {
		if r.minLen == 0 && !r.keepEnds {
			s = r.re.ReplaceAllString(s, r.with)
			continue
		}
		s = r.re.ReplaceAllStringFunc(s, func(m string) string {
			if len(m) < r.minLen {
				return m
			}
			if !r.keepEnds {
				return r.with
			}
			body := strings.TrimLeft(m, " \t\n(=,")
			lead := m[:len(m)-len(body)]
			trimmed := strings.TrimRight(body, ":;,.)")
			return lead + r.with + body[len(trimmed):]
		})
	}
	s = linkSafe(s)
	words := strings.Fields(s)
	if len(words) > SignatureWords {
		words = words[:SignatureWords]
	}
	return strings.TrimRightFunc(strings.Join(words, " "), func(r rune) bool {
		return r == ':' || r == ';' || r == ',' || r == '.' || unicode.IsSpace(r)
	})
}

// linkSafe makes s usable inside a wiki link: no "[", "]", "|" or line
// breaks, which would end or split the link, and no "<" or ">", which the
// Markdown sanitizer would take for a tag ("<nil>" becomes "(nil)").
func linkSafe(s string) string {
	s = strings.NewReplacer("[", "(", "]", ")", "<", "(", ">", ")", "|", "/", "\n", " ", "\r", " ").Replace(s)
	return strings.Join(strings.Fields(s), " ")
}

// ShortText is the first words of s, at most maxWords words and maxBytes
// bytes (cut at a word boundary when it can be), link-safe: the Fix line's
// link target.
func ShortText(s string, maxWords, maxBytes int) string {
	words := strings.Fields(linkSafe(s))
	if len(words) > maxWords {
		words = words[:maxWords]
	}
	out := ""
	for _, w := range words {
		next := w
		if out != "" {
			next = out + " " + w
		}
		if len(next) > maxBytes {
			if out == "" {
				return cutRunes(w, maxBytes)
			}
			break
		}
		out = next
	}
	return out
}

// cutRunes cuts s to at most n bytes on a rune boundary.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
