// Package blob is a minimal object store: flat string keys mapping to opaque
// byte streams, with S3 semantics. The embedded default is FS (a local
// folder); an S3/MinIO driver will implement the same Store interface, so the
// interface deliberately only promises what both can honour:
//
//   - keys are '/'-separated strings checked by ValidateKey, but "directories"
//     do not exist as objects (List takes a plain string prefix);
//   - a Put replaces the whole object atomically; readers see the old or the
//     new object, never a mix;
//   - ETag is the lowercase hex MD5 of the content, without quotes (what S3
//     returns for single-part uploads and minio-go reports);
//   - List is ordered by key, byte-wise (S3's ListObjectsV2 order).
package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Store is an object store. Implementations must be safe for concurrent use.
//
// Portable key design: avoid using a key that is also a "directory" of
// another key (both "a" and "a/b"). S3 allows it, but filesystem-backed
// stores cannot represent it and return ErrKeyConflict.
type Store interface {
	// Put stores r's content under key, replacing any existing object.
	// size is the exact number of bytes to read from r, or -1 if unknown
	// (drivers may buffer or use multipart uploads then). If r ends before
	// size bytes the Put fails and nothing is stored.
	Put(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (Info, error)
	// Get opens the object for reading. The caller must close the reader.
	// A missing key yields an error matching ErrNotFound.
	Get(ctx context.Context, key string) (io.ReadCloser, Info, error)
	// Stat describes the object without reading it. A missing key yields an
	// error matching ErrNotFound.
	Stat(ctx context.Context, key string) (Info, error)
	// Delete removes the object. Deleting a missing key is not an error
	// (S3's DeleteObject is idempotent in the same way).
	Delete(ctx context.Context, key string) error
	// List yields every object whose key starts with prefix (a plain string
	// prefix, not a directory), in lexicographic byte order of keys. An
	// empty prefix lists everything. On failure it yields one non-nil error
	// and stops.
	List(ctx context.Context, prefix string) iter.Seq2[Info, error]
}

// Info describes a stored object.
type Info struct {
	Key  string
	Size int64
	// ETag is the lowercase hex MD5 of the content, without quotes.
	ETag string
	// ModTime is when the current version of the object was written.
	ModTime time.Time
	// ContentType as given to Put, or DefaultContentType.
	ContentType string
}

// PutOptions are optional attributes of a Put. The zero value is valid.
type PutOptions struct {
	// ContentType is stored with the object; empty means DefaultContentType.
	ContentType string
}

// DefaultContentType is used when PutOptions.ContentType is empty (the same
// default minio-go applies).
const DefaultContentType = "application/octet-stream"

// MaxKeyLen is the maximum key length in bytes (S3's limit).
const MaxKeyLen = 1024

var (
	// ErrNotFound is returned (wrapped) by Get and Stat for a missing key.
	ErrNotFound = errors.New("blob: object not found")
	// ErrInvalidKey is returned (wrapped) for keys rejected by ValidateKey,
	// before anything is read from the request body or written to storage.
	ErrInvalidKey = errors.New("blob: invalid key")
	// ErrKeyConflict is returned by filesystem-backed stores when a key
	// would have to be both a file and a directory, e.g. putting "a/b" while
	// "a" exists. S3 drivers never return it.
	ErrKeyConflict = errors.New("blob: key conflicts with an existing key")
	// ErrUnsupportedScheme is returned by Open for store URLs whose driver is
	// unknown or not built yet.
	ErrUnsupportedScheme = errors.New("blob: unsupported store URL")
)

// ValidateKey returns nil if key is usable with every driver, or an error
// wrapping ErrInvalidKey. The rules are stricter than S3 on purpose so that
// a key always maps to a safe relative file path: non-empty, at most
// MaxKeyLen bytes, valid UTF-8, no control characters (including NUL), no
// backslash, no leading '/', and '/'-separated segments that are neither
// empty (so no "a//b" or trailing '/') nor "." or "..".
func ValidateKey(key string) error {
	return validate(key, MaxKeyLen, "key", key)
}

// validatePrefix checks a List prefix: the same character rules as keys, but
// the last (partial) segment may be empty or start with dots, because "a/"
// and "a/.c" are legitimate prefixes. Full segments must still be valid, so
// a prefix can never point outside the key space.
func validatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	// Appending one ordinary byte turns the partial last segment into a
	// plain name, so ValidateKey's segment rules apply to full segments only.
	return validate(prefix+"x", MaxKeyLen+1, "prefix", prefix)
}

