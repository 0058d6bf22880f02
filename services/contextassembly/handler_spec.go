package contextassembly

import (
	"fmt"
	"slices"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
)

// Spec-only request fields (issue #24): the specs' example bodies carry a
// `tool` name and nest read options; they are accepted and validated here.

// checkTool accepts an empty tool or one of the names the specs give this call.
func checkTool(tool string, names ...string) error {
	if tool == "" || slices.Contains(names, tool) {
		return nil
	}
	return apierr.InvalidArgument("tool",
		fmt.Sprintf("tool %q does not name this call; this endpoint is %q (or leave tool out)", tool, names[0]))
}

// specRead checks a read's tool and moves its nested options (DiffMem §4.1)
// to the top-level fields, so they are honoured like those.
func specRead(req *memoryv1.ReadMemoryRequest) error {
	if err := checkTool(req.GetTool(), "read-memory", "read_memory", "get_context"); err != nil {
		return err
	}
	o := req.GetOptions()
	if o == nil {
		return nil
	}
	if o.GetMaxTokens() != 0 {
		if req.GetMaxTokens() != 0 && req.GetMaxTokens() != o.GetMaxTokens() {
			return apierr.InvalidArgument("options.maxTokens",
				fmt.Sprintf("options.maxTokens %d differs from maxTokens %d; give one", o.GetMaxTokens(), req.GetMaxTokens()))
		}
		req.MaxTokens = o.GetMaxTokens()
	}
	for _, f := range []struct {
		name     string
		nested   []string
		topLevel *[]string
	}{{"includeFiles", o.GetIncludeFiles(), &req.IncludeFiles}, {"excludeFiles", o.GetExcludeFiles(), &req.ExcludeFiles}} {
		if len(f.nested) == 0 {
			continue
		}
		if len(*f.topLevel) != 0 && !slices.Equal(*f.topLevel, f.nested) {
			return apierr.InvalidArgument("options."+f.name,
				fmt.Sprintf("options.%s differs from %s; give one", f.name, f.name))
		}
		*f.topLevel = slices.Clone(f.nested)
	}
	req.Options = nil
	return nil
}
