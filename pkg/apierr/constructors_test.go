package apierr

import (
	"maps"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestConstructors(t *testing.T) {
	for _, c := range []struct {
		err    error
		code   codes.Code
		reason string
		msg    string
		meta   map[string]string
	}{
		{InvalidArgument("pageSize", "pageSize must be 0 to 500"), codes.InvalidArgument, "INVALID_ARGUMENT",
			"pageSize must be 0 to 500", map[string]string{"field": "pageSize"}},
		{RevisionNotFound("from", "--upload-pack=x"), codes.NotFound, "REVISION_NOT_FOUND",
			`from "--upload-pack=x" names no commit of main`, map[string]string{"from": "--upload-pack=x"}},
		{AgentNotFound("a", "0123456789ab"), codes.NotFound, "AGENT_NOT_FOUND",
			`agent "a" has no memory at 0123456789ab`, nil},
		{CheckText("summary", "abcdef", 5), codes.InvalidArgument, "REQUEST_TOO_LARGE",
			"summary is 6 bytes, at most 5 allowed", map[string]string{"field": "summary", "limit": "5"}},
		{CheckText("summary", "a\xffb", 5), codes.InvalidArgument, "INVALID_CONTENT",
			"summary is not valid UTF-8", map[string]string{"field": "summary"}},
		{CheckText("summary", "a\x00b", 5), codes.InvalidArgument, "INVALID_CONTENT",
			"summary contains a NUL byte", map[string]string{"field": "summary"}},
	} {
		info := Info(c.err)
		if status.Code(c.err) != c.code || info.GetReason() != c.reason || status.Convert(c.err).Message() != c.msg ||
			!maps.Equal(info.GetMetadata(), c.meta) {
			t.Errorf("%v: got %v %s %v", c.err, status.Code(c.err), info.GetReason(), info.GetMetadata())
		}
	}
	if err := CheckText("summary", "fine", 5); err != nil {
		t.Errorf("CheckText refused a fitting text: %v", err)
	}
}
