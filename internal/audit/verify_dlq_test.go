package audit_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

// vfProvisionDLQ provisions a deployment whose DLQ keeps entries for
// maxAge and at most maxMsgs of them (0: no limit).
func vfProvisionDLQ(t *testing.T, maxAge time.Duration, maxMsgs int64) jetstream.JetStream {
	t.Helper()
	_, js := natstest.Connect(t, natstest.Server(t, natstest.Sync(time.Minute)).ClientURL())
	natstest.Provision(t, context.Background(), js, broker.Settings{Names: rdNames, DuplicateWindow: 100 * time.Millisecond,
		DLQMaxAge: maxAge, DLQMaxMsgs: maxMsgs})
	return js
}

// vfStoreAt stores step s (an event of workflow "w") with timestamp at.
func vfStoreAt(t *testing.T, js jetstream.JetStream, s vf, at time.Time) {
	t.Helper()
	ev := rdEvent("w", s.task, s.att, s.actor, s.et, s.n, at)
	ev.Action = s.action
	vfPublish(t, js, &ev, ev.EventID)
}

// TestVerifyDLQAgedOut: a failed or rejected task whose event is older than
// the DLQ's max age has no entry to check against; verify counts it as aged
// out instead of reporting a missing entry. A recent one without its entry
// is still a violation, and an old one whose entry is still there is still
// checked.
func TestVerifyDLQAgedOut(t *testing.T) {
	js := vfProvisionDLQ(t, time.Hour, 0)
	now := time.Now().UTC()
	old := now.Add(-3 * time.Hour)
	for _, s := range []vf{vAcc("OLD"), vPlan("OLD"), vFail("OLD", 1, subjects.ReasonMaxDeliveries)} {
		vfStoreAt(t, js, s, old)
	}
	vfStoreAt(t, js, vRej("OLD", 40, subjects.ReasonDuplicateID), old)
	for _, s := range []vf{vAcc("KEPT"), vPlan("KEPT")} {
		vfStoreAt(t, js, s, old)
	}
	vfStore(t, js, vDLQ("KEPT", 2, subjects.ReasonMaxDeliveries), vDLQ("KEPT", 41, subjects.ReasonMaxDeliveries))
	vfStoreAt(t, js, vFail("KEPT", 1, subjects.ReasonMaxDeliveries), old)
	for _, s := range []vf{vAcc("NEW"), vPlan("NEW"), vFail("NEW", 1, subjects.ReasonMaxDeliveries)} {
		vfStoreAt(t, js, s, now)
	}

	rep := vfVerify(t, js, audit.VerifyOptions{DLQ: true})
	require.True(t, rep.DLQChecked)
	assert.Equal(t, 2, rep.DLQAgedOut, "OLD's failure and rejection: aged out, not checked")
	assert.WithinDuration(t, now.Add(-time.Hour+time.Minute), rep.DLQHorizon, time.Minute)
	require.Equal(t, 2, rep.ViolationCount, "%v", rep.Violations)
	rules := map[string]string{}
	for _, v := range rep.Violations {
		rules[v.EventID] = v.Rule
	}
	assert.Equal(t, map[string]string{
		subjects.EventID("w", "KEPT", 1, vfSys, subjects.EventTaskFailed, 0): audit.RuleDLQDuplicate,
		subjects.EventID("w", "NEW", 1, vfSys, subjects.EventTaskFailed, 0):  audit.RuleDLQMissing,
	}, rules)
}

// TestVerifyDLQMaxMsgs: once the DLQ discarded its oldest entries (max
// messages), a failure whose entry was discarded is aged out, not missing.
func TestVerifyDLQMaxMsgs(t *testing.T) {
	js := vfProvisionDLQ(t, -1, 2)
	steps := []vf{vDLQ("T1", 1, subjects.ReasonMaxAttempts), vDLQ("T2", 2, subjects.ReasonMaxAttempts), vDLQ("T3", 3, subjects.ReasonMaxAttempts)}
	for _, task := range []string{"T1", "T2", "T3"} {
		steps = append(steps, vAcc(task), vPlan(task), vFail(task, 1, subjects.ReasonMaxAttempts))
	}
	vfStore(t, js, steps...)
	rep := vfVerify(t, js, audit.VerifyOptions{DLQ: true})
	assert.Equal(t, 2, rep.DLQEntries)
	assert.Equal(t, 1, rep.DLQAgedOut, "T1's entry was discarded")
	assert.Zero(t, rep.ViolationCount, "%v", rep.Violations)
}
