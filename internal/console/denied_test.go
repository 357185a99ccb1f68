package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

func TestRedriveSubject(t *testing.T) {
	t.Parallel()
	s := &Server{names: subjects.MustNames("drover")}
	for subj, want := range map[string]bool{
		"drover.tasks.default":                         true,
		"drover.audit.wf.T1.human.task_redriven":       true,
		"$JS.API.STREAM.INFO.DROVER_AUDIT":             true,
		"$JS.API.DIRECT.GET.KV_drover_state.$KV.x.y":   true,
		"$JS.API.STREAM.MSG.GET.DROVER_DLQ":            true,
		"$JS.API.CONSUMER.CREATE.KV_drover_cache":      false,
		"$JS.API.STREAM.INFO.DROVER_AUDIT_OTHER":       false,
		"drover.ctl.workflow.wf.pause":                 false,
		"drover.status.abc":                            false,
		"team.tasks.default":                           false,
		"$JS.API.CONSUMER.CREATE.DROVER_LESSONS.x.y.z": false,
	} {
		require.Equal(t, want, s.redriveSubject(subj), subj)
	}
}

func TestDenialsAfter(t *testing.T) {
	t.Parallel()
	d := newDenials()
	all := func(string) bool { return true }
	d.add("a")
	m := d.mark()
	got, wake := d.after(m, all)
	require.Empty(t, got)
	d.add("b")
	natstest.Recv(t, wake, 30*time.Second) // closed by the denial
	got, _ = d.after(m, all)
	require.Equal(t, []string{"b"}, got)
	got, _ = d.after(0, func(s string) bool { return s == "a" })
	require.Equal(t, []string{"a"}, got)
	// Only the last maxDenials are kept.
	for i := range maxDenials + 5 {
		d.add(fmt.Sprint(i))
	}
	got, _ = d.after(0, all)
	require.Len(t, got, maxDenials)
	require.Equal(t, "5", got[0])
}

func TestGuardedEndsTheCallAtItsDenial(t *testing.T) {
	t.Parallel()
	s := &Server{denied: newDenials()}
	ours := func(subj string) bool { return subj == "x.pause" }
	started := make(chan struct{})
	err := s.guarded(t.Context(), "pause workflows", ours, func(ctx context.Context) error {
		s.denied.add("y.other") // not ours: the call goes on
		close(started)
		s.denied.add("x.pause")
		<-ctx.Done() // a refused request gets no reply: only the cancel ends it
		return ctx.Err()
	})
	natstest.Recv(t, started, 30*time.Second)
	var he httpError
	require.ErrorAs(t, err, &he, "%v", err)
	require.Equal(t, http.StatusForbidden, he.code)
	require.Contains(t, he.msg, "this console's NATS user may not pause workflows")
	require.Contains(t, he.msg, "x.pause")
	require.NotContains(t, he.msg, "y.other")

	// A call that fails for another reason keeps its error.
	boom := errors.New("boom")
	require.ErrorIs(t, s.guarded(t.Context(), "pause workflows", ours, func(context.Context) error { return boom }), boom)
}
