// Package blobtest is a conformance suite for blob.Store implementations.
// Every driver (FS today, S3/MinIO later) runs the same tests, which is what
// keeps the drivers interchangeable.
package blobtest

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/stretchr/testify/require"
)

// Run runs the conformance suite. newStore must return an empty store that
// the test may freely write to; it is called once per subtest.
func Run(t *testing.T, newStore func(t *testing.T) blob.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s blob.Store)
	}{
		{"RoundTrip", testRoundTrip},
		{"ContentType", testContentType},
		{"UnknownSize", testUnknownSize},
		{"ShortBody", testShortBody},
		{"NotFound", testNotFound},
		{"DeleteMissing", testDeleteMissing},
		{"Overwrite", testOverwrite},
		{"NestedKeys", testNestedKeys},
		{"ListPrefixOrder", testListPrefixOrder},
		{"ListEarlyBreak", testListEarlyBreak},
		{"InvalidKeys", testInvalidKeys},
		{"InvalidPrefix", testInvalidPrefix},
		{"CanceledContext", testCanceledContext},
		{"ConcurrentDifferentKeys", testConcurrentDifferentKeys},
		{"ConcurrentSameKey", testConcurrentSameKey},
		{"ConcurrentPutDelete", testConcurrentPutDelete},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}

// InvalidKeys is the table of keys every driver must reject with
// blob.ErrInvalidKey. Exported so driver-specific tests can also check that
// nothing was written for them.
var InvalidKeys = []struct {
	Name, Key string
}{
	{"empty", ""},
	{"parent traversal", "../x"},
	{"inner traversal", "a/../b"},
	{"trailing dotdot", "a/.."},
	{"bare dotdot", ".."},
	{"dot segment", "a/./b"},
	{"bare dot", "."},
	{"absolute", "/abs"},
	{"backslash", `a\b`},
	{"backslash traversal", `..\x`},
	{"NUL", "a\x00b"},
	{"newline", "a\nb"},
	{"DEL", "a\x7fb"},
	{"C1 control", "a\u0085b"},
	{"empty segment", "a//b"},
	{"trailing slash", "a/"},
	{"invalid UTF-8", "a\xffb"},
	{"too long", strings.Repeat("k", blob.MaxKeyLen+1)},
}

// ETag returns the ETag every driver must report for content.
func ETag(content []byte) string {
	sum := md5.Sum(content)
	return hex.EncodeToString(sum[:])
}

func testRoundTrip(t *testing.T, s blob.Store) {
	ctx := context.Background()
	content := []byte("hello, memory")

	put, err := blob.PutBytes(ctx, s, "greeting.txt", content, blob.PutOptions{})
	require.NoError(t, err)
	require.Equal(t, "greeting.txt", put.Key)
	require.Equal(t, int64(len(content)), put.Size)
	require.Equal(t, ETag(content), put.ETag)
	require.False(t, put.ModTime.IsZero())

	got, info, err := blob.GetBytes(ctx, s, "greeting.txt")
	require.NoError(t, err)
	require.Equal(t, content, got)
	require.Equal(t, put.ETag, info.ETag)
	require.Equal(t, put.Size, info.Size)

	st, err := s.Stat(ctx, "greeting.txt")
	require.NoError(t, err)
	require.Equal(t, put.Key, st.Key)
	require.Equal(t, put.Size, st.Size)
	require.Equal(t, put.ETag, st.ETag)
	require.Equal(t, put.ContentType, st.ContentType)
	require.True(t, put.ModTime.Equal(st.ModTime), "put %v stat %v", put.ModTime, st.ModTime)

	listed := collect(t, s, "")
	require.Len(t, listed, 1)
	require.Equal(t, st.Key, listed[0].Key)
	require.Equal(t, st.ETag, listed[0].ETag)
	require.Equal(t, st.Size, listed[0].Size)

	// Empty objects are objects too.
	empty, err := blob.PutBytes(ctx, s, "empty", nil, blob.PutOptions{})
	require.NoError(t, err)
	require.Equal(t, ETag(nil), empty.ETag)
	got, _, err = blob.GetBytes(ctx, s, "empty")
	require.NoError(t, err)
	require.Empty(t, got)

	require.NoError(t, s.Delete(ctx, "greeting.txt"))
	_, err = s.Stat(ctx, "greeting.txt")
	require.ErrorIs(t, err, blob.ErrNotFound)
	_, _, err = s.Get(ctx, "greeting.txt")
	require.ErrorIs(t, err, blob.ErrNotFound)
	require.Equal(t, []string{"empty"}, keys(collect(t, s, "")))
}

