package replay_test

import (
	"time"

	"github.com/droverhq/drover/internal/pipeline"
)

func workerRetry() pipeline.Config {
	return pipeline.Config{RetryBase: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond}
}
