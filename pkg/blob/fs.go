package blob

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"iter"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// On-disk layout of an FS root:
//
//	data/<key>   object content, byte for byte, so operators can cat, rsync or
//	             back it up with ordinary tools
//	meta/<key>   JSON sidecar: ETag, content type, and the identity (size,
//	             mtime, inode) of the data file it was computed for; written
//	             in place (see writeMeta)
//	.tmp/        in-flight writes, renamed into data/ when complete
//
// Content and sidecars live in separate trees so that no key can ever collide
// with a sidecar or temp file name: FS needs no reserved key names beyond
// ValidateKey, and List never sees anything but objects.
const (
	dataDir = "data"
	metaDir = "meta"
	tmpDir  = ".tmp"

	// staleTempAge is how old a leftover temp file must be before NewFS
	// deletes it. Anything in .tmp/ at startup belongs to a crashed process,
	// but the age guard keeps a second process sharing the folder (not
	// supported, but possible by mistake) from losing an in-flight upload.
	staleTempAge = time.Hour

	// lockStripes bounds the memory of per-key locks; unrelated keys that
	// share a stripe merely serialise their (short) rename phase.
	lockStripes = 64

	// publishRetries bounds how often Put retries creating parent
	// directories that a concurrent Delete pruned as empty.
	publishRetries = 8

	dirPerm  = 0o755
	filePerm = 0o644
)

// FS is a Store on a local directory, the embedded default backend.
//
// Writes are atomic and durable: content goes to a temp file under .tmp/,
// is fsynced, renamed into place, and the parent directory is fsynced, so
// after a crash an object is either the complete old or the complete new
// version. All file access goes through os.Root, so even a symlink planted
// inside the folder cannot make FS read or write outside it.
//
// ETag: computed while Put streams the body (the bytes pass through memory
// anyway, so hashing is nearly free there) and kept in a sidecar, because
// Stat and List are the hot paths and List reports an ETag per object;
// re-hashing on every call would make them cost O(object bytes). The sidecar
// is only a cache: it records which data file (size, mtime, inode) it
// describes, and when it is missing or stale (crash between the two renames,
// file replaced by hand, restored from backup) the ETag is recomputed lazily
// and the sidecar rewritten. That is also why sidecars are not fsynced.
//
// Limits inherent to a filesystem: "a" and "a/b" cannot both exist
// (ErrKeyConflict); key segments longer than the filesystem's name limit
// (usually 255 bytes) fail; on case-insensitive filesystems keys differing
// only in case alias. Concurrent use from one process is safe; sharing a
// root between processes is not supported.
type FS struct {
	dir   string
	root  *os.Root
	locks [lockStripes]sync.Mutex
}

var _ Store = (*FS)(nil)

// NewFS opens (creating if needed) an FS rooted at root, typically
// "<data-dir>/objects". The returned FS holds the directory open; Close it
// on shutdown.
func NewFS(root string) (*FS, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("blob: fs root %q: %w", root, err)
	}
	if err := os.MkdirAll(abs, dirPerm); err != nil {
		return nil, fmt.Errorf("blob: create fs root: %w", err)
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("blob: open fs root: %w", err)
	}
	s := &FS{dir: abs, root: r}
	for _, d := range []string{dataDir, metaDir, tmpDir} {
		if err := r.Mkdir(d, dirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
			_ = r.Close()
			return nil, fmt.Errorf("blob: create %s: %w", filepath.Join(abs, d), err)
		}
		fi, err := r.Lstat(d)
		if err != nil || !fi.IsDir() {
			_ = r.Close()
			return nil, fmt.Errorf("blob: %s is not a directory (wrong fs root?)", filepath.Join(abs, d))
		}
	}
	s.cleanTemps(time.Now().Add(-staleTempAge))
	return s, nil
}

// Dir returns the absolute root directory.
func (s *FS) Dir() string { return s.dir }

// Location implements Locator: the file:// URL of the file that holds key's
// object (under the store's data folder), or key itself when key is invalid.
func (s *FS) Location(key string) string {
	rel, err := s.rel(dataDir, key)
	if err != nil || ValidateKey(key) != nil {
		return key
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(s.dir, rel))}).String()
}

// Close releases the root directory handle. The FS must not be used after.
func (s *FS) Close() error { return s.root.Close() }