func testContentType(t *testing.T, s blob.Store) {
	ctx := context.Background()
	info, err := blob.PutBytes(ctx, s, "doc.md", []byte("# hi"), blob.PutOptions{ContentType: "text/markdown"})
	require.NoError(t, err)
	require.Equal(t, "text/markdown", info.ContentType)
	st, err := s.Stat(ctx, "doc.md")
	require.NoError(t, err)
	require.Equal(t, "text/markdown", st.ContentType)

	info, err = blob.PutBytes(ctx, s, "raw", []byte{1}, blob.PutOptions{})
	require.NoError(t, err)
	require.Equal(t, blob.DefaultContentType, info.ContentType)
}

func testUnknownSize(t *testing.T, s blob.Store) {
	ctx := context.Background()
	content := bytes.Repeat([]byte("0123456789"), 100_000) // 1 MB, several read calls
	// A reader that hides its length, like a network body.
	r := io.MultiReader(bytes.NewReader(content[:3]), bytes.NewReader(content[3:]))
	info, err := s.Put(ctx, "big.bin", r, -1, blob.PutOptions{})
	require.NoError(t, err)
	require.Equal(t, int64(len(content)), info.Size)
	require.Equal(t, ETag(content), info.ETag)
	got, _, err := blob.GetBytes(ctx, s, "big.bin")
	require.NoError(t, err)
	require.True(t, bytes.Equal(content, got))
}

func testShortBody(t *testing.T, s blob.Store) {
	ctx := context.Background()
	_, err := s.Put(ctx, "short", strings.NewReader("abc"), 10, blob.PutOptions{})
	require.Error(t, err)
	_, err = s.Stat(ctx, "short")
	require.ErrorIs(t, err, blob.ErrNotFound, "a failed Put must store nothing")

	// An existing object survives a failed overwrite.
	_, err = blob.PutBytes(ctx, s, "keep", []byte("old"), blob.PutOptions{})
	require.NoError(t, err)
	_, err = s.Put(ctx, "keep", strings.NewReader("ne"), 3, blob.PutOptions{})
	require.Error(t, err)
	got, _, err := blob.GetBytes(ctx, s, "keep")
	require.NoError(t, err)
	require.Equal(t, "old", string(got))

	// Only size bytes are consumed when the reader has more.
	info, err := s.Put(ctx, "exact", strings.NewReader("abcdef"), 3, blob.PutOptions{})
	require.NoError(t, err)
	require.Equal(t, int64(3), info.Size)
	got, _, err = blob.GetBytes(ctx, s, "exact")
	require.NoError(t, err)
	require.Equal(t, "abc", string(got))
}

func testNotFound(t *testing.T, s blob.Store) {
	ctx := context.Background()
	_, _, err := s.Get(ctx, "missing")
	require.ErrorIs(t, err, blob.ErrNotFound)
	_, err = s.Stat(ctx, "missing/deeper")
	require.ErrorIs(t, err, blob.ErrNotFound)

	// A "directory" is not an object.
	_, err = blob.PutBytes(ctx, s, "dir/file", []byte("x"), blob.PutOptions{})
	require.NoError(t, err)
	_, err = s.Stat(ctx, "dir")
	require.ErrorIs(t, err, blob.ErrNotFound)
	_, _, err = s.Get(ctx, "dir")
	require.ErrorIs(t, err, blob.ErrNotFound)
	// Nor is a path below an object.
	_, err = s.Stat(ctx, "dir/file/below")
	require.ErrorIs(t, err, blob.ErrNotFound)
}

