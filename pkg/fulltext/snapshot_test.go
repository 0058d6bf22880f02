package fulltext

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tarEntry is one entry of a hand-made archive.
type tarEntry struct {
	hdr  tar.Header
	body []byte
}

func tarGz(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := e.hdr
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if h.Mode == 0 {
			h.Mode = 0o600
		}
		require.NoError(t, tw.WriteHeader(&h))
		_, err := tw.Write(e.body)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// untarGz reads an archive back into its entries.
func untarGz(t *testing.T, b []byte) []tarEntry {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	var out []tarEntry
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		body, err := io.ReadAll(tr)
		require.NoError(t, err)
		out = append(out, tarEntry{hdr: *h, body: body})
	}
}

func reg(name string, body []byte) tarEntry {
	return tarEntry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name}, body: body}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func generations(t *testing.T, base string) []string {
	t.Helper()
	gens, err := filepath.Glob(filepath.Join(base, "gen-*"))
	require.NoError(t, err)
	for i, g := range gens {
		gens[i] = filepath.Base(g)
	}
	return gens
}

func TestSnapshotRestore(t *testing.T) {
	ctx := context.Background()
	srcBase := t.TempDir()
	src := seededIndex(t, srcBase)
	require.NoError(t, src.Apply(ctx, Batch{Commit: "c2",
		Upserts: []File{file("memory/cur/facts.md", "cur", 1, "facts", "c2", "# Facts: cur\n\n## Storage\n- MinIO snapshots go to tape\n")},
		Deletes: []string{"memory/ops/facts.md"}}))

	var buf bytes.Buffer
	st, err := src.WriteSnapshot(ctx, &buf)
	require.NoError(t, err)
	require.Equal(t, src.State(), st)
	require.Equal(t, []string{"gen-1"}, generations(t, srcBase), "the scratch copy is removed")
	// bluge's Backup writes a flat directory: segments and one snapshot file.
	for _, e := range untarGz(t, buf.Bytes()) {
		require.Regexp(t, regexp.MustCompile(`^[0-9a-f]{12}\.(seg|snp)$`), e.hdr.Name)
	}

	dstBase := t.TempDir()
	dst, err := Open(dstBase)
	require.NoError(t, err)
	restored, err := dst.RestoreSnapshot(ctx, bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	require.Equal(t, st, restored)
	require.Equal(t, st, dst.State())
	require.Equal(t, src.Files(), dst.Files())
	require.Equal(t, []string{"gen-2"}, generations(t, dstBase))
	for _, q := range []Query{{Text: "minio tape"}, {Text: "minio versioning", Layer: 2}, {Text: "versioning", Kinds: []string{"source"}}} {
		want, err := src.Search(ctx, q)
		require.NoError(t, err)
		got, err := dst.Search(ctx, q)
		require.NoError(t, err)
		require.NotEmpty(t, got.Hits)
		require.Equal(t, want.Hits, got.Hits, q.Text)
	}

	// The restored generation takes batches, and survives a restart.
	require.NoError(t, dst.Apply(ctx, Batch{Commit: "c3", Upserts: []File{
		file("memory/new/facts.md", "new", 1, "facts", "c3", "# Facts: new\n\n## Zoo\n- zebras have stripes\n")}}))
	res, err := dst.Search(ctx, Query{Text: "zebras"})
	require.NoError(t, err)
	require.Equal(t, []string{"memory/new/facts.md"}, paths(res))
	require.NoError(t, dst.Close())

	dst, err = Open(dstBase)
	require.NoError(t, err)
	defer func() { require.NoError(t, dst.Close()) }()
	require.Equal(t, "c3", dst.State().LastCommit)
	require.Equal(t, 4, dst.State().Documents)
	require.Equal(t, "c3", dst.Files()["memory/new/facts.md"])
	res, err = dst.Search(ctx, Query{Text: "minio tape"})
	require.NoError(t, err)
	require.Equal(t, []string{"memory/cur/facts.md"}, paths(res))
}

func TestRestoreRejectsBadArchives(t *testing.T) {
	ctx := context.Background()
	// A real snapshot to damage.
	src := seededIndex(t, t.TempDir())
	var good bytes.Buffer
	_, err := src.WriteSnapshot(ctx, &good)
	require.NoError(t, err)
	var damagedSeg []tarEntry
	for _, e := range untarGz(t, good.Bytes()) {
		if filepath.Ext(e.hdr.Name) == ".seg" {
			for i := 100; i < len(e.body)-100; i += 7 {
				e.body[i] ^= 0x5a
			}
		}
		damagedSeg = append(damagedSeg, e)
	}

	outside := t.TempDir()
	abs := filepath.Join(outside, "abs")
	// A header claiming more than the cap, with no body behind it.
	var huge bytes.Buffer
	zw := gzip.NewWriter(&huge)
	require.NoError(t, tar.NewWriter(zw).WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "big.seg", Size: maxSnapshotBytes + 1, Mode: 0o600}))
	require.NoError(t, zw.Close())

	// The CRC in the gzip trailer is all that catches damage the tar and
	// bluge formats do not notice.
	badCRC := bytes.Clone(good.Bytes())
	badCRC[len(badCRC)-8] ^= 0xff
	// More entries than the cap, each harmless.
	defer func(n int) { maxSnapshotEntries = n }(maxSnapshotEntries)
	maxSnapshotEntries = 10
	many := make([]tarEntry, maxSnapshotEntries+1)
	for i := range many {
		many[i] = reg(fmt.Sprintf("%d.txt", i), nil)
	}

	cases := []struct {
		name    string
		archive []byte
		want    string
	}{
		{"parent", tarGz(t, reg("../x", []byte("escape"))), "not a local path"},
		{"nested", tarGz(t, reg("a/../../x", []byte("escape"))), "not a local path"},
		{"absolute", tarGz(t, reg(abs, []byte("escape"))), "not a local path"},
		{"symlink", tarGz(t, tarEntry{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: "000000000001.seg", Linkname: "/etc/passwd"}}), "unsupported entry type"},
		{"hardlink", tarGz(t, tarEntry{hdr: tar.Header{Typeflag: tar.TypeLink, Name: "000000000001.seg", Linkname: "/etc/passwd"}}), "unsupported entry type"},
		{"fifo", tarGz(t, tarEntry{hdr: tar.Header{Typeflag: tar.TypeFifo, Name: "p"}}), "unsupported entry type"},
		{"duplicate", tarGz(t, reg("a", []byte("1")), reg("a", []byte("2"))), "file exists"},
		{"not an index", tarGz(t, reg("a.bin", randomBytes(4096)), reg("notes/readme.txt", randomBytes(100))), "no index state"},
		{"empty", tarGz(t), "no index state"},
		{"damaged segment", tarGz(t, damagedSeg...), "damaged index"},
		{"too big", huge.Bytes(), "more than"},
		{"too many", tarGz(t, many...), "more than 10 entries"},
		{"bad crc", badCRC, "checksum"},
		{"truncated", good.Bytes()[:good.Len()/2], "unexpected EOF"},
		{"not gzip", []byte("plain text, not an archive"), "gzip"},
	}

	dstBase := filepath.Join(outside, "index")
	dst := seededIndex(t, dstBase)
	files := dst.Files()
	for _, c := range cases {
		name := c.name
		_, err := dst.RestoreSnapshot(ctx, bytes.NewReader(c.archive))
		require.ErrorContains(t, err, c.want, name)
		require.Equal(t, "c1", dst.State().LastCommit, name)
		require.Equal(t, files, dst.Files(), name)
		res, err := dst.Search(ctx, Query{Text: "minio"})
		require.NoError(t, err, name)
		require.NotEmpty(t, res.Hits, name)
		require.Equal(t, []string{"gen-1"}, generations(t, dstBase), name)
		for _, p := range []string{filepath.Join(dstBase, "x"), filepath.Join(outside, "x"), abs} {
			require.NoFileExists(t, p, name)
		}
	}
	// Still writable after all that.
	require.NoError(t, dst.Apply(ctx, Batch{Commit: "c2"}))
	require.Equal(t, "c2", dst.State().LastCommit)
}

