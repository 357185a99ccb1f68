package config

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/prompt"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

func TestConfigExampleIsTheExamplesFileAndValid(t *testing.T) {
	t.Parallel()
	onDisk, err := os.ReadFile(filepath.Join("..", "..", "examples", "drover.yaml"))
	require.NoError(t, err)
	require.Equal(t, string(onDisk), string(Example), "internal/config/example.yaml and examples/drover.yaml must be identical")

	f, err := Parse(Example)
	require.NoError(t, err)
	require.Equal(t, "drover", f.Prefix)
	require.Equal(t, Worker{Concurrency: 16, Queues: []string{"default"}, AckWait: 30 * time.Second, MaxDeliver: 5,
		MaxAckPending: 1000, Grace: 30 * time.Second, CacheTTL: 24 * time.Hour, RoleTimeout: 30 * time.Minute,
		DLQMaxAge: 30 * 24 * time.Hour, LessonsMaxAge: 90 * 24 * time.Hour, LessonsScope: "workflow", CacheScope: "fleet",
		StateRetention: 30 * 24 * time.Hour, BlobRetention: 30 * 24 * time.Hour}, f.Worker)
	require.Equal(t, RunnerOpenAI, f.Roles.Planner.RunnerName())
	require.Equal(t, "qwen2.5-coder:14b", f.Roles.Planner.OpenAI.Model)
	require.InDelta(t, 0.2, *f.Roles.Planner.OpenAI.Temperature, 1e-9)
	require.Equal(t, runner.AgentArgv(runner.AgentClaudeCode), f.Roles.Implementer.Exec.Argv, "the example spells out the preset's argv")
	require.Equal(t, runner.AgentClaudeCode, f.Roles.Implementer.Agent)
	require.Equal(t, RunnerSim, f.Roles.Judge.RunnerName())
	require.Equal(t, map[subjects.Role]time.Duration{subjects.RolePlanner: 10 * time.Minute, subjects.RoleImplementer: 30 * time.Minute}, f.RoleTimeouts())
}

func TestConfigEmptyFileRunsTheSimEverywhere(t *testing.T) {
	t.Parallel()
	f, err := Parse(nil)
	require.NoError(t, err)
	sim := runner.NewSim(runner.SimOptions{})
	set, err := f.Runners(prompt.Defaults(), sim)
	require.NoError(t, err)
	require.Equal(t, runner.SimSet(sim), set)
	require.Empty(t, f.RoleTimeouts())
}

func TestConfigUnknownKeyNamesKeyAndLine(t *testing.T) {
	t.Parallel()
	for doc, want := range map[string]string{
		"worker:\n  concurency: 4\n":                                     `line 2: unknown field concurency`,
		"roles:\n  reviewer: {runner: sim}\n":                            `line 2: unknown field reviewer`,
		"roles:\n  judge:\n    runner: openai\n    openai: {modle: x}\n": `line 4: unknown field modle`,
		"worker: {ack_wait: 30}\n":                                       "line 1: cannot unmarshal !!int `30` into time.Duration",
		"prefix: a\n---\nprefix: b\n":                                    "more than one YAML document",
	} {
		_, err := Parse([]byte(doc))
		require.ErrorContains(t, err, want, doc)
	}
}