func testDeleteMissing(t *testing.T, s blob.Store) {
	ctx := context.Background()
	require.NoError(t, s.Delete(ctx, "never-existed"))
	require.NoError(t, s.Delete(ctx, "no/such/nested/key"))
	_, err := blob.PutBytes(ctx, s, "x", []byte("1"), blob.PutOptions{})
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, "x"))
	require.NoError(t, s.Delete(ctx, "x"), "second delete")
	// Deleting a prefix that is not an object leaves the objects below it.
	_, err = blob.PutBytes(ctx, s, "p/q", []byte("1"), blob.PutOptions{})
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, "p"))
	_, err = s.Stat(ctx, "p/q")
	require.NoError(t, err)
}

func testOverwrite(t *testing.T, s blob.Store) {
	ctx := context.Background()
	first, err := blob.PutBytes(ctx, s, "k", []byte("version one"), blob.PutOptions{ContentType: "text/plain"})
	require.NoError(t, err)
	second, err := blob.PutBytes(ctx, s, "k", []byte("v2"), blob.PutOptions{})
	require.NoError(t, err)
	require.NotEqual(t, first.ETag, second.ETag)
	require.Equal(t, ETag([]byte("v2")), second.ETag)

	st, err := s.Stat(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, second.ETag, st.ETag)
	require.Equal(t, int64(2), st.Size)
	require.Equal(t, blob.DefaultContentType, st.ContentType, "content type belongs to the version")
	got, _, err := blob.GetBytes(ctx, s, "k")
	require.NoError(t, err)
	require.Equal(t, "v2", string(got))
	require.Len(t, collect(t, s, ""), 1)
}

func testNestedKeys(t *testing.T, s blob.Store) {
	ctx := context.Background()
	keys := []string{
		"agents/gardener/runs/run_1/transcript.json",
		"agents/gardener/runs/run_2/transcript.json",
		"agents/pruner/avatar.png",
		"top",
		".hidden/name with spaces",
		"unicode/ümlaut/日本",
	}
	for _, k := range keys {
		_, err := blob.PutBytes(ctx, s, k, []byte(k), blob.PutOptions{})
		require.NoError(t, err, k)
	}
	for _, k := range keys {
		got, info, err := blob.GetBytes(ctx, s, k)
		require.NoError(t, err, k)
		require.Equal(t, k, string(got))
		require.Equal(t, k, info.Key)
	}
	require.NoError(t, s.Delete(ctx, "agents/pruner/avatar.png"))
	_, err := s.Stat(ctx, "agents/gardener/runs/run_1/transcript.json")
	require.NoError(t, err)
	require.Len(t, collect(t, s, "agents/"), 2)
	// After all keys under a prefix are gone, the prefix itself can be a key.
	require.NoError(t, s.Delete(ctx, "agents/gardener/runs/run_1/transcript.json"))
	require.NoError(t, s.Delete(ctx, "agents/gardener/runs/run_2/transcript.json"))
	_, err = blob.PutBytes(ctx, s, "agents", []byte("now a key"), blob.PutOptions{})
	require.NoError(t, err)
}

func testListPrefixOrder(t *testing.T, s blob.Store) {
	ctx := context.Background()
	// Chosen so that directory-walk order differs from key order: '-' and
	// '.' sort before '/', and "a/b" must come after "a.txt" and "a-1".
	all := []string{
		"a/b", "a/c/d", "a/c/e", "a.txt", "a-1", "ab", "b", "a/ba", "a/b0", "z/y/x",
		"a/c0", "B", "a/c/d.md", "a/c/d-", "0",
	}
	for _, k := range all {
		_, err := blob.PutBytes(ctx, s, k, []byte(k), blob.PutOptions{})
		require.NoError(t, err, k)
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", []string{"0", "B", "a-1", "a.txt", "a/b", "a/b0", "a/ba", "a/c/d", "a/c/d-", "a/c/d.md", "a/c/e", "a/c0", "ab", "b", "z/y/x"}},
		{"a", []string{"a-1", "a.txt", "a/b", "a/b0", "a/ba", "a/c/d", "a/c/d-", "a/c/d.md", "a/c/e", "a/c0", "ab"}},
		{"a/", []string{"a/b", "a/b0", "a/ba", "a/c/d", "a/c/d-", "a/c/d.md", "a/c/e", "a/c0"}},
		{"a/b", []string{"a/b", "a/b0", "a/ba"}},
		{"a/c", []string{"a/c/d", "a/c/d-", "a/c/d.md", "a/c/e", "a/c0"}},
		{"a/c/", []string{"a/c/d", "a/c/d-", "a/c/d.md", "a/c/e"}},
		{"a/c/d", []string{"a/c/d", "a/c/d-", "a/c/d.md"}},
		{"a/c/d.", []string{"a/c/d.md"}},
		{"z/y/x", []string{"z/y/x"}},
		{"z/y/x/", nil},
		{"nothing", nil},
		{"nothing/here/", nil},
		{"b/", nil}, // "b" is an object, not a directory
	} {
		t.Run(fmt.Sprintf("prefix=%q", tc.prefix), func(t *testing.T) {
			require.Equal(t, tc.want, keys(collect(t, s, tc.prefix)))
		})
	}
}

