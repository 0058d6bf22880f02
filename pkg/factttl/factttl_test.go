package factttl

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

var at = time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)

// The two forms the docs show, read back exactly.
func TestSplitDocumentedForms(t *testing.T) {
	for _, tc := range []struct {
		text string
		want Marker
	}{
		{"The staging DB is pg15 _(expires 2026-12-04T10:00:00Z, then archive)_", Marker{Kind: Expires, At: at, Action: Archive}},
		{"The staging DB is pg15 _(expires 2026-12-04T10:00:00Z, then mark_stale)_", Marker{Kind: Expires, At: at, Action: MarkStale}},
		{"The staging DB is pg15 _(expires 2026-12-04T10:00:00Z, then delete)_", Marker{Kind: Expires, At: at, Action: Delete}},
		// ", then …" left out: mark_stale, the spec's default.
		{"The staging DB is pg15 _(expires 2026-12-04T10:00:00Z)_", Marker{Kind: Expires, At: at, Action: MarkStale}},
		{"The staging DB is pg15 _(stale since 2026-12-04T10:00:00Z)_", Marker{Kind: Stale, At: at}},
		// Another offset is the same instant.
		{"The staging DB is pg15 _(expires 2026-12-04T12:00:00+02:00, then delete)_", Marker{Kind: Expires, At: at, Action: Delete}},
	} {
		t.Run(tc.text, func(t *testing.T) {
			body, m, ok, err := Split(tc.text)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, "The staging DB is pg15", body)
			require.Equal(t, tc.want.Kind, m.Kind)
			require.Equal(t, tc.want.Action, m.Action)
			require.True(t, tc.want.At.Equal(m.At), "at %v", m.At)
			require.NoError(t, Check(tc.text))
		})
	}
}

func TestRenderRoundTrip(t *testing.T) {
	for _, m := range []Marker{ExpiresAt(at, MarkStale), ExpiresAt(at, Archive), ExpiresAt(at, Delete), ExpiresAt(at, ""), StaleSince(at)} {
		line := With("  The staging DB is pg15 ", m)
		body, got, ok, err := Split(line)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "The staging DB is pg15", body)
		if m.Action == "" && m.Kind == Expires {
			m.Action = MarkStale
		}
		require.Equal(t, m, Marker{Kind: got.Kind, At: got.At, Action: got.Action})
		require.Equal(t, line, With(body, got), "rendering is canonical")
	}
	require.Equal(t, "x _(expires 2026-12-04T10:00:00Z, then archive)_", With("x", ExpiresAt(at.Add(900*time.Millisecond), Archive)),
		"UTC, to the second")
	require.Equal(t, "x _(stale since 2026-12-04T10:00:00Z)_", With("x", StaleSince(at.In(time.FixedZone("EET", 7200)))))
}

// "Only a trailing marker in that exact form counts; a fact that merely
// mentions 'expires' is untouched."
func TestNotAMarker(t *testing.T) {
	for _, text := range []string{
		"The TLS certificate expires 2026-12-04T10:00:00Z",
		"The cert _(expires 2026-12-04T10:00:00Z, then archive)_ is renewed by certbot",
		"Token expires after 1h (expires 3600s)",
		"See the runbook _(section 4)_",
		"Emphasis_(expires 2026-12-04T10:00:00Z)_", // not after a space
		"_(a)_ and _(b)_",
		"The DB is pg15 _(Expires 2026-12-04T10:00:00Z)_", // the keyword is lowercase
		"Plain fact",
		"",
	} {
		t.Run(text, func(t *testing.T) {
			body, _, ok, err := Split(text)
			require.NoError(t, err)
			require.False(t, ok)
			require.Equal(t, strings.TrimSpace(text), body)
			require.Equal(t, strings.TrimSpace(text), Strip(text))
			require.NoError(t, Check(text))
			require.False(t, Lapsed(text, at.AddDate(100, 0, 0)))
		})
	}
}