func TestConfigValidateNamesFieldAndValue(t *testing.T) {
	t.Parallel()
	for doc, want := range map[string]string{
		"prefix: Drover":                                                                   `prefix: invalid prefix: "Drover"`,
		"worker: {concurrency: -1}":                                                        "worker.concurrency: -1 must not be negative",
		"worker: {queues: [ok, 'b.d']}":                                                    `worker.queues[1]: invalid queue name: "b.d"`,
		"worker: {ack_wait: 10ms}":                                                         "worker.ack_wait: 10ms must be at least 1s",
		"worker: {grace: -1s}":                                                             "worker.grace: -1s must not be negative",
		"worker: {concurrency: 8, max_ack_pending: 4}":                                     "worker.max_ack_pending: 4 is below worker.concurrency 8",
		"roles: {planner: {runner: claude}}":                                               `roles.planner.runner: "claude" is not a runner: want sim, exec or openai`,
		"roles: {planner: {timeout: -5m}}":                                                 "roles.planner.timeout: -5m0s must not be negative",
		"roles: {judge: {runner: openai}}":                                                 "roles.judge.openai: required when runner is openai",
		"roles: {judge: {runner: openai, openai: {base_url: 'http://x/v1'}}}":              "roles.judge.openai.model: required when runner is openai",
		"roles: {judge: {runner: openai, openai: {model: m}}}":                             "roles.judge.openai.base_url: required when runner is openai",
		"roles: {judge: {runner: openai, openai: {model: m, base_url: 'localhost:1/v1'}}}": `roles.judge.openai.base_url: "localhost:1/v1" must be an absolute http or https URL`,
		"roles: {judge: {runner: openai, openai: {model: m, base_url: 'http://x', temperature: 3}}}":        "roles.judge.openai.temperature: 3 must be between 0 and 2",
		"roles: {judge: {runner: openai, openai: {model: m, base_url: 'http://x', api_key_env: 'MY KEY'}}}": `roles.judge.openai.api_key_env: "MY KEY" is not an environment variable name`,
		"roles: {implementer: {runner: exec}}":                                      "roles.implementer.exec: required when runner is exec",
		"roles: {implementer: {runner: exec, exec: {argv: []}}}":                    "roles.implementer.exec.argv: required when runner is exec",
		"roles: {implementer: {runner: exec, exec: {argv: ['']}}}":                  `roles.implementer.exec.argv[0]: "": the program must not be empty`,
		"roles: {implementer: {runner: exec, exec: {argv: [a], inherit: ['A=B']}}}": `roles.implementer.exec.inherit[0]: "A=B" is not an environment variable name`,
		"roles: {implementer: {runner: sim, exec: {argv: [a]}}}":                    "roles.implementer.exec: set but runner is sim",
	} {
		_, err := Parse([]byte(doc))
		require.ErrorContains(t, err, want, doc)
	}
	// Every problem is reported, not just the first.
	_, err := Parse([]byte("worker: {concurrency: -1, max_deliver: -2}\nroles: {judge: {runner: nope}}"))
	require.ErrorContains(t, err, "worker.concurrency")
	require.ErrorContains(t, err, "worker.max_deliver")
	require.ErrorContains(t, err, "roles.judge.runner")
}

func TestConfigLoadNamesTheFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "drover.yaml")
	require.NoError(t, os.WriteFile(path, []byte("worker:\n  concurrency: 4\n  colour: blue\n"), 0o600))
	_, err := Load(path)
	require.ErrorContains(t, err, path+": line 3: unknown field colour")
	_, err = Load(filepath.Join(t.TempDir(), "missing.yaml"))
	require.ErrorContains(t, err, "missing.yaml")
}

// TestConfigRunnersPerRoleTimeout builds an openai runner against a server
// that never answers: the role's own timeout ends the call, well inside
// the generous outer bound a pipeline would add.
func TestConfigRunnersPerRoleTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	f, err := Parse([]byte(`
roles:
  planner: {runner: sim}
  implementer: {runner: sim}
  judge:
    runner: openai
    timeout: 100ms
    openai: {base_url: "` + srv.URL + `/v1", model: m, api_key_env: DROVER_TEST_NO_SUCH_KEY}
`))
	require.NoError(t, err)
	sim := runner.NewSim(runner.SimOptions{})
	set, err := f.Runners(prompt.Defaults(), sim)
	require.NoError(t, err)
	require.Same(t, sim, set.Planner)
	require.Same(t, sim, set.Implementer)
	require.Contains(t, set.Judge.Identity(), runner.OpenAIIdentityPrefix)

	outer := runner.Chain(set.Judge, runner.WithTimeout(time.Hour))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = outer.Run(ctx, runner.Request{Role: subjects.RoleJudge, Task: subjects.TaskRequest{ID: "T", Workflow: "w", Scope: "s"}, Attempt: 1})
	require.ErrorIs(t, err, runner.ErrTimeout)
	require.ErrorContains(t, err, "judge exceeded 100ms")
}

// TestConfigRunnersTimeoutKeepsLessonReader checks that wrapping a role in
// its own timeout hides nothing the pipeline asks of the runner.
func TestConfigRunnersTimeoutKeepsLessonReader(t *testing.T) {
	t.Parallel()
	f, err := Parse([]byte(`
roles:
  planner: {runner: exec, timeout: 1m, exec: {argv: [sh, -c, "echo plan"]}}
  implementer: {runner: exec, exec: {argv: [sh, -c, "echo change"], inherit: []}}
  judge: {runner: sim}
`))
	require.NoError(t, err)
	require.NotNil(t, f.Roles.Implementer.Exec.Inherit, "[] means none, not the default")
	require.Empty(t, f.Roles.Implementer.Exec.Inherit)
	require.Nil(t, f.Roles.Planner.Exec.Inherit, "absent means the default")
	set, err := f.Runners(nil, runner.NewSim(runner.SimOptions{}))
	require.NoError(t, err)
	for _, r := range []runner.Runner{set.Planner, set.Implementer} {
		lr, ok := r.(runner.LessonReader)
		require.True(t, ok, "%T", r)
		require.True(t, lr.UsesLessons())
	}
	_, ok := set.Planner.(*runner.Exec)
	require.False(t, ok, "the planner has its own timeout, so it is wrapped")
	require.Contains(t, set.Planner.Identity(), "exec/v1:")
}

