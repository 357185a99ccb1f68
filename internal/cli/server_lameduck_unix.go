//go:build unix

package cli

import (
	"os"
	"os/signal"
	"syscall"
)

// lameDuckSignals delivers SIGUSR2, the request to stop in lame duck mode,
// until stop is called.
func lameDuckSignals() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR2)
	return ch, func() { signal.Stop(ch) }
}
