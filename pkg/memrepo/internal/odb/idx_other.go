//go:build !unix

package odb

import (
	"io"
	"os"
)

// mmap reads the file onto the heap where mapping it is not supported.
func mmap(f *os.File, size int) ([]byte, error) {
	b := make([]byte, size)
	_, err := io.ReadFull(f, b)
	return b, err
}

func munmap([]byte) error { return nil }
