//go:build unix

package odb

import (
	"os"
	"syscall"
)

// mmap maps the first size bytes of f read-only. The mapping outlives f's
// descriptor and the file's name (a repack may delete it meanwhile).
func mmap(f *os.File, size int) ([]byte, error) {
	b, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, &os.PathError{Op: "mmap", Path: f.Name(), Err: err}
	}
	return b, nil
}

func munmap(b []byte) error { return syscall.Munmap(b) }
