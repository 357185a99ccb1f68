//go:build !unix

package cli

import "os"

// lameDuckSignals delivers nothing where there is no SIGUSR2.
func lameDuckSignals() (<-chan os.Signal, func()) { return nil, func() {} }
