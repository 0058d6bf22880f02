package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3 is the Store on MinIO or any S3-compatible service (minio-go), the
// production object store. Keys live under an optional prefix of one bucket,
// which is created when missing.
type S3 struct {
	client *minio.Client
	bucket string
	prefix string
	region string
}

// NewS3 opens s3://bucket[/prefix]?endpoint=host:port&secure=false&region=…
// with credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, or the
// files AWS_ACCESS_KEY_ID_FILE / AWS_SECRET_ACCESS_KEY_FILE name (lookupEnv;
// never from the URL, so they never reach logs or /status/config), and
// creates the bucket when it is missing.
func NewS3(ctx context.Context, rawURL string, lookupEnv func(string) (string, bool)) (*S3, error) {
	s, err := newS3(rawURL, lookupEnv)
	if err != nil {
		return nil, err
	}
	// A MinIO that has just started answers "not initialized" for a few
	// seconds (compose and Kubernetes start both at once): wait it out.
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		err = s.Probe(ctx)
		if s3Code(err) != "XMinioServerNotInitialized" {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("blob: s3 bucket %q: %w", s.bucket, err)
		case <-time.After(wait):
		}
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// s3Attempts is how many times the client tries a request: one retry for
// a dropped connection, not minio-go's ten with back-off, which made every
// call during an outage take seconds; Guard answers the rest.
const s3Attempts = 2

// newS3 parses the URL and builds the client without reaching the server.
func newS3(rawURL string, lookupEnv func(string) (string, bool)) (*S3, error) {
	u, err := url.Parse(rawURL)
	if err != nil || !strings.EqualFold(u.Scheme, "s3") || u.Host == "" {
		return nil, fmt.Errorf("%w: want s3://bucket[/prefix]?endpoint=host:port, got %q", ErrUnsupportedScheme, rawURL)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w: put S3 credentials in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, not in the URL", ErrUnsupportedScheme)
	}
	q := u.Query()
	endpoint := q.Get("endpoint")
	if endpoint == "" {
		endpoint = "s3.amazonaws.com"
	}
	secure := q.Get("secure") != "false"
	access, err := credential(lookupEnv, "AWS_ACCESS_KEY_ID")
	if err != nil {
		return nil, err
	}
	secret, err := credential(lookupEnv, "AWS_SECRET_ACCESS_KEY")
	if err != nil {
		return nil, err
	}
	transport, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, fmt.Errorf("blob: s3 transport: %w", err)
	}
	// A server that accepts connections but does not answer must not hold
	// callers for minutes.
	transport.DialContext = (&net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	transport.ResponseHeaderTimeout = 30 * time.Second
	client, err := minio.New(endpoint, &minio.Options{
		Creds:      credentials.NewStaticV4(access, secret, ""),
		Secure:     secure,
		Region:     q.Get("region"),
		Transport:  transport,
		MaxRetries: s3Attempts,
	})
	if err != nil {
		return nil, fmt.Errorf("blob: s3 client: %w", err)
	}
	s := &S3{client: client, bucket: u.Host, prefix: strings.Trim(u.Path, "/"), region: q.Get("region")}
	if s.prefix != "" {
		s.prefix += "/"
	}
	return s, nil
}

// Probe implements Prober: the server answers and the bucket exists
// (created when missing).
func (s *S3) Probe(ctx context.Context) error { return s.ensureBucket(ctx, s.region) }

// Location implements Locator: s3://bucket/prefix/key, the object's name
// for any S3 client (the endpoint is the store's own).
func (s *S3) Location(key string) string {
	return (&url.URL{Scheme: "s3", Host: s.bucket, Path: "/" + s.prefix + key}).String()
}

// ensureBucket creates the bucket when it is missing.
func (s *S3) ensureBucket(ctx context.Context, region string) error {
	exists, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("blob: s3 bucket %q: %w", s.bucket, err)
	}
	if !exists {
		if err := s.client.MakeBucket(ctx, s.bucket, minio.MakeBucketOptions{Region: region}); err != nil {
			if resp := minio.ToErrorResponse(err); resp.Code != "BucketAlreadyOwnedByYou" && resp.Code != "BucketAlreadyExists" {
				return fmt.Errorf("blob: create bucket %q: %w", s.bucket, err)
			}
		}
	}
	return nil
}

func (s *S3) info(key string, o minio.ObjectInfo) Info {
	ct := o.ContentType
	if ct == "" {
		ct = DefaultContentType
	}
	return Info{Key: key, Size: o.Size, ETag: strings.Trim(o.ETag, `"`), ModTime: o.LastModified, ContentType: ct}
}

// credential reads name from the environment, or from the file that
// name+"_FILE" points at (a mounted Secret), trimmed.
func credential(lookupEnv func(string) (string, bool), name string) (string, error) {
	if v, ok := lookupEnv(name); ok && v != "" {
		return v, nil
	}
	path, ok := lookupEnv(name + "_FILE")
	if !ok || path == "" {
		return "", nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("blob: %s_FILE: %w", name, err)
	}
	return strings.TrimSpace(string(data)), nil
}