// cleanTemps removes temp files left by crashed writers. Best effort.
func (s *FS) cleanTemps(cutoff time.Time) {
	entries, err := readDirAt(s.root, tmpDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err == nil && fi.ModTime().Before(cutoff) {
			_ = s.root.Remove(filepath.Join(tmpDir, e.Name()))
		}
	}
}

// rel maps key to its path relative to the root inside tree. ValidateKey
// already rules out traversal; the lexical re-check after filepath.Join is
// defence in depth against a future change to the key rules.
func (s *FS) rel(tree, key string) (string, error) {
	base := filepath.Join(s.dir, tree)
	full := filepath.Join(base, filepath.FromSlash(key))
	r, err := filepath.Rel(base, full)
	if err != nil || r == "." || r == ".." || filepath.IsAbs(r) ||
		strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%w: %q escapes the store root", ErrInvalidKey, truncate(key))
	}
	return filepath.Join(tree, r), nil
}

// paths validates key and returns its data and sidecar paths.
func (s *FS) paths(key string) (data, meta string, err error) {
	if err := ValidateKey(key); err != nil {
		return "", "", err
	}
	if data, err = s.rel(dataDir, key); err != nil {
		return "", "", err
	}
	if meta, err = s.rel(metaDir, key); err != nil {
		return "", "", err
	}
	return data, meta, nil
}

func (s *FS) lock(key string) *sync.Mutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return &s.locks[h.Sum32()%lockStripes]
}

// Put implements Store.
func (s *FS) Put(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (Info, error) {
	dataRel, metaRel, err := s.paths(key)
	if err != nil {
		return Info{}, err
	}
	if size < -1 {
		return Info{}, fmt.Errorf("blob: put %q: invalid size %d", key, size)
	}
	if err := ctx.Err(); err != nil {
		return Info{}, err
	}
	contentType := opts.ContentType
	if contentType == "" {
		contentType = DefaultContentType
	}

	tmp, f, err := s.createTemp()
	if err != nil {
		return Info{}, fmt.Errorf("blob: put %q: %w", key, err)
	}
	published := false
	defer func() {
		if !published {
			_ = s.root.Remove(tmp)
		}
	}()

	h := md5.New()
	w := io.MultiWriter(f, h)
	src := &ctxReader{ctx: ctx, r: r}
	var n int64
	if size >= 0 {
		n, err = io.CopyN(w, src, size)
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: body ended after %d of %d bytes", io.ErrUnexpectedEOF, n, size)
		}
	} else {
		n, err = io.Copy(w, src)
	}
	if err == nil {
		// The content must be on disk before the rename makes it visible,
		// or a crash could publish an empty or partial file.
		err = f.Sync()
	}
	var fi fs.FileInfo
	if err == nil {
		fi, err = f.Stat()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = ctx.Err() // last chance to abandon the write cleanly
	}
	if err != nil {
		return Info{}, fmt.Errorf("blob: put %q: %w", key, err)
	}

	rec := newMetaRecord(hex.EncodeToString(h.Sum(nil)), contentType, fi)

	// The lock keeps a concurrent Put of the same key from interleaving its
	// data rename and sidecar write with ours. Readers need no lock: the
	// sidecar names the inode it describes, so a mismatched pair is detected.
	mu := s.lock(key)
	mu.Lock()
	defer mu.Unlock()
	if err := s.publish(tmp, dataRel, true); err != nil {
		return Info{}, fmt.Errorf("blob: put %q: %w", key, err)
	}
	published = true
	s.writeMeta(metaRel, rec) // best effort: the sidecar is only a cache
	return Info{
		Key:         key,
		Size:        n,
		ETag:        rec.ETag,
		ModTime:     fi.ModTime().UTC(),
		ContentType: contentType,
	}, nil
}

// createTemp creates an exclusive temp file in .tmp/.
func (s *FS) createTemp() (string, *os.File, error) {
	for {
		name := filepath.Join(tmpDir, rand.Text()+".tmp")
		f, err := s.root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, filePerm)
		if errors.Is(err, fs.ErrExist) {
			continue // 130 random bits: practically unreachable
		}
		return name, f, err
	}
}

