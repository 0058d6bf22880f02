package console

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/websession"
)

// caller is the signed-in person of a request.
type caller struct {
	token  string
	claims *auth.Claims
	// session is the session's id; its CSRF token guards every form.
	session string
	csrf    string
}

// call is the context of one gRPC call for c: its token as the call's
// bearer token (so every check is the service's own) and the edge's
// deadline.
func (s *Server) call(r *http.Request, c *caller) (context.Context, context.CancelFunc) {
	ctx := metadata.AppendToOutgoingContext(r.Context(), "authorization", "Bearer "+c.token)
	return context.WithTimeout(ctx, s.opts.CallTimeout)
}

// signedIn returns the caller of r's session, or why there is none.
func (s *Server) signedIn(r *http.Request) (*caller, error) {
	sess, err := s.sessions.Open(s.session.Value(r))
	if err != nil {
		return nil, err
	}
	claims, err := s.opts.Verifier.Verify(sess.Secret)
	if err != nil {
		return nil, err
	}
	return &caller{token: sess.Secret, claims: claims, session: sess.ID, csrf: s.sessions.CSRFToken(sess.ID)}, nil
}

// callerFunc handles a request of a signed-in caller.
type callerFunc func(w http.ResponseWriter, r *http.Request, c *caller)

// page serves a GET page to a signed-in caller; anyone else is sent to
// sign in, and comes back here afterwards.
func (s *Server) page(h callerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := s.signedIn(r)
		if err != nil {
			if s.session.Value(r) != "" {
				s.session.Clear(w) // expired or unreadable: start over
			}
			http.Redirect(w, r, "/ui/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		w.Header().Set("Cache-Control", "no-store") // pages show private memory
		h(w, r, c)
	})
}

// action serves a state-changing POST: only from this origin, with the
// session's CSRF token in the form. A refused request changes nothing and
// calls no service.
func (s *Server) action(h callerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := s.signedIn(r)
		if err != nil {
			s.renderError(w, r, nil, http.StatusUnauthorized, "Signed out", "Your session has ended. Sign in again, then repeat what you were doing.")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			s.renderError(w, r, c, http.StatusBadRequest, "Bad form", "The form could not be read.")
			return
		}
		if err := websession.CheckOrigin(r); err != nil {
			s.renderError(w, r, c, http.StatusForbidden, "Refused", "The request did not come from this console's own pages, so nothing was changed.")
			return
		}
		if !s.sessions.CheckCSRF(c.session, r.PostForm.Get("csrf")) {
			s.renderError(w, r, c, http.StatusForbidden, "Refused", "The form's anti-forgery token is missing or is not this session's, so nothing was changed. Reload the page and try again.")
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		h(w, r, c)
	})
}

// api serves a small JSON answer to a signed-in caller (the live pages'
// script); no redirect, a status.
func (s *Server) api(h callerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		c, err := s.signedIn(r)
		if err != nil {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "signed out"})
			return
		}
		h(w, r, c)
	})
}

// loginView is the sign-in page's data.
type loginView struct {
	Next      string
	Error     string
	SignedOut bool
	// Insecure: the page came over plain http to an address browsers do
	// not treat as secure, so they will not keep the Secure cookie.
	Insecure bool
	// Code is a sign-in code to confirm (memctl console), for CodeSubject
	// with CodeRoles.
	Code, CodeSubject, CodeRoles string
}

// loginPage shows the sign-in form (or, signed in, goes on).
func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	if code := r.URL.Query().Get("code"); code != "" {
		// Confirm, even when signed in: the code may be someone else's.
		_, claims, err := s.codeCaller(code)
		if err != nil {
			s.showLogin(w, r, http.StatusUnauthorized, loginView{Next: next, Error: codeRefused})
			return
		}
		s.showLogin(w, r, http.StatusOK, loginView{Next: next, Code: code, CodeSubject: claims.Subject, CodeRoles: rolesText(claims.Roles)})
		return
	}
	if _, err := s.signedIn(r); err == nil {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	s.showLogin(w, r, http.StatusOK, loginView{Next: next, SignedOut: r.URL.Query().Has("signed_out")})
}

// loginTTL is how long a sign-in form may be filled in.
const loginTTL = 30 * time.Minute

