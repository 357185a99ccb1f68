package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/require"
)

// helmUnquoted is a string the NATS chart writes into nats.conf without
// quotes ("<< ... >>"): a variable or a number with a unit.
var helmUnquoted = regexp.MustCompile(`"<< (.*?) >>"`)

// helmEnvRef is a password as the values file must give it: a variable
// read from the NATS container's environment.
var helmEnvRef = regexp.MustCompile(`^<< \$([A-Z][A-Z0-9_]*) >>$`)

// helmNATSConf writes config.merge of the Helm values as the chart does
// (JSON, "<< ... >>" strings unquoted), after definitions of the password
// variables with deployPasswords (a variable of the file itself, as the
// container's environment would give it), and returns the file's path.
func helmNATSConf(t *testing.T, merge any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(merge))
	body := strings.TrimSpace(helmUnquoted.ReplaceAllString(buf.String(), "$1"))
	require.True(t, strings.HasPrefix(body, "{") && strings.HasSuffix(body, "}"), "config.merge is a map")
	var conf strings.Builder
	conf.WriteString("# test passwords\n")
	for user, pw := range deployPasswords {
		fmt.Fprintf(&conf, "DROVER_%s_PASSWORD: %q\n", strings.ToUpper(user), pw)
	}
	conf.WriteString(body[1 : len(body)-1])
	p := filepath.Join(t.TempDir(), "nats.conf")
	require.NoError(t, os.WriteFile(p, []byte(conf.String()), 0o600))
	return p
}

// checkHelmNATSAuth checks the users of the NATS Helm values: the DROVER
// account with the producer, worker, investigator, console and reviewer users and exactly the
// permission profiles of deploy/nats/profiles.conf (both parsed by
// nats-server), each password a variable filled from the Secret
// drover-nats-credentials, and no password written in the file.
func checkHelmNATSAuth(t *testing.T, helm map[string]any) {
	t.Helper()
	merge := lookup(helm, "config", "merge")
	require.NotNil(t, merge, "Helm: config.merge holds the accounts and users")
	opts, err := server.ProcessConfigFile(helmNATSConf(t, merge))
	require.NoError(t, err, "Helm: config.merge as nats.conf")
	profiles, err := server.ProcessConfigFile(filepath.Join(natsConfWithPasswords(t), "permissions.conf"))
	require.NoError(t, err)
	want := map[string]*server.User{}
	for _, u := range profiles.Users {
		want[u.Username] = u
	}
	require.Empty(t, opts.NoAuthUser, "Helm: no_auth_user would let anyone in")
	require.Len(t, opts.Users, len(deployPasswords), "Helm: the producer, worker, investigator, console and reviewer users")
	users, _ := lookup(helm, "config", "merge", "accounts", "DROVER", "users").([]any)
	require.Len(t, users, len(deployPasswords), "Helm: config.merge.accounts.DROVER.users")
	for _, u := range opts.Users {
		where := "Helm: user " + u.Username
		pw, ok := deployPasswords[u.Username]
		require.True(t, ok, "%s: not one of %v", where, deployPasswords)
		require.Equal(t, pw, u.Password, "%s: password from $DROVER_%s_PASSWORD", where, strings.ToUpper(u.Username))
		require.NotNil(t, u.Account, where)
		require.Equal(t, "DROVER", u.Account.Name, "%s: account", where)
		require.NotNil(t, want[u.Username], where)
		require.Equal(t, want[u.Username].Permissions, u.Permissions, "%s: the profile of deploy/nats/profiles.conf", where)
	}
	for _, x := range users {
		u, _ := x.(map[string]any)
		name, _ := u["user"].(string)
		v := "DROVER_" + strings.ToUpper(name) + "_PASSWORD"
		require.Equal(t, "<< $"+v+" >>", u["password"], "Helm: %s's password is the variable %s", name, v)
		ref := lookup(helm, "container", "env", v, "valueFrom", "secretKeyRef")
		require.Equal(t, map[string]any{"name": "drover-nats-credentials", "key": name + "-password"}, ref,
			"Helm: container.env.%s from the Secret drover-nats-credentials", v)
	}
	requireNoPlainSecret(t, "Helm values", helm)
}

// secretKeys are the keys of NATS config and k8s env entries whose value is
// a secret.
var secretKeys = regexp.MustCompile(`(?i)^(pass|password|token|nkey|seed|auth_token)$`)

// secretEnvName is an environment variable named like a secret.
var secretEnvName = regexp.MustCompile(`(?i)password|passwd|token|secret|credential`)

// requireNoPlainSecret fails when v holds a secret key whose value is not a
// variable reference, or an env entry with a literal value for a variable
// named like a secret.
func requireNoPlainSecret(t helperT, where string, v any) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			w := where + "." + k
			if s, ok := val.(string); ok && secretKeys.MatchString(k) {
				require.Regexp(t, helmEnvRef, s, "%s: a secret written in the file; use a variable from the environment", w)
			}
			if s, ok := val.(string); ok && strings.HasSuffix(where, ".env") && secretEnvName.MatchString(k) {
				require.Fail(t, "a plain-text secret", "%s = %q: take it from a Secret (valueFrom.secretKeyRef)", w, s)
			}
			requireNoPlainSecret(t, w, val)
		}
	case []any:
		for i, val := range x {
			requireNoPlainSecret(t, fmt.Sprintf("%s[%d]", where, i), val)
		}
	}
}

// helperT is what requireNoPlainSecret needs of a test.
type helperT interface {
	require.TestingT
	Helper()
}

// recordT records a failure instead of failing the test.
type recordT struct{ failed bool }

func (r *recordT) Errorf(string, ...any) { r.failed = true }
func (r *recordT) FailNow()              { r.failed = true; panic(r) }
func (r *recordT) Helper()               {}

// TestHelmSecretChecks: the checks above catch a password written in the
// values file.
func TestHelmSecretChecks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		values map[string]any
		bad    bool
	}{
		{"variable", map[string]any{"users": []any{map[string]any{"user": "w", "password": "<< $DROVER_WORKER_PASSWORD >>"}}}, false},
		{"env from a Secret", map[string]any{"env": map[string]any{"DROVER_WORKER_PASSWORD": map[string]any{"valueFrom": map[string]any{}}}}, false},
		{"plain password", map[string]any{"users": []any{map[string]any{"user": "w", "password": "hunter2"}}}, true},
		{"plain token", map[string]any{"authorization": map[string]any{"token": "s3cret"}}, true},
		{"plain env password", map[string]any{"env": map[string]any{"DROVER_WORKER_PASSWORD": "hunter2"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recordT{}
			func() {
				defer func() { _ = recover() }()
				requireNoPlainSecret(rec, "values", tc.values)
			}()
			require.Equal(t, tc.bad, rec.failed, tc.name)
		})
	}
}
