package proposalapply

import (
	"errors"
	"flag"
	"time"

	"github.com/garden-bloom/memory/pkg/tokens"
)

// Config is proposal-apply's configuration.
type Config struct {
	// TokenEncoding is the tiktoken encoding limits are counted in.
	TokenEncoding string
	// AutoApproveDefault applies to agents without a policy.json.
	AutoApproveDefault bool
	// ReviewURLBase prefixes proposal ids in reviewUrl.
	ReviewURLBase string
	// AuthorName and AuthorEmail sign the engine's commits.
	AuthorName, AuthorEmail string
	// GitRemoteURL, when set, receives a push of main after every commit.
	GitRemoteURL string
	// GitCredentialsFile holds "user:password" (or a token) for the remote;
	// MEMORYD_GIT_PASSWORD / MEMORYD_GIT_USERNAME are read when it is empty.
	GitCredentialsFile string
	// WatchPoll is how often the commit stream looks for commits made with
	// plain git; the engine's own commits are streamed at once.
	WatchPoll time.Duration
	// MaxUpdates bounds the updates of one proposal.
	MaxUpdates int
	// BackupEvery writes a git bundle to the object store on a schedule
	// (0 = only on demand).
	BackupEvery time.Duration
	// RunRetention is how long a run file stays in the repository after
	// its last change before rotation archives it (spec: 90 days).
	RunRetention time.Duration
	// RotateEvery runs run rotation on a schedule (0 = only on demand).
	RotateEvery time.Duration
	// AlwaysLoadLimit caps the tokens of all ALWAYS_LOAD blocks of an
	// agent's Layer 1 files, so they can never push facts or loops out of a
	// basic or wide read.
	AlwaysLoadLimit int
	// MaxArtifactBytes bounds one run artifact (write_artifact).
	MaxArtifactBytes int
}

// RegisterFlags adds proposal-apply's flags.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.TokenEncoding, "token-encoding", tokens.DefaultEncoding, "tiktoken encoding that Layer 1 limits are counted in (cl100k_base, o200k_base)")
	fs.BoolVar(&c.AutoApproveDefault, "auto-approve-default", false, "auto-approve normal-priority, unflagged proposals of agents that have no policy.json")
	fs.StringVar(&c.ReviewURLBase, "review-url-base", "http://127.0.0.1:8080/ui/proposals/", "prefix of a proposal's reviewUrl: the review console's proposal page (/ui/proposals/) on the edge's external URL; the JSON stays at /proposals/{id}")
	fs.StringVar(&c.AuthorName, "git-author-name", "Garden Bloom Memory", "author of the commits proposal-apply makes")
	fs.StringVar(&c.AuthorEmail, "git-author-email", "memory@gardenbloom.local", "author e-mail of the commits proposal-apply makes")
	fs.StringVar(&c.GitRemoteURL, "git-remote-url", "", "push main here after every commit (proposal-apply only)")
	fs.StringVar(&c.GitCredentialsFile, "git-credentials-file", "", "file with user:password for --git-remote-url (proposal-apply only)")
	fs.DurationVar(&c.WatchPoll, "watch-poll", 500*time.Millisecond, "how often the commit stream checks main for commits made with plain git")
	fs.IntVar(&c.MaxUpdates, "max-updates", 50, "most updates one proposal may carry")
	fs.IntVar(&c.AlwaysLoadLimit, "always-load-limit", 1000, "most tokens all ALWAYS_LOAD blocks of an agent's Layer 1 files may hold together (checked at propose)")
	fs.IntVar(&c.MaxArtifactBytes, "max-artifact-bytes", 256<<10, "largest run artifact (runs/run_<id>/artifacts/<name>) a proposal may write, in bytes")
	fs.DurationVar(&c.RunRetention, "run-retention", 90*24*time.Hour, "run files unchanged this long move to memory-archive/<agent>/runs/<yyyy>/<mm>/ in the object store")
	fs.DurationVar(&c.RotateEvery, "rotate-runs-every", 24*time.Hour, "how often run rotation runs (first ten minutes after start; 0 = only on demand via RotateRuns)")
	fs.DurationVar(&c.BackupEvery, "backup-every", 0, "write a git bundle of the monorepo to git-backup/ in the object store this often (0 = only on demand)")
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.AuthorName == "" || c.AuthorEmail == "" {
		return errors.New("--git-author-name and --git-author-email must not be empty")
	}
	if c.WatchPoll <= 0 {
		return errors.New("--watch-poll must be positive")
	}
	if c.BackupEvery < 0 {
		return errors.New("--backup-every must not be negative")
	}
	if c.RunRetention <= 0 {
		return errors.New("--run-retention must be positive")
	}
	if c.RotateEvery < 0 {
		return errors.New("--rotate-runs-every must not be negative")
	}
	if c.MaxUpdates <= 0 {
		return errors.New("--max-updates must be positive")
	}
	if c.AlwaysLoadLimit < 0 {
		return errors.New("--always-load-limit must not be negative")
	}
	if c.MaxArtifactBytes <= 0 {
		return errors.New("--max-artifact-bytes must be positive")
	}
	if c.GitCredentialsFile != "" && c.GitRemoteURL == "" {
		return errors.New("--git-credentials-file needs --git-remote-url")
	}
	return nil
}
