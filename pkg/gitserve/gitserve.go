// Package gitserve serves one bare git repository read-only over git's smart
// HTTP protocol, so that read replicas which may not reach the git remote can
// clone and fetch the writer's repository from the writer itself.
//
// A [Handler] runs `git http-backend` through net/http/cgi, and only for the
// two requests a clone or fetch makes:
//
//	GET  <base>/info/refs?service=git-upload-pack
//	POST <base>/git-upload-pack
//
// Everything else is refused before git runs: pushes (git-receive-pack) and
// the dumb protocol with 403, any other path, including other repositories
// and path tricks, with 404. git never sees a path taken from the request:
// PATH_INFO and QUERY_STRING are rebuilt from constants, and git itself also
// runs with http.receivepack=false and http.getanyfile=false.
//
// The handler does not authenticate; mount it behind auth.RequireHTTP. It
// drops the Authorization and Cookie headers before git runs, so a
// credential never reaches the child's environment.
package gitserve

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cgi"
	"os/exec"
	"path/filepath"
	"strings"
)

const (
	// DefaultMaxConcurrent is how many git processes serve requests at once
	// when [Options.MaxConcurrent] is 0; further requests wait their turn.
	DefaultMaxConcurrent = 8
	// maxRequestBody bounds an upload-pack request (its wants and haves).
	maxRequestBody = 32 << 20

	uploadPack = "git-upload-pack"
)

// Options configure a [Handler].
type Options struct {
	// Logger receives git http-backend's stderr and CGI failures; nil
	// discards them.
	Logger *slog.Logger
	// MaxConcurrent bounds the git processes running at once (0: the
	// default).
	MaxConcurrent int
	// Git is the git binary (default: "git" from PATH).
	Git string
}

// Handler serves a bare repository read-only at one URL path. It is safe for
// concurrent use.
type Handler struct {
	base string // URL path of the repository, e.g. /git/memory.git
	name string // the repository's directory name, e.g. memory.git
	cgi  *cgi.Handler
	sem  chan struct{}
}

// New returns a Handler serving the bare repository at repoPath under the
// URL path base (e.g. "/git/memory.git", whose clone URL is
// http://host:port/git/memory.git).
func New(repoPath, base string, opts Options) (*Handler, error) {
	if !strings.HasPrefix(base, "/") || strings.HasSuffix(base, "/") || filepath.Clean(base) != base {
		return nil, fmt.Errorf("gitserve: base %q must be a clean absolute URL path without a trailing slash", base)
	}
	abs, err := filepath.Abs(repoPath)
	if err != nil {
		return nil, fmt.Errorf("gitserve: %w", err)
	}
	gitName := opts.Git
	if gitName == "" {
		gitName = "git"
	}
	gitBin, err := exec.LookPath(gitName)
	if err != nil {
		return nil, fmt.Errorf("gitserve: %w", err)
	}
	if gitBin, err = filepath.Abs(gitBin); err != nil {
		return nil, fmt.Errorf("gitserve: %w", err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	n := opts.MaxConcurrent
	if n <= 0 {
		n = DefaultMaxConcurrent
	}
	return &Handler{
		base: base,
		name: filepath.Base(abs),
		sem:  make(chan struct{}, n),
		cgi: &cgi.Handler{
			Path: gitBin,
			Root: "/",
			Dir:  filepath.Dir(abs),
			Args: []string{
				"-c", "http.receivepack=false",
				"-c", "http.getanyfile=false",
				"-c", "http.uploadpack=true",
				"http-backend",
			},
			Env: []string{
				"GIT_PROJECT_ROOT=" + filepath.Dir(abs),
				"GIT_HTTP_EXPORT_ALL=1",
			},
			Logger: slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
			Stderr: &logWriter{logger: logger},
		},
	}, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, h.base+"/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	var query string
	switch rest {
	case "info/refs":
		if r.Method != http.MethodGet {
			methodNotAllowed(w, http.MethodGet)
			return
		}
		if svc := r.URL.Query()["service"]; len(svc) != 1 || svc[0] != uploadPack {
			http.Error(w, "read-only: only git-upload-pack (clone and fetch) is served", http.StatusForbidden)
			return
		}
		query = "service=" + uploadPack
	case uploadPack:
		if r.Method != http.MethodPost {
			methodNotAllowed(w, http.MethodPost)
			return
		}
	case "git-receive-pack":
		http.Error(w, "read-only: pushes are refused", http.StatusForbidden)
		return
	default:
		http.NotFound(w, r)
		return
	}

	select {
	case h.sem <- struct{}{}:
		defer func() { <-h.sem }()
	case <-r.Context().Done():
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}

	// git sees a request rebuilt from constants and the few headers the
	// protocol needs, never a credential.
	req := r.Clone(r.Context())
	req.URL.Path, req.URL.RawPath, req.URL.RawQuery = "/"+h.name+"/"+rest, "", query
	req.Header.Del("Authorization")
	req.Header.Del("Cookie")
	req.Header.Del("Proxy-Authorization")
	if r.Method == http.MethodPost && req.ContentLength < 0 {
		// CGI needs a length: git sends a large request chunked.
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				http.Error(w, "request too large", http.StatusRequestEntityTooLarge)
			} else {
				http.Error(w, "reading the request failed", http.StatusBadRequest)
			}
			return
		}
		req.Body, req.ContentLength, req.TransferEncoding = io.NopCloser(bytes.NewReader(body)), int64(len(body)), nil
	} else if req.ContentLength > maxRequestBody {
		http.Error(w, "request too large", http.StatusRequestEntityTooLarge)
		return
	}
	h.cgi.ServeHTTP(w, req)
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
}

// logWriter logs what git http-backend writes to stderr, one record per
// write.
type logWriter struct{ logger *slog.Logger }

func (l *logWriter) Write(p []byte) (int, error) {
	if msg := strings.TrimSpace(string(p)); msg != "" {
		l.logger.Warn("git http-backend", "stderr", msg)
	}
	return len(p), nil
}
