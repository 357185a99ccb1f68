package audit

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

func TestEventChange(t *testing.T) {
	files := `"files": [{"path": "a.txt", "status": "A", "added": 2}, {"path": "b.bin", "status": "M", "binary": true}, {"path": "old.txt", "status": "D", "removed": 3}]`
	many := make([]string, 40)
	for i := range many {
		many[i] = `{"path": "dir/file-with-a-long-name.txt", "status": "M", "added": 1}`
	}
	for _, tc := range []struct {
		name string
		typ  subjects.EventType
		meta string
		want string
	}{
		{"another event", subjects.EventJudgeVerdict, `{"workspace": {` + files + `}}`, ""},
		{"no workspace", subjects.EventImplementerChange, `{"model": "m"}`, ""},
		{"no metadata", subjects.EventImplementerChange, ``, ""},
		{"files", subjects.EventImplementerChange, `{"workspace": {` + files + `, "patch": "diff"}}`,
			"3 files +2 -3: A a.txt (+2 -0), M b.bin (binary), D old.txt (+0 -3)"},
		{"patch in the blob store", subjects.EventImplementerChange, `{"workspace": {` + files + `, "patch": {"blob": "ab", "truncated": true}}}`,
			"3 files +2 -3: A a.txt (+2 -0), M b.bin (binary), D old.txt (+0 -3)"},
		{"nothing", subjects.EventImplementerChange, `{"workspace": {"files": [], "empty": true}}`, "no change"},
		{"unchanged since the last attempt", subjects.EventImplementerChange, `{"workspace": {` + files + `, "empty": true}}`,
			"no new change; 3 files +2 -3: A a.txt (+2 -0), M b.bin (binary), D old.txt (+0 -3)"},
		{"whole change in the blob store", subjects.EventImplementerChange, `{"workspace": {"blob": "ab", "truncated": true}}`, "change in the blob store (drover task diff)"},
		{"garbage", subjects.EventImplementerChange, `{"workspace": 7}`, "change: unreadable record"},
		{"long", subjects.EventImplementerChange, `{"workspace": {"files": [` + strings.Join(many, ",") + `]}}`,
			"40 files +40 -0: M dir/file-with-a-long-name.txt (+1 -0), M dir/file-with-a-long-name.txt (+1 -0), M dir/file-with-a-long-name.txt (+1 -0), M dir/file-with-a-l…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := EventChange(subjects.AuditEvent{EventType: tc.typ, Metadata: json.RawMessage(tc.meta)})
			require.Equal(t, tc.want, got)
			require.LessOrEqual(t, len([]rune(got)), maxChangeSummary)
		})
	}
}
