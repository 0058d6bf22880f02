package entitygraph

import (
	"strings"

	"github.com/garden-bloom/memory/pkg/temporalgraph"
)

// viewer decides which files a caller may see: every file for service and
// admin tokens, only its own agents' folders for an agent token, so entity
// refs never reveal another agent's files.
type viewer struct{ agents []string }

// visible reports whether the viewer may know of node n at all: some ref
// of it is in the viewer's files.
func (v viewer) visible(n temporalgraph.Node) bool {
	return v.agents == nil || len(v.node(n).Refs) > 0
}

func (v viewer) sees(file string) bool {
	if v.agents == nil {
		return true
	}
	for _, a := range v.agents {
		if strings.HasPrefix(file, "memory/"+a+"/") || strings.HasPrefix(file, "logic/"+a+"/") {
			return true
		}
	}
	return false
}