// publish renames the temp file tmp to dst, creating dst's parent
// directories. With durable set, new directories and the final rename are
// fsynced into their parents.
//
// The rename is tried first: the parents almost always exist, and every
// os.Root call opens each directory on the way, so checking them first cost
// more syscalls than the rename itself.
func (s *FS) publish(tmp, dst string, durable bool) error {
	for attempt := 0; ; attempt++ {
		err := s.root.Rename(tmp, dst)
		if err == nil {
			break
		}
		if fi, lerr := s.root.Lstat(dst); lerr == nil && fi.IsDir() {
			return fmt.Errorf("%w: other keys are stored below %q", ErrKeyConflict, s.keyOf(dst))
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return err
		}
		// A parent is missing (or is an object, which mkdirParents
		// reports): create it. A concurrent Delete prunes empty
		// directories, perhaps one just created: then try again.
		if attempt == publishRetries {
			return err
		}
		if err := s.mkdirParents(dst, durable); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if durable {
		return s.syncDir(filepath.Dir(dst))
	}
	return nil
}

// mkdirParents creates the missing parent directories of rel (whose first
// element is the tree, which always exists).
func (s *FS) mkdirParents(rel string, durable bool) error {
	parts := strings.Split(filepath.Dir(rel), string(filepath.Separator))
	cur := parts[0]
	for _, p := range parts[1:] {
		parent := cur
		cur = filepath.Join(cur, p)
		fi, err := s.root.Lstat(cur)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("%w: %q is an object, so it cannot also be a key prefix", ErrKeyConflict, s.keyOf(cur))
			}
			continue
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := s.root.Mkdir(cur, dirPerm); err != nil {
			if !errors.Is(err, fs.ErrExist) {
				return err
			}
			// Created concurrently, and perhaps pruned again by a Delete
			// since: that is ErrNotExist, which publish retries.
			fi, err := s.root.Lstat(cur)
			switch {
			case err != nil:
				return err
			case !fi.IsDir():
				return fmt.Errorf("%w: %q is an object, so it cannot also be a key prefix", ErrKeyConflict, s.keyOf(cur))
			}
			continue
		}
		if durable {
			if err := s.syncDir(parent); err != nil {
				return err
			}
		}
	}
	return nil
}

// keyOf turns a tree-relative path back into a key, for error messages.
func (s *FS) keyOf(rel string) string {
	_, k, _ := strings.Cut(filepath.ToSlash(rel), "/")
	return k
}

func (s *FS) syncDir(rel string) error {
	d, err := s.root.Open(rel)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return err
	}
	return d.Close()
}

// Get implements Store.
func (s *FS) Get(ctx context.Context, key string) (io.ReadCloser, Info, error) {
	dataRel, _, err := s.paths(key)
	if err != nil {
		return nil, Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return nil, Info{}, err
	}
	f, fi, err := s.openObject(key, dataRel)
	if err != nil {
		return nil, Info{}, err
	}
	info, err := s.describe(ctx, key, fi, f)
	if err != nil {
		_ = f.Close()
		return nil, Info{}, err
	}
	return f, info, nil
}

// Stat implements Store.
func (s *FS) Stat(ctx context.Context, key string) (Info, error) {
	dataRel, _, err := s.paths(key)
	if err != nil {
		return Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return Info{}, err
	}
	// Open rather than lstat so the identity checked against the sidecar and
	// the bytes hashed on a cache miss are the same file version.
	f, fi, err := s.openObject(key, dataRel)
	if err != nil {
		return Info{}, err
	}
	defer func() { _ = f.Close() }() // read only
	return s.describe(ctx, key, fi, f)
}

