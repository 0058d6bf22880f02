package mdops

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name, md string
		errs     []error
	}{
		{"ok", "# Snapshot: a1\n**Updated:** 2026-02-17T14:30:00Z\n\n## Role\nCurator.\n", nil},
		{"leading blank lines ok", "\n\n# Snapshot: a1\n", nil},
		{"crlf ok", "# Snapshot: a1\r\n## Role\r\nx\r\n", nil},
		{"empty", "", []error{ErrBadContent}},
		{"blank", " \n\t\n", []error{ErrBadContent}},
		{"no title", "Just text\n# Title later\n", []error{ErrBadContent}},
		{"h2 first", "## Role\n", []error{ErrBadContent}},
		{"empty title", "# \n", []error{ErrBadContent}},
		{"no space", "#Snapshot\n", []error{ErrBadContent}},
		{"bad heading later", "# Snapshot: a1\n##Role\n", []error{ErrBadContent, ErrBadHeading}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckSnapshot(tc.md)
			if tc.errs == nil {
				require.NoError(t, err)
				return
			}
			for _, e := range tc.errs {
				require.ErrorIs(t, err, e)
			}
		})
	}
}
