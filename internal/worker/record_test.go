package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// errSeen stops the follower once it has what it waited for.
var errSeen = errors.New("seen")

// An investigator following the audit stream (an ordered consumer, as
// `drover audit --follow` is) sees the implementer's change while the
// judge still runs: the judge blocks until the follower has the
// implementer_change event, with its recorded change, and no verdict
// before it. With the implementer's cache on and off.
func TestImplementerChangeIsInTheRecordWhileTheJudgeRuns(t *testing.T) {
	for _, tc := range []struct {
		name    string
		noCache bool
	}{{"cache on", false}, {"cache off", true}} {
		t.Run(tc.name, func(t *testing.T) {
			b := newWSBundle(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			seen := make(chan subjects.AuditEvent, 1)
			a := &agent{t: t, edit: editTask}
			a.onJudge = func(jctx context.Context, req runner.Request) error {
				select {
				case <-seen:
					return nil
				case <-jctx.Done():
					return jctx.Err()
				case <-ctx.Done():
					return errors.New("the follower never saw implementer_change while the judge ran")
				}
			}
			set := a.set()
			set.NoCache.Set(subjects.RoleImplementer, tc.noCache)
			b.start(t, set, t.TempDir(), true, 5*time.Second)

			wf := "wf-follow"
			follow := make(chan error, 1)
			var got subjects.AuditEvent
			go func() {
				follow <- audit.Replay(ctx, b.js, b.names, audit.Query{Workflow: wf, Follow: true}, func(r audit.Record) error {
					if r.Err != nil {
						return r.Err
					}
					switch r.Event.EventType {
					case subjects.EventJudgeVerdict, subjects.EventTaskCompleted:
						return errors.New("a verdict before implementer_change")
					case subjects.EventImplementerChange:
						got = r.Event
						return errSeen
					}
					return nil
				})
			}()
			after, err := producer.AuditLastSeq(ctx, b.js, b.names)
			require.NoError(t, err)
			_, err = producer.Publish(ctx, b.js, b.names, subjects.DefaultQueue, subjects.TaskRequest{Workflow: wf, ID: "T1", Scope: "edit"})
			require.NoError(t, err)
			require.ErrorIs(t, natstest.Recv(t, follow, 30*time.Second), errSeen)
			ch := change(t, got)
			patch, err := ch.PatchData()
			require.NoError(t, err)
			require.NotEmpty(t, patch, "the event carries the change")
			st := taskState(t, b, wf, "T1")
			require.Equal(t, string(subjects.RoleJudge), st.Stage, "the state is at the judge's stage")
			last, ok := st.Workspace.Last()
			require.True(t, ok)
			require.Equal(t, ch.Head, last.Head, "the state records the change")
			seen <- got

			var term subjects.AuditEvent
			require.NoError(t, producer.FollowTerminal(ctx, b.js, b.names, wf, after, func(tm producer.Terminal) bool {
				term = tm.Event
				return false
			}))
			require.Equal(t, subjects.EventTaskCompleted, term.EventType, "%+v", term)
			require.Equal(t, 1, a.implCalls())
		})
	}
}
