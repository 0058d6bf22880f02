package mdops

import "errors"

// Sentinel errors. Every error returned by this package wraps exactly one of
// these (CheckSnapshot may wrap two), so the write plane can map them to API
// status codes with errors.Is while the message still names what was wrong
// and where.
var (
	// ErrInvalidUTF8 rejects content that is not valid UTF-8: git stores
	// bytes happily, but the token counter, the LLM and human reviewers
	// would each see something different.
	ErrInvalidUTF8 = errors.New("mdops: invalid UTF-8")

	// ErrNUL rejects NUL bytes, which make git treat a file as binary (no
	// textual diffs, so no human audit) and truncate C-string consumers.
	ErrNUL = errors.New("mdops: NUL byte")

	// ErrScript rejects active content: script-capable HTML elements, event
	// handler attributes and javascript:/vbscript:/data:text/html URLs. Such
	// content is refused rather than stripped because its presence in an
	// agent's proposal is itself a sign of prompt injection worth a human
	// look.
	ErrScript = errors.New("mdops: active content not allowed")

	// ErrBadHeading reports a malformed ATX heading, which would silently
	// change the section structure the parsers in this package rely on.
	ErrBadHeading = errors.New("mdops: malformed heading")

	// ErrBadContent reports content or parameters that cannot be applied:
	// empty text, headings inside a fact, an unknown priority, and so on.
	ErrBadContent = errors.New("mdops: bad content")

	// ErrNotFound reports that the fact or loop an operation targets is not
	// in the file.
	ErrNotFound = errors.New("mdops: not found")
)
