package tune

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/droverhq/drover/internal/table"
)

// WriteTable prints the role and type statistics as two aligned tables.
func WriteTable(w io.Writer, rep *Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%d events of %d tasks", rep.Events, rep.Tasks)
	if rep.Undecodable > 0 {
		fmt.Fprintf(tw, " (%d undecodable, skipped)", rep.Undecodable)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "\nROLE\tTYPE\tRUNS\tP50\tP95\tP99\tTIMEOUTS\tFAILURES")
	for _, r := range rep.Roles {
		ty := r.Type
		if ty == "" {
			ty = "(all)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%d\t%d\n", r.Role, ty, r.Runs, ms(r.P50MS), ms(r.P95MS), ms(r.P99MS), r.Timeouts, r.Failures)
	}
	fmt.Fprintln(tw, "\nTYPE\tCOMPLETED\tFAILED\tROUNDS 1,2,..\tREJECTED/VERDICTS BY ROUND\tMAX_ATTEMPTS")
	for _, t := range rep.Types {
		verdicts := make([]string, len(t.Verdicts))
		for i := range t.Verdicts {
			verdicts[i] = fmt.Sprintf("%d/%d", t.Rejections[i], t.Verdicts[i])
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", t.Type, t.Completed, t.Failed, ints(t.Rounds),
			table.Dash(strings.Join(verdicts, ",")), attempts(t))
	}
	return tw.Flush()
}

// WriteSnippet prints the recommendations in the configuration file's
// shape: a roles block with each role's timeout, then max_attempts per
// type as comments, since a task request carries its own max_attempts and
// the configuration has no per-type setting.
func WriteSnippet(w io.Writer, rep *Report) error {
	var b strings.Builder
	p := "p" + strconv.FormatFloat(rep.Percentile, 'g', -1, 64)
	fmt.Fprintf(&b, "# drover tune: %d events of %d tasks. A timeout is the %s of a role's successful,\n", rep.Events, rep.Tasks, p)
	fmt.Fprintf(&b, "# uncached runs × %g, rounded up, at least %s.\n", rep.Headroom, FormatDuration(MinTimeout))
	if len(rep.Timeouts) == 0 {
		b.WriteString("# No successful, uncached role runs in this history: no timeout to recommend.\n")
	} else {
		b.WriteString("roles:\n")
		var longest time.Duration
		for _, t := range rep.Timeouts {
			fmt.Fprintf(&b, "  %s:\n    timeout: %-6s # %s %s of %d runs\n", t.Role, t.Timeout, p, ms(t.PercentileMS), t.Runs)
			longest = max(longest, time.Duration(t.TimeoutMS)*time.Millisecond)
		}
		fmt.Fprintf(&b, "# worker.role_timeout bounds every role: keep it at least %s.\n", FormatDuration(longest))
	}
	b.WriteString("#\n# max_attempts per task type, to set in each task request (\"max_attempts\"):\n")
	fmt.Fprintf(&b, "# the rounds that %g%% of the type's completed tasks needed, plus one.\n", RoundsQuantile)
	if len(rep.Types) == 0 {
		b.WriteString("#   (no finished tasks in this history)\n")
	}
	for _, t := range rep.Types {
		if t.MaxAttempts == 0 {
			fmt.Fprintf(&b, "#   %s: no completed task (%d failed); keep the default\n", t.Type, t.Failed)
			continue
		}
		note := ""
		if t.LowConfidence {
			note = fmt.Sprintf("; low confidence (fewer than %d)", LowConfidence)
		}
		fmt.Fprintf(&b, "#   %s: %d   # %d completed tasks, %g%% within %s%s\n", t.Type, t.MaxAttempts, t.Completed,
			RoundsQuantile, plural(t.RoundsNeeded, "round"), note)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// attempts is a type's recommended max_attempts as a table cell.
func attempts(t TypeStats) string {
	switch {
	case t.MaxAttempts == 0:
		return "-"
	case t.LowConfidence:
		return fmt.Sprintf("%d (low confidence: %d tasks)", t.MaxAttempts, t.Completed)
	}
	return strconv.Itoa(t.MaxAttempts)
}

// ms writes milliseconds as a readable duration ("-" for none).
func ms(v int64) string {
	if v == 0 {
		return "-"
	}
	return FormatDuration(time.Duration(v) * time.Millisecond)
}

func ints(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return table.Dash(strings.Join(s, ","))
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
