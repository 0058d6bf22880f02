package app

import "runtime/debug"

// Version is set at build time with -ldflags (make build: `git describe`).
// A binary built without it (`go install ./cmd/memctl`, `go build`) takes
// what the go command recorded: the module version for `go install
// …@v0.16.0`, else the commit it was built from.
var Version = buildVersion(debug.ReadBuildInfo)

func buildVersion(read func() (*debug.BuildInfo, bool)) string {
	bi, ok := read()
	if !ok {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) < 12 {
		return "dev"
	}
	v := "dev-" + rev[:12]
	if dirty {
		v += "-dirty"
	}
	return v
}
