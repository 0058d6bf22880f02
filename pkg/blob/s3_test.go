package blob_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/blob/blobtest"
)

func bucketName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "test-" + hex.EncodeToString(b)
}

// The S3 driver passes the same conformance suite as the folder driver,
// against a real MinIO server, in a fresh bucket (created on open) per test.
func TestS3StoreAgainstMinIO(t *testing.T) {
	endpoint := blobtest.StartMinIO(t)
	blobtest.Run(t, func(t *testing.T) blob.Store {
		s, err := blob.NewS3(context.Background(), "s3://"+bucketName()+"/memory?endpoint="+endpoint+"&secure=false", blobtest.MinIOEnv)
		require.NoError(t, err)
		return s
	})
}

// Credentials may come from files (a mounted Secret) instead of the environment.
func TestS3CredentialsFromFiles(t *testing.T) {
	endpoint := blobtest.StartMinIO(t)
	dir := t.TempDir()
	env := map[string]string{}
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		v, _ := blobtest.MinIOEnv(k)
		env[k+"_FILE"] = filepath.Join(dir, k)
		require.NoError(t, os.WriteFile(env[k+"_FILE"], []byte(v+"\n"), 0o600))
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	s, err := blob.NewS3(context.Background(), "s3://"+bucketName()+"?endpoint="+endpoint+"&secure=false", lookup)
	require.NoError(t, err)
	_, err = blob.PutBytes(context.Background(), s, "k", []byte("v"), blob.PutOptions{})
	require.NoError(t, err)

	env["AWS_ACCESS_KEY_ID_FILE"] = filepath.Join(dir, "missing")
	_, err = blob.NewS3(context.Background(), "s3://"+bucketName()+"?endpoint="+endpoint+"&secure=false", lookup)
	require.ErrorContains(t, err, "AWS_ACCESS_KEY_ID_FILE")
}

func TestS3BadCredentials(t *testing.T) {
	endpoint := blobtest.StartMinIO(t)
	_, err := blob.NewS3(context.Background(), "s3://"+bucketName()+"?endpoint="+endpoint+"&secure=false",
		func(k string) (string, bool) { return "wrong", true })
	require.Error(t, err)
}
