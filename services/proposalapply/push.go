package proposalapply

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/garden-bloom/memory/pkg/commitfeed"
	"github.com/garden-bloom/memory/pkg/memrepo"
)

// pusher mirrors main to the configured remote after commits, retrying with
// backoff. Only proposal-apply has one: it alone holds git write credentials.
type pusher struct {
	repo   *memrepo.Repo
	url    string
	auth   transport.AuthMethod
	logger *slog.Logger
	// wake asks for a push (after a commit).
	wake commitfeed.Signal
	// metrics counts failed pushes (set by Service.instrument; nil: none).
	metrics *metrics

	mu      sync.Mutex
	lastErr error
	pushed  time.Time
	// pushedHead is the main the remote is known to have (zero until the
	// first push succeeds): what the push lag is measured from.
	pushedHead plumbing.Hash
}

func newPusher(repo *memrepo.Repo, cfg Config, lookupEnv func(string) (string, bool), logger *slog.Logger) (*pusher, error) {
	p := &pusher{repo: repo, url: cfg.GitRemoteURL, logger: logger}
	if cfg.GitRemoteURL == "" {
		return p, nil
	}
	user, pass := "", ""
	if cfg.GitCredentialsFile != "" {
		data, err := os.ReadFile(cfg.GitCredentialsFile)
		if err != nil {
			return nil, fmt.Errorf("--git-credentials-file: %w", err)
		}
		cred := strings.TrimSpace(string(data))
		if u, pw, ok := strings.Cut(cred, ":"); ok {
			user, pass = u, pw
		} else {
			user, pass = "git", cred // a bare token
		}
	} else {
		user, _ = lookupEnv("MEMORYD_GIT_USERNAME")
		pass, _ = lookupEnv("MEMORYD_GIT_PASSWORD")
	}
	if pass != "" {
		if user == "" {
			user = "git"
		}
		p.auth = &http.BasicAuth{Username: user, Password: pass}
	}
	return p, nil
}

// enabled reports whether a remote is configured.
func (p *pusher) enabled() bool { return p != nil && p.url != "" }

// kick asks for a push soon.
func (p *pusher) kick() {
	if !p.enabled() {
		return
	}
	p.wake.Notify()
}

// run pushes on every kick, retrying failures with exponential backoff.
func (p *pusher) run(ctx context.Context) {
	if !p.enabled() {
		return
	}
	backoff := time.Second
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.wake.C():
		case <-retry:
		}
		if err := p.push(ctx); err != nil {
			if p.metrics != nil && ctx.Err() == nil {
				p.metrics.gitFailed(ctx, gitOpPush)
			}
			p.logger.Warn("push to remote failed; will retry", "remote", redactURL(p.url), "in", backoff.String(), "err", err)
			retry = time.After(backoff)
			backoff = min(backoff*2, time.Minute)
			continue
		}
		retry, backoff = nil, time.Second
	}
}

// push sends main to the remote now.
func (p *pusher) push(ctx context.Context) error {
	// Main as it is before the push: the remote has at least this after it.
	head, err := p.repo.Head(ctx)
	if err != nil {
		return err
	}
	// An anonymous remote: the repository's config is never written.
	remote := git.NewRemote(p.repo.Git().Storer, &config.RemoteConfig{Name: "mirror", URLs: []string{p.url}})
	err = remote.PushContext(ctx, &git.PushOptions{
		RemoteName: "mirror",
		RefSpecs:   []config.RefSpec{"refs/heads/main:refs/heads/main"},
		Auth:       p.auth,
	})
	if errors.Is(err, git.NoErrAlreadyUpToDate) {
		err = nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastErr = err
	if err == nil {
		p.pushed = time.Now()
		p.pushedHead = head
	}
	return err
}

// lag is how far the remote is behind main: the commits after the last
// one pushed.
func (p *pusher) lag(ctx context.Context) (memrepo.Lag, error) {
	head, err := p.repo.Head(ctx)
	if err != nil {
		return memrepo.Lag{}, err
	}
	p.mu.Lock()
	pushed := p.pushedHead
	p.mu.Unlock()
	return p.repo.Behind(ctx, head, pushed, lagWalkLimit)
}

// redactURL drops credentials from a URL for logs.
func redactURL(u string) string {
	if i := strings.Index(u, "@"); i >= 0 {
		if j := strings.Index(u, "://"); j >= 0 && j < i {
			return u[:j+3] + "***@" + u[i+1:]
		}
	}
	return u
}
