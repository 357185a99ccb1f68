package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/droverhq/drover/internal/board"
	"github.com/droverhq/drover/internal/lessons"
	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/internal/table"
	"github.com/droverhq/drover/subjects"
)

func newLessonsCmd(g *globals) *cobra.Command {
	var (
		taskType string
		limit    int
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "lessons",
		Short: "List what judge rejections and task failures taught, per task type",
		Long: `Every judge rejection and every failed task records a lesson: the task type, the
role, what went wrong and the judge's feedback. A planner whose runner uses lessons
gets the most recent ones of its task's type and workflow (serve --lessons-scope fleet:
of every workflow). The lessons stream keeps the most recent 100 lessons of each type
and workflow (broker setting LessonsPerType) for at most --lessons-max-age (default 90
days); older ones age out. This command lists every workflow's.

Lessons print oldest first, newest last. --type reads only that type's lessons.`,
		Example: `  drover lessons
  drover lessons --type feature --limit 5
  drover lessons --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if taskType != "" {
				if err := board.ValidateType(taskType); err != nil {
					return fmt.Errorf("--type: %w", err)
				}
			}
			if limit < 0 {
				return fmt.Errorf("--limit %d: want 0 (all) or more", limit)
			}
			c, err := g.connect(cmd.Context(), "lessons")
			if err != nil {
				return err
			}
			defer c.Close()
			book, err := lessons.New(lessons.Deps{JS: c.js, Names: g.names, Log: g.log}, lessons.Config{})
			if err != nil {
				return err
			}
			var got []subjects.Lesson
			err = book.List(cmd.Context(), taskType, func(l subjects.Lesson) error {
				if got = append(got, l); limit > 0 && len(got) > limit {
					got = got[1:]
				}
				return nil
			})
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				return fmt.Errorf("lessons stream %s does not exist (has a worker started with --prefix %s?)", g.names.LessonsStream(), g.names.Prefix())
			}
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(g.stdout)
				for _, l := range got {
					if err := enc.Encode(l); err != nil {
						return err
					}
				}
				return nil
			}
			if len(got) == 0 {
				fmt.Fprintln(g.stderr, "no lessons recorded")
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TIME\tTYPE\tROLE\tATTEMPT\tKIND\tWHAT\tFEEDBACK")
			for _, l := range got {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", l.Time.UTC().Format(time.DateTime), l.Type, l.Role, l.Attempt,
					l.Kind, redact.ClipRunes(redact.OneLine(l.What), 50), table.Dash(redact.ClipRunes(redact.OneLine(l.Feedback), 60)))
			}
			return tw.Flush()
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&taskType, "type", "", "only lessons of this task type")
	fl.IntVar(&limit, "limit", 0, "only the most recent N lessons (0: all)")
	fl.BoolVar(&asJSON, "json", false, "print one JSON object per lesson")
	return cmd
}

// dashIfEmpty shows an empty table cell as "-".
