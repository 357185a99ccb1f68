package mergequeue

import (
	"fmt"
	"time"

	"github.com/droverhq/drover/internal/workspace"
	"github.com/droverhq/drover/subjects"
)

// Strategies of bringing a branch onto its target.
const (
	StrategyMerge  = "merge"  // a merge commit per branch (default)
	StrategyRebase = "rebase" // the branch's commits replayed on the target
)

// Defaults of Config.
const (
	DefaultBatch    = 8
	DefaultLeaseTTL = 30 * time.Second
	DefaultFeedback = 4096
)

// Config is the `merge:` section of the worker's configuration.
type Config struct {
	// Target is the branch approved work is merged into; required.
	Target string `yaml:"target"`
	// Check is run in the merged tree before a push (argv, no shell,
	// timeout); empty means no check.
	Check workspace.Command `yaml:"check"`
	// Batch is the most entries merged and pushed together; 0 means 8.
	Batch int `yaml:"batch"`
	// Strategy is "merge" (default when empty) or "rebase".
	Strategy string `yaml:"strategy"`
	// LeaseTTL is how long a merger holds its target without renewing it,
	// and the queue's ack wait: a dead merger hands over within it. 0
	// means 30s.
	LeaseTTL time.Duration `yaml:"lease_ttl"`
	// MaxFeedback bounds the conflict or check output sent back to an
	// implementer, in bytes; 0 means 4096.
	MaxFeedback int `yaml:"max_feedback"`
}

// WithDefaults returns c with its zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Batch == 0 {
		c.Batch = DefaultBatch
	}
	if c.Strategy == "" {
		c.Strategy = StrategyMerge
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.MaxFeedback == 0 {
		c.MaxFeedback = DefaultFeedback
	}
	return c
}

// Validate reports the first field that cannot work, by name and value.
func (c Config) Validate() error {
	if err := subjects.ValidBranch(c.Target); err != nil {
		return fmt.Errorf("%w: merge.target %.80q: a branch name is required", ErrInvalidConfig, c.Target)
	}
	if c.Batch < 0 || c.Batch > 256 {
		return fmt.Errorf("%w: merge.batch %d: must be 0 to 256", ErrInvalidConfig, c.Batch)
	}
	if c.Strategy != "" && c.Strategy != StrategyMerge && c.Strategy != StrategyRebase {
		return fmt.Errorf("%w: merge.strategy %.40q: must be merge or rebase", ErrInvalidConfig, c.Strategy)
	}
	if c.LeaseTTL != 0 && c.LeaseTTL < time.Second {
		return fmt.Errorf("%w: merge.lease_ttl %v: must be at least 1s", ErrInvalidConfig, c.LeaseTTL)
	}
	if c.Check.Timeout < 0 {
		return fmt.Errorf("%w: merge.check.timeout %v: must not be negative", ErrInvalidConfig, c.Check.Timeout)
	}
	if c.MaxFeedback < 0 {
		return fmt.Errorf("%w: merge.max_feedback %d: must not be negative", ErrInvalidConfig, c.MaxFeedback)
	}
	return nil
}
