package auth

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const (
	// DefaultJWKSRefresh is how often, at most, a [Verifier] re-reads its
	// JWKS file during normal operation, so keys rotate without a restart.
	DefaultJWKSRefresh = 30 * time.Second
	// jwksUnknownKIDRefresh is how soon after the last check a token naming
	// an unknown kid may force an early re-read: a newly rotated key is seen
	// within about a second, yet a flood of made-up kids costs at most one
	// file read per second.
	jwksUnknownKIDRefresh = time.Second
	// maxJWKSFileSize bounds how much of a JWKS file is read.
	maxJWKSFileSize = 1 << 20
	// minRSABits is the smallest RSA modulus accepted for RS256.
	minRSABits = 2048
)

// JWK key types and curves understood for verification (RFC 7518 §6).
const (
	ktyRSA  = "RSA"
	ktyEC   = "EC"
	crvP256 = "P-256"
)

// JWKS is a parsed, validated set of public verification keys: RSA keys
// for RS256 and P-256 EC keys for ES256. It is immutable.
type JWKS struct {
	keys    []jwkKey
	skipped []string // why the other entries of the file are not used
}

// jwkKey is one usable verification key.
type jwkKey struct {
	kid string
	kty string // ktyRSA or ktyEC
	alg string // the only alg it verifies: RS256 or ES256
	pub any    // *rsa.PublicKey or *ecdsa.PublicKey
}

// Len is the number of usable keys.
func (s *JWKS) Len() int { return len(s.keys) }

// KeyIDs lists the kid of every usable key ("" for a key without one), in
// file order.
func (s *JWKS) KeyIDs() []string {
	ids := make([]string, len(s.keys))
	for i, k := range s.keys {
		ids[i] = k.kid
	}
	return ids
}

// Skipped explains, one line per entry, which entries of the file were
// ignored and why (wrong use, unsupported kty, alg or curve).
func (s *JWKS) Skipped() []string { return slices.Clone(s.skipped) }

// byKID returns the key named kid. A token without kid may only use the
// set's single key; anything else is ambiguous.
func (s *JWKS) byKID(kid string, hasKID bool) (*jwkKey, error) {
	if !hasKID {
		if len(s.keys) == 1 {
			return &s.keys[0], nil
		}
		return nil, fmt.Errorf("%w: token has no kid and the JWKS holds %d keys", ErrUnknownKey, len(s.keys))
	}
	for i := range s.keys {
		if s.keys[i].kid != "" && s.keys[i].kid == kid {
			return &s.keys[i], nil
		}
	}
	return nil, fmt.Errorf("%w: kid %s is not in the JWKS", ErrUnknownKey, quoteShort(kid))
}

// hasKID reports whether some usable key is named kid.
func (s *JWKS) hasKID(kid string) bool {
	return kid != "" && slices.ContainsFunc(s.keys, func(k jwkKey) bool { return k.kid == kid })
}

// LoadJWKS reads and validates a JWKS file (see [ParseJWKS]).
func LoadJWKS(path string) (*JWKS, error) {
	data, err := readJWKSFile(path)
	if err != nil {
		return nil, err
	}
	set, err := ParseJWKS(data)
	if err != nil {
		return nil, fmt.Errorf("auth: jwks %s: %w", path, err)
	}
	return set, nil
}

func readJWKSFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("auth: jwks: %w", err)
	}
	defer func() { _ = f.Close() }() // read only
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("auth: jwks: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("auth: jwks %s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxJWKSFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("auth: jwks: read %s: %w", path, err)
	}
	if len(data) > maxJWKSFileSize {
		return nil, fmt.Errorf("auth: jwks %s is larger than %d bytes", path, maxJWKSFileSize)
	}
	return data, nil
}

// rawJWK holds the members of a JWK (RFC 7517 §4, RFC 7518 §6) that matter
// for choosing and building a verification key.
type rawJWK struct {
	Kty    string   `json:"kty"`
	Kid    string   `json:"kid"`
	Alg    string   `json:"alg"`
	Use    string   `json:"use"`
	KeyOps []string `json:"key_ops"`
	N      string   `json:"n"`
	E      string   `json:"e"`
	Crv    string   `json:"crv"`
	X      string   `json:"x"`
	Y      string   `json:"y"`
	// Private members: their presence means a private key was published.
	D   string `json:"d"`
	P   string `json:"p"`
	Q   string `json:"q"`
	Oct string `json:"k"`
}

