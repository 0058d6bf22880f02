// Package memsnapshot writes and reads memory snapshots: a gzip-compressed
// tar of an agent's files (spec DiffMem §4.4). Archives are deterministic —
// entries sorted by name, one fixed modification time, mode 0644, no owner
// names — so the same files at the same commit give the same bytes, and any
// tar tool can open them (`tar xzf`). Read accepts only what Write produces:
// regular files with clean relative names, within size bounds, so a
// tampered archive in the object store cannot name a path outside the agent
// or exhaust memory.
package memsnapshot

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"time"
)

// Limits of what Read accepts.
const (
	MaxFiles     = 100_000
	MaxFileBytes = 16 << 20
	MaxTotal     = 1 << 30
)

// ErrInvalid wraps every reason an archive is refused.
var ErrInvalid = errors.New("invalid snapshot archive")

// Write writes files (names relative to the archive root, '/'-separated) as
// a tar.gz to w, every entry stamped with modTime.
func Write(w io.Writer, files map[string][]byte, modTime time.Time) error {
	gz, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	modTime = modTime.UTC().Truncate(time.Second)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := checkName(name); err != nil {
			return err
		}
		data := files[name]
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: modTime, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// Read reads an archive Write produced and returns its files.
func Read(r io.Reader) (map[string][]byte, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	defer func() { _ = gz.Close() }() // a reader: nothing to flush
	tr := tar.NewReader(gz)
	files := map[string][]byte{}
	var total int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("%w: %q is not a regular file", ErrInvalid, hdr.Name)
		}
		if err := checkName(hdr.Name); err != nil {
			return nil, err
		}
		if _, dup := files[hdr.Name]; dup {
			return nil, fmt.Errorf("%w: %q appears twice", ErrInvalid, hdr.Name)
		}
		if len(files) >= MaxFiles {
			return nil, fmt.Errorf("%w: more than %d files", ErrInvalid, MaxFiles)
		}
		if hdr.Size < 0 || hdr.Size > MaxFileBytes || total+hdr.Size > MaxTotal {
			return nil, fmt.Errorf("%w: %q is too large", ErrInvalid, hdr.Name)
		}
		total += hdr.Size
		data, err := io.ReadAll(io.LimitReader(tr, hdr.Size))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		files[hdr.Name] = data
	}
}

// checkName accepts clean, relative, '/'-separated names.
func checkName(name string) error {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "\\") || strings.ContainsRune(name, 0) ||
		path.Clean(name) != name || name == "." || name == ".." || strings.HasPrefix(name, "../") {
		return fmt.Errorf("%w: unsafe name %q", ErrInvalid, name)
	}
	return nil
}
