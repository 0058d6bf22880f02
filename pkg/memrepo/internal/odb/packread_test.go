package odb

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"
)

// gitObjects returns every object of the repository as git itself reads
// it (cat-file --batch-all-objects), by hash.
func gitObjects(t *testing.T, dir string) map[plumbing.Hash]struct {
	typ  string
	data []byte
} {
	t.Helper()
	out := []byte(mustGit(t, dir, "", "cat-file", "--batch-all-objects", "--batch"))
	objs := map[plumbing.Hash]struct {
		typ  string
		data []byte
	}{}
	r := bufio.NewReader(bytes.NewReader(out))
	for {
		line, err := r.ReadString('\n')
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		f := strings.Fields(line) // <hash> <type> <size>
		require.Len(t, f, 3, line)
		size, err := strconv.Atoi(f[2])
		require.NoError(t, err)
		data := make([]byte, size+1) // and the newline after it
		_, err = io.ReadFull(r, data)
		require.NoError(t, err)
		objs[plumbing.NewHash(f[0])] = struct {
			typ  string
			data []byte
		}{f[1], data[:size]}
	}
	return objs
}

// Every object of packs git wrote with deep delta chains, both with
// offsets to bases (OFS_DELTA, git's default) and with base names
// (REF_DELTA), reads back exactly as git reads it, through a cold cache
// and through a warm one.
func TestReadPackedMatchesGit(t *testing.T) {
	for _, ofs := range []bool{true, false} {
		t.Run(fmt.Sprintf("ofs=%v", ofs), func(t *testing.T) {
			dir := bareRepo(t)
			rng := rand.New(rand.NewPCG(1, 2))
			lines := []string{}
			var commits [][]file
			for i := range 60 {
				// Edits anywhere in growing files: long delta chains of
				// copies and inserts, some copies over 64 KiB.
				at := rng.IntN(len(lines) + 1)
				lines = append(lines[:at], append([]string{fmt.Sprintf("- fact %d about [[entity %d]] %s", i, rng.IntN(9), strings.Repeat("x", rng.IntN(80)))}, lines[at:]...)...)
				big := strings.Repeat(strings.Join(lines, "\n")+"\n", 1+i/20)
				commits = append(commits, []file{
					{"memory/a/facts.md", strings.Join(lines, "\n") + "\n"},
					{fmt.Sprintf("memory/a/runs/r%d.md", i%4), big},
					{"memory/b/empty.md", ""}})
			}
			importCommits(t, dir, "main", commits)
			mustGit(t, dir, "", "-c", fmt.Sprintf("repack.useDeltaBaseOffset=%v", ofs),
				"repack", "-a", "-d", "-f", "-q", "--window=50", "--depth=50")
			packs := packFiles(t, dir)
			require.Len(t, packs, 1)
			verify := mustGit(t, dir, "", "verify-pack", "-v", strings.TrimSuffix(packs[0], ".pack")+".idx")
			require.Contains(t, verify, "chain length = 10", "git stored long delta chains")

			want := gitObjects(t, dir)
			require.Greater(t, len(want), 200)
			store := New(dir) // a cold object cache, warm the second time
			for _, warm := range []bool{false, true} {
				for h, w := range want {
					o, err := store.Get(plumbing.AnyObject, h)
					require.NoError(t, err, "%s (warm %v)", h, warm)
					require.Equal(t, w.typ, o.Type().String(), h.String())
					got, err := CopyContent(o)
					require.NoError(t, err)
					require.True(t, bytes.Equal(w.data, got), "%s %s (warm %v)", w.typ, h, warm)
					require.Equal(t, h, o.Hash())
				}
			}
		})
	}
}

// A pack with a flipped byte anywhere fails reads with an error, never a
// panic. Only bytes no checksum covers (an entry's type bits, a base
// offset that lands on another object of the same size) can still give an
// object, and then one of the right size.
func TestReadPackedCorruption(t *testing.T) {
	dir := bareRepo(t)
	body := strings.Repeat("a line that makes git want to store deltas\n", 50)
	var commits [][]file
	for i := range 8 {
		commits = append(commits, []file{{"memory/a/facts.md", fmt.Sprint(body, i)}})
	}
	importCommits(t, dir, "main", commits)
	mustGit(t, dir, "", "repack", "-a", "-d", "-f", "-q", "--window=50")
	packs := packFiles(t, dir)
	require.Len(t, packs, 1)
	pack := packs[0]
	want := gitObjects(t, dir)
	orig, err := os.ReadFile(pack)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		data := bytes.Clone(orig)
		at := 12 + rng.IntN(len(data)-12-20) // past the header, before the trailer
		data[at] ^= byte(1 + rng.IntN(255))
		require.NoError(t, os.Chmod(pack, 0o644))
		require.NoError(t, os.WriteFile(pack, data, 0o644))
		store := New(dir)
		for h, w := range want {
			o, err := store.Get(plumbing.AnyObject, h)
			if err != nil {
				continue
			}
			got, err := CopyContent(o)
			require.NoError(t, err)
			// A flip in a zlib stream (a delta's instructions too) is
			// caught by its checksum; the headers are covered by nothing
			// but the pack trailer, which git does not check on reads
			// either.
			if !bytes.Equal(w.data, got) {
				require.Equal(t, len(w.data), len(got), "flip at %d: %s", at, h)
			}
		}
	}
}

