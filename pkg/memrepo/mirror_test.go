package memrepo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMirrorFollowsTheRemote(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src, err := Init(ctx, filepath.Join(dir, "canonical.git"), InitOptions{})
	require.NoError(t, err)
	m := NewMirror(src.Path(), filepath.Join(dir, "mirror.git"))
	require.NoError(t, m.Sync(ctx))
	mirror, err := Open(m.Path())
	require.NoError(t, err)
	h1, _ := src.Head(ctx)
	got, err := mirror.Head(ctx)
	require.NoError(t, err)
	require.Equal(t, h1, got)

	h2, err := src.Commit(ctx, CommitRequest{Parent: h1, Message: "more", Changes: []Change{{Path: "memory/a/facts.md", Content: []byte("x")}}})
	require.NoError(t, err)
	require.NoError(t, m.Sync(ctx))
	got, err = mirror.Head(ctx)
	require.NoError(t, err)
	require.Equal(t, h2, got, "a fetch brings the new commit; the open mirror sees it")
	data, err := mirror.ReadFile(ctx, h2, "memory/a/facts.md")
	require.NoError(t, err)
	require.Equal(t, "x", string(data))

	bad := NewMirror(filepath.Join(dir, "missing.git"), filepath.Join(dir, "m2.git"))
	require.Error(t, bad.Sync(ctx))
}

// TestMirrorBearerToken: the mirror sends a fresh token on every sync, in a
// header git gets from the environment; the token never shows in an error.
func TestMirrorBearerToken(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		// A smart-HTTP answer whose error echoes the header back: git prints
		// it, and the mirror must cut it out.
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		_, _ = fmt.Fprint(w, pktLine("# service=git-upload-pack\n")+"0000"+pktLine("ERR refused: "+r.Header.Get("Authorization")+"\n"))
	}))
	defer srv.Close()

	n := 0
	m := NewMirror(srv.URL+"/git/memory.git", filepath.Join(t.TempDir(), "mirror.git"), WithBearerToken(func() (string, error) {
		n++
		return fmt.Sprintf("tok-%d.secret-part", n), nil
	}))
	for i := 1; i <= 2; i++ {
		err := m.Sync(context.Background())
		require.Error(t, err)
		require.Contains(t, err.Error(), "remote error: refused: Bearer [redacted]", "git's own message stays")
		require.NotContains(t, err.Error(), "secret-part")
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"Bearer tok-1.secret-part", "Bearer tok-2.secret-part"}, got, "one fresh token per sync")

	for _, bad := range []string{"", "two words", "line\nbreak"} {
		m := NewMirror(srv.URL, filepath.Join(t.TempDir(), "m.git"), WithBearerToken(func() (string, error) { return bad, nil }))
		require.Error(t, m.Sync(context.Background()), "token %q", bad)
	}
	m = NewMirror(srv.URL, filepath.Join(t.TempDir(), "m.git"), WithBearerToken(func() (string, error) { return "", errors.New("no signer") }))
	require.ErrorContains(t, m.Sync(context.Background()), "no signer")
}

func pktLine(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }

func TestConfigEnvKeepsExistingEntries(t *testing.T) {
	kv := [][2]string{{"http.extraHeader", "X: y"}, {"http.followRedirects", "false"}}
	require.Equal(t, []string{
		"GIT_CONFIG_KEY_0=http.extraHeader", "GIT_CONFIG_VALUE_0=X: y",
		"GIT_CONFIG_KEY_1=http.followRedirects", "GIT_CONFIG_VALUE_1=false", "GIT_CONFIG_COUNT=2",
	}, configEnv("", kv))
	require.Equal(t, []string{
		"GIT_CONFIG_KEY_2=http.extraHeader", "GIT_CONFIG_VALUE_2=X: y",
		"GIT_CONFIG_KEY_3=http.followRedirects", "GIT_CONFIG_VALUE_3=false", "GIT_CONFIG_COUNT=4",
	}, configEnv("2", kv))
}
