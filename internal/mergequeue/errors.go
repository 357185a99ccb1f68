package mergequeue

import "errors"

var (
	// ErrInvalidConfig is a merge configuration that cannot work; the
	// message names the field and the value.
	ErrInvalidConfig = errors.New("mergequeue: invalid config")
	// ErrInvalidEntry is a queue entry missing a field or naming a
	// malformed commit.
	ErrInvalidEntry = errors.New("mergequeue: invalid entry")
	// ErrLeaseLost is a merger whose lease was taken over or expired
	// before it could push: the batch is given back.
	ErrLeaseLost = errors.New("mergequeue: lease lost")
)
