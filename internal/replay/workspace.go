package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/droverhq/drover/internal/workspace"
	"github.com/droverhq/drover/subjects"
)

// ErrSeveralBases is returned when the sampled tasks' recorded changes
// start from different base commits: one re-run pins one base.
var ErrSeveralBases = errors.New("the tasks' recorded changes start from different bases")

// replayWorkspace is the re-run worker's workspace configuration, made
// from the fleet's (cfg, off when it names no repository): it never
// pushes, its branches are named from the re-run's workflow (never the
// original's), and its tasks start from the base the recorded changes
// were made on, so every replayed attempt gets the recorded tree.
func replayWorkspace(ctx context.Context, cfg workspace.Config, rec *Record, ids []string, ex Expander) (workspace.Config, error) {
	if !cfg.Enabled() {
		return cfg, nil
	}
	cfg.Push, cfg.PushRemote = false, ""
	if !strings.Contains(cfg.BranchTemplate, "{workflow}") {
		cfg.BranchTemplate = workspace.DefaultBranchTemplate
	}
	bases, err := recordedBases(ctx, rec, ids, ex)
	if err != nil {
		return cfg, err
	}
	switch len(bases) {
	case 0: // recorded without workspaces: the configured base ref
	case 1:
		cfg.BaseRef = bases[0]
	default:
		return cfg, fmt.Errorf("%w (%s): re-run them apart with --tasks", ErrSeveralBases, strings.Join(bases, ", "))
	}
	return cfg, nil
}

// recordedBases lists the distinct bases of the tasks' recorded changes,
// sorted.
func recordedBases(ctx context.Context, rec *Record, ids []string, ex Expander) ([]string, error) {
	var bases []string
	for _, id := range ids {
		t := rec.Tasks[id]
		for a := 1; ; a++ {
			out, ok := t.Outputs[Step{Role: subjects.RoleImplementer, Attempt: a}]
			if !ok {
				break
			}
			raw := recordedChange(out.Metadata)
			if raw == nil {
				continue
			}
			var ch struct {
				Base string `json:"base"`
			}
			// The base is inline unless the whole change went to the blob
			// store: only then is the blob worth fetching here.
			err := json.Unmarshal(raw, &ch)
			if ch.Base == "" && ex != nil {
				full, xerr := ex.Expand(ctx, raw)
				if xerr != nil {
					return nil, fmt.Errorf("task %s: the change of attempt %d: %w", id, a, xerr)
				}
				err = json.Unmarshal(full, &ch)
			}
			if err != nil || ch.Base == "" {
				return nil, fmt.Errorf("task %s: the change of attempt %d names no base", id, a)
			}
			if !slices.Contains(bases, ch.Base) {
				bases = append(bases, ch.Base)
			}
			break // every attempt of a task has its pinned base
		}
	}
	slices.Sort(bases)
	return bases, nil
}

// hasChanges reports whether any of the tasks recorded a workspace change.
func hasChanges(rec *Record, ids []string) bool {
	for _, id := range ids {
		for st, out := range rec.Tasks[id].Outputs {
			if st.Role == subjects.RoleImplementer && recordedChange(out.Metadata) != nil {
				return true
			}
		}
	}
	return false
}