// s3Code is the S3 error code of err, wrapped or not ("" for other errors).
func s3Code(err error) string {
	var resp minio.ErrorResponse
	if errors.As(err, &resp) {
		return resp.Code
	}
	return ""
}

func notFound(err error) bool {
	code := minio.ToErrorResponse(err).Code
	return code == "NoSuchKey" || code == "NotFound"
}

// Put stores r under key.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (Info, error) {
	if err := ValidateKey(key); err != nil {
		return Info{}, err
	}
	ct := opts.ContentType
	if ct == "" {
		ct = DefaultContentType
	}
	if size < 0 {
		// Spool to learn the size: a single-part upload keeps the ETag the
		// MD5 of the content, as the Store contract says (multipart ETags
		// are not).
		f, err := os.CreateTemp("", "blob-put-")
		if err != nil {
			return Info{}, err
		}
		defer func() {
			// Best effort, in the temp dir: a Put that succeeded does not
			// fail over its spool file.
			_ = f.Close()
			_ = os.Remove(f.Name())
		}()
		if size, err = io.Copy(f, r); err != nil {
			return Info{}, fmt.Errorf("blob: put %s: %w", key, err)
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return Info{}, err
		}
		r = f
	}
	seeker, _ := r.(io.Seeker)
	var start int64
	if seeker != nil {
		var err error
		if start, err = seeker.Seek(0, io.SeekCurrent); err != nil {
			seeker = nil
		}
	}
	for attempt := 1; ; attempt++ {
		_, err := s.client.PutObject(ctx, s.bucket, s.prefix+key, r, size,
			minio.PutObjectOptions{ContentType: ct, DisableMultipart: true})
		if err == nil {
			break
		}
		// MinIO's single-drive backend answers AccessDenied when a
		// concurrent Delete removes the parent "directory" under a Put; the
		// write itself is allowed, so it is retried a few times when the
		// body can be read again. Real credential errors fail after them.
		if seeker == nil || attempt == 4 || minio.ToErrorResponse(err).Code != "AccessDenied" {
			return Info{}, fmt.Errorf("blob: put %s: %w", key, err)
		}
		select {
		case <-ctx.Done():
			return Info{}, ctx.Err()
		case <-time.After(time.Duration(attempt) * 20 * time.Millisecond):
		}
		if _, err := seeker.Seek(start, io.SeekStart); err != nil {
			return Info{}, fmt.Errorf("blob: put %s: %w", key, err)
		}
	}
	return s.Stat(ctx, key) // the stored ETag, size and time, as Get will see them
}

// Get opens key for reading; the Info comes from the same response as the
// content, so a concurrent Put can never pair one version's ETag with
// another's bytes.
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, Info, error) {
	if err := ValidateKey(key); err != nil {
		return nil, Info{}, err
	}
	// One plain GET (minio.Core): one response carries both the bytes and
	// the ETag, with no lazy re-requests that could meet a newer version.
	body, o, _, err := minio.Core{Client: s.client}.GetObject(ctx, s.bucket, s.prefix+key, minio.GetObjectOptions{})
	if notFound(err) {
		return nil, Info{}, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	if err != nil {
		return nil, Info{}, fmt.Errorf("blob: get %s: %w", key, err)
	}
	return body, s.info(key, o), nil
}

// Stat describes key.
func (s *S3) Stat(ctx context.Context, key string) (Info, error) {
	if err := ValidateKey(key); err != nil {
		return Info{}, err
	}
	o, err := s.client.StatObject(ctx, s.bucket, s.prefix+key, minio.StatObjectOptions{})
	if notFound(err) {
		return Info{}, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	if err != nil {
		return Info{}, fmt.Errorf("blob: stat %s: %w", key, err)
	}
	return s.info(key, o), nil
}

// Delete removes key; a missing key is not an error.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := s.client.RemoveObject(ctx, s.bucket, s.prefix+key, minio.RemoveObjectOptions{}); err != nil && !notFound(err) {
		return fmt.Errorf("blob: delete %s: %w", key, err)
	}
	return nil
}

// List yields the objects under prefix in key order (S3 lists sorted).
func (s *S3) List(ctx context.Context, prefix string) iter.Seq2[Info, error] {
	return func(yield func(Info, error) bool) {
		if err := validatePrefix(prefix); err != nil {
			yield(Info{}, err)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel() // stops minio's listing goroutine when the caller stops early
		// S3 servers refuse some partial prefixes ("a/." looks like a path
		// component to MinIO), so list from the last "/" and filter here.
		dir := prefix[:strings.LastIndex(prefix, "/")+1]
		for o := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + dir, Recursive: true}) {
			if o.Err != nil {
				yield(Info{}, fmt.Errorf("blob: list %s: %w", prefix, o.Err))
				return
			}
			key := strings.TrimPrefix(o.Key, s.prefix)
			if !strings.HasPrefix(key, prefix) {
				continue
			}
			if !yield(s.info(key, o), nil) {
				return
			}
		}
	}
}
