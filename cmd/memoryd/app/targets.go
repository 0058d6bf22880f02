package app

import (
	"fmt"
	"slices"
	"strings"
)

// Module is one unit memoryd can run: a gRPC service or the REST edge.
type Module string

// The modules.
const (
	ModuleContextAssembly Module = "context-assembly"
	ModuleSearchIndex     Module = "search-index"
	ModuleEntityGraph     Module = "entity-graph"
	ModuleProposalApply   Module = "proposal-apply"
	ModuleGateway         Module = "gateway"
)

// ServiceModules are the gRPC services, in start order: the write plane
// first, so that read services following its commit stream find it.
var ServiceModules = []Module{ModuleProposalApply, ModuleEntityGraph, ModuleSearchIndex, ModuleContextAssembly}

// compositeTargets name sets of modules, as Loki/Mimir do. The read replicas
// also serve the REST edge: it holds no credentials and scales with them.
var compositeTargets = map[string][]Module{
	"all":   {ModuleProposalApply, ModuleEntityGraph, ModuleSearchIndex, ModuleContextAssembly, ModuleGateway},
	"read":  {ModuleEntityGraph, ModuleSearchIndex, ModuleContextAssembly, ModuleGateway},
	"write": {ModuleProposalApply},
}

// Modules is the set of modules one process runs.
type Modules []Module

// Has reports whether m is in the set.
func (ms Modules) Has(m Module) bool { return slices.Contains(ms, m) }

// ParseTarget expands a --target value (a comma list of modules and composite
// targets) into a set of modules in start order.
func ParseTarget(target string) (Modules, error) {
	want := map[Module]bool{}
	for _, part := range strings.Split(target, ",") {
		name := strings.TrimSpace(part)
		if comp, ok := compositeTargets[name]; ok {
			for _, m := range comp {
				want[m] = true
			}
			continue
		}
		m := Module(name)
		if !slices.Contains(ServiceModules, m) && m != ModuleGateway {
			return nil, fmt.Errorf("--target: unknown target %q (want all, read, write, %s, %s, %s, %s or gateway)",
				name, ModuleContextAssembly, ModuleSearchIndex, ModuleEntityGraph, ModuleProposalApply)
		}
		want[m] = true
	}
	var out Modules
	for _, m := range append(slices.Clone(ServiceModules), ModuleGateway) {
		if want[m] {
			out = append(out, m)
		}
	}
	return out, nil
}
