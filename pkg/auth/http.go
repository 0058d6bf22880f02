package auth

import (
	"net/http"
	"slices"
	"strings"
)

// HTTPRealm is the realm of the WWW-Authenticate challenges of
// [RequireHTTP], the same as the REST edge's: one protection space.
const HTTPRealm = "garden-bloom-memory"

// RequireHTTP protects a plain HTTP handler (one not behind the gRPC
// interceptors) with the same bearer tokens: next runs only for requests
// with exactly one "Authorization: Bearer <jwt>" header that v accepts and
// whose claims hold at least one of roles; it finds the claims with
// [ClaimsFromContext].
//
// A missing, malformed, badly signed or expired token is 401 with a
// "WWW-Authenticate: Bearer" challenge (RFC 6750); a valid token without an
// allowed role is 403. The token is never written anywhere, and the
// response says no more than the gRPC interceptors do. It panics if v is nil
// or roles is empty, since a handler that accepts everybody is worse than a
// process that does not start.
func RequireHTTP(v *Verifier, roles []Role, next http.Handler) http.Handler {
	if v == nil {
		panic("auth: RequireHTTP requires a non-nil Verifier")
	}
	if len(roles) == 0 {
		panic("auth: RequireHTTP requires at least one role")
	}
	roles = slices.Clone(roles)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		vals := r.Header.Values("Authorization")
		if len(vals) == 0 {
			challenge(w, http.StatusUnauthorized, "", "missing bearer token")
			return
		}
		token, ok := "", len(vals) == 1
		if ok {
			token, ok = parseBearer(vals[0])
		}
		if !ok {
			challenge(w, http.StatusUnauthorized, "invalid_request", "authorization must be one bearer token")
			return
		}
		claims, err := v.Verify(token)
		if err != nil {
			challenge(w, http.StatusUnauthorized, "invalid_token", PublicMessage(err))
			return
		}
		if !slices.ContainsFunc(roles, claims.HasRole) {
			challenge(w, http.StatusForbidden, "insufficient_scope", "the token's roles do not allow this")
			return
		}
		next.ServeHTTP(w, r.WithContext(ContextWithClaims(r.Context(), claims)))
	})
}

// challenge writes an RFC 6750 error response; code is "" when the request
// carried no credentials at all.
func challenge(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("WWW-Authenticate", BearerChallenge(HTTPRealm, code, msg))
	http.Error(w, msg, status)
}

// BearerChallenge is the value of an RFC 6750 §3 WWW-Authenticate header:
// `Bearer realm="…"`, followed by `error="…", error_description="…"` unless
// code is "" (the request carried no bearer token, §3.1). code is one of
// invalid_request, invalid_token, insufficient_scope. The description is
// cut to the characters §3 allows in it (printable ASCII but '"' and '\');
// others become '?'.
func BearerChallenge(realm, code, description string) string {
	h := `Bearer realm="` + quotable(realm) + `"`
	if code == "" {
		return h
	}
	h += `, error="` + code + `"`
	if description != "" {
		h += `, error_description="` + quotable(description) + `"`
	}
	return h
}

// quotable maps s into RFC 6750's quoted-string character set
// (%x20-21 / %x23-5B / %x5D-7E).
func quotable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return '?'
		}
		return r
	}, s)
}

// IsBearer reports whether an Authorization header value uses the Bearer
// scheme (whatever follows it).
func IsBearer(h string) bool {
	scheme, _, _ := strings.Cut(strings.TrimSpace(h), " ")
	return strings.EqualFold(scheme, "Bearer")
}