// ParseJWKS parses an RFC 7517 JWK Set: {"keys":[{...}, ...]}.
//
// RSA keys (at least 2048 bits) become RS256 keys and EC keys on P-256
// become ES256 keys. An entry is skipped, not an error, when it is not meant
// for this verifier: "use" other than "sig", "key_ops" without "verify", an
// "alg" other than RS256/ES256, another kty (oct, OKP) or curve. The set is
// rejected when it is not valid JSON, when an RSA or EC entry is malformed
// or holds private key material, when two usable keys share a kid, or when
// no usable key is left; the error says which entry and why.
func ParseJWKS(data []byte) (*JWKS, error) {
	var doc struct {
		Keys *[]json.RawMessage `json:"keys"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("invalid JSON: trailing data after the key set")
	}
	if doc.Keys == nil {
		return nil, errors.New(`not a JWK Set: missing "keys" array`)
	}
	set := &JWKS{}
	for i, raw := range *doc.Keys {
		var k rawJWK
		if err := json.Unmarshal(raw, &k); err != nil {
			return nil, fmt.Errorf("key %d: invalid JWK: %w", i, err)
		}
		name := fmt.Sprintf("key %d", i)
		if k.Kid != "" {
			name += fmt.Sprintf(" (kid %s)", quoteShort(k.Kid))
		}
		key, skip, err := k.verificationKey()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if skip != "" {
			set.skipped = append(set.skipped, name+": "+skip)
			continue
		}
		if key.kid != "" && set.hasKID(key.kid) {
			return nil, fmt.Errorf("%s: duplicate kid", name)
		}
		set.keys = append(set.keys, *key)
	}
	if len(set.keys) == 0 {
		if len(set.skipped) == 0 {
			return nil, errors.New("no keys")
		}
		return nil, fmt.Errorf("no usable keys (%s)", strings.Join(set.skipped, "; "))
	}
	return set, nil
}

// verificationKey builds the key of k. It returns a non-empty skip reason
// for entries this verifier does not use, and an error for entries that
// claim to be usable keys but are broken or unsafe.
func (k *rawJWK) verificationKey() (key *jwkKey, skip string, err error) {
	if k.Use != "" && k.Use != "sig" {
		return nil, fmt.Sprintf("use %s is not sig", quoteShort(k.Use)), nil
	}
	if k.KeyOps != nil && !slices.Contains(k.KeyOps, "verify") {
		return nil, `key_ops does not include "verify"`, nil
	}
	var alg string
	switch k.Kty {
	case ktyRSA:
		alg = jwt.SigningMethodRS256.Alg()
	case ktyEC:
		if k.Crv != crvP256 {
			return nil, fmt.Sprintf("EC curve %s is not supported (only P-256 for ES256)", quoteShort(k.Crv)), nil
		}
		alg = jwt.SigningMethodES256.Alg()
	case "":
		return nil, "", errors.New("missing kty")
	default:
		return nil, fmt.Sprintf("kty %s is not supported (only RSA and EC)", quoteShort(k.Kty)), nil
	}
	if k.Alg != "" && k.Alg != alg {
		return nil, fmt.Sprintf("alg %s is not supported for kty %s (only %s)", quoteShort(k.Alg), k.Kty, alg), nil
	}
	if k.D != "" || k.P != "" || k.Q != "" || k.Oct != "" {
		return nil, "", errors.New("contains private key material; publish only public keys")
	}
	key = &jwkKey{kid: k.Kid, kty: k.Kty, alg: alg}
	if k.Kty == ktyRSA {
		key.pub, err = k.rsaKey()
	} else {
		key.pub, err = k.ecKey()
	}
	if err != nil {
		return nil, "", err
	}
	return key, "", nil
}

func (k *rawJWK) rsaKey() (*rsa.PublicKey, error) {
	nb, err := decodeB64URL("n", k.N)
	if err != nil {
		return nil, err
	}
	eb, err := decodeB64URL("e", k.E)
	if err != nil {
		return nil, err
	}
	n := new(big.Int).SetBytes(nb)
	if n.BitLen() < minRSABits {
		return nil, fmt.Errorf("RSA modulus has %d bits, need at least %d", n.BitLen(), minRSABits)
	}
	e := new(big.Int).SetBytes(eb)
	if !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31-1 || e.Bit(0) == 0 {
		return nil, errors.New("RSA exponent e must be an odd number between 3 and 2^31-1")
	}
	return &rsa.PublicKey{N: n, E: int(e.Int64())}, nil
}

func (k *rawJWK) ecKey() (*ecdsa.PublicKey, error) {
	x, err := decodeB64URL("x", k.X)
	if err != nil {
		return nil, err
	}
	y, err := decodeB64URL("y", k.Y)
	if err != nil {
		return nil, err
	}
	const size = 32 // P-256 coordinates, left-padded (RFC 7518 §6.2.1.2)
	if len(x) != size || len(y) != size {
		return nil, fmt.Errorf("P-256 coordinates must be %d bytes each, got x=%d y=%d", size, len(x), len(y))
	}
	point := append(append([]byte{4}, x...), y...)
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), point)
	if err != nil {
		return nil, fmt.Errorf("invalid P-256 point: %w", err)
	}
	return pub, nil
}

// decodeB64URL decodes a base64url member; trailing padding is tolerated.
func decodeB64URL(member, s string) ([]byte, error) {
	if s == "" {
		return nil, fmt.Errorf("missing %s", member)
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, fmt.Errorf("%s is not base64url: %w", member, err)
	}
	return b, nil
}

// quoteShort quotes an untrusted string for an error message, cut to a
// length that cannot flood a log line.
func quoteShort(s string) string {
	const maxLen = 64
	if len(s) > maxLen {
		return fmt.Sprintf("%q...", s[:maxLen])
	}
	return fmt.Sprintf("%q", s)
}

// jwksSource serves the current key set of a JWKS file and re-reads the
// file when it may have changed: at most every refresh during normal
// operation, and about once a second while tokens name an unknown kid. The
// file is compared byte for byte with what was last read, so rotation works
// however it is done (rewrite, rename, symlink swap) and regardless of mtime
// granularity. A reload that fails keeps the previous keys and is logged.
// Verifications read the key set through an atomic pointer and never wait
// for a reload; reloads are serialized by mu.
type jwksSource struct {
	path    string
	refresh time.Duration
	now     func() time.Time
	logger  *slog.Logger

	set       atomic.Pointer[JWKS]
	lastCheck atomic.Int64 // v.now().UnixNano() of the last check

	mu      sync.Mutex // serializes reloads and guards the fields below
	lastRaw []byte     // file content of the key set in use
	lastErr string     // last reload error, logged once
}

func newJWKSSource(path string, refresh time.Duration, now func() time.Time, logger *slog.Logger) (*jwksSource, error) {
	data, err := readJWKSFile(path)
	if err != nil {
		return nil, err
	}
	set, err := ParseJWKS(data)
	if err != nil {
		return nil, fmt.Errorf("auth: jwks %s: %w", path, err)
	}
	src := &jwksSource{path: path, refresh: refresh, now: now, logger: logger, lastRaw: data}
	src.set.Store(set)
	src.lastCheck.Store(now().UnixNano())
	if logger != nil {
		logger.Info("auth: jwks loaded", "file", path, "kids", set.KeyIDs(), "skipped", set.skipped)
	}
	return src, nil
}

// keys returns the current key set, re-reading the file first when the
// last check is older than the refresh interval, or, with unknownKID, older
// than jwksUnknownKIDRefresh.
func (s *jwksSource) keys(unknownKID bool) *JWKS {
	due := s.refresh
	if unknownKID {
		due = min(due, jwksUnknownKIDRefresh)
	}
	now := s.now()
	if now.Sub(time.Unix(0, s.lastCheck.Load())) >= due {
		s.reload(now, due)
	}
	return s.set.Load()
}

// reload re-reads the file unless another goroutine did so meanwhile.
func (s *jwksSource) reload(now time.Time, due time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(time.Unix(0, s.lastCheck.Load())) < due {
		return // someone else just checked
	}
	s.lastCheck.Store(now.UnixNano())
	data, err := readJWKSFile(s.path)
	if err == nil && bytes.Equal(data, s.lastRaw) {
		if s.lastErr != "" {
			s.lastErr = ""
			if s.logger != nil {
				s.logger.Info("auth: jwks file is back to the keys in use", "file", s.path)
			}
		}
		return
	}
	var set *JWKS
	if err == nil {
		if set, err = ParseJWKS(data); err != nil {
			err = fmt.Errorf("auth: jwks %s: %w", s.path, err)
		}
	}
	if err != nil {
		if msg := err.Error(); msg != s.lastErr {
			s.lastErr = msg
			if s.logger != nil {
				s.logger.Error("auth: jwks reload failed; keeping the previous keys", "file", s.path, "err", err)
			}
		}
		return
	}
	s.lastRaw = data
	s.lastErr = ""
	s.set.Store(set)
	if s.logger != nil {
		s.logger.Info("auth: jwks reloaded", "file", s.path, "kids", set.KeyIDs(), "skipped", set.skipped)
	}
}