// openObject opens the data file for key; anything but a regular file
// (directory = only a prefix of other keys, symlink = not ours) counts as
// missing.
func (s *FS) openObject(key, dataRel string) (*os.File, fs.FileInfo, error) {
	notFound := fmt.Errorf("%w: %q", ErrNotFound, truncate(key))
	lfi, err := s.root.Lstat(dataRel)
	if isNotExist(err) {
		return nil, nil, notFound
	}
	if err != nil {
		return nil, nil, fmt.Errorf("blob: stat %q: %w", key, err)
	}
	if !lfi.Mode().IsRegular() {
		return nil, nil, notFound
	}
	f, err := s.root.Open(dataRel)
	if isNotExist(err) {
		return nil, nil, notFound
	}
	if err != nil {
		return nil, nil, fmt.Errorf("blob: open %q: %w", key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("blob: stat %q: %w", key, err)
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, nil, notFound
	}
	return f, fi, nil
}

// describe builds the Info for the data file version fi (open as f). It uses
// the sidecar when it matches that version and re-hashes otherwise. f's
// offset is left at 0.
func (s *FS) describe(ctx context.Context, key string, fi fs.FileInfo, f *os.File) (Info, error) {
	info := Info{
		Key:         key,
		Size:        fi.Size(),
		ModTime:     fi.ModTime().UTC(),
		ContentType: DefaultContentType,
	}
	id := identityOf(fi)
	rec, haveRec := s.readMeta(key)
	if haveRec && rec.identity() == id {
		info.ETag, info.ContentType = rec.ETag, rec.ContentType
		return info, nil
	}

	// Cache miss: hash this exact version through the open descriptor.
	h := md5.New()
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Info{}, fmt.Errorf("blob: hash %q: %w", key, err)
	}
	if _, err := io.Copy(h, &ctxReader{ctx: ctx, r: f}); err != nil {
		return Info{}, fmt.Errorf("blob: hash %q: %w", key, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Info{}, fmt.Errorf("blob: hash %q: %w", key, err)
	}
	info.ETag = hex.EncodeToString(h.Sum(nil))
	// Same bytes as the stale record (e.g. restored from backup with a new
	// inode): its content type still applies.
	if haveRec && rec.ETag == info.ETag && rec.Size == info.Size && rec.ContentType != "" {
		info.ContentType = rec.ContentType
	}
	s.repairMeta(key, newMetaRecord(info.ETag, info.ContentType, fi))
	return info, nil
}

// repairMeta rewrites the sidecar after a cache miss, unless the object was
// replaced meanwhile (then the new version's Put wrote the right sidecar).
// Best effort: failure only means the next reader hashes again.
func (s *FS) repairMeta(key string, rec metaRecord) {
	dataRel, metaRel, err := s.paths(key)
	if err != nil {
		return
	}
	mu := s.lock(key)
	mu.Lock()
	defer mu.Unlock()
	fi, err := s.root.Lstat(dataRel)
	if err != nil || identityOf(fi) != rec.identity() {
		return
	}
	s.writeMeta(metaRel, rec)
}

// Delete implements Store.
func (s *FS) Delete(ctx context.Context, key string) error {
	dataRel, metaRel, err := s.paths(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	mu := s.lock(key)
	mu.Lock()
	defer mu.Unlock()

	// Sidecar first: a crash in between leaves data without a sidecar,
	// which heals itself; the other order could strand a sidecar.
	if err := s.root.Remove(metaRel); err == nil {
		s.pruneEmptyParents(metaRel)
	}

	fi, err := s.root.Lstat(dataRel)
	if isNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("blob: delete %q: %w", key, err)
	}
	if fi.IsDir() {
		return nil // "key" is only a prefix of other keys: no such object
	}
	if err := s.root.Remove(dataRel); err != nil {
		if isNotExist(err) {
			return nil
		}
		return fmt.Errorf("blob: delete %q: %w", key, err)
	}
	// Make the removal durable; the parent may already have been pruned by a
	// concurrent Delete, which is fine.
	if err := s.syncDir(filepath.Dir(dataRel)); err != nil && !isNotExist(err) {
		return fmt.Errorf("blob: delete %q: %w", key, err)
	}
	s.pruneEmptyParents(dataRel)
	return nil
}

// pruneEmptyParents removes now-empty directories above rel, stopping at the
// tree root, so that deleted prefixes do not pile up as empty directories
// and a later Put of a key equal to a former prefix does not conflict.
// Remove fails on non-empty directories, which ends the walk; a concurrent
// Put that loses its freshly created directory retries (see publish).
func (s *FS) pruneEmptyParents(rel string) {
	for dir := filepath.Dir(rel); strings.ContainsRune(dir, filepath.Separator); dir = filepath.Dir(dir) {
		if s.root.Remove(dir) != nil {
			return
		}
	}
}

// List implements Store. It walks only the directory named by prefix's
// complete segments, and visits entries in an order that yields keys
// already sorted, without collecting them first: within a directory, a
// subdirectory "d" sorts as "d/", exactly where its keys sort among the
// sibling file keys.
func (s *FS) List(ctx context.Context, prefix string) iter.Seq2[Info, error] {
	return func(yield func(Info, error) bool) {
		if err := validatePrefix(prefix); err != nil {
			yield(Info{}, err)
			return
		}
		startDir := prefix[:strings.LastIndex(prefix, "/")+1]
		s.walk(ctx, strings.TrimSuffix(startDir, "/"), prefix, yield)
	}
}

// walk lists the objects below the key directory dirKey ("" = all) whose
// keys start with prefix. It reports false once iteration must stop.
func (s *FS) walk(ctx context.Context, dirKey, prefix string, yield func(Info, error) bool) bool {
	rel, metaRel := dataDir, metaDir
	if dirKey != "" {
		var err error
		if rel, err = s.rel(dataDir, dirKey); err != nil {
			return yield(Info{}, err)
		}
		if metaRel, err = s.rel(metaDir, dirKey); err != nil {
			return yield(Info{}, err)
		}
	}
	dir, err := openDirAt(s.root, rel)
	if isNotExist(err) {
		return true // prefix matches nothing, or a concurrent Delete pruned it
	}
	if err != nil {
		return yield(Info{}, fmt.Errorf("blob: list %q: %w", prefix, err))
	}
	return s.walkDir(ctx, &listDir{data: dir, name: metaRel}, dirKey, prefix, yield)
}

// listDir is a directory List walks, open as a root of its own, with its
// sidecars' directory opened when first needed. Every os.Root call opens
// each directory on its path, so describing objects through their own
// directory, and opening a subdirectory through its parent, costs a call
// where going through the store's root cost one per path segment, for
// every object of a listing (docs/performance.md has the figures).
type listDir struct {
	data       *os.Root
	meta       *os.Root
	metaOpened bool
	parent     *listDir // nil: the top, whose sidecars are name in the store's root
	name       string
}

// sidecars returns the directory of d's sidecars, nil if it cannot be
// opened (objects are then described the slow way).
func (d *listDir) sidecars(s *FS) *os.Root {
	if !d.metaOpened {
		d.metaOpened = true
		if d.parent == nil {
			d.meta, _ = openDirAt(s.root, d.name)
		} else if pm := d.parent.sidecars(s); pm != nil {
			d.meta, _ = openDirAt(pm, d.name)
		}
	}
	return d.meta
}

// close closes d's directories, which were only read.
func (d *listDir) close() {
	_ = d.data.Close()
	if d.meta != nil {
		_ = d.meta.Close()
	}
}

// walkDir walks d (the key directory dirKey) and closes it.
func (s *FS) walkDir(ctx context.Context, d *listDir, dirKey, prefix string, yield func(Info, error) bool) bool {
	defer d.close()
	entries, err := readDirAt(d.data, ".")
	if isNotExist(err) {
		return true // pruned by a concurrent Delete
	}
	if err != nil {
		return yield(Info{}, fmt.Errorf("blob: list %q: %w", prefix, err))
	}
	sortName := func(e fs.DirEntry) string {
		if e.IsDir() {
			return e.Name() + "/"
		}
		return e.Name()
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(sortName(a), sortName(b)) })

	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			yield(Info{}, err)
			return false
		}
		key := e.Name()
		if dirKey != "" {
			key = dirKey + "/" + key
		}
		if e.IsDir() {
			if !strings.HasPrefix(key+"/", prefix) {
				continue
			}
			sub, err := openDirAt(d.data, e.Name())
			if isNotExist(err) {
				continue // pruned by a concurrent Delete
			}
			if err != nil {
				return yield(Info{}, fmt.Errorf("blob: list %q: %w", prefix, err))
			}
			if !s.walkDir(ctx, &listDir{data: sub, parent: d, name: e.Name()}, key, prefix, yield) {
				return false
			}
			continue
		}
		// Skip symlinks and files whose names are not valid keys (placed by
		// hand): Get could not address them either.
		if !e.Type().IsRegular() || !strings.HasPrefix(key, prefix) || ValidateKey(key) != nil {
			continue
		}
		info, err := s.statForList(ctx, key, d.data, d.sidecars(s), e.Name())
		if errors.Is(err, ErrNotFound) {
			continue // deleted while listing
		}
		if !yield(info, err) || err != nil {
			return false
		}
	}
	return true
}

