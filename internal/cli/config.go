package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/droverhq/drover/internal/config"
	"github.com/droverhq/drover/internal/prompt"
	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/workspace"
	"github.com/droverhq/drover/subjects"
)

// defaultConfigFile is what `drover config check` reads when neither an
// argument nor --config (DROVER_CONFIG) names a file.
const defaultConfigFile = "drover.yaml"

func newConfigCmd(g *globals) *cobra.Command {
	var path, promptsDir string
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Check a configuration file, or print a commented example",
		Long: `Drover's configuration file (YAML) holds the worker's settings and, per role, which
runner executes it: sim (built in), exec (an agent CLI or any program) or openai (an
OpenAI-compatible endpoint). drover serve reads it with --config (env DROVER_CONFIG);
flags and DROVER_* variables override the file, the file overrides the defaults.`,
	}
	cmd.PersistentFlags().StringVar(&path, "config", "", "configuration file (default "+defaultConfigFile+")")
	check := &cobra.Command{
		Use:   "check [FILE]",
		Short: "Validate a configuration file, its prompt templates and runners; print each role's runner",
		Long: `Load and validate FILE (default: --config, env DROVER_CONFIG, else ./drover.yaml), load
the prompt templates (prompts_dir, or --prompts), and build every role's runner without
calling it. Prints each role's runner and identity (part of the cache key), and whether
its results are cached and why (exec roles are not, unless cache: true). Exits 1 with
the first problems found, naming the field, or the template's file and line.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				path = args[0]
			}
			if path == "" {
				path = defaultConfigFile
			}
			return configCheck(cmd, g, path, promptsDir)
		},
	}
	check.Flags().StringVar(&promptsDir, "prompts", "", "prompt template directory, overriding the file's prompts_dir")
	example := &cobra.Command{
		Use:   "example",
		Short: "Print a commented example configuration file",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := g.stdout.Write(config.Example)
			return err
		},
	}
	cmd.AddCommand(check, example)
	return cmd
}

func configCheck(cmd *cobra.Command, g *globals, path, promptsDir string) error {
	file, err := config.Load(path)
	if err != nil {
		return err
	}
	override(cmd.Flags(), "prompts", &promptsDir, file.PromptsDir)
	prompts, err := prompt.Load(promptsDir)
	if err != nil {
		return err
	}
	set, err := file.Runners(prompts, runner.NewSim(runner.SimOptions{}))
	if err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	fmt.Fprintf(g.stdout, "%s: ok\n", path)
	tw := tabwriter.NewWriter(g.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLE\tRUNNER\tTIMEOUT\tPROMPT\tDETAIL\tIDENTITY")
	timeouts := file.RoleTimeouts()
	for _, r := range subjects.Roles {
		rc := file.Roles.For(r)
		timeout := "-"
		if d, ok := timeouts[r]; ok {
			timeout = d.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r, rc.RunnerName(), timeout, prompts.File(r), runnerDetail(rc), set.For(r).Identity())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(g.stdout)
	tw = tabwriter.NewWriter(g.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLE\tRUNNER\tCACHE")
	for _, r := range subjects.Roles {
		rc := file.Roles.For(r)
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r, rc.RunnerName(), cacheText(file, r))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	reportSandbox(cmd.Context(), g.stdout, file)
	return checkWorkspace(cmd.Context(), g, file.Workspace)
}

// checkWorkspace checks that the file's workspace repository can be
// reached (an ls-remote, bounded by the git timeout and 10s), with a
// scratch directory, touching no worker's workspaces.
func checkWorkspace(ctx context.Context, g *globals, c workspace.Config) error {
	if !c.Enabled() {
		return nil
	}
	scratch, err := os.MkdirTemp("", "drover-config-check-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(scratch) }() // best effort: a temporary file
	c.Dir = filepath.Join(scratch, "workspaces")
	m, err := workspace.New(workspace.Deps{Log: g.log}, c)
	if err != nil {
		return err
	}
	if err := m.Ready(ctx); err != nil {
		// The URL may hold credentials: the message names it masked.
		return errors.New(strings.ReplaceAll(err.Error(), c.Repo, redact.URL(c.Repo)))
	}
	fmt.Fprintf(g.stdout, "\nworkspace: repository %s reachable\n", redact.URL(c.Repo))
	return nil
}

// cacheText says whether a role's results are cached, and why.
func cacheText(f *config.File, r subjects.Role) string {
	cached, why := f.RoleCached(r)
	if cached {
		return "cached: " + why
	}
	return "not cached: " + why
}

// runnerDetail says in a few words what a role's runner calls. It names
// the API key's variable and whether it is set, never the key.
func runnerDetail(rc *config.Role) string {
	switch {
	case rc.Exec != nil || rc.Agent != "":
		argv := rc.ExecArgv()
		q := make([]string, len(argv))
		for i, a := range argv {
			q[i] = fmt.Sprintf("%q", a)
		}
		if rc.Agent != "" {
			return "agent " + rc.Agent + ", argv [" + strings.Join(q, " ") + "]"
		}
		return "argv [" + strings.Join(q, " ") + "]"
	case rc.OpenAI != nil:
		env := rc.OpenAI.APIKeyEnv
		if env == "" {
			env = runner.DefaultOpenAIKeyEnv
		}
		state := "unset"
		if v, ok := os.LookupEnv(env); ok && v != "" {
			state = "set"
		}
		return fmt.Sprintf("model %q at %s, key $%s (%s)", rc.OpenAI.Model, redact.URL(rc.OpenAI.BaseURL), env, state)
	}
	return "built-in simulator"
}

// applyConfig loads serve's --config file, if any, and merges it into the
// flags: a flag set on the command line or by its DROVER_* variable wins,
// else the file's value when set, else the flag's default. It then loads
// the prompt templates and builds each role's runner, so a bad file or
// template stops serve before it starts anything.
func applyConfig(cmd *cobra.Command, g *globals, f *serveFlags) (runner.Set, error) {
	file := &config.File{}
	if f.config != "" {
		var err error
		if file, err = config.Load(f.config); err != nil {
			return runner.Set{}, err
		}
	}
	fs := cmd.Flags()
	override(fs, "nats-url", &g.natsURL, file.NatsURL)
	override(fs, "prefix", &g.prefix, file.Prefix)
	names, err := subjects.NewNames(g.prefix)
	if err != nil {
		return runner.Set{}, fmt.Errorf("prefix: %w", err)
	}
	g.names = names
	w := file.Worker
	override(fs, "concurrency", &f.concurrency, w.Concurrency)
	overrideSlice(fs, "queues", &f.queues, w.Queues)
	override(fs, "ack-wait", &f.ackWait, w.AckWait)
	override(fs, "max-deliver", &f.maxDeliver, w.MaxDeliver)
	override(fs, "max-ack-pending", &f.maxAckPending, w.MaxAckPending)
	override(fs, "grace", &f.grace, w.Grace)
	override(fs, "cache-ttl", &f.cacheTTL, w.CacheTTL)
	override(fs, "role-timeout", &f.roleTimeout, w.RoleTimeout)
	override(fs, "dlq-max-age", &f.dlqMaxAge, w.DLQMaxAge)
	override(fs, "dlq-max-msgs", &f.dlqMaxMsgs, w.DLQMaxMsgs)
	override(fs, "lessons-max-age", &f.lessonsMaxAge, w.LessonsMaxAge)
	override(fs, "lessons-scope", &f.lessonsScope, w.LessonsScope)
	override(fs, "cache-scope", &f.cacheScope, w.CacheScope)
	override(fs, "gc-interval", &f.gcInterval, w.GCInterval)
	override(fs, "state-retention", &f.gc.stateMaxAge, w.StateRetention)
	override(fs, "blob-retention", &f.gc.blobMinAge, w.BlobRetention)
	override(fs, "blob-max-age", &f.gc.blobMaxAge, w.BlobMaxAge)
	mergeWorkspace(fs, &f.workspace, file.Workspace)
	applyMergeFlags(fs, &f.mergeq, file.Merge)
	mergeDelivery(fs, &f.delivery, file.Delivery)
	mergeReview(fs, &f.review, file.Review)
	override(fs, "prompts", &f.prompts, file.PromptsDir)
	if f.sandbox, err = serveSandbox(fs, g, f, file.Sandbox); err != nil {
		return runner.Set{}, err
	}
	f.execRoles = file.ExecRoles()
	prompts, err := prompt.Load(f.prompts)
	if err != nil {
		return runner.Set{}, err
	}
	f.prices, f.budgets = file.Prices, file.Budgets
	file.Worker.Concurrency = f.concurrency // sizes the openai runners' connection pools
	file.Workspace.Repo = f.workspace.Repo  // a flag may turn workspaces on: exec roles' caching follows
	// The workspace repository's credentials, if its URL holds any, are
	// secrets like the server's: masked in role results and logs.
	extra := append([]string{g.auth.Password, g.auth.Token}, redact.URLSecrets(f.workspace.Repo)...)
	extra = append(extra, redact.URLSecrets(f.workspace.PushRemote)...)
	if name := f.delivery.pr.TokenEnv; name != "" {
		extra = append(extra, os.Getenv(name)) // the forge's token, however --pr-token-env was set
	}
	// Exec runners start their agents in the worker's sandbox.
	set, err := file.SandboxedRunners(f.sandbox, prompts, runner.NewSim(runner.SimOptions{CallLog: f.simCallLog}), extra...)
	if err != nil {
		return runner.Set{}, fmt.Errorf("config %s: %w", f.config, err) // only a file's roles can fail
	}
	// The worker's log gets the runners' secrets masked too.
	f.secrets = file.Secrets(extra...)
	f.named = file.NamedSecrets(extra...)
	g.log = slog.New(redact.New(f.secrets...).Handler(g.log.Handler()))
	slog.SetDefault(g.log)
	timeouts := file.RoleTimeouts()
	for _, r := range subjects.Roles {
		g.log.Info("role runner", "role", r, "runner", file.Roles.For(r).RunnerName(), "identity", set.For(r).Identity(),
			"prompt", prompts.File(r), "timeout", timeoutText(timeouts[r], f.roleTimeout))
	}
	return set, nil
}

func timeoutText(own, global time.Duration) string {
	if own > 0 && own < global {
		return own.String()
	}
	return global.String()
}

// override applies the file's value to *dst unless the flag name was set
// (on the command line, or by its environment variable: applyEnv marks
// those Changed) or the file's value is zero, which means "not set".
func override[T comparable](fs *pflag.FlagSet, name string, dst *T, file T) {
	var zero T
	if !fs.Changed(name) && file != zero {
		*dst = file
	}
}

// overrideSlice is override for a list flag; an empty list means "not set".
func overrideSlice[T any](fs *pflag.FlagSet, name string, dst *[]T, file []T) {
	if !fs.Changed(name) && len(file) > 0 {
		*dst = file
	}
}
