package blob_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/blob/blobtest"
	"github.com/stretchr/testify/require"
)

func newFS(t *testing.T) *blob.FS {
	t.Helper()
	s, err := blob.NewFS(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestFSConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store { return newFS(t) })
}

// files returns the regular files under dir, relative and slash-separated.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, err := filepath.Rel(dir, p)
			require.NoError(t, err)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

func TestFSLayout(t *testing.T) {
	ctx := context.Background()
	s := newFS(t)
	_, err := blob.PutBytes(ctx, s, "a/b.txt", []byte("hi"), blob.PutOptions{})
	require.NoError(t, err)

	// Content is stored verbatim at data/<key>; the sidecar is separate and
	// no temp files remain.
	raw, err := os.ReadFile(filepath.Join(s.Dir(), "data", "a", "b.txt"))
	require.NoError(t, err)
	require.Equal(t, "hi", string(raw))
	require.ElementsMatch(t, []string{"data/a/b.txt", "meta/a/b.txt"}, files(t, s.Dir()))
}

func TestFSInvalidKeysWriteNothing(t *testing.T) {
	ctx := context.Background()
	// Put the store one level down so an escape to the parent would show.
	parent := t.TempDir()
	s, err := blob.NewFS(filepath.Join(parent, "objects"))
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()

	for _, tc := range blobtest.InvalidKeys {
		t.Run(tc.Name, func(t *testing.T) {
			_, err := blob.PutBytes(ctx, s, tc.Key, []byte("x"), blob.PutOptions{})
			require.ErrorIs(t, err, blob.ErrInvalidKey)
			require.Empty(t, files(t, parent))
		})
	}
}

func TestFSListHidesInternals(t *testing.T) {
	ctx := context.Background()
	s := newFS(t)
	_, err := blob.PutBytes(ctx, s, "k", []byte("v"), blob.PutOptions{})
	require.NoError(t, err)

	// A crashed writer's temp file, an orphan sidecar, and a symlink.
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir(), ".tmp", "ABC.tmp"), []byte("partial"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(s.Dir(), "meta", "orphan"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir(), "meta", "orphan", "x"), []byte("{}"), 0o644))
	require.NoError(t, os.Symlink("k", filepath.Join(s.Dir(), "data", "link")))

	var got []string
	for info, err := range s.List(ctx, "") {
		require.NoError(t, err)
		got = append(got, info.Key)
	}
	require.Equal(t, []string{"k"}, got)
	_, err = s.Stat(ctx, "link")
	require.ErrorIs(t, err, blob.ErrNotFound)
}