// showLogin renders the sign-in form with a fresh form session: the form's
// CSRF token is bound to a short-lived cookie of its own, so another site
// cannot sign a browser in to someone else's session.
func (s *Server) showLogin(w http.ResponseWriter, r *http.Request, code int, v loginView) {
	form := websession.Session{ID: websession.NewID(), Expires: s.opts.Now().Add(loginTTL)}
	sealed, err := s.sessions.Seal(form)
	if err != nil {
		s.renderError(w, r, nil, http.StatusInternalServerError, "Error", "The sign-in form could not be prepared.")
		return
	}
	s.login.Set(w, sealed, loginTTL)
	v.Insecure = insecureContext(r)
	w.Header().Set("Cache-Control", "no-store")
	s.render(w, r, code, "login", &pageData{Title: "Sign in", CSRF: s.sessions.CSRFToken(form.ID), Data: v})
}

// signIn checks a pasted token (or the token of a sign-in code) with the
// process's verifier and keeps it in the session cookie for the token's
// remaining life.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		s.renderError(w, r, nil, http.StatusBadRequest, "Bad form", "The sign-in form could not be read.")
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	form, err := s.sessions.Open(s.login.Value(r))
	if err != nil || websession.CheckOrigin(r) != nil || !s.sessions.CheckCSRF(form.ID, r.PostForm.Get("csrf")) {
		s.showLogin(w, r, http.StatusForbidden, loginView{Next: next,
			Error: "This sign-in form expired or was not sent by this console. Paste the token again."})
		return
	}
	token := pastedToken(r.PostForm.Get("token"))
	if code := r.PostForm.Get("code"); code != "" {
		sess, _, err := s.codeCaller(code)
		if err != nil || !s.usedCodes.redeem(sess.ID, sess.Expires, s.opts.Now()) {
			s.showLogin(w, r, http.StatusUnauthorized, loginView{Next: next, Error: codeRefused})
			return
		}
		token = sess.Secret
	}
	if token == "" {
		s.showLogin(w, r, http.StatusUnauthorized, loginView{Next: next, Error: "Paste a token: make run prints one, or memoryd token makes one."})
		return
	}
	claims, err := s.opts.Verifier.Verify(token)
	if err != nil {
		s.showLogin(w, r, http.StatusUnauthorized, loginView{Next: next, Error: "The token was refused: " + auth.PublicMessage(err)})
		return
	}
	expires := claims.ExpiresAt.Time
	sealed, err := s.sessions.Seal(websession.Session{ID: websession.NewID(), Secret: token, Expires: expires})
	if errors.Is(err, websession.ErrTooLarge) {
		s.showLogin(w, r, http.StatusBadRequest, loginView{Next: next, Error: "The token is too large to keep in a browser cookie."})
		return
	}
	if err != nil {
		s.renderError(w, r, nil, http.StatusInternalServerError, "Error", "The session could not be made.")
		return
	}
	s.session.Set(w, sealed, expires.Sub(s.opts.Now()))
	s.login.Clear(w)
	s.log.Info("console sign-in", "sub", claims.Subject, "roles", claims.Roles, "remote", r.RemoteAddr)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// rolesText lists roles for a person to read.
func rolesText(roles []auth.Role) string {
	names := make([]string, 0, len(roles))
	for _, r := range roles {
		names = append(names, string(r))
	}
	return strings.Join(names, ", ")
}

// pastedToken takes the token out of what a person pasted: the token, or
// the line make run prints ("export TOKEN=…"), or an Authorization value
// ("Bearer …").
func pastedToken(s string) string {
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "export "))
	if v, ok := strings.CutPrefix(s, "TOKEN="); ok {
		s = v
	}
	if scheme, rest, ok := strings.Cut(s, " "); ok && strings.EqualFold(scheme, "Bearer") {
		s = rest
	}
	return strings.Trim(strings.TrimSpace(s), `"'`)
}

// signOut drops the session cookie.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request, c *caller) {
	s.session.Clear(w)
	s.log.Info("console sign-out", "sub", c.claims.Subject)
	http.Redirect(w, r, "/ui/login?signed_out=1", http.StatusSeeOther)
}

// safeNext keeps a post-sign-in destination only when it is a console
// page of this origin (no open redirect).
func safeNext(next string) string {
	if !strings.HasPrefix(next, Path) || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return Path
	}
	return next
}

// insecureContext reports a request over plain http to a host that is not
// a loopback address: browsers keep Secure cookies only over https, or
// from localhost and loopback addresses.
func insecureContext(r *http.Request) bool {
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		return false
	}
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return false
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip == nil || !ip.IsLoopback()
}
