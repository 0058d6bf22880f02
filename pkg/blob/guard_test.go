package blob_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/blob/blobtest"
)

// A guarded S3 store opens while the server is down, fails every call at
// once while it is down, and finds it back (creating the bucket) by itself.
func TestGuardStartsDownFailsFastAndRecovers(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", must(blobtest.MinIOEnv("AWS_ACCESS_KEY_ID")))
	t.Setenv("AWS_SECRET_ACCESS_KEY", must(blobtest.MinIOEnv("AWS_SECRET_ACCESS_KEY")))
	m := blobtest.NewMinIO(t)
	m.Stop()
	ctx := context.Background()
	url := fmt.Sprintf("s3://guarded/p?endpoint=%s&secure=false", m.Addr)

	g, err := blob.OpenGuarded(ctx, url, blob.GuardOptions{ProbeEvery: 100 * time.Millisecond})
	require.NoError(t, err, "opening does not need the server")
	defer func() { require.NoError(t, g.Close()) }()
	up, _, cause := g.Status()
	require.False(t, up)
	require.Error(t, cause)

	for range 5 {
		start := time.Now()
		_, err := blob.PutBytes(ctx, g, "a/b", []byte("x"), blob.PutOptions{})
		require.ErrorIs(t, err, blob.ErrUnavailable)
		_, _, err = g.Get(ctx, "a/b")
		require.ErrorIs(t, err, blob.ErrUnavailable)
		for _, err := range g.List(ctx, "a/") {
			require.ErrorIs(t, err, blob.ErrUnavailable)
		}
		require.Less(t, time.Since(start), 50*time.Millisecond, "a known outage costs no network time")
	}

	require.NoError(t, m.Start())
	require.Eventually(t, func() bool { up, _, _ := g.Status(); return up }, 10*time.Second, 20*time.Millisecond)
	_, err = blob.PutBytes(ctx, g, "a/b", []byte("x"), blob.PutOptions{})
	require.NoError(t, err, "the bucket was created by the probe")

	// Going down while up: the first failing call has the store probed,
	// and the failed probe marks it down.
	m.Stop()
	_, _, err = g.Get(ctx, "a/b")
	require.ErrorIs(t, err, blob.ErrUnavailable)
	require.Eventually(t, func() bool { up, _, _ := g.Status(); return !up }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, m.Start())
	require.Eventually(t, func() bool { up, _, _ := g.Status(); return up }, 10*time.Second, 20*time.Millisecond)
	got, _, err := blob.GetBytes(ctx, g, "a/b")
	require.NoError(t, err)
	require.Equal(t, "x", string(got))
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("the caller's body broke") }

// Answers about the request (a missing or bad key, the caller's own
// reader or context failing) never mark the store down.
func TestGuardCallerMistakesKeepItUp(t *testing.T) {
	ctx := context.Background()
	fs, err := blob.NewFS(t.TempDir())
	require.NoError(t, err)
	g := blob.NewGuard(ctx, fs, blob.GuardOptions{})
	defer func() { require.NoError(t, g.Close()) }()

	_, _, err = g.Get(ctx, "missing")
	require.ErrorIs(t, err, blob.ErrNotFound)
	_, err = g.Stat(ctx, "../escape")
	require.ErrorIs(t, err, blob.ErrInvalidKey)
	_, err = g.Put(ctx, "k", io.MultiReader(strings.NewReader("half"), failingReader{}), -1, blob.PutOptions{})
	require.Error(t, err)
	require.NotErrorIs(t, err, blob.ErrUnavailable)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, _ = g.Stat(cancelled, "k")
	up, _, cause := g.Status()
	require.True(t, up, "still up after: %v", cause)
	_, _, err = g.Get(ctx, "k")
	require.ErrorIs(t, err, blob.ErrNotFound, "nothing half-written")
}

func must(v string, ok bool) string {
	if !ok {
		panic("missing")
	}
	return v
}

// flaky fails its next Get once, as a store does for one dropped
// connection, and answers everything else.
type flaky struct {
	blob.Store
	fail bool
}

func (f *flaky) Get(ctx context.Context, key string) (io.ReadCloser, blob.Info, error) {
	if f.fail {
		f.fail = false
		return nil, blob.Info{}, errors.New("connection reset by peer")
	}
	return f.Store.Get(ctx, key)
}

// One failed call whose probe succeeds leaves the store up: a blip must
// not fail every call for a probe interval.
func TestGuardOneFailureWithAGoodProbeStaysUp(t *testing.T) {
	ctx := context.Background()
	fs, err := blob.NewFS(t.TempDir())
	require.NoError(t, err)
	_, err = blob.PutBytes(ctx, fs, "k", []byte("v"), blob.PutOptions{})
	require.NoError(t, err)
	f := &flaky{Store: fs, fail: true}
	g := blob.NewGuard(ctx, f, blob.GuardOptions{ProbeEvery: time.Hour})
	defer func() { require.NoError(t, g.Close()) }()
	_, _, err = g.Get(ctx, "k")
	require.ErrorIs(t, err, blob.ErrUnavailable)
	time.Sleep(100 * time.Millisecond) // the probe runs and succeeds
	up, _, cause := g.Status()
	require.True(t, up, "%v", cause)
	got, _, err := blob.GetBytes(ctx, g, "k")
	require.NoError(t, err)
	require.Equal(t, "v", string(got))
}
