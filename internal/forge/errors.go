package forge

import "errors"

var (
	// ErrPermanent is wrapped by every error no retry can fix: the task's
	// pull request cannot be opened as configured.
	ErrPermanent = errors.New("forge: pull request failed")
	// ErrRejected is wrapped (with ErrPermanent) by the error of a request
	// the forge refused: 422 (no commits between the branches, a request
	// that exists in a way the search cannot find, a validation error) and
	// any other 4xx that is neither an authorization error nor a rate
	// limit.
	ErrRejected = errors.New("forge: request refused")
	// ErrUnauthorized is wrapped (with ErrPermanent) by the error of a
	// request the forge refused for its token: 401 or 403.
	ErrUnauthorized = errors.New("forge: token refused")
	// ErrInvalidConfig is wrapped by Config.Validate's and New's errors.
	ErrInvalidConfig = errors.New("forge: invalid pull_request config")
)
