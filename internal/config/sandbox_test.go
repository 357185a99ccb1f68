package config

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/sandbox"
)

func TestConfigSandbox(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, doc string
		want      sandbox.Config
		err       string // "" = valid
	}{
		{"absent", "", sandbox.Config{}, ""},
		{"block", "sandbox:\n  mode: bubblewrap\n  read_only: [/opt/go]\n", sandbox.Config{Mode: "bubblewrap", ReadOnly: []string{"/opt/go"}}, ""},
		{"none block", "sandbox: {mode: none}\n", sandbox.Config{Mode: "none"}, ""},
		{"none short", "sandbox: none\n", sandbox.Config{Mode: "none"}, ""},
		{"bad mode", "sandbox: {mode: docker}\n", sandbox.Config{}, `sandbox.mode: "docker": want bubblewrap or none`},
		{"bad short", "sandbox: off\n", sandbox.Config{}, `sandbox.mode: "off": want bubblewrap or none`},
		{"unknown key", "sandbox:\n  mode: none\n  hide: [/x]\n", sandbox.Config{}, "line 3: unknown field hide in sandbox"},
		{"relative", "sandbox: {read_only: [opt]}\n", sandbox.Config{}, `sandbox.read_only[0]: "opt" must be an absolute path`},
		{"root", "sandbox: {read_only: [/opt, //]}\n", sandbox.Config{}, `sandbox.read_only[1]: "//" would make the whole file system visible`},
		{"wrong type", "sandbox: {read_only: /opt}\n", sandbox.Config{}, "cannot unmarshal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse([]byte(tc.doc))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, f.Sandbox.Config)
			require.Equal(t, tc.want.Mode == sandbox.ModeNone, f.Sandbox.None())
		})
	}
}

func TestConfigCommandEnv(t *testing.T) {
	t.Parallel()
	for doc, want := range map[string]string{
		"workspace: {repo: /r.git, setup: [{argv: [make], env: [GOFLAGS, A=b]}]}\n":                               "",
		"workspace: {repo: /r.git, setup: [{argv: [make], env: [DROVER_TOKEN]}]}\n":                               "workspace.setup[0].env[0]: DROVER_TOKEN is set by Drover",
		"workspace: {repo: /r.git, cleanup: [{argv: [make], env: [a-b]}]}\n":                                      `workspace.cleanup[0].env[0]: "a-b" is not NAME or NAME=value`,
		"workspace: {repo: /r.git}\ndelivery: merge\nmerge: {target: main, check: {argv: [make], env: [HOME]}}\n": "merge.check.env[0]: HOME is set by Drover",
	} {
		_, err := Parse([]byte(doc))
		if want == "" {
			require.NoError(t, err, doc)
		} else {
			require.ErrorContains(t, err, want, doc)
		}
	}
}

func TestConfigExecRoles(t *testing.T) {
	t.Parallel()
	f, err := Parse(nil)
	require.NoError(t, err)
	require.False(t, f.ExecRoles())
	f, err = Parse([]byte("roles:\n  planner: {runner: sim}\n  implementer: {runner: exec, exec: {argv: [agent]}}\n  judge: {runner: sim}\n"))
	require.NoError(t, err)
	require.True(t, f.ExecRoles())
}
