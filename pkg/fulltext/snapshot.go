package fulltext

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/blugelabs/bluge"
)

// Limits on a snapshot being restored, so a hostile or corrupt archive
// cannot fill the disk or the inode table. A real index is far below both
// (bluge keeps a few dozen segment files). Variables so tests can lower them.
var (
	maxSnapshotBytes   int64 = 8 << 30
	maxSnapshotEntries       = 100_000
)

// snapshotPrefix names the scratch directory of WriteSnapshot. It starts
// with "gen-" so that Open's removeStaleGenerations clears one left by a
// crash; nothing else parses it as a generation number.
const snapshotPrefix = "gen-snapshot-"

// WriteSnapshot writes a gzip-compressed tar of the current generation to w
// and returns the State of that copy. Searches and batches go on meanwhile;
// the copy is one point-in-time bluge snapshot, and the State is read from
// that same snapshot, so a replica restoring it catches up from
// State.LastCommit.
func (ix *Index) WriteSnapshot(ctx context.Context, w io.Writer) (State, error) {
	// A private reader rather than g.reader: Apply closes g.reader as soon
	// as ix.mu is released, and holding ix.mu for the whole copy would make
	// Apply wait, and with it (RWMutex) every new search.
	ix.mu.RLock()
	if ix.cur == nil {
		ix.mu.RUnlock()
		return State{}, errors.New("fulltext: index is closed")
	}
	r, err := ix.cur.writer.Reader()
	ix.mu.RUnlock()
	if err != nil {
		return State{}, err
	}
	defer func() { _ = r.Close() }() // a read-only snapshot: closing only releases it

	st, ok, err := readState(ctx, r)
	if err != nil {
		return State{}, err
	}
	if !ok {
		// It would not restore: RestoreSnapshot requires the state document.
		return State{}, errors.New("fulltext: snapshot: nothing indexed yet")
	}

	// Under base so the copy stays on the index's filesystem.
	tmp, err := os.MkdirTemp(ix.base, snapshotPrefix)
	if err != nil {
		return State{}, err
	}
	// Best effort: the next Open clears a leftover (removeStaleGenerations).
	defer func() { _ = os.RemoveAll(tmp) }()
	cancel := make(chan struct{})
	defer context.AfterFunc(ctx, func() { close(cancel) })()
	if err := r.Backup(tmp, cancel); err != nil {
		return State{}, fmt.Errorf("fulltext: backup: %w", err)
	}
	// bluge v0.2.2's segment writers ignore cancel, so check again.
	if err := ctx.Err(); err != nil {
		return State{}, err
	}
	if err := writeTarGz(ctx, w, tmp); err != nil {
		return State{}, fmt.Errorf("fulltext: snapshot: %w", err)
	}
	return st, nil
}

// RestoreSnapshot replaces the index with a snapshot written by
// WriteSnapshot and returns its State. The archive is unpacked into a new
// generation and checked to open as an index with a state document before
// the switch; on any error the current generation is untouched and keeps
// serving. As with Rebuild, batches applied meanwhile are dropped: the
// caller catches up from the returned State.LastCommit.
func (ix *Index) RestoreSnapshot(ctx context.Context, r io.Reader) (State, error) {
	ix.genMu.Lock()
	defer ix.genMu.Unlock()
	dir := ix.nextGeneration()
	_ = os.RemoveAll(dir) // a rebuild or restore that died half-way
	fail := func(err error) (State, error) {
		_ = os.RemoveAll(dir)
		return State{}, fmt.Errorf("fulltext: restore: %w", err)
	}
	if err := extractTarGz(ctx, r, dir); err != nil {
		return fail(err)
	}
	g, err := ix.openRestored(ctx, dir)
	if err != nil {
		return fail(err)
	}
	st := g.state // before the switch: then Apply may update it under ix.mu
	if err := ix.switchTo(g); err != nil {
		g.close()
		return State{}, err
	}
	return st, nil
}

