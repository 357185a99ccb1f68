package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/internal/audit"
)

// maxCheckpointFile bounds a checkpoint file read by audit verify.
const maxCheckpointFile = 64 << 10

// newAuditCheckpointCmd is `drover audit checkpoint`.
func newAuditCheckpointCmd(g *globals) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "checkpoint",
		Short: "Record the audit stream's last sequence and its event's link, to keep outside NATS",
		Long: `Print (or write to --out) a checkpoint of the audit stream as JSON: its last
sequence and the link of the event stored there (the SHA-256 its successor
would carry in Drover-Prev). Keep it where the NATS servers cannot change it.
Later, "drover audit verify --checkpoint FILE" reports a stream that ends
before the checkpoint's sequence, or holds another event there, as a
regression: a store rolled back or restored from an older copy.`,
		Example: `  drover audit checkpoint --out /secure/drover-audit-$(date +%F).json
  drover audit verify --checkpoint /secure/drover-audit-2026-12-01.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.connect(cmd.Context(), "audit checkpoint")
			if err != nil {
				return err
			}
			defer c.Close()
			cp, err := audit.TakeCheckpoint(cmd.Context(), c.js, g.names)
			if err != nil {
				return err
			}
			b, err := json.MarshalIndent(cp, "", "  ")
			if err != nil {
				return err
			}
			b = append(b, '\n')
			if out == "" {
				_, err = g.stdout.Write(b)
				return err
			}
			return os.WriteFile(out, b, 0o600)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the checkpoint to this file instead of standard output")
	return cmd
}

// readCheckpoint reads a checkpoint file of audit checkpoint.
func readCheckpoint(path string) (*audit.Checkpoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--checkpoint: %w", err)
	}
	defer func() { _ = f.Close() }() // read only
	b, err := io.ReadAll(io.LimitReader(f, maxCheckpointFile+1))
	if err != nil {
		return nil, fmt.Errorf("--checkpoint: %w", err)
	}
	if len(b) > maxCheckpointFile {
		return nil, fmt.Errorf("--checkpoint: %s is over %d bytes", path, maxCheckpointFile)
	}
	cp, err := audit.ParseCheckpoint(b)
	if err != nil {
		return nil, fmt.Errorf("--checkpoint %s: %w", path, err)
	}
	return &cp, nil
}
