package app

import (
	"fmt"
	"slices"
)

// Module names a module of the table (modules.go). The ones below are the
// targets an operator picks with --target; the table's internal modules
// (the servers, the repositories, ...) run because these need them.
type Module string

// The targets.
const (
	ModuleContextAssembly Module = "context-assembly"
	ModuleSearchIndex     Module = "search-index"
	ModuleEntityGraph     Module = "entity-graph"
	ModuleProposalApply   Module = "proposal-apply"
	ModuleGateway         Module = "gateway"
	// ModuleMCP is the MCP edge: the Model Context Protocol over
	// streamable HTTP at /mcp (pkg/mcpserver), beside the REST edge.
	ModuleMCP Module = "mcp"
	// ModuleConsole is the review console: server-rendered pages at /ui/
	// (services/console), beside the REST and MCP edges.
	ModuleConsole Module = "console"
)

// ServiceModules are the gRPC services.
var ServiceModules = []Module{ModuleProposalApply, ModuleEntityGraph, ModuleSearchIndex, ModuleContextAssembly}

// Modules is the set of targets one process runs.
type Modules []Module

// Has reports whether m is in the set.
func (ms Modules) Has(m Module) bool { return slices.Contains(ms, m) }

// Edge reports whether the set serves an HTTP edge (REST, MCP or the
// console), which calls every service, here or at its peer address.
func (ms Modules) Edge() bool {
	return ms.Has(ModuleGateway) || ms.Has(ModuleMCP) || ms.Has(ModuleConsole)
}

// ParseTarget expands a --target value (a comma list of targets and the
// composites all, read and write) into the targets it runs, in start order.
func ParseTarget(target string) (Modules, error) {
	names, err := (&App{}).table().Expand(target)
	if err != nil {
		return nil, fmt.Errorf("--target: %w", err)
	}
	return targetsOf(names), nil
}

// targetsOf keeps the targets of an expanded module list.
func targetsOf(names []string) Modules {
	var out Modules
	for _, n := range names {
		if m := Module(n); slices.Contains(ServiceModules, m) || m == ModuleGateway || m == ModuleMCP || m == ModuleConsole {
			out = append(out, m)
		}
	}
	return out
}
