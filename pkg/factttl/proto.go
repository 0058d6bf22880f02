package factttl

import (
	"fmt"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// ActionFromProto is the action an API TTLAction names; unspecified is
// mark_stale (memory-bridge §4.1's default).
func ActionFromProto(a memoryv1.TTLAction) (Action, error) {
	switch a {
	case memoryv1.TTLAction_TTL_ACTION_UNSPECIFIED, memoryv1.TTLAction_TTL_ACTION_MARK_STALE:
		return MarkStale, nil
	case memoryv1.TTLAction_TTL_ACTION_ARCHIVE:
		return Archive, nil
	case memoryv1.TTLAction_TTL_ACTION_DELETE:
		return Delete, nil
	}
	return "", fmt.Errorf("%w: unknown action %d (want mark_stale, archive or delete)", ErrMalformed, a)
}

// Proto is the API's name for the action.
func (a Action) Proto() memoryv1.TTLAction {
	switch a {
	case Archive:
		return memoryv1.TTLAction_TTL_ACTION_ARCHIVE
	case Delete:
		return memoryv1.TTLAction_TTL_ACTION_DELETE
	}
	return memoryv1.TTLAction_TTL_ACTION_MARK_STALE
}
