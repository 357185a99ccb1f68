package mergequeue

import (
	"errors"

	"github.com/droverhq/drover/internal/workspace"
)

func isConflict(err error) bool { return errors.Is(err, workspace.ErrConflict) }