func TestFSSymlinkCannotEscape(t *testing.T) {
	ctx := context.Background()
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("top secret"), 0o644))
	s := newFS(t)
	// Someone with write access to the folder plants a directory symlink.
	require.NoError(t, os.Symlink(outside, filepath.Join(s.Dir(), "data", "evil")))

	_, _, err := s.Get(ctx, "evil/secret")
	require.Error(t, err)
	_, err = blob.PutBytes(ctx, s, "evil/new", []byte("x"), blob.PutOptions{})
	require.Error(t, err)
	_, err = os.Stat(filepath.Join(outside, "new"))
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func TestFSSidecarSelfHeals(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T, dir string)
		want   string // content after tampering
		wantCT string // content type after tampering
	}{
		{"sidecar deleted", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "meta", "doc.md")))
		}, "original", blob.DefaultContentType},
		{"sidecar garbage", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "meta", "doc.md"), []byte("{not json"), 0o644))
		}, "original", blob.DefaultContentType},
		// Sidecars are written in place: a crash or two writers racing can
		// leave one empty or with another write's tail after it.
		{"sidecar emptied", func(t *testing.T, dir string) {
			require.NoError(t, os.Truncate(filepath.Join(dir, "meta", "doc.md"), 0))
		}, "original", blob.DefaultContentType},
		{"sidecar with a tail of another write", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "meta", "doc.md")
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, append(b, `ype":"x"}`...), 0o644))
		}, "original", blob.DefaultContentType},
		{"same bytes, new inode (restored from backup)", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "data", "doc.md")
			require.NoError(t, os.WriteFile(p+".new", []byte("original"), 0o644))
			require.NoError(t, os.Rename(p+".new", p))
		}, "original", "text/markdown"},
		{"data replaced behind our back", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "data", "doc.md")
			require.NoError(t, os.WriteFile(p+".new", []byte("edited!!"), 0o644)) // same length
			require.NoError(t, os.Rename(p+".new", p))
		}, "edited!!", blob.DefaultContentType},
		{"data rewritten in place", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "data", "doc.md")
			require.NoError(t, os.WriteFile(p, []byte("in place"), 0o644))
			// Even a restored mtime does not fool the check if the size differs.
			require.NoError(t, os.Chtimes(p, time.Now(), time.Now().Add(-time.Hour)))
		}, "in place", blob.DefaultContentType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newFS(t)
			_, err := blob.PutBytes(ctx, s, "doc.md", []byte("original"), blob.PutOptions{ContentType: "text/markdown"})
			require.NoError(t, err)
			tc.tamper(t, s.Dir())

			want := blobtest.ETag([]byte(tc.want))
			st, err := s.Stat(ctx, "doc.md")
			require.NoError(t, err)
			require.Equal(t, want, st.ETag)
			got, info, err := blob.GetBytes(ctx, s, "doc.md")
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
			require.Equal(t, want, info.ETag)
			for info, err := range s.List(ctx, "") {
				require.NoError(t, err)
				require.Equal(t, want, info.ETag)
			}
			require.Equal(t, tc.wantCT, st.ContentType)

			// The sidecar was repaired: it is valid JSON naming the new ETag.
			side, err := os.ReadFile(filepath.Join(s.Dir(), "meta", "doc.md"))
			require.NoError(t, err)
			require.Contains(t, string(side), want)
		})
	}
}

func TestFSKeyConflict(t *testing.T) {
	ctx := context.Background()
	s := newFS(t)
	_, err := blob.PutBytes(ctx, s, "a", []byte("file"), blob.PutOptions{})
	require.NoError(t, err)
	_, err = blob.PutBytes(ctx, s, "a/b", []byte("x"), blob.PutOptions{})
	require.ErrorIs(t, err, blob.ErrKeyConflict)

	_, err = blob.PutBytes(ctx, s, "d/e", []byte("x"), blob.PutOptions{})
	require.NoError(t, err)
	_, err = blob.PutBytes(ctx, s, "d", []byte("x"), blob.PutOptions{})
	require.ErrorIs(t, err, blob.ErrKeyConflict)

	// Failed Puts leave no temp files behind.
	entries, err := os.ReadDir(filepath.Join(s.Dir(), ".tmp"))
	require.NoError(t, err)
	require.Empty(t, entries)
}

func TestFSDeletePrunesEmptyDirs(t *testing.T) {
	ctx := context.Background()
	s := newFS(t)
	_, err := blob.PutBytes(ctx, s, "x/y/z/obj", []byte("1"), blob.PutOptions{})
	require.NoError(t, err)
	_, err = blob.PutBytes(ctx, s, "x/keep", []byte("1"), blob.PutOptions{})
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, "x/y/z/obj"))

	for _, tree := range []string{"data", "meta"} {
		_, err = os.Stat(filepath.Join(s.Dir(), tree, "x", "y"))
		require.ErrorIs(t, err, fs.ErrNotExist, tree)
		_, err = os.Stat(filepath.Join(s.Dir(), tree, "x", "keep"))
		require.NoError(t, err, tree)
	}
	// The tree roots themselves survive deleting the last object.
	require.NoError(t, s.Delete(ctx, "x/keep"))
	require.Empty(t, files(t, s.Dir()))
	for _, d := range []string{"data", "meta", ".tmp"} {
		fi, err := os.Stat(filepath.Join(s.Dir(), d))
		require.NoError(t, err)
		require.True(t, fi.IsDir())
	}
}

