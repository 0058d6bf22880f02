package app

import (
	"fmt"
	"os"
	"syscall"
)

// lockWriter takes an exclusive lock on path for the life of the process, so
// two proposal-apply processes can never write one repository: the engine's
// "applied at most once" rests on there being a single writer. The kernel
// drops the lock when the process dies, even by kill -9.
func lockWriter(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("another proposal-apply process holds %s: %w", path, err)
	}
	return f, nil
}
