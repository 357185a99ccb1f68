package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/internal/audit"
)

// auditExportFlags are the flags of `drover audit export`.
type auditExportFlags struct {
	auditFlags
	format, output string
}

func newAuditExportCmd(g *globals) *cobra.Command {
	var f auditExportFlags
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the audit record as JSON lines or CloudEvents, streaming, for storage outside NATS",
		Long: `Write audit events, oldest first, for long-term storage outside NATS.

--format jsonl (the default) writes each event's body as one line of JSON, as stored.
--format cloudevents writes each event as one line of CloudEvents 1.0 structured JSON:
the ce-* attributes it was published with (id, source, type, subject, time), its
traceparent, its audit stream sequence as drover_seq, and the event as data.

The filters are those of drover audit and narrow the server's subject filter. The
export streams: it holds one event at a time, so its memory does not grow with the
record. It ends at the last matching event that existed when it started; the count
goes to stderr.`,
		Example: `  drover audit export --since 720h > audit-2026-11.jsonl
  drover audit export --workflow board-T1 --format cloudevents --output board-T1.ce.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q, err := f.query(time.Now())
			if err != nil {
				return err
			}
			return runAuditExport(cmd.Context(), g, f, q)
		},
	}
	fl := cmd.Flags()
	f.addFilters(fl)
	fl.StringVar(&f.format, "format", audit.FormatJSONL, "jsonl or cloudevents")
	fl.StringVarP(&f.output, "output", "o", "", "write to this file (created, or truncated) instead of stdout")
	return cmd
}

func runAuditExport(ctx context.Context, g *globals, f auditExportFlags, q audit.Query) (err error) {
	var out io.Writer = g.stdout
	if f.output != "" {
		file, err := os.Create(f.output)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := file.Close(); err == nil {
				err = cerr
			}
		}()
		out = file
	}
	bw := bufio.NewWriterSize(out, 256<<10)
	x, err := audit.NewExporter(bw, f.format)
	if err != nil {
		return fmt.Errorf("--format: %w", err)
	}
	c, err := g.connect(ctx, "audit export")
	if err != nil {
		return err
	}
	defer c.Close()
	start := time.Now()
	err = audit.Replay(ctx, c.js, g.names, q, x.Write)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return errors.Join(fmt.Errorf("export stopped after %d events", x.N), auditStreamErr(g, err))
	}
	fmt.Fprintf(g.stderr, "exported %d events in %s\n", x.N, time.Since(start).Round(time.Millisecond))
	return nil
}
