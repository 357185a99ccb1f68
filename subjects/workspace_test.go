package subjects_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

// A recorded patch survives JSON whatever its bytes (text inline, anything
// else base64), and one altered after recording is refused.
func TestWorkspaceChangePatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		patch  []byte
		inline bool
	}{
		{"text", []byte("diff --git a/x b/x\n+héllo\n"), true},
		{"not UTF-8", []byte("diff --git a/x b/x\n+\xff\xfe\n"), false},
		{"empty", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var c subjects.WorkspaceChange
			c.SetPatch(tc.patch)
			require.Equal(t, tc.inline, c.PatchBase64 == "")
			b, err := json.Marshal(c)
			require.NoError(t, err)
			var back subjects.WorkspaceChange
			require.NoError(t, json.Unmarshal(b, &back))
			got, err := back.PatchData()
			require.NoError(t, err)
			require.Equal(t, string(tc.patch), string(got))
			require.Equal(t, len(tc.patch), back.PatchBytes)

			back.Patch += "+x\n"
			back.PatchBase64 = ""
			_, err = back.PatchData()
			require.ErrorContains(t, err, "sha256")
		})
	}
}
