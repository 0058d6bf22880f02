package console

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/websession"
)

// A sign-in code lets `memctl console` open a signed-in browser without the
// person pasting a token: memctl, which holds the token, asks for a code
// (POST /ui/api/sign-in-codes with the token as bearer), opens
// /ui/login?code=…, and the person confirms on that page who they sign in
// as. The code is the token sealed under a key of its own (so no code is a
// session cookie, nor a cookie a code) for codeTTL; any replica of the edge
// redeems it, and each redeems it once.
//
// The page asks for a click rather than signing in on GET: a GET changes
// nothing, and a link with someone else's code cannot sign a browser in to
// that someone's session unnoticed.

// codeTTL is how long a sign-in code may be redeemed.
const codeTTL = time.Minute

// codePurpose names the key codes are sealed with.
const codePurpose = "console sign-in code"

// maxUsedCodes bounds the codes a replica remembers as redeemed (each for
// at most codeTTL): past it, sign-ins by code wait until some expire.
const maxUsedCodes = 10_000

// usedCodes remembers the codes redeemed here until they expire.
type usedCodes struct {
	mu  sync.Mutex
	ids map[string]time.Time // code id → its expiry
}

// redeem marks code id (valid until expires) used; false if it was used
// already, or if too many are remembered now.
func (u *usedCodes) redeem(id string, expires, now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.ids == nil {
		u.ids = map[string]time.Time{}
	}
	if _, used := u.ids[id]; used {
		return false
	}
	if len(u.ids) >= maxUsedCodes {
		for k, exp := range u.ids {
			if !exp.After(now) {
				delete(u.ids, k)
			}
		}
		if len(u.ids) >= maxUsedCodes {
			return false
		}
	}
	u.ids[id] = expires
	return true
}

// codeAnswer is what POST /ui/api/sign-in-codes answers.
type codeAnswer struct {
	Code string `json:"code"`
	// Path is the sign-in page of the code, to open on the console's
	// origin.
	Path      string    `json:"path"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// mintCode issues a sign-in code for the request's bearer token. It is
// not a browser's call (no cookie counts), so it needs no CSRF token.
func (s *Server) mintCode(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		w.Header().Set("WWW-Authenticate", "Bearer")
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "send the token to sign in with as Authorization: Bearer <token>"})
		return
	}
	token = strings.TrimSpace(token)
	claims, err := s.opts.Verifier.Verify(token)
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "the token was refused: " + auth.PublicMessage(err)})
		return
	}
	expires := s.opts.Now().Add(codeTTL)
	if claims.ExpiresAt != nil && claims.ExpiresAt.Before(expires) {
		expires = claims.ExpiresAt.Time
	}
	code, err := s.codes.Seal(websession.Session{ID: websession.NewID(), Secret: token, Expires: expires})
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "the token is too large for a sign-in code"})
		return
	}
	s.log.Info("console sign-in code issued", "sub", claims.Subject, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, codeAnswer{Code: code, Path: Path + "login?code=" + url.QueryEscape(code), ExpiresAt: expires.UTC()})
}

// codeCaller opens a sign-in code: the session it stands for and who that
// is. It does not redeem it.
func (s *Server) codeCaller(code string) (websession.Session, *auth.Claims, error) {
	sess, err := s.codes.Open(code)
	if err != nil {
		return websession.Session{}, nil, err
	}
	claims, err := s.opts.Verifier.Verify(sess.Secret)
	if err != nil {
		return websession.Session{}, nil, err
	}
	return sess, claims, nil
}

// codeRefused is what the sign-in page says of a code that cannot be used.
const codeRefused = "This sign-in link has expired or was already used. Run memctl console again, or paste a token."
