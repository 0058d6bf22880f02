package auth

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRequireHTTP(t *testing.T) {
	clk := newFakeClock()
	s, v := newPair(t, testSecret(t), clk)
	var seen *Claims
	h := RequireHTTP(v, []Role{RoleService, RoleAdmin}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, _ = ClaimsFromContext(r.Context())
	}))
	mint := func(roles ...Role) string {
		tok, err := s.Mint("caller", roles, []string{AllAgents}, time.Minute)
		require.NoError(t, err)
		return tok
	}
	svc, agent := mint(RoleService), mint(RoleAgent)
	serve := func(headers ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/x", nil)
		for _, v := range headers {
			r.Header.Add("Authorization", v)
		}
		w := httptest.NewRecorder()
		seen = nil
		h.ServeHTTP(w, r)
		return w
	}

	w := serve()
	require.Equal(t, http.StatusUnauthorized, w.Code)
	require.Equal(t, `Bearer realm="garden-bloom-memory"`, w.Header().Get("WWW-Authenticate"))
	require.Nil(t, seen)

	for _, hdr := range [][]string{{"Bearer"}, {"Basic abc"}, {"Bearer x.y.z"}, {"Bearer " + svc, "Bearer " + svc}} {
		w := serve(hdr...)
		require.Equal(t, http.StatusUnauthorized, w.Code, hdr)
		require.True(t, strings.HasPrefix(w.Header().Get("WWW-Authenticate"), `Bearer realm="garden-bloom-memory", error=`), hdr)
		require.NotContains(t, w.Body.String(), svc)
		require.Nil(t, seen)
	}

	w = serve("Bearer " + agent)
	require.Equal(t, http.StatusForbidden, w.Code)
	require.Contains(t, w.Header().Get("WWW-Authenticate"), `error="insufficient_scope"`)
	require.Nil(t, seen)

	w = serve("bearer " + svc)
	require.Equal(t, http.StatusOK, w.Code)
	require.NotNil(t, seen)
	require.Equal(t, "caller", seen.Subject)

	clk.Advance(time.Hour)
	w = serve("Bearer " + svc)
	require.Equal(t, http.StatusUnauthorized, w.Code)
	require.Contains(t, w.Header().Get("WWW-Authenticate"), "token expired")

	require.Panics(t, func() { RequireHTTP(nil, []Role{RoleAdmin}, h) })
	require.Panics(t, func() { RequireHTTP(v, nil, h) })
}

func TestBearerChallenge(t *testing.T) {
	require.Equal(t, `Bearer realm="r"`, BearerChallenge("r", "", "ignored without a code"))
	require.Equal(t, `Bearer realm="r", error="invalid_token", error_description="token expired"`,
		BearerChallenge("r", "invalid_token", "token expired"))
	require.Equal(t, `Bearer realm="r", error="invalid_token", error_description="a ?quoted? ?"`,
		BearerChallenge("r", "invalid_token", `a "quoted" `+"\u0457"), "only RFC 6750's characters")
	require.True(t, IsBearer("bearer x"))
	require.False(t, IsBearer("Basic x"))
}
