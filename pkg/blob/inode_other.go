//go:build !unix

package blob

import "io/fs"

// inode is unavailable here; identity then rests on size and mtime only.
func inode(fs.FileInfo) uint64 { return 0 }