// validate applies the key rules to key; what and shown only shape the error
// message.
func validate(key string, maxLen int, what, shown string) error {
	bad := func(reason string) error {
		return fmt.Errorf("%w: %s %q: %s", ErrInvalidKey, what, truncate(shown), reason)
	}
	switch {
	case key == "":
		return bad("empty")
	case len(key) > maxLen:
		return bad(fmt.Sprintf("longer than %d bytes", MaxKeyLen))
	case !utf8.ValidString(key):
		return bad("not valid UTF-8")
	case key[0] == '/':
		return bad("leading '/'")
	}
	for _, r := range key {
		if unicode.IsControl(r) {
			return bad("control character")
		}
		if r == '\\' {
			return bad("backslash")
		}
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch seg {
		case "":
			return bad("empty path segment")
		case ".", "..":
			return bad("'.' or '..' path segment")
		}
	}
	return nil
}

// truncate keeps error messages readable for absurdly long keys.
func truncate(s string) string {
	const n = 80
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// PutBytes stores data under key.
func PutBytes(ctx context.Context, s Store, key string, data []byte, opts PutOptions) (Info, error) {
	return s.Put(ctx, key, bytes.NewReader(data), int64(len(data)), opts)
}

// GetBytes reads the whole object. Meant for small objects; stream with Get
// otherwise.
func GetBytes(ctx context.Context, s Store, key string) ([]byte, Info, error) {
	rc, info, err := s.Get(ctx, key)
	if err != nil {
		return nil, Info{}, err
	}
	defer func() { _ = rc.Close() }() // read only
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, Info{}, fmt.Errorf("blob: read %q: %w", key, err)
	}
	return data, info, nil
}

// ErrTooLarge is returned by GetBytesLimit for an object over its limit.
var ErrTooLarge = errors.New("blob: object too large")

// GetBytesLimit reads a whole object of at most limit bytes; a bigger one
// (a tampered or foreign object) fails with ErrTooLarge after reading only
// limit+1 bytes.
func GetBytesLimit(ctx context.Context, s Store, key string, limit int64) ([]byte, error) {
	rc, _, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rc.Close() }() // read only
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, fmt.Errorf("blob: read %q: %w", key, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: %q is larger than %d bytes", ErrTooLarge, key, limit)
	}
	return data, nil
}

// Locator is a store that can name one of its objects by a URL that opens
// it with ordinary tools: the folder store a file:// URL of the file that
// holds the object, S3 an s3://bucket/key URL.
type Locator interface {
	Location(key string) string
}

// Location names key's object in s for people: s's URL for it when s is a
// Locator, else the key itself.
func Location(s Store, key string) string {
	if l, ok := s.(Locator); ok {
		return l.Location(key)
	}
	return key
}

// Open returns the Store described by rawURL:
//
//   - "file:///abs/path" or a bare filesystem path ("/var/lib/x/objects",
//     "./objects"): an FS rooted there (created if missing);
//   - "s3://bucket/prefix": not available yet; returns an error wrapping
//     ErrUnsupportedScheme until the S3 driver lands.
//
// Stores that hold resources (FS keeps the root directory open) implement
// io.Closer; callers should close them on shutdown.
func Open(ctx context.Context, rawURL string) (Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if rawURL == "" {
		return nil, fmt.Errorf("%w: empty store URL", ErrUnsupportedScheme)
	}
	// Only "scheme://" counts as a URL, so Windows paths ("C:\x") and
	// relative paths containing ':' are treated as paths.
	if !strings.Contains(rawURL, "://") {
		abs, err := filepath.Abs(rawURL)
		if err != nil {
			return nil, fmt.Errorf("blob: open %q: %w", rawURL, err)
		}
		return NewFS(abs)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupportedScheme, err)
	}
	switch strings.ToLower(u.Scheme) {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("%w: file URL %q must have an empty host (file:///abs/path)", ErrUnsupportedScheme, rawURL)
		}
		if u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("%w: file URL %q takes no query or fragment", ErrUnsupportedScheme, rawURL)
		}
		p := filepath.FromSlash(u.Path)
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("%w: file URL %q must hold an absolute path", ErrUnsupportedScheme, rawURL)
		}
		return NewFS(p)
	case "s3":
		return NewS3(ctx, rawURL, os.LookupEnv)
	default:
		return nil, fmt.Errorf("%w: unknown scheme %q in %q", ErrUnsupportedScheme, u.Scheme, rawURL)
	}
}