// TestConfigDocExamplesAreValid parses every complete configuration file
// in docs/using-a-real-model.md (the yaml blocks that start at the top
// level), so the guide never shows a file Drover would refuse.
func TestConfigDocExamplesAreValid(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "using-a-real-model.md"))
	require.NoError(t, err)
	n := 0
	for _, block := range strings.Split(string(doc), "```yaml\n")[1:] {
		text, _, ok := strings.Cut(block, "```")
		require.True(t, ok, "unterminated yaml block")
		if !strings.HasPrefix(text, "worker:") && !strings.HasPrefix(text, "roles:") {
			continue // a fragment of a role
		}
		n++
		f, err := Parse([]byte(text))
		require.NoError(t, err, text)
		_, err = f.Runners(nil, runner.NewSim(runner.SimOptions{}))
		require.NoError(t, err, text)
	}
	require.GreaterOrEqual(t, n, 3)
}

// TestConfigRolesMustAllBeNamed checks that a file configuring some roles
// names the runner of every one: a role left out would silently run on the
// sim, whose judge approves anything.
func TestConfigRolesMustAllBeNamed(t *testing.T) {
	t.Parallel()
	const (
		exec = "{runner: exec, exec: {argv: [agent]}}"
		sim  = "{runner: sim}"
	)
	for _, tc := range []struct {
		name, doc, err string
	}{
		{"no file content", "", ""},
		{"worker only", "worker: {concurrency: 2}", ""},
		{"empty roles", "roles: {}", ""},
		{"all named", "roles: {planner: " + sim + ", implementer: " + exec + ", judge: " + sim + "}", ""},
		{"implementer only", "roles: {implementer: " + exec + "}",
			"roles.judge and roles.planner are not set; name every role (runner: sim to use the simulator)"},
		{"judge missing", "roles: {planner: " + sim + ", implementer: " + exec + "}",
			"roles.judge is not set; name every role (runner: sim to use the simulator)"},
		{"timeout without runner", "roles: {judge: {timeout: 1m}}",
			"roles.implementer, roles.judge and roles.planner are not set"},
		{"cache without runner", "roles: {planner: " + sim + ", implementer: " + sim + ", judge: {cache: false}}",
			"roles.judge is not set"},
	} {
		_, err := Parse([]byte(tc.doc))
		if tc.err == "" {
			require.NoError(t, err, tc.name)
			continue
		}
		require.ErrorIs(t, err, ErrRolesIncomplete, tc.name)
		require.ErrorContains(t, err, tc.err, tc.name)
	}
}

// TestConfigCachePolicy checks each role's cache default by runner kind,
// that cache: overrides it either way, and that Runners marks the uncached
// roles in the set.
func TestConfigCachePolicy(t *testing.T) {
	t.Parallel()
	const openai = "openai: {base_url: 'http://127.0.0.1:1/v1', model: m}"
	for _, tc := range []struct {
		role   string
		cached bool
		why    string
	}{
		{"{runner: sim}", true, "sim output is a function of the prompt"},
		{"{runner: openai, " + openai + "}", true, "openai output is a function of the prompt"},
		{"{runner: exec, exec: {argv: [agent]}}", false, "exec without workspace (set cache: true if the agent is pure)"},
		{"{runner: exec, cache: true, exec: {argv: [agent]}}", true, "cache: true"},
		{"{runner: openai, cache: false, " + openai + "}", false, "cache: false"},
		{"{runner: sim, cache: false}", false, "cache: false"},
	} {
		f, err := Parse([]byte("roles: {planner: {runner: sim}, judge: {runner: sim}, implementer: " + tc.role + "}"))
		require.NoError(t, err, tc.role)
		cached, why := f.Roles.Implementer.Cached()
		require.Equal(t, tc.cached, cached, tc.role)
		require.Equal(t, tc.why, why, tc.role)
		set, err := f.Runners(nil, runner.NewSim(runner.SimOptions{}))
		require.NoError(t, err, tc.role)
		require.Equal(t, tc.cached, set.Cached(subjects.RoleImplementer), tc.role)
		require.True(t, set.Cached(subjects.RolePlanner), tc.role)
		require.True(t, set.Cached(subjects.RoleJudge), tc.role)
	}
	_, err := Parse([]byte("roles: {planner: {runner: sim, cache: maybe}}"))
	require.ErrorContains(t, err, "line 1: cannot unmarshal")
}
