package audit

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

func TestExporter(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	body := []byte("{\n  \"event_id\": \"e1\", \"event_type\": \"task_completed\", \"workflow_id\": \"wf\", \"task_id\": \"t\", \"timestamp\": \"2026-11-30T12:00:00Z\", \"future_field\": 1\n}")
	rec := newRecord(7, "drover.audit.wf.t.system.task_completed", at, nats.Header{
		subjects.HeaderCEID:     {"e1"},
		subjects.HeaderCESource: {"drover/drover"},
		subjects.HeaderCEType:   {"dev.drover.task_completed"},
	}, body)
	bare := newRecord(8, "fleet.audit.wf.t.system.task_failed", at, nil, []byte(`{"event_id":"e2","event_type":"task_failed","workflow_id":"wf","task_id":"t"}`))
	for _, tc := range []struct {
		name, format string
		rec          Record
		want         string
		err          string
	}{
		{name: "jsonl keeps the body, compacted", format: FormatJSONL, rec: rec,
			want: `{"event_id":"e1","event_type":"task_completed","workflow_id":"wf","task_id":"t","timestamp":"2026-11-30T12:00:00Z","future_field":1}`},
		{name: "cloudevents from the published attributes", format: FormatCloudEvents, rec: rec,
			want: `{"specversion":"1.0","id":"e1","source":"drover/drover","type":"dev.drover.task_completed","subject":"wf/t","time":"2026-11-30T12:00:00Z","datacontenttype":"application/json","drover_seq":7,
			"data":{"event_id":"e1","event_type":"task_completed","workflow_id":"wf","task_id":"t","timestamp":"2026-11-30T12:00:00Z","future_field":1}}`},
		{name: "cloudevents of an event stored without attributes", format: FormatCloudEvents, rec: bare,
			want: `{"specversion":"1.0","id":"e2","source":"drover/fleet","type":"dev.drover.task_failed","subject":"wf/t","datacontenttype":"application/json","drover_seq":8,
			"data":{"event_id":"e2","event_type":"task_failed","workflow_id":"wf","task_id":"t"}}`},
		{name: "a body that is not JSON", format: FormatJSONL, rec: newRecord(9, "s", at, nil, []byte("not json")), err: "is not JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			x, err := NewExporter(&buf, tc.format)
			require.NoError(t, err)
			err = x.Write(tc.rec)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.Zero(t, x.N)
				return
			}
			require.NoError(t, err)
			require.EqualValues(t, 1, x.N)
			line := buf.String()
			require.True(t, strings.HasSuffix(line, "\n") && strings.Count(line, "\n") == 1, "one line: %q", line)
			require.JSONEq(t, tc.want, line)
			if tc.format == FormatJSONL {
				require.Equal(t, tc.want+"\n", line, "the stored body, byte for byte but compacted")
			}
		})
	}
	_, err := NewExporter(&bytes.Buffer{}, "xml")
	require.ErrorContains(t, err, `format "xml"`)
}
