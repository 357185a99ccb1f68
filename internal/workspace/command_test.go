package workspace

import (
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/sandbox"
)

// dumpScript is what a hostile agent writes into the repository's check
// script: every variable it can see, its own and every process's in
// /proc, then its own (last, so it is in the error's tail), into dump.txt
// and its output, and then it fails so its output comes back in the error.
const dumpScript = `#!/bin/sh
{ for f in /proc/[0-9]*/environ; do tr '\0' '\n' < "$f"; echo; done; echo "== env =="; env; } > dump.txt 2>/dev/null
cat dump.txt
exit 1
`

// A setup command and the merge check run the script an agent committed;
// the worker's secret is in neither the script's view nor the error, and
// the variables the command names are. With the bubblewrap sandbox another
// process holding the secret is not visible in /proc either.
func TestCommandEnvIsBuilt(t *testing.T) {
	const secret = "drover-test-secret-6f1c2a"
	t.Setenv("DROVER_TEST_WORKER_SECRET", secret)
	t.Setenv("PASS_ME", "passed")
	ctx := context.Background()
	for _, mode := range []string{sandbox.ModeNone, sandbox.ModeBubblewrap} {
		t.Run(mode, func(t *testing.T) {
			var sb *sandbox.Sandbox
			if mode == sandbox.ModeBubblewrap {
				var err error
				sb, err = sandbox.New(sandbox.Config{Mode: mode})
				require.NoError(t, err)
				if err := sb.Check(ctx); err != nil {
					if os.Getenv("CI") != "" {
						t.Fatalf("bubblewrap cannot run and CI is set: %v", err)
					}
					t.Skipf("no sandbox here: %v", err)
				}
				// Another process of the worker, with the secret in its
				// environment from its start.
				decoy := exec.Command("sleep", "600")
				decoy.Env = []string{"DROVER_TEST_WORKER_SECRET=" + secret}
				require.NoError(t, decoy.Start())
				t.Cleanup(func() { _ = decoy.Process.Kill(); _ = decoy.Wait() })
			}
			check := Command{Argv: []string{"sh", "check.sh"}, Env: []string{"PASS_ME", "LITERAL=x", "UNSET_HERE"}}
			repo := newTestRepo(t)
			m := newManagerWith(t, repo.remote, Deps{Sandbox: sb}, nil)
			head := pushTask(t, m, repo.base, "A", map[string]string{"check.sh": dumpScript})

			s, err := m.Scratch(ctx, head)
			require.NoError(t, err)
			defer s.Close(ctx)
			err = s.Run(ctx, check)
			require.Error(t, err)
			dump, rerr := os.ReadFile(filepath.Join(s.Dir(), "dump.txt"))
			require.NoError(t, rerr)
			requireNoSecret(t, secret, string(dump), err.Error(), mode == sandbox.ModeBubblewrap)
			for _, want := range []string{"PATH=" + os.Getenv("PATH"), "PASS_ME=passed", "LITERAL=x", "DROVER_WORKSPACE=" + s.Dir()} {
				require.Contains(t, string(dump), want+"\n")
			}
			require.NotContains(t, string(dump), "UNSET_HERE")

			m2 := newManagerWith(t, repo.remote, Deps{Sandbox: sb}, func(c *Config) { c.Setup = []Command{check} })
			branch, err := m2.Branch("wf", "B", "")
			require.NoError(t, err)
			_, err = m2.Open(ctx, Spec{Workflow: "wf", Task: "B", Branch: branch, Base: head})
			require.ErrorIs(t, err, ErrSetupFailed)
			requireNoSecret(t, secret, "", err.Error(), true)
			require.Contains(t, err.Error(), "DROVER_BRANCH="+branch)
		})
	}
}

func requireNoSecret(t *testing.T, secret, dump, errText string, inDump bool) {
	t.Helper()
	for _, form := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret))} {
		require.NotContains(t, errText, form, "the secret reached the command's error")
		if inDump {
			require.NotContains(t, dump, form, "the secret was readable by the command")
		} else {
			// Uncontained, /proc shows other processes: only the
			// command's own environment must lack the secret.
			_, own, _ := strings.Cut(dump, "== env ==")
			require.NotContains(t, own, form, "the secret was in the command's environment")
		}
	}
}

func TestCommandValidateEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env   string
		field string // "" = valid
	}{
		{"GOFLAGS", ""},
		{"GOFLAGS=-mod=mod", ""},
		{"EMPTY=", ""},
		{"PATH=/opt/bin:/usr/bin", ""},
		{"", "workspace.setup[0].env[0]"},
		{"=x", "workspace.setup[0].env[0]"},
		{"1X", "workspace.setup[0].env[0]"},
		{"A-B=1", "workspace.setup[0].env[0]"},
		{"DROVER_WORKSPACE=/", "workspace.setup[0].env[0]"},
		{"HOME", "workspace.setup[0].env[0]"},
		{"TMPDIR=/tmp", "workspace.setup[0].env[0]"},
		{"XDG_CONFIG_HOME", "workspace.setup[0].env[0]"},
	}
	for _, tc := range tests {
		c := Config{Repo: "/srv/repo.git", Dir: "/data/workspaces", Setup: []Command{{Argv: []string{"make"}, Env: []string{tc.env}}}}
		err := c.Validate()
		if tc.field == "" {
			require.NoError(t, err, tc.env)
			continue
		}
		require.ErrorIs(t, err, ErrInvalidConfig, tc.env)
		require.ErrorContains(t, err, tc.field+":", tc.env)
	}
}

func TestCommandEnv(t *testing.T) {
	t.Parallel()
	worker := map[string]string{"PATH": "/usr/bin", "TOKEN": "t0k", "GOFLAGS": "-v", "DROVER_WORKSPACE": "/evil"}
	lookup := func(k string) (string, bool) { v, ok := worker[k]; return v, ok }
	got := commandEnv([]string{"GOFLAGS", "MISSING", "LIT=a=b"}, []string{"DROVER_WORKSPACE=/wt"}, lookup)
	require.Equal(t, []string{"PATH=/usr/bin", "GOFLAGS=-v", "LIT=a=b", "DROVER_WORKSPACE=/wt"}, got)
	require.Equal(t, []string{"DROVER_WORKSPACE=/wt"}, commandEnv(nil, []string{"DROVER_WORKSPACE=/wt"}, func(string) (string, bool) { return "", false }))
}
