package searchindex

import (
	"errors"
	"flag"
	"time"
)

// Config is search-index's configuration.
type Config struct {
	// IndexDir holds the index; default <data-dir>/search-index.
	IndexDir string
	// HeadPoll is how often main is checked besides the commit stream
	// (commits pushed by people, a write plane that is down).
	HeadPoll time.Duration
	// SourcesPoll is how often the object store's agent sources are checked.
	SourcesPoll time.Duration
	// KeepQuestionWords searches a query's question framing (what, did,
	// would, her …) too; by default a query drops it
	// (textanalysis.NewQueryAnalyzer).
	KeepQuestionWords bool
}

// RegisterFlags adds search-index's flags.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.IndexDir, "search-index-dir", "", "directory of the search index (default <data-dir>/search-index)")
	fs.DurationVar(&c.HeadPoll, "search-head-poll", time.Second, "how often search-index checks main besides following the commit stream")
	fs.DurationVar(&c.SourcesPoll, "search-sources-poll", 10*time.Second, "how often search-index re-lists agents/<id>/sources/ in the object store")
	fs.BoolVar(&c.KeepQuestionWords, "search-keep-question-words", false,
		"search a query's question words too (what, did, would, her …), which a query drops by default")
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.HeadPoll <= 0 || c.SourcesPoll <= 0 {
		return errors.New("--search-head-poll and --search-sources-poll must be positive")
	}
	return nil
}
