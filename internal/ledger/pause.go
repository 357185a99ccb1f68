package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/droverhq/drover/subjects"
)

// NATSPauser pauses a workflow by the contract's control request, as
// `drover workflow pause` does; any worker's controller answers it.
func NATSPauser(nc *nats.Conn, names subjects.Names) Pauser {
	return func(ctx context.Context, wf, reason string) error {
		body, err := json.Marshal(map[string]string{"reason": reason})
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		m, err := nc.RequestWithContext(ctx, names.CtlSubject(wf, "pause"), body)
		if err != nil {
			return fmt.Errorf("pause %s: %w", wf, err)
		}
		var reply struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal(m.Data, &reply); err != nil {
			return fmt.Errorf("pause %s: reply: %w", wf, err)
		}
		if reply.Error != "" {
			return fmt.Errorf("pause %s: %w", wf, errors.New(reply.Error))
		}
		return nil
	}
}
