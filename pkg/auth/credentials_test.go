package auth

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestServiceCredentialsCaching(t *testing.T) {
	clk := newFakeClock()
	s, v := newPair(t, testSecret(t), clk)
	creds := NewServiceCredentials(s, "svc-a")
	require.False(t, creds.RequireTransportSecurity())

	tests := []struct {
		name      string
		advance   time.Duration // applied before the call
		wantFresh bool          // a new token must have been minted
	}{
		{name: "first call mints", wantFresh: true},
		{name: "immediately after reuses", advance: 0},
		{name: "3m59s reuses", advance: 3*time.Minute + 59*time.Second},
		{name: "4m0s (refresh window) mints", advance: time.Second, wantFresh: true},
		{name: "right after refresh reuses", advance: time.Second},
		{name: "long after expiry mints", advance: time.Hour, wantFresh: true},
	}
	var prev string
	for _, tt := range tests {
		clk.Advance(tt.advance)
		md, err := creds.GetRequestMetadata(context.Background(), "https://example/svc")
		require.NoError(t, err, tt.name)
		header := md[MetadataKey]
		tok, ok := parseBearer(header)
		require.True(t, ok, tt.name)
		if tt.wantFresh {
			require.NotEqual(t, prev, tok, tt.name)
		} else {
			require.Equal(t, prev, tok, tt.name)
		}
		prev = tok

		// Whatever is handed out must verify at the time it is handed out.
		c, err := v.Verify(tok)
		require.NoError(t, err, tt.name)
		require.Equal(t, "svc-a", c.Subject, tt.name)
		require.Equal(t, []Role{RoleService}, c.Roles, tt.name)
		require.Equal(t, []string{AllAgents}, c.Agents, tt.name)
	}
}

func TestServiceCredentialsConcurrent(t *testing.T) {
	clk := newFakeClock()
	s, _ := newPair(t, testSecret(t), clk)
	creds := NewServiceCredentials(s, "svc-a")

	const n = 32
	toks := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { toks[i], errs[i] = creds.Token() })
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, toks[0], toks[i], "all concurrent callers share one token")
	}
}

func TestServiceCredentialsErrors(t *testing.T) {
	_, err := NewServiceCredentials(nil, "svc").GetRequestMetadata(context.Background())
	require.Error(t, err)

	s, _ := newPair(t, testSecret(t), newFakeClock())
	_, err = NewServiceCredentials(s, "").GetRequestMetadata(context.Background())
	require.Error(t, err, "an empty subject cannot be minted")
}

func TestStaticToken(t *testing.T) {
	creds := StaticToken("abc.def.ghi")
	require.False(t, creds.RequireTransportSecurity())
	md, err := creds.GetRequestMetadata(context.Background())
	require.NoError(t, err)
	require.Equal(t, map[string]string{MetadataKey: "Bearer abc.def.ghi"}, md)
}