func testListEarlyBreak(t *testing.T, s blob.Store) {
	ctx := context.Background()
	for _, k := range []string{"a/1", "a/2", "b/1", "c"} {
		_, err := blob.PutBytes(ctx, s, k, []byte(k), blob.PutOptions{})
		require.NoError(t, err)
	}
	var got []string
	for info, err := range s.List(ctx, "") {
		require.NoError(t, err)
		got = append(got, info.Key)
		if len(got) == 2 {
			break
		}
	}
	require.Equal(t, []string{"a/1", "a/2"}, got)
}

func testInvalidKeys(t *testing.T, s blob.Store) {
	ctx := context.Background()
	for _, tc := range InvalidKeys {
		t.Run(tc.Name, func(t *testing.T) {
			require.ErrorIs(t, blob.ValidateKey(tc.Key), blob.ErrInvalidKey)
			_, err := blob.PutBytes(ctx, s, tc.Key, []byte("x"), blob.PutOptions{})
			require.ErrorIs(t, err, blob.ErrInvalidKey)
			_, _, err = s.Get(ctx, tc.Key)
			require.ErrorIs(t, err, blob.ErrInvalidKey)
			_, err = s.Stat(ctx, tc.Key)
			require.ErrorIs(t, err, blob.ErrInvalidKey)
			require.ErrorIs(t, s.Delete(ctx, tc.Key), blob.ErrInvalidKey)
		})
	}
	require.Empty(t, collect(t, s, ""), "nothing may be stored for invalid keys")
}

