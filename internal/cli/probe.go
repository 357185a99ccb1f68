package cli

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

// newProbeCmd is a health-check client for images without curl or wget.
func newProbeCmd(g *globals) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:     "probe URL",
		Short:   "Exit 0 if an HTTP endpoint (such as /readyz) answers 200, else 1",
		Example: "  drover probe http://127.0.0.1:8080/readyz",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			client := &http.Client{Timeout: timeout}
			resp, err := client.Get(args[0])
			if err != nil {
				return err
			}
			defer func() { _ = resp.Body.Close() }() // read, or abandoned: nothing to lose
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s: %s %s", args[0], resp.Status, body)
			}
			fmt.Fprint(g.stdout, string(body))
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "request timeout")
	return cmd
}
