package auth

import (
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func skipOnWindows(tb testing.TB) {
	tb.Helper()
	if runtime.GOOS == "windows" {
		tb.Skip("POSIX permission bits are not meaningful on Windows")
	}
}

// writeSecretFile writes content with exactly mode perm (chmod after write
// so the process umask cannot interfere).
func writeSecretFile(tb testing.TB, path, content string, perm os.FileMode) {
	tb.Helper()
	require.NoError(tb, os.WriteFile(path, []byte(content), perm))
	require.NoError(tb, os.Chmod(path, perm))
}

func TestLoadOrCreateSecretCreatesAndReuses(t *testing.T) {
	skipOnWindows(t)
	dir := filepath.Join(t.TempDir(), "nested", "auth")
	path := filepath.Join(dir, "jwt.secret")

	first, err := LoadOrCreateSecret(path)
	require.NoError(t, err)

	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	di, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), di.Mode().Perm())

	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Len(t, raw, 65, "64 hex chars + newline")
	require.Equal(t, byte('\n'), raw[64])
	decoded, err := hex.DecodeString(string(raw[:64]))
	require.NoError(t, err)
	require.Len(t, decoded, 32)
	require.Equal(t, raw[:64], first, "the key is the trimmed file content")

	second, err := LoadOrCreateSecret(path)
	require.NoError(t, err)
	require.Equal(t, first, second)

	loaded, err := LoadSecret(path)
	require.NoError(t, err)
	require.Equal(t, first, loaded)

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temp files left behind")

	// The generated secret must be usable directly.
	_, err = NewSigner(first)
	require.NoError(t, err)
}

func TestLoadOrCreateSecretGeneratesDistinctSecrets(t *testing.T) {
	a, err := LoadOrCreateSecret(filepath.Join(t.TempDir(), "a"))
	require.NoError(t, err)
	b, err := LoadOrCreateSecret(filepath.Join(t.TempDir(), "b"))
	require.NoError(t, err)
	require.NotEqual(t, a, b)
}

func TestLoadOrCreateSecretConcurrentCallersAgree(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared", "jwt.secret")
	const n = 16
	got := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { got[i], errs[i] = LoadOrCreateSecret(path) })
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, got[0], got[i], "caller %d saw a different secret", i)
	}
	onDisk, err := LoadSecret(path)
	require.NoError(t, err)
	require.Equal(t, got[0], onDisk)
}

func TestLoadSecret(t *testing.T) {
	skipOnWindows(t)
	hexSecret := strings.Repeat("ab", 32)
	tests := []struct {
		name    string
		content string
		perm    os.FileMode
		want    string
		wantErr string
	}{
		{name: "hex with newline", content: hexSecret + "\n", perm: 0o600, want: hexSecret},
		{name: "hex with surrounding whitespace", content: "  \t" + hexSecret + "\r\n\n", perm: 0o600, want: hexSecret},
		{name: "raw text", content: "this is a long raw passphrase secret!!\n", perm: 0o600, want: "this is a long raw passphrase secret!!"},
		{name: "owner read-only", content: hexSecret, perm: 0o400, want: hexSecret},
		{name: "group readable", content: hexSecret, perm: 0o640, wantErr: "group or others"},
		{name: "world readable", content: hexSecret, perm: 0o604, wantErr: "group or others"},
		{name: "group writable", content: hexSecret, perm: 0o620, wantErr: "group or others"},
		{name: "short hex", content: strings.Repeat("ab", 31), perm: 0o600, wantErr: "too short"},
		{name: "40 hex chars decode to 20 bytes", content: strings.Repeat("a", 40), perm: 0o600, wantErr: "too short"},
		{name: "short raw", content: "hunter2", perm: 0o600, wantErr: "too short"},
		{name: "whitespace only", content: " \n\t\n", perm: 0o600, wantErr: "too short"},
		{name: "too large", content: strings.Repeat("x", maxSecretFileSize+1), perm: 0o600, wantErr: "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "secret")
			writeSecretFile(t, path, tt.content, tt.perm)

			got, err := LoadSecret(path)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.Nil(t, got)
				// LoadOrCreateSecret must refuse too, never overwrite.
				_, err = LoadOrCreateSecret(path)
				require.ErrorContains(t, err, tt.wantErr)
				after, rerr := os.ReadFile(path)
				require.NoError(t, rerr)
				require.Equal(t, tt.content, string(after))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
		})
	}
}

func TestLoadSecretMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent")
	_, err := LoadSecret(path)
	require.ErrorIs(t, err, fs.ErrNotExist)
	_, statErr := os.Stat(path)
	require.ErrorIs(t, statErr, fs.ErrNotExist, "LoadSecret must not create the file")
}

func TestLoadSecretRejectsDirectory(t *testing.T) {
	_, err := LoadSecret(t.TempDir())
	require.Error(t, err)
}
