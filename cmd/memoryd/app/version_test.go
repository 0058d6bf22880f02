package app

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBuildVersion(t *testing.T) {
	info := func(version string, settings ...debug.BuildSetting) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			return &debug.BuildInfo{Main: debug.Module{Version: version}, Settings: settings}, true
		}
	}
	rev := debug.BuildSetting{Key: "vcs.revision", Value: "ca609320d7f1a2b3c4d5e6f708192a3b4c5d6e7f"}
	require.Equal(t, "v0.16.0", buildVersion(info("v0.16.0", rev)), "go install …@version")
	require.Equal(t, "dev-ca609320d7f1", buildVersion(info("(devel)", rev)), "go install ./cmd/memctl in a clone")
	require.Equal(t, "dev-ca609320d7f1-dirty", buildVersion(info("(devel)", rev, debug.BuildSetting{Key: "vcs.modified", Value: "true"})))
	require.Equal(t, "dev", buildVersion(info("(devel)")), "built outside version control")
	require.Equal(t, "dev", buildVersion(func() (*debug.BuildInfo, bool) { return nil, false }))
}
