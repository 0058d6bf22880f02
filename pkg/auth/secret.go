package auth

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// MinSecretLen is the minimum HMAC secret strength in bytes (256 bits, the
// output size of SHA-256; shorter keys weaken HS256).
const MinSecretLen = 32

// maxSecretFileSize bounds how much of a secret file is read, so pointing the
// loader at a large file by mistake fails fast instead of eating memory.
const maxSecretFileSize = 4096

// LoadSecret reads the shared HMAC secret from path.
//
// The file may hold either hex text (as written by [LoadOrCreateSecret]) or
// arbitrary raw text; surrounding whitespace is ignored. The returned key is
// the trimmed file content itself, not the hex-decoded bytes, so that any
// tool in any language can use the file verbatim without agreeing on an
// encoding. Strength is still checked on the decoded value: a hex secret
// needs at least [MinSecretLen] decoded bytes, a raw one at least
// [MinSecretLen] bytes.
//
// The file must not be accessible to group or others (mode&0o077 == 0):
// anyone who can read it can mint tokens for every service.
func LoadSecret(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("auth: open secret: %w", err)
	}
	defer func() { _ = f.Close() }() // read only

	// Stat the open file rather than the path so the checked file is the one
	// we read, even if the path is swapped underneath us.
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("auth: stat secret: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("auth: secret %s is not a regular file", path)
	}
	// Windows has no POSIX permission bits worth checking.
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("auth: secret %s has mode %#o, must not be accessible by group or others (chmod 600)", path, fi.Mode().Perm())
	}

	raw, err := io.ReadAll(io.LimitReader(f, maxSecretFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("auth: read secret: %w", err)
	}
	if len(raw) > maxSecretFileSize {
		return nil, fmt.Errorf("auth: secret %s is larger than %d bytes", path, maxSecretFileSize)
	}
	key := bytes.TrimSpace(raw)
	if err := checkSecretStrength(key); err != nil {
		return nil, fmt.Errorf("auth: secret %s: %w", path, err)
	}
	return key, nil
}

// checkSecretStrength enforces MinSecretLen on the decoded secret.
func checkSecretStrength(key []byte) error {
	n := len(key)
	if decoded, err := hex.DecodeString(string(key)); err == nil {
		n = len(decoded)
	}
	if n < MinSecretLen {
		return fmt.Errorf("too short: %d bytes of key material, need at least %d", n, MinSecretLen)
	}
	return nil
}

// LoadOrCreateSecret returns the secret at path, generating it first if the
// file does not exist. A generated secret is 32 random bytes stored as 64 hex
// characters plus a newline, with mode 0600 in a directory created with mode
// 0700 if missing. See [LoadSecret] for the format and checks.
//
// Creation is atomic and never overwrites: the secret is written to a temp
// file in the same directory, synced, and then hard-linked into place, which
// fails if another process created the file first. In that case the winner's
// secret is loaded, so services starting concurrently against a fresh
// directory still end up sharing one secret (a plain rename would let the
// last writer silently replace a secret another process already uses).
func LoadOrCreateSecret(path string) ([]byte, error) {
	key, err := LoadSecret(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if err := createSecret(path); err != nil {
		return nil, err
	}
	return LoadSecret(path)
}

// createSecret writes a fresh secret to path unless a file appears there
// first. It returns nil in both cases.
func createSecret(path string) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("auth: create secret dir: %w", err)
	}

	var buf [MinSecretLen]byte
	if _, err := rand.Read(buf[:]); err != nil {
		return fmt.Errorf("auth: generate secret: %w", err)
	}
	content := make([]byte, 0, hex.EncodedLen(len(buf))+1)
	content = hex.AppendEncode(content, buf[:])
	content = append(content, '\n')

	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("auth: create temp secret: %w", err)
	}
	tmpName := tmp.Name()
	// The temp name is always removed: after a successful link the secret
	// lives on under path, and on failure we must not leave key material
	// lying around.
	defer func() {
		if rmErr := os.Remove(tmpName); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) && err == nil {
			err = fmt.Errorf("auth: remove temp secret: %w", rmErr)
		}
	}()

	// CreateTemp already uses 0600, but be explicit: this is the property
	// LoadSecret insists on.
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("auth: chmod temp secret: %w", err)
	}
	if _, err := tmp.Write(content); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("auth: write temp secret: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("auth: sync temp secret: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("auth: close temp secret: %w", err)
	}

	if err := publishSecret(tmpName, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil // lost the race; the caller loads the winner's secret
		}
		return fmt.Errorf("auth: install secret: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("auth: sync secret dir: %w", err)
	}
	return nil
}

// publishSecret moves tmp to path without replacing an existing file.
// Hard links give us "create if absent" atomically; on filesystems without
// hard link support we fall back to a rename, accepting the (narrow) race.
func publishSecret(tmp, path string) error {
	err := os.Link(tmp, path)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return err
	}
	if _, statErr := os.Lstat(path); statErr == nil {
		return fs.ErrExist
	}
	return os.Rename(tmp, path)
}

// syncDir fsyncs a directory so a just-created entry survives a crash.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil // directories cannot be opened for sync on Windows
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return err
	}
	return d.Close()
}