// statForList is Stat minus the open when the sidecar is fresh, since List
// may describe many objects. The object is name in dir, its sidecar name in
// meta (nil when its directory could not be opened).
func (s *FS) statForList(ctx context.Context, key string, dir, meta *os.Root, name string) (Info, error) {
	fi, err := dir.Lstat(name)
	if isNotExist(err) {
		return Info{}, ErrNotFound
	}
	if err != nil {
		return Info{}, fmt.Errorf("blob: stat %q: %w", key, err)
	}
	if meta != nil {
		if rec, ok := readMetaAt(meta, name); ok && fi.Mode().IsRegular() && rec.identity() == identityOf(fi) {
			return Info{Key: key, Size: fi.Size(), ETag: rec.ETag, ModTime: fi.ModTime().UTC(), ContentType: rec.ContentType}, nil
		}
	}
	testHookListStat(key)
	return s.Stat(ctx, key)
}

// testHookListStat is called when List describes an object with Stat.
var testHookListStat = func(key string) {}

// openDirAt opens directory name of root as a root of its own. An object
// there (a file where a directory was looked for) counts as missing, like
// ENOTDIR.
func openDirAt(root *os.Root, name string) (*os.Root, error) {
	d, err := root.OpenRoot(name)
	if err != nil && !isNotExist(err) {
		if fi, lerr := root.Lstat(name); lerr == nil && !fi.IsDir() {
			return nil, fmt.Errorf("%w: %s", syscall.ENOTDIR, name)
		}
	}
	return d, err
}

