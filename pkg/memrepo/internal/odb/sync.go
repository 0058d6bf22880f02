package odb

import "os"

// SyncFile fsyncs one file. It opens read-only because git writes loose
// objects 0444; fsync(2) on a read-only descriptor is fine on Unix.
func SyncFile(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// SyncDir fsyncs a directory so entries created or renamed in it survive a
// crash: the same call as for a file, on the directory's descriptor.
func SyncDir(p string) error { return SyncFile(p) }
