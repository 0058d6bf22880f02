// A tool module of its own, so that the schema generator adds nothing to the
// main module's dependencies. Standard library only.
module github.com/garden-bloom/memory/deploy/tools/k8sschema

go 1.26
