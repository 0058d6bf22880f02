package memsnapshot

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"maps"
	"testing"
	"time"
)

func TestRoundTripIsDeterministic(t *testing.T) {
	files := map[string][]byte{
		"memory/a/facts.md":          []byte("# Facts\n\n- one\n"),
		"memory/a/snapshot.md":       []byte("# Snapshot: a\n"),
		"memory/a/runs/run_1.md":     []byte("run\n"),
		"memory/a/empty-but-kept.md": {},
	}
	at := time.Date(2026, 2, 17, 15, 0, 0, 0, time.UTC)
	var a, b bytes.Buffer
	if err := Write(&a, files, at); err != nil {
		t.Fatal(err)
	}
	if err := Write(&b, maps.Clone(files), at); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("the same files gave different archives")
	}
	got, err := Read(bytes.NewReader(a.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !maps.EqualFunc(got, files, bytes.Equal) {
		t.Fatalf("round trip: got %q, want %q", got, files)
	}
}

// archive builds a tar.gz from raw headers, as a tampered object would be.
func archive(t *testing.T, entries ...tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, h := range entries {
		h := h
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(bytes.Repeat([]byte("x"), int(h.Size))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReadRefusesUnsafeArchives(t *testing.T) {
	reg := func(name string, size int64) tar.Header {
		return tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: size}
	}
	cases := map[string][]byte{
		"traversal":      archive(t, reg("../../etc/passwd", 1)),
		"inner dotdot":   archive(t, reg("memory/a/../../b/facts.md", 1)),
		"absolute":       archive(t, reg("/etc/passwd", 1)),
		"backslash":      archive(t, reg(`memory\a\facts.md`, 1)),
		"symlink":        archive(t, tar.Header{Typeflag: tar.TypeSymlink, Name: "memory/a/facts.md", Linkname: "/etc/passwd"}),
		"directory":      archive(t, tar.Header{Typeflag: tar.TypeDir, Name: "memory/a/", Mode: 0o755}),
		"duplicate":      archive(t, reg("memory/a/facts.md", 1), reg("memory/a/facts.md", 2)),
		"oversized file": archive(t, reg("memory/a/facts.md", MaxFileBytes+1)),
		"not gzip":       []byte("plain text, not an archive"),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Read(bytes.NewReader(data)); !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestWriteRefusesUnsafeNames(t *testing.T) {
	for _, name := range []string{"", "/abs", "a/../b", "..", `a\b`} {
		if err := Write(&bytes.Buffer{}, map[string][]byte{name: nil}, time.Now()); !errors.Is(err, ErrInvalid) {
			t.Errorf("Write(%q) err = %v, want ErrInvalid", name, err)
		}
	}
}
