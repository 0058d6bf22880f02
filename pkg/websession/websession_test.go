package websession

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var secret = []byte("0123456789abcdef0123456789abcdef-test-secret")

func keeper(t *testing.T, now *time.Time, purpose string) *Keeper {
	t.Helper()
	k, err := New(secret, purpose, WithClock(func() time.Time { return *now }))
	require.NoError(t, err)
	return k
}

func TestSealOpen(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	k := keeper(t, &now, "console")
	s := Session{ID: NewID(), Secret: "a.jwt.token", Expires: now.Add(time.Hour)}
	v, err := k.Seal(s)
	require.NoError(t, err)
	require.NotContains(t, v, "a.jwt.token", "the secret is never in clear")

	got, err := k.Open(v)
	require.NoError(t, err)
	require.Equal(t, s.ID, got.ID)
	require.Equal(t, s.Secret, got.Secret)
	require.True(t, s.Expires.Equal(got.Expires))

	v2, err := k.Seal(s)
	require.NoError(t, err)
	require.NotEqual(t, v, v2, "a fresh nonce per seal")

	t.Run("expired", func(t *testing.T) {
		later := now.Add(time.Hour)
		_, err := keeper(t, &later, "console").Open(v)
		require.ErrorIs(t, err, ErrExpired)
	})
	t.Run("another purpose or secret cannot open it", func(t *testing.T) {
		_, err := keeper(t, &now, "other").Open(v)
		require.ErrorIs(t, err, ErrInvalid)
		k2, err := New([]byte(strings.Repeat("z", 40)), "console")
		require.NoError(t, err)
		_, err = k2.Open(v)
		require.ErrorIs(t, err, ErrInvalid)
	})
	t.Run("altered or junk", func(t *testing.T) {
		b := []byte(v)
		b[len(b)/2] ^= 1
		for _, bad := range []string{string(b), "", "x", "%%%", strings.Repeat("A", MaxCookieBytes+1)} {
			_, err := k.Open(bad)
			require.ErrorIs(t, err, ErrInvalid, bad)
		}
	})
	t.Run("too large", func(t *testing.T) {
		_, err := k.Seal(Session{ID: "x", Secret: strings.Repeat("t", MaxCookieBytes), Expires: now.Add(time.Hour)})
		require.ErrorIs(t, err, ErrTooLarge)
	})
}

func TestNewRefusesWeakSecrets(t *testing.T) {
	_, err := New([]byte("short"), "console")
	require.Error(t, err)
	_, err = New(secret, "")
	require.Error(t, err)
}

func TestCSRF(t *testing.T) {
	now := time.Now()
	k := keeper(t, &now, "console")
	id := NewID()
	tok := k.CSRFToken(id)
	require.True(t, k.CheckCSRF(id, tok))
	require.False(t, k.CheckCSRF(NewID(), tok), "bound to the session")
	require.False(t, k.CheckCSRF(id, ""))
	require.False(t, k.CheckCSRF("", tok))
	require.False(t, keeper(t, &now, "other").CheckCSRF(id, tok), "bound to the key")
}

func TestCheckOrigin(t *testing.T) {
	for _, c := range []struct {
		name    string
		headers map[string]string
		ok      bool
	}{
		{"no browser headers", nil, true},
		{"same origin", map[string]string{"Origin": "http://console.example:8080", "Sec-Fetch-Site": "same-origin"}, true},
		{"referer of the same host", map[string]string{"Referer": "http://console.example:8080/ui/inbox"}, true},
		{"cross-site fetch", map[string]string{"Sec-Fetch-Site": "cross-site"}, false},
		{"same-site is not same-origin", map[string]string{"Sec-Fetch-Site": "same-site"}, false},
		{"other origin", map[string]string{"Origin": "http://evil.example"}, false},
		{"other port", map[string]string{"Origin": "http://console.example:9999"}, false},
		{"null origin", map[string]string{"Origin": "null"}, false},
		{"other referer", map[string]string{"Referer": "https://evil.example/x"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "http://console.example:8080/ui/logout", nil)
			for k, v := range c.headers {
				r.Header.Set(k, v)
			}
			err := CheckOrigin(r)
			if c.ok {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, ErrCrossOrigin)
			}
		})
	}
}

func TestCookieAttributes(t *testing.T) {
	c := Cookie{Name: "gbm_session", Path: "/ui/"}
	w := httptest.NewRecorder()
	c.Set(w, "v", 90*time.Minute)
	h := w.Header().Get("Set-Cookie")
	for _, want := range []string{"gbm_session=v", "Path=/ui/", "Max-Age=5400", "HttpOnly", "Secure", "SameSite=Strict"} {
		require.Contains(t, h, want)
	}
	w = httptest.NewRecorder()
	c.Clear(w)
	require.Contains(t, w.Header().Get("Set-Cookie"), "Max-Age=0")
}