func testInvalidPrefix(t *testing.T, s blob.Store) {
	ctx := context.Background()
	for _, p := range []string{"../", "/a", "a//", `a\`, "a\x00", "./x"} {
		var errs []error
		for _, err := range s.List(ctx, p) {
			errs = append(errs, err)
		}
		require.Len(t, errs, 1, "prefix %q", p)
		require.ErrorIs(t, errs[0], blob.ErrInvalidKey, "prefix %q", p)
	}
	// Partial last segments are fine, even dotted ones.
	for _, p := range []string{"a/", "a/.", "a/..", ".", ".."} {
		require.Empty(t, collect(t, s, p), "prefix %q", p)
	}
}

func testCanceledContext(t *testing.T, s blob.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := blob.PutBytes(ctx, s, "k", []byte("x"), blob.PutOptions{})
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.Stat(context.Background(), "k")
	require.ErrorIs(t, err, blob.ErrNotFound)

	// Cancellation in the middle of the body aborts the Put.
	ctx, cancel = context.WithCancel(context.Background())
	r := &cancelAfter{r: bytes.NewReader(make([]byte, 1<<20)), n: 1 << 10, cancel: cancel}
	_, err = s.Put(ctx, "k", r, 1<<20, blob.PutOptions{})
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.Stat(context.Background(), "k")
	require.ErrorIs(t, err, blob.ErrNotFound)
}

// cancelAfter cancels its context once n bytes have been read.
type cancelAfter struct {
	r      io.Reader
	n      int
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	if c.n <= 0 {
		c.cancel()
	}
	if len(p) > 512 {
		p = p[:512]
	}
	n, err := c.r.Read(p)
	c.n -= n
	return n, err
}

func testConcurrentDifferentKeys(t *testing.T, s blob.Store) {
	ctx := context.Background()
	const n = 32
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			// Shared parent directories exercise concurrent mkdir.
			key := fmt.Sprintf("shared/%d/obj", i%4) + fmt.Sprint(i)
			_, err := blob.PutBytes(ctx, s, key, bytes.Repeat([]byte{byte(i)}, 10_000+i), blob.PutOptions{})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	listed := collect(t, s, "shared/")
	require.Len(t, listed, n)
	for _, info := range listed {
		got, _, err := blob.GetBytes(ctx, s, info.Key)
		require.NoError(t, err)
		require.Equal(t, info.Size, int64(len(got)))
		require.Equal(t, ETag(got), info.ETag)
		for _, b := range got {
			require.Equal(t, got[0], b, "torn object %s", info.Key)
		}
	}
}

// testConcurrentSameKey races writers of one key against readers. Every
// read must see exactly one writer's complete content with that content's
// ETag; the final object must be one complete version.
func testConcurrentSameKey(t *testing.T, s blob.Store) {
	ctx := context.Background()
	const writers, rounds = 8, 5
	content := func(i int) []byte { return bytes.Repeat([]byte{byte('A' + i)}, 64<<10+i*1000) }
	check := func(got []byte, info blob.Info) error {
		if len(got) == 0 {
			return errors.New("empty read")
		}
		for _, b := range got {
			if b != got[0] {
				return fmt.Errorf("torn read: mixed %q and %q", got[0], b)
			}
		}
		if want := content(int(got[0] - 'A')); !bytes.Equal(want, got) {
			return fmt.Errorf("truncated read: %d bytes of %q", len(got), got[0])
		}
		if info.ETag != ETag(got) {
			return fmt.Errorf("etag %s does not match content %q", info.ETag, got[0])
		}
		return nil
	}

	_, err := blob.PutBytes(ctx, s, "hot/key", content(0), blob.PutOptions{})
	require.NoError(t, err)

	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds*2)
	for i := range writers {
		wg.Go(func() {
			for range rounds {
				if _, err := blob.PutBytes(ctx, s, "hot/key", content(i), blob.PutOptions{}); err != nil {
					errs <- err
				}
			}
		})
		wg.Go(func() {
			for range rounds {
				got, info, err := blob.GetBytes(ctx, s, "hot/key")
				if err == nil {
					err = check(got, info)
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	got, info, err := blob.GetBytes(ctx, s, "hot/key")
	require.NoError(t, err)
	require.NoError(t, check(got, info))
	st, err := s.Stat(ctx, "hot/key")
	require.NoError(t, err)
	require.Equal(t, info.ETag, st.ETag)
	require.Equal(t, []string{"hot/key"}, keys(collect(t, s, "")))
}

// testConcurrentPutDelete churns sibling keys under shared prefixes, so that
// one goroutine's Delete may remove a (filesystem) parent directory while
// another goroutine's Put is about to use it.
func testConcurrentPutDelete(t *testing.T, s blob.Store) {
	ctx := context.Background()
	const workers, rounds = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds*2)
	for i := range workers {
		wg.Go(func() {
			key := fmt.Sprintf("churn/a/b/%d", i)
			for r := range rounds {
				if _, err := blob.PutBytes(ctx, s, key, []byte(fmt.Sprint(r)), blob.PutOptions{}); err != nil {
					errs <- err
					continue
				}
				if err := s.Delete(ctx, key); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Empty(t, collect(t, s, ""))
	_, err := blob.PutBytes(ctx, s, "churn", []byte("prefix is free again"), blob.PutOptions{})
	require.NoError(t, err)
}

func collect(t *testing.T, s blob.Store, prefix string) []blob.Info {
	t.Helper()
	var out []blob.Info
	for info, err := range s.List(context.Background(), prefix) {
		require.NoError(t, err, "list %q", prefix)
		out = append(out, info)
	}
	return out
}

func keys(infos []blob.Info) []string {
	var out []string
	for _, i := range infos {
		out = append(out, i.Key)
	}
	return out
}