func TestEntryHeaders(t *testing.T) {
	for _, size := range []int64{0, 1, 15, 16, 127, 128, 1 << 20, 1<<35 + 3} {
		o := &plumbing.MemoryObject{}
		o.SetType(plumbing.BlobObject)
		o.SetSize(size)
		var hdr []byte
		c := byte(plumbing.BlobObject)<<4 | byte(size&0x0f)
		for s := size >> 4; s > 0; s >>= 7 {
			hdr = append(hdr, c|0x80)
			c = byte(s & 0x7f)
		}
		hdr = append(hdr, c)
		typ, got, n, err := entryHeader(hdr)
		require.NoError(t, err)
		require.Equal(t, int(plumbing.BlobObject), typ)
		require.Equal(t, size, got)
		require.Equal(t, len(hdr), n)
	}
	_, _, _, err := entryHeader([]byte{0xb0, 0x80})
	require.Error(t, err, "a continuation with nothing after it")
	for _, back := range []int64{1, 127, 128, 16511, 16512, 1 << 40} {
		// git's encoding: last 7 bits first written at the end.
		var buf [16]byte
		pos := len(buf) - 1
		buf[pos] = byte(back & 0x7f)
		for v := back >> 7; v > 0; v >>= 7 {
			v--
			pos--
			buf[pos] = 0x80 | byte(v&0x7f)
		}
		got, n, err := baseDistance(buf[pos:])
		require.NoError(t, err)
		require.Equal(t, back, got)
		require.Equal(t, len(buf)-pos, n)
	}
}

// packFDs lists the pack files of dir this process holds open, deleted or
// not.
func packFDs(t *testing.T, dir string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	var out []string
	for _, fd := range fds {
		target, err := os.Readlink("/proc/self/fd/" + fd.Name())
		if err == nil && strings.HasPrefix(target, dir) && strings.Contains(target, ".pack") {
			out = append(out, target)
		}
	}
	return out
}

// A reader keeps each pack open while it is in use, and closes it once a
// repack has replaced it and the reader has noticed (its next miss), so
// deleted packs do not hold disk space or descriptors.
func TestPackFilesClosedWhenReplaced(t *testing.T) {
	dir := bareRepo(t)
	var hs []plumbing.Hash
	for i := range 6 { // a pack each
		importCommits(t, dir, fmt.Sprint("b", i), [][]file{{{fmt.Sprintf("memory/a/f%d.md", i), fmt.Sprint(i)}}})
		hs = append(hs, plumbing.ComputeHash(plumbing.BlobObject, []byte(fmt.Sprint(i))))
	}
	require.Len(t, packFiles(t, dir), 6)
	read := func(s *Store, h plumbing.Hash) string {
		t.Helper()
		o, err := s.Get(plumbing.BlobObject, h)
		require.NoError(t, err)
		text, err := TextContent(o)
		require.NoError(t, err)
		return text
	}
	before := len(packFDs(t, dir))
	reader := New(dir)
	for i, h := range hs {
		require.Equal(t, fmt.Sprint(i), read(reader, h))
	}
	require.Greater(t, len(packFDs(t, dir)), before, "packs stay open between reads")

	mustGit(t, dir, "", "repack", "-a", "-d", "-q")
	// Objects already listed still read (from the open, deleted files).
	require.Equal(t, "2", read(reader, hs[2]))
	require.Contains(t, strings.Join(packFDs(t, dir), "\n"), "(deleted)")
	// A new pack is a miss: the rescan drops the deleted packs.
	importCommits(t, dir, "new", [][]file{{{"memory/a/new.md", "new"}}})
	require.Equal(t, "new", read(reader, plumbing.ComputeHash(plumbing.BlobObject, []byte("new"))))
	for _, fd := range packFDs(t, dir) {
		require.NotContains(t, fd, "(deleted)")
	}
}