func TestNewFSCleansStaleTemps(t *testing.T) {
	root := t.TempDir()
	s, err := blob.NewFS(root)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	stale := filepath.Join(root, ".tmp", "STALE.tmp")
	fresh := filepath.Join(root, ".tmp", "FRESH.tmp")
	require.NoError(t, os.WriteFile(stale, []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(fresh, []byte("x"), 0o644))
	old := time.Now().Add(-2 * time.Hour)
	require.NoError(t, os.Chtimes(stale, old, old))

	s, err = blob.NewFS(root)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	_, err = os.Stat(stale)
	require.ErrorIs(t, err, fs.ErrNotExist)
	_, err = os.Stat(fresh)
	require.NoError(t, err, "a recent temp file may belong to a live writer")
}

func TestNewFSRejectsWrongRoot(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "data"), []byte("not a dir"), 0o644))
	_, err := blob.NewFS(root)
	require.Error(t, err)
}

func TestOpenURL(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		url     string
		wantDir string
		wantErr string
	}{
		{"file URL", "file://" + filepath.ToSlash(dir) + "/a", filepath.Join(dir, "a"), ""},
		{"file URL localhost", "file://localhost" + filepath.ToSlash(dir) + "/b", filepath.Join(dir, "b"), ""},
		{"bare absolute path", filepath.Join(dir, "c"), filepath.Join(dir, "c"), ""},
		{"s3 credentials in the URL", "s3://key:secret@bucket", "", "not in the URL"},
		{"s3 without a bucket", "s3:///prefix", "", "want s3://bucket"},
		{"unknown scheme", "gs://bucket", "", "unknown scheme"},
		{"file with host", "file://host/x", "", "empty host"},
		{"file with query", "file://" + filepath.ToSlash(dir) + "?x=1", "", "no query"},
		{"empty", "", "", "empty store URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := blob.Open(ctx, tc.url)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, blob.ErrUnsupportedScheme)
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			fsStore, ok := st.(*blob.FS)
			require.True(t, ok)
			defer func() { require.NoError(t, fsStore.Close()) }()
			require.Equal(t, tc.wantDir, fsStore.Dir())
			_, err = blob.PutBytes(ctx, st, "k", []byte("v"), blob.PutOptions{})
			require.NoError(t, err)
			_, err = os.Stat(filepath.Join(tc.wantDir, "data", "k"))
			require.NoError(t, err)
		})
	}

	t.Run("relative path", func(t *testing.T) {
		t.Chdir(dir)
		st, err := blob.Open(ctx, "rel/objects")
		require.NoError(t, err)
		defer func() { require.NoError(t, st.(*blob.FS).Close()) }()
		require.Equal(t, filepath.Join(dir, "rel", "objects"), st.(*blob.FS).Dir())
	})
}

func TestValidateKeyAccepts(t *testing.T) {
	for _, k := range []string{
		"a", "a/b/c", "file.txt", ".hidden", "a/.b", "a/..b", "a..", "...", "with space",
		"ünïcödé/日本語", "memory/gardener/runs/run_01HX.md", strings.Repeat("k", blob.MaxKeyLen),
	} {
		require.NoError(t, blob.ValidateKey(k), "%q", k)
	}
}

func TestValidateKeyRejects(t *testing.T) {
	for _, tc := range blobtest.InvalidKeys {
		t.Run(tc.Name, func(t *testing.T) {
			require.ErrorIs(t, blob.ValidateKey(tc.Key), blob.ErrInvalidKey)
		})
	}
}

func TestGetBytesLimit(t *testing.T) {
	ctx := context.Background()
	s, err := blob.NewFS(t.TempDir())
	require.NoError(t, err)
	_, err = blob.PutBytes(ctx, s, "k", []byte("12345"), blob.PutOptions{})
	require.NoError(t, err)
	data, err := blob.GetBytesLimit(ctx, s, "k", 5)
	require.NoError(t, err)
	require.Equal(t, "12345", string(data))
	_, err = blob.GetBytesLimit(ctx, s, "k", 4)
	require.ErrorIs(t, err, blob.ErrTooLarge)
	_, err = blob.GetBytesLimit(ctx, s, "missing", 4)
	require.ErrorIs(t, err, blob.ErrNotFound)
}