// openRestored opens dir as a generation and checks that it is an index of
// ours: an empty or foreign directory opens as an empty bluge index, and
// only the state document tells them apart. bluge panics on some damaged
// segments (ice reads past its buffers), so a panic is turned into an error
// rather than taking the replica down.
func (ix *Index) openRestored(ctx context.Context, dir string) (g *generation, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("damaged index: %v", p)
		}
		if err != nil && g != nil {
			g.close()
			g = nil
		}
	}()
	g, err = ix.openGeneration(dir)
	if err != nil {
		return nil, err
	}
	_, ok, err := readState(ctx, g.reader)
	if err == nil && !ok {
		err = errors.New("archive has no index state")
	}
	if err == nil {
		err = ctx.Err()
	}
	return g, err
}

// readState reads the state document from r; ok is false if there is none.
func readState(ctx context.Context, r *bluge.Reader) (st State, ok bool, err error) {
	it, err := r.Search(ctx, bluge.NewTopNSearch(1, bluge.NewTermQuery(stateID).SetField("_id")))
	if err != nil {
		return State{}, false, err
	}
	m, err := it.Next()
	if err != nil || m == nil {
		return State{}, false, err
	}
	var meta []byte
	if err := m.VisitStoredFields(func(field string, value []byte) bool {
		if field == fieldMeta {
			meta = append([]byte(nil), value...)
		}
		return true
	}); err != nil {
		return State{}, false, err
	}
	if err := json.Unmarshal(meta, &st); err != nil {
		return State{}, false, fmt.Errorf("fulltext: state: %w", err)
	}
	return st, true, nil
}

// writeTarGz writes the regular files under dir to w as a gzip tar with
// slash-separated relative names. bluge's Backup writes a flat directory
// (segments *.seg and one *.snp), but nested files would work too.
func writeTarGz(ctx context.Context, w io.Writer, dir string) error {
	// BestSpeed: segments are already compact, and a replica publishes at
	// shutdown within its grace period.
	zw, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", path)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{
			Typeflag: tar.TypeReg,
			Name:     filepath.ToSlash(rel),
			Size:     info.Size(),
			Mode:     0o600,
			ModTime:  info.ModTime(),
		}); err != nil {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }() // read only
		_, err = io.CopyN(tw, f, info.Size())
		return err
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

// extractTarGz unpacks a gzip tar into dir, which it creates. It trusts
// nothing in the archive: only regular files and directories with local
// names (no absolute paths, no ".."), no links, so nothing lands outside
// dir; sizes and entry counts are capped; modes are ours, not the archive's.
func extractTarGz(ctx context.Context, r io.Reader, dir string) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return err
	}
	defer func() { _ = zr.Close() }() // a reader: nothing to flush
	if err := os.Mkdir(dir, 0o750); err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	var total int64
	for entries := 0; ; entries++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if entries >= maxSnapshotEntries {
			return fmt.Errorf("more than %d entries", maxSnapshotEntries)
		}
		// IsLocal rejects absolute paths, ".." escapes and empty names. No
		// symlink can be on the way: none is ever created below.
		if !filepath.IsLocal(hdr.Name) {
			return fmt.Errorf("%q: not a local path", hdr.Name)
		}
		target := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o750); err != nil {
				return err
			}
		case tar.TypeReg:
			if hdr.Size < 0 || hdr.Size > maxSnapshotBytes-total {
				return fmt.Errorf("more than %d bytes", maxSnapshotBytes)
			}
			total += hdr.Size
			if err := extractFile(ctx, tr, target, hdr.Size); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%q: unsupported entry type %q", hdr.Name, hdr.Typeflag)
		}
	}
	// tar stops at its end marker; reading gzip to its end also checks its
	// CRC, which catches an archive damaged in storage or transit (bluge
	// does not checksum segments).
	switch _, err := io.CopyN(io.Discard, zr, 1<<20); {
	case err == nil:
		return errors.New("trailing data after the archive")
	case !errors.Is(err, io.EOF):
		return err
	}
	// The files are synced; sync the directory too, so the generation
	// CURRENT will name survives a crash whole.
	return syncDir(dir)
}

func extractFile(ctx context.Context, r io.Reader, target string, size int64) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return err
	}
	// O_EXCL: a second entry of the same name is an error, not an overwrite.
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(f, ctxReader{ctx, r}, size); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// ctxReader stops a long copy when ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