// "A malformed marker (bad time, unknown action) is refused … naming the
// problem."
func TestMalformed(t *testing.T) {
	for _, tc := range []struct{ text, says string }{
		{"The DB is pg15 _(expires tomorrow)_", `time "tomorrow" is not RFC 3339`},
		{"The DB is pg15 _(expires 2026-12-04)_", `time "2026-12-04" is not RFC 3339`},
		{"The DB is pg15 _(expires 2026-12-04T10:00Z, then archive)_", `time "2026-12-04T10:00Z" is not RFC 3339`},
		{"The DB is pg15 _(expires 2026-13-04T10:00:00Z)_", `not RFC 3339`},
		{"The DB is pg15 _(expires 2026-12-04T10:00:00Z, then forget)_", `unknown action "forget"`},
		{"The DB is pg15 _(expires 2026-12-04T10:00:00Z, then )_", `unknown action ""`},
		{"The DB is pg15 _(expires 2026-12-04T10:00:00Z, then Archive)_", `unknown action "Archive"`},
		{"The DB is pg15 _(stale since yesterday)_", `time "yesterday" is not RFC 3339`},
		{"The DB is pg15 _(expires )_", `time "" is not RFC 3339`},
		{"_(expires 2026-12-04T10:00:00Z, then archive)_", "has no fact before it"},
	} {
		t.Run(tc.text, func(t *testing.T) {
			_, _, ok, err := Split(tc.text)
			require.False(t, ok)
			require.ErrorIs(t, err, ErrMalformed)
			require.ErrorContains(t, err, tc.says)
			require.ErrorIs(t, Check(tc.text), ErrMalformed)
			require.Equal(t, strings.TrimSpace(tc.text), Strip(tc.text), "an unparsable marker is kept as text")
			require.False(t, Lapsed(tc.text, at.AddDate(100, 0, 0)))
		})
	}
}

func TestCheckTwoMarkers(t *testing.T) {
	err := Check("The DB is pg15 _(expires 2026-12-04T10:00:00Z, then archive)_ _(stale since 2026-12-04T10:00:00Z)_")
	require.ErrorIs(t, err, ErrMalformed)
	require.ErrorContains(t, err, "more than one TTL marker")
}

func TestDueAndLapsed(t *testing.T) {
	exp := "x " + ExpiresAt(at, Archive).String()
	stale := "x " + StaleSince(at).String()
	m, ok := Of(exp)
	require.True(t, ok)
	require.False(t, m.Due(at.Add(-time.Second)))
	require.True(t, m.Due(at), "due at the very second")
	require.True(t, m.Due(at.Add(time.Hour)))
	s, ok := Of(stale)
	require.True(t, ok)
	require.False(t, s.Due(at.Add(time.Hour)), "a stale fact's action already ran")
	require.True(t, s.Lapsed(at.Add(-time.Hour)))
	require.False(t, Lapsed(exp, at.Add(-time.Second)))
	require.True(t, Lapsed(exp, at))
	require.True(t, Lapsed(stale, time.Time{}))
}

func TestParseAction(t *testing.T) {
	for _, a := range Actions {
		got, err := ParseAction(string(a))
		require.NoError(t, err)
		require.Equal(t, a, got)
	}
	got, err := ParseAction("")
	require.NoError(t, err)
	require.Equal(t, MarkStale, got)
	_, err = ParseAction("ARCHIVE")
	require.True(t, errors.Is(err, ErrMalformed))
}

func TestArchivedLine(t *testing.T) {
	line := ArchivedLine("The staging DB is pg15", at, at.Add(90*time.Second), nil)
	require.Equal(t, "- The staging DB is pg15 — expired 2026-12-04T10:00:00Z, archived 2026-12-04", line)
	a, ok := ParseArchived(strings.TrimPrefix(line, "- "))
	require.True(t, ok)
	require.Equal(t, "The staging DB is pg15", a.Fact)
	require.True(t, a.Expired.Equal(at))
	require.Equal(t, "2026-12-04", a.ArchivedOn.Format("2006-01-02"))
	require.Equal(t, "- a — expired 2026-12-04T10:00:00Z, archived 2026-12-05\n  - sub", ArchivedLine("a", at, at.AddDate(0, 0, 1), []string{"  - sub"}))
	for _, bad := range []string{"", "a fact — added 2026-02-01, evicted 2026-03-01 (stale-fact)", "a — expired soon, archived 2026-12-04"} {
		_, ok := ParseArchived(bad)
		require.False(t, ok, bad)
	}
}

// Any one-line fact text with any marker reads back as written.
func FuzzRoundTrip(f *testing.F) {
	f.Add("The staging DB is pg15", int64(1796378400), uint8(1))
	f.Add("x _(see)_", int64(0), uint8(0))
	f.Add("ends in )_", int64(-1), uint8(3))
	f.Fuzz(func(t *testing.T, body string, unix int64, kind uint8) {
		body = strings.TrimSpace(body)
		if body == "" || strings.ContainsAny(body, "\r\n") || !utf8.ValidString(body) || unix < -62135596800 || unix > 253402300799 {
			return
		}
		if _, _, ok, err := Split(body); ok || err != nil {
			return // the body itself ends in a marker: Check refuses two
		}
		when := time.Unix(unix, 0).UTC()
		m := StaleSince(when)
		if kind%4 != 0 {
			m = ExpiresAt(when, Actions[int(kind%4)-1])
		}
		got, gm, ok, err := Split(With(body, m))
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, body, got)
		require.True(t, gm.At.Equal(when))
		require.Equal(t, m.Kind, gm.Kind)
		require.Equal(t, m.Action, gm.Action)
	})
}
