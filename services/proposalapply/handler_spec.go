package proposalapply

import (
	"fmt"
	"strings"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/mdops"
)

// Spec-only request fields (issue #24); the spec-shaped responses are in
// convert.go.

func checkSpecTool(tool string, names ...string) error {
	if tool == "" {
		return nil
	}
	for _, n := range names {
		if tool == n {
			return nil
		}
	}
	return apierr.InvalidArgument("tool",
		fmt.Sprintf("tool %q does not name this call; this endpoint is %q (or leave tool out)", tool, names[0]))
}

// specPropose checks a proposal's tool and type and turns add_decision
// updates that carry a decisions.md block in `content` (DiffMem §3.2) into
// structured decisions.
func specPropose(req *memoryv1.ProposeRequest) error {
	if err := checkSpecTool(req.GetTool(), "propose-memory-update"); err != nil {
		return err
	}
	if t := req.GetType(); t != "" && t != "memory-update" {
		return apierr.InvalidArgument("type",
			fmt.Sprintf("type %q: a memory proposal's type is \"memory-update\" (or leave type out)", t))
	}
	for i, u := range req.GetUpdates() {
		if u.GetOperation() != memoryv1.Operation_OPERATION_ADD_DECISION || u.GetContent() == "" {
			continue
		}
		field := fmt.Sprintf("updates[%d]", i)
		if u.GetDecision() != nil {
			return apierr.InvalidArgument(field+".content",
				field+": add_decision takes either decision or a decisions.md block in content, not both")
		}
		d, err := mdops.ParseDecisionBlock(u.GetContent())
		if err != nil {
			return apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_CONTENT, field+".content",
				field+": content is not a decisions.md decision block: "+strings.TrimPrefix(err.Error(), mdops.ErrBadContent.Error()+": "))
		}
		u.Decision = decisionMessage(d)
		u.Content = ""
	}
	return nil
}

// Object-store names CreateSnapshot's targetStorage accepts (DiffMem §4.4).
var snapshotStorages = map[string]bool{"minio": true, "s3": true, "object-store": true, "objectstore": true}

// specSnapshot checks a snapshot request's tool, targetStorage and path and
// returns the name the snapshot is stored under: the path's file name when
// a path is given, else the label.
func specSnapshot(req *memoryv1.CreateSnapshotRequest, label string) (string, error) {
	if err := checkSpecTool(req.GetTool(), "memory-snapshot"); err != nil {
		return "", err
	}
	if ts := req.GetTargetStorage(); ts != "" && !snapshotStorages[strings.ToLower(ts)] {
		return "", apierr.InvalidArgument("targetStorage",
			fmt.Sprintf("targetStorage %q: snapshots are stored in the object store; use \"minio\" (also \"s3\", \"object-store\") or leave it out", ts))
	}
	path := req.GetPath()
	if path == "" {
		return label, nil
	}
	dir := snapshotPrefix + req.GetAgentId() + "/"
	name, ok := strings.CutSuffix(strings.TrimPrefix(path, dir), ".tar.gz")
	if !strings.HasPrefix(path, dir) || !ok || strings.Contains(name, "/") || !labelRe.MatchString(name) || strings.Contains(name, "..") {
		return "", apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_PATH, "path",
			fmt.Sprintf("path %q: snapshots of %s are stored at %s<name>.tar.gz, <name> 1-100 of A-Z a-z 0-9 . _ - starting with a letter or digit; use such a path or leave it out",
				path, req.GetAgentId(), dir))
	}
	return name, nil
}
