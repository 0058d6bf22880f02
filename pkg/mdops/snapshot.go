package mdops

import (
	"fmt"
	"strings"
)

// CheckSnapshot validates a proposed snapshot.md, which replaces the old one
// wholesale (spec §11.3), so it must stand on its own: not blank, starting
// (after leading blank lines) with a "# " title heading, otherwise
// ErrBadContent; and with well-formed headings throughout, otherwise an
// error wrapping both ErrBadContent and ErrBadHeading. Sanitising and the
// 2 000-token limit are the caller's job (Sanitize and its token counter).
func CheckSnapshot(md string) error {
	lines := Lines(md)
	first := firstContent(lines)
	if first == len(lines) {
		return fmt.Errorf("%w: empty snapshot", ErrBadContent)
	}
	lvl, text, ok := parseATX(lines[first])
	if !ok || lvl != 1 || text == "" || !strings.HasPrefix(lines[first], "# ") {
		return fmt.Errorf("%w: snapshot must start with a \"# \" title heading, got %q", ErrBadContent, lines[first])
	}
	if err := ValidateHeadings(md); err != nil {
		return fmt.Errorf("%w: %w", ErrBadContent, err)
	}
	return nil
}
