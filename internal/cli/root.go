// Package cli is Drover's command line: one file per subcommand, all of them
// added in newRoot (root.go). Every flag can also be set by an environment
// variable DROVER_<FLAG> (upper case, dashes as underscores); the connection
// flags also read the nats CLI's variables (NATS_URL, NATS_USER, ...; see
// natsEnv) when their DROVER_* variable is unset.
package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/subjects"
)

// Version is set at build time with -ldflags "-X ...cli.Version=...".
var Version = "dev"

// DefaultNATSURL is where client commands look for NATS when no URL is
// given: the address `drover serve` listens on by default.
const DefaultNATSURL = "nats://127.0.0.1:4222"

// globals are the flags every command shares.
type globals struct {
	natsURL   string
	auth      broker.AuthOptions // credentials and TLS of every connection
	prefix    string
	logFormat string
	logLevel  string
	names     subjects.Names
	log       *slog.Logger
	stdout    io.Writer
	stderr    io.Writer
}

// Execute runs the command line with args and returns the exit code.
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		if code, ok := err.(exitCode); ok {
			return int(code)
		}
		fmt.Fprintln(stderr, "drover:", redact.Terminal(err.Error()))
		return 1
	}
	return 0
}

// exitCode ends a command with a code and no message of its own.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// newRoot builds the whole command line: the global flags, then every
// subcommand, listed here and nowhere else.
func newRoot(stdout, stderr io.Writer) *cobra.Command {
	g := &globals{stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:           "drover",
		Short:         "Run fleets of AI coding agents as durable, auditable jobs on NATS JetStream",
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd); err != nil {
				return err
			}
			names, err := subjects.NewNames(g.prefix)
			if err != nil {
				return fmt.Errorf("--prefix: %w", err)
			}
			g.names = names
			g.log, err = newLogger(g.logFormat, g.logLevel, stderr)
			if err != nil {
				return err
			}
			slog.SetDefault(g.log)
			return nil
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&g.natsURL, "nats-url", "", "NATS server URL(s), comma-separated (env NATS_URL); serve embeds a server when empty, other commands use "+DefaultNATSURL)
	addAuthFlags(pf, &g.auth)
	pf.StringVar(&g.prefix, "prefix", subjects.DefaultPrefix, "name prefix of every subject, stream and bucket")
	pf.StringVar(&g.logFormat, "log-format", "auto", "log format: auto (text on a terminal, JSON otherwise), text or json")
	pf.StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	root.AddCommand(
		// Running Drover.
		newServeCmd(g),
		newServerCmd(g),
		newConsoleCmd(g),
		newProbeCmd(g),
		newConfigCmd(g),
		// Work in.
		newSubmitCmd(g),
		newBoardCmd(g),
		newWorkflowCmd(g),
		newReviewCmd(g),
		newDlqCmd(g),
		// Looking at what happened.
		newStatusCmd(g),
		newTaskCmd(g),
		newAuditCmd(g),
		newCostCmd(g),
		newLessonsCmd(g),
		newTuneCmd(g),
		newReplayCmd(g),
		// Upkeep and measurement.
		newCacheCmd(g),
		newGcCmd(g),
		newBenchCmd(g),
	)
	return root
}

// applyEnv sets every flag not given on the command line from its
// environment variable: DROVER_<FLAG>, else the nats CLI's name of it.
func applyEnv(cmd *cobra.Command) error { return applyEnvFrom(cmd, os.LookupEnv) }

// applyEnvFrom is applyEnv with the environment read through lookup.
func applyEnvFrom(cmd *cobra.Command, lookup func(string) (string, bool)) error {
	var err error
	set := func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		name := "DROVER_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		v, ok := lookup(name)
		if alias := natsEnv[f.Name]; !ok && alias != "" {
			name = alias
			v, ok = lookup(alias)
		}
		if !ok {
			return
		}
		if serr := f.Value.Set(v); serr != nil {
			if secretFlags[f.Name] {
				v = "<redacted>"
			}
			err = fmt.Errorf("%s=%q: %w", name, v, serr)
			return
		}
		f.Changed = true
	}
	cmd.Flags().VisitAll(set)
	cmd.InheritedFlags().VisitAll(set)
	return err
}

func newLogger(format, level string, w io.Writer) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "auto":
		if isTerminal(w) {
			return slog.New(slog.NewTextHandler(w, opts)), nil
		}
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want auto, text or json", format)
}
