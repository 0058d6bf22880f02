package contextassembly

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/memread"
)

// What a budget covers (issue #23). Every budget of this service bounds the
// sum, each string counted on its own with the service's tiktoken counter,
// of every string a response carries to an agent:
//
//   - ReadMemory: the meta block (metaBlock of meta), each file's header
//     (memread.Header: its name) and content — ALWAYS_LOAD blocks and
//     temporal diffs ("diffs/<file>") included — and each warning. The
//     `content` and `diffs` maps repeat the files' own strings and are not
//     counted again.
//   - AssembleContext: each section's file and content, and each warning.
//   - DiffMemory: the summary, each diff's file name and text (unified), or
//     each change's item, file, section, before and after (facts).
//   - GetLayer2: each decision's id, title, status, context, decision,
//     rationale, consequences and run id; the changelog; each timeline day's
//     date and content; each run's id and content.
//
// The response's token count is exactly that sum. Numbers, enums, times and
// commit shas are not counted. A budget that cannot hold the smallest
// answer is refused with INVALID_ARGUMENT naming, in the message and in
// ErrorInfo metadata "min", the smallest budget that works.

// metaBlock is the meta block as a caller receives it: MemoryMeta as compact
// JSON (protojson's field names, no insignificant whitespace).
func metaBlock(m *memoryv1.MemoryMeta) string {
	b, err := protojson.Marshal(m)
	if err != nil {
		return ""
	}
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return string(b)
	}
	return buf.String()
}

// tooSmall refuses a budget below min, the smallest one that works.
func tooSmall(field string, budget, min int) error {
	return apierr.New(codes.InvalidArgument, memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT,
		fmt.Sprintf("%s %d is too small for this request: the smallest budget that works is %d tokens", field, budget, min),
		map[string]string{"field": field, "min": strconv.Itoa(min)})
}

// budgetError turns memread's refusal into the API's; other errors pass.
func budgetError(field string, err error) error {
	var small *memread.BudgetTooSmallError
	if errors.As(err, &small) {
		return tooSmall(field, small.Budget, small.Min)
	}
	return err
}