func TestSnapshotCanceled(t *testing.T) {
	base := t.TempDir()
	ix := seededIndex(t, base)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ix.WriteSnapshot(ctx, io.Discard)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, []string{"gen-1"}, generations(t, base))

	var buf bytes.Buffer
	_, err = ix.WriteSnapshot(context.Background(), &buf)
	require.NoError(t, err)
	_, err = ix.RestoreSnapshot(ctx, &buf)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, []string{"gen-1"}, generations(t, base))
	require.Equal(t, "c1", ix.State().LastCommit)

	// An index that never took a batch has nothing to restore from.
	empty, err := Open(t.TempDir())
	require.NoError(t, err)
	defer func() { require.NoError(t, empty.Close()) }()
	_, err = empty.WriteSnapshot(context.Background(), io.Discard)
	require.Error(t, err)
}

func TestSnapshotWhileApplying(t *testing.T) {
	ctx := context.Background()
	src := seededIndex(t, t.TempDir())

	// Batch i adds file n<i> and sets commit c<i>, so a consistent copy
	// with LastCommit c<k> holds exactly n0..n<k> besides the seed.
	var applied atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var applyErr error
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := src.Apply(ctx, Batch{Commit: fmt.Sprintf("c%d", i), Upserts: []File{
				file(fmt.Sprintf("memory/n%d/facts.md", i), "n", 1, "facts", "v", fmt.Sprintf("# F\n\n## D\n- marker%d fact\n", i))}}); err != nil {
				applyErr = err
				return
			}
			applied.Add(1)
		}
	})
	for applied.Load() < 3 { // let some batches land first
		time.Sleep(time.Millisecond)
	}

	var restored []string
	for range 5 {
		var buf bytes.Buffer
		st, err := src.WriteSnapshot(ctx, &buf)
		require.NoError(t, err)
		dst, err := Open(t.TempDir())
		require.NoError(t, err)
		got, err := dst.RestoreSnapshot(ctx, &buf)
		require.NoError(t, err)
		require.Equal(t, st, got)

		var k int
		_, err = fmt.Sscanf(got.LastCommit, "c%d", &k)
		require.NoError(t, err, got.LastCommit)
		files := dst.Files()
		require.Len(t, files, 4+k+1)
		require.Equal(t, len(files), got.Documents)
		for i := 0; i <= k; i++ {
			require.Contains(t, files, fmt.Sprintf("memory/n%d/facts.md", i))
		}
		res, err := dst.Search(ctx, Query{Text: fmt.Sprintf("marker%d", k)})
		require.NoError(t, err)
		require.Equal(t, []string{fmt.Sprintf("memory/n%d/facts.md", k)}, paths(res))
		require.NoError(t, dst.Close())
		restored = append(restored, got.LastCommit)
	}
	close(stop)
	wg.Wait()
	require.NoError(t, applyErr)
	t.Logf("restored commits %v of %d applied", restored, applied.Load())
}

func TestRestoreWhileServing(t *testing.T) {
	ctx := context.Background()
	src := seededIndex(t, t.TempDir())
	var buf bytes.Buffer
	st, err := src.WriteSnapshot(ctx, &buf)
	require.NoError(t, err)

	base := t.TempDir()
	dst := seededIndex(t, base)
	stop := keepUsing(dst, true)
	got, err := dst.RestoreSnapshot(ctx, &buf)
	failures := stop()
	require.NoError(t, err)
	require.Equal(t, st, got)
	require.Zero(t, failures, "searches and batches go on during a restore")
	require.Equal(t, []string{"gen-2"}, generations(t, base))
	require.Equal(t, src.Files(), dst.Files())
}
