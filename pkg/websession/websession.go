// Package websession keeps a browser session in a cookie without server
// state, and guards the session's state-changing requests against
// cross-site request forgery.
//
// The cookie holds the session sealed with AES-256-GCM under a key derived
// (HKDF-SHA256) from a server secret: the browser can neither read nor
// forge it, and any replica that holds the same secret opens it, so a
// session survives a restart and works behind a load balancer with no
// session store. Changing the secret ends every session.
//
// A session has a random id; its CSRF token is an HMAC of that id under a
// second derived key, so a form carries a token only this server could
// have made for this session (the synchronizer-token pattern, without a
// store). CheckOrigin adds the browser's own signals (Origin and
// Sec-Fetch-Site), which a forged cross-site request cannot hide.
package websession

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// MaxCookieBytes is the largest cookie value Seal produces; browsers keep
// cookies of about 4 KB (name and attributes included).
const MaxCookieBytes = 3800

// Errors of Open and Seal.
var (
	// ErrInvalid: the value was not sealed by this key, was altered, or is
	// not a session at all.
	ErrInvalid = errors.New("websession: invalid session cookie")
	// ErrExpired: the session's lifetime is over.
	ErrExpired = errors.New("websession: session expired")
	// ErrTooLarge: the sealed session would not fit in a cookie.
	ErrTooLarge = errors.New("websession: session too large for a cookie")
)

// Session is what a cookie carries.
type Session struct {
	// ID is random per sign-in; the CSRF token is derived from it.
	ID string `json:"i"`
	// Secret is what the session stands for (the console: the caller's
	// bearer token). It never leaves the server in clear.
	Secret string `json:"s,omitempty"`
	// Expires ends the session, whatever the cookie's own Max-Age says.
	Expires time.Time `json:"e"`
}

// Keeper seals and opens sessions and makes and checks their CSRF tokens.
type Keeper struct {
	aead    cipher.AEAD
	csrfKey []byte
	name    string // bound into each seal: a value of one cookie is no value of another
	now     func() time.Time
}

// Option configures a Keeper.
type Option func(*Keeper)

// WithClock sets the clock sessions expire by (tests).
func WithClock(now func() time.Time) Option { return func(k *Keeper) { k.now = now } }

// New derives a Keeper's keys from secret for one purpose (say
// "console"): keepers of different purposes, or of different secrets,
// cannot open each other's cookies or accept each other's tokens.
func New(secret []byte, purpose string, opts ...Option) (*Keeper, error) {
	if len(secret) < 32 {
		return nil, errors.New("websession: the secret must have at least 32 bytes")
	}
	if purpose == "" {
		return nil, errors.New("websession: a purpose is required")
	}
	sealKey, err := hkdf.Key(sha256.New, secret, nil, "garden-bloom websession seal v1: "+purpose, 32)
	if err != nil {
		return nil, err
	}
	csrfKey, err := hkdf.Key(sha256.New, secret, nil, "garden-bloom websession csrf v1: "+purpose, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(sealKey)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	k := &Keeper{aead: aead, csrfKey: csrfKey, name: purpose, now: time.Now}
	for _, o := range opts {
		o(k)
	}
	return k, nil
}

// NewID returns a random session id (128 bits, URL-safe base64).
func NewID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics instead)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Seal encrypts s into a cookie value.
func (k *Keeper) Seal(s Session) (string, error) {
	if s.ID == "" {
		return "", errors.New("websession: a session needs an id")
	}
	plain, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, k.aead.NonceSize())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (it panics instead)
	sealed := k.aead.Seal(nonce, nonce, plain, []byte(k.name))
	v := base64.RawURLEncoding.EncodeToString(sealed)
	if len(v) > MaxCookieBytes {
		return "", ErrTooLarge
	}
	return v, nil
}

// Open decrypts a cookie value Seal made and checks that the session has
// not expired.
func (k *Keeper) Open(v string) (Session, error) {
	if v == "" || len(v) > MaxCookieBytes {
		return Session{}, ErrInvalid
	}
	raw, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(raw) < k.aead.NonceSize()+k.aead.Overhead() {
		return Session{}, ErrInvalid
	}
	n := k.aead.NonceSize()
	plain, err := k.aead.Open(nil, raw[:n], raw[n:], []byte(k.name))
	if err != nil {
		return Session{}, ErrInvalid
	}
	var s Session
	if err := json.Unmarshal(plain, &s); err != nil || s.ID == "" {
		return Session{}, ErrInvalid
	}
	if !k.now().Before(s.Expires) {
		return Session{}, ErrExpired
	}
	return s, nil
}

// CSRFToken is the anti-forgery token of session id: what each of its
// forms sends back in a hidden field.
func (k *Keeper) CSRFToken(id string) string {
	m := hmac.New(sha256.New, k.csrfKey)
	m.Write([]byte(id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// CheckCSRF reports whether token is session id's CSRF token (in constant
// time). An empty id or token never passes.
func (k *Keeper) CheckCSRF(id, token string) bool {
	if id == "" || token == "" {
		return false
	}
	return hmac.Equal([]byte(k.CSRFToken(id)), []byte(token))
}

// ErrCrossOrigin is CheckOrigin's answer to a request another site made.
var ErrCrossOrigin = errors.New("websession: cross-origin request refused")

// CheckOrigin refuses a state-changing request that the browser says
// another site made: Sec-Fetch-Site other than same-origin (or none, a
// request the user made directly), or an Origin (or, without one, a
// Referer) whose host is not the request's own. Requests without any of
// these headers (not from a browser) pass: the CSRF token still guards
// them.
func CheckOrigin(r *http.Request) error {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return fmt.Errorf("%w: Sec-Fetch-Site is %q", ErrCrossOrigin, site)
	}
	from := r.Header.Get("Origin")
	if from == "" || from == "null" {
		if from == "null" {
			return fmt.Errorf("%w: Origin is null", ErrCrossOrigin)
		}
		from = r.Header.Get("Referer")
	}
	if from == "" {
		return nil
	}
	u, err := url.Parse(from)
	if err != nil || !strings.EqualFold(u.Host, r.Host) {
		return fmt.Errorf("%w: it comes from %q, not %q", ErrCrossOrigin, from, r.Host)
	}
	return nil
}

// Cookie describes the session cookie: its name and the path it is sent
// for. Its other attributes are fixed: HttpOnly (no script reads it),
// Secure (only over https, or to a loopback address, which browsers treat
// as secure), SameSite=Strict (no other site's request carries it).
type Cookie struct {
	Name string
	Path string
}

// Set writes the cookie with value v for maxAge (rounded down to seconds,
// at least one).
func (c Cookie) Set(w http.ResponseWriter, v string, maxAge time.Duration) {
	secs := int(maxAge / time.Second)
	if secs < 1 {
		secs = 1
	}
	http.SetCookie(w, &http.Cookie{Name: c.Name, Value: v, Path: c.Path, MaxAge: secs,
		HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
}

// Clear tells the browser to drop the cookie.
func (c Cookie) Clear(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: c.Name, Value: "", Path: c.Path, MaxAge: -1,
		HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
}

// Value returns the cookie's value in r ("" when r has none).
func (c Cookie) Value(r *http.Request) string {
	ck, err := r.Cookie(c.Name)
	if err != nil {
		return ""
	}
	return ck.Value
}
