package blob_test

import (
	"os"
	"testing"

	"github.com/garden-bloom/memory/pkg/blob/blobtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	blobtest.StopShared()
	os.Exit(code)
}
