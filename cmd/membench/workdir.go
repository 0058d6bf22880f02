package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/garden-bloom/memory/pkg/auth"
)

// workDir is dir, or, when dir is "", a new temporary directory that
// cleanup removes (saying so on stderr when it cannot).
func workDir(dir, prefix string) (work string, cleanup func(), err error) {
	if dir != "" {
		return dir, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	return tmp, func() {
		if err := os.RemoveAll(tmp); err != nil {
			fmt.Fprintf(os.Stderr, "membench: work directory %s not removed: %v\n", tmp, err)
		}
	}, nil
}

// dataDirSigner signs tokens with a data dir's auth secret (made if
// missing), which the memoryd serving that dir verifies them with.
func dataDirSigner(dataDir string) (*auth.Signer, error) {
	secret, err := auth.LoadOrCreateSecret(filepath.Join(dataDir, "auth.secret"))
	if err != nil {
		return nil, err
	}
	return auth.NewSigner(secret)
}
