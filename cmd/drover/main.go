// Command drover runs fleets of AI coding agents as durable, auditable jobs
// on NATS JetStream. See `drover --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/droverhq/drover/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
