package memrepo

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidAgentID(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{"a", true},
		{"0", true},
		{"gardener", true},
		{"agent-42", true},
		{"9lives", true},
		{"a-", true},
		{"a" + strings.Repeat("b", 63), true}, // 64 chars: the maximum
		{"a" + strings.Repeat("b", 64), false},
		{"", false},
		{"-agent", false},
		{"Agent", false},
		{"agent_1", false},
		{"agent.1", false},
		{"..", false},
		{"a/b", false},
		{"a b", false},
		{"agent\n", false},
		{"\nagent", false},
		{"ägent", false},
	} {
		t.Run(tc.id, func(t *testing.T) {
			require.Equal(t, tc.want, ValidAgentID(tc.id))
			err := CheckAgentID(tc.id)
			if tc.want {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, ErrInvalidAgentID)
			}
		})
	}
}
