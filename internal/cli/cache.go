package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/internal/cache"
	"github.com/droverhq/drover/internal/table"
	"github.com/droverhq/drover/subjects"
)

func newCacheCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Inspect and invalidate the cache of role results",
		Long: `Inspect and invalidate the cache of role results (the drover_cache bucket).

A cache entry only saves cost: removing one makes the role run again the next
time the same input comes along, it never changes an outcome.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newCacheStatsCmd(g), newCacheInvalidateCmd(g), newCacheClearCmd(g))
	return cmd
}

func newCacheStatsCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Count the cached entries and their bytes, in total and per role",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.connect(cmd.Context(), "cache stats")
			if err != nil {
				return err
			}
			defer c.Close()
			st, err := cache.NewAdmin(c.js, g.names).Stats(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "ROLE\tENTRIES\tBYTES\n")
			for _, r := range st.Roles {
				fmt.Fprintf(tw, "%s\t%d\t%s\n", r.Role, r.Entries, table.Bytes(r.Bytes))
			}
			fmt.Fprintf(tw, "total\t%d\t%s\n", st.Entries, table.Bytes(st.Bytes))
			if err := tw.Flush(); err != nil {
				return err
			}
			_, err = fmt.Fprintf(g.stdout, "bucket %s: %s stored with keys and headers, entries live %s\n",
				st.Bucket, table.Bytes(st.StoredBytes), st.TTL)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the statistics as JSON")
	return cmd
}

func newCacheInvalidateCmd(g *globals) *cobra.Command {
	var role, task, workflow string
	cmd := &cobra.Command{
		Use:   "invalidate --role ROLE | --task WORKFLOW/TASK",
		Short: "Remove the entries of one role, or those one task used",
		Long: `Remove cache entries, so the roles run again on their next use.

--role removes every entry of planner, implementer or judge in one request
(e.g. after changing that role's prompt without changing its runner identity).
--task removes the entries a task used in every round: the keys in its state
and in its audit events. Cache keys depend on the task, not its workflow, so
re-runs of the same task under other workflows lose them too. WORKFLOW/TASK is
split at the first "/"; for a workflow ID that contains "/", use --workflow W
--task T.`,
		Example: `  drover cache invalidate --role judge
  drover cache invalidate --task board-T1/T1.1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (role == "") == (task == "") {
				return errors.New("give exactly one of --role or --task")
			}
			if role != "" && !subjects.Role(role).Valid() {
				return fmt.Errorf("--role %q: want planner, implementer or judge", role)
			}
			var ref taskRef
			if task != "" {
				var err error
				if workflow != "" {
					ref, err = resolveTaskRef(nil, workflow, task, "--task")
				} else {
					ref, err = resolveTaskRef([]string{task}, "", "", "--task")
				}
				if err != nil {
					return fmt.Errorf("--task: %w", err)
				}
			}
			c, err := g.connect(cmd.Context(), "cache invalidate")
			if err != nil {
				return err
			}
			defer c.Close()
			admin := cache.NewAdmin(c.js, g.names)
			if role != "" {
				n, err := admin.InvalidateRole(cmd.Context(), subjects.Role(role))
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(g.stdout, "removed %d %s entries from %s\n", n, role, g.names.CacheBucket())
				return err
			}
			inv, err := admin.InvalidateTask(cmd.Context(), ref.workflow, ref.task)
			if errors.Is(err, cache.ErrUnknownTask) {
				return fmt.Errorf("task %s has no state and no audit events: nothing names its cache keys", ref)
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(g.stdout, "removed %d entries from %s (task %s used %d cache keys)\n",
				inv.Removed, g.names.CacheBucket(), ref, len(inv.Keys))
			return err
		},
	}
	cmd.Flags().StringVar(&role, "role", "", "remove every entry of this role: planner, implementer or judge")
	cmd.Flags().StringVar(&task, "task", "", "remove the entries of this task, WORKFLOW/TASK (or the task ID with --workflow)")
	cmd.Flags().StringVar(&workflow, "workflow", "", "workflow ID of --task, which is then the task ID as it is")
	return cmd
}

func newCacheClearCmd(g *globals) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "clear --yes",
		Short: "Remove every entry of the cache",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !yes {
				return fmt.Errorf("cache clear removes every entry of %s, so every role runs again; pass --yes to confirm", g.names.CacheBucket())
			}
			c, err := g.connect(cmd.Context(), "cache clear")
			if err != nil {
				return err
			}
			defer c.Close()
			n, err := cache.NewAdmin(c.js, g.names).Clear(cmd.Context())
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(g.stdout, "removed %d entries from %s\n", n, g.names.CacheBucket())
			return err
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm removing every entry")
	return cmd
}
