package blob_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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

func TestS3BadCredentials(t *testing.T) {
	endpoint := blobtest.StartMinIO(t)
	_, err := blob.NewS3(context.Background(), "s3://"+bucketName()+"?endpoint="+endpoint+"&secure=false",
		func(k string) (string, bool) { return "wrong", true })
	require.Error(t, err)
}
