//go:build unix

package blob

import (
	"io/fs"
	"syscall"
)

// inode returns fi's inode number, part of a data file's identity (see
// fileIdentity): a replaced file always gets a different inode, even when
// size and mtime happen to match.
func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino) //nolint:unconvert // Ino is uint32 on some platforms
	}
	return 0
}