// readDirAt lists directory name of root.
func readDirAt(root *os.Root, name string) ([]fs.DirEntry, error) {
	d, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = d.Close() }() // read only
	return d.ReadDir(-1)
}

// isNotExist also treats ENOTDIR as missing: looking up "a/b" when "a" is an
// object fails that way, and "a/b" indeed does not exist.
func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// fileIdentity identifies one version of a data file. Put publishes by
// rename, which keeps the temp file's inode, size and mtime, so the values
// taken from the temp file before publishing match the published file, and
// any later replacement changes the inode.
type fileIdentity struct {
	size    int64
	mtimeNs int64
	ino     uint64 // 0 where the platform has no inode numbers
}

func identityOf(fi fs.FileInfo) fileIdentity {
	return fileIdentity{size: fi.Size(), mtimeNs: fi.ModTime().UnixNano(), ino: inode(fi)}
}

// metaRecord is the JSON sidecar stored at meta/<key>.
type metaRecord struct {
	ETag        string `json:"etag"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
	MTimeNs     int64  `json:"mtime_ns"`
	Ino         uint64 `json:"ino"`
}

func newMetaRecord(etag, contentType string, fi fs.FileInfo) metaRecord {
	id := identityOf(fi)
	return metaRecord{ETag: etag, ContentType: contentType, Size: id.size, MTimeNs: id.mtimeNs, Ino: id.ino}
}

func (m metaRecord) identity() fileIdentity {
	return fileIdentity{size: m.Size, mtimeNs: m.MTimeNs, ino: m.Ino}
}

// readMeta returns the sidecar for key if it exists and is well-formed.
func (s *FS) readMeta(key string) (metaRecord, bool) {
	metaRel, err := s.rel(metaDir, key)
	if err != nil {
		return metaRecord{}, false
	}
	return readMetaAt(s.root, metaRel)
}

// readMetaAt reads and checks the sidecar at name in dir.
func readMetaAt(dir *os.Root, name string) (metaRecord, bool) {
	b, err := dir.ReadFile(name)
	if err != nil {
		return metaRecord{}, false
	}
	var m metaRecord
	if json.Unmarshal(b, &m) != nil || len(m.ETag) != 2*md5.Size {
		return metaRecord{}, false
	}
	if _, err := hex.DecodeString(m.ETag); err != nil {
		return metaRecord{}, false
	}
	return m, true
}

// writeMeta writes the sidecar rec in place, best effort. No temp file and
// rename: a sidecar is only a cache, checked against the data file's
// identity and parsed strictly, so a torn or interleaved write is detected
// and recomputed, and overwriting in place keeps the inode. Creating and
// deleting an inode per Put is most of what a Put costs on ext4 without a
// journal, which skips every recently deleted inode when it allocates one.
func (s *FS) writeMeta(metaRel string, rec metaRecord) {
	b, err := json.Marshal(rec)
	if err != nil {
		return
	}
	open := func() (*os.File, error) {
		return s.root.OpenFile(metaRel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, filePerm)
	}
	// The parents almost always exist (the key was written before, or
	// another key shares them): create them only when the open says so.
	f, err := open()
	if errors.Is(err, fs.ErrNotExist) && s.mkdirParents(metaRel, false) == nil {
		f, err = open()
	}
	if err != nil {
		return
	}
	if _, err := f.Write(b); err != nil {
		_ = f.Truncate(0) // rather no sidecar than a half-written one
	}
	_ = f.Close()
}

// ctxReader stops a long copy once ctx is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
