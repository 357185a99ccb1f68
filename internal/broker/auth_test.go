package broker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/require"
)

func TestAuthOptionsZeroValueHasNoOptions(t *testing.T) {
	t.Parallel()
	opts, err := AuthOptions{}.Options()
	require.NoError(t, err)
	require.Empty(t, opts)
}

func TestAuthOptionsRejectsBadCombinationsNamingTheFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	junk := writeFile(t, dir, "junk", "not a key, not a certificate")
	seed, _ := userSeed(t, dir)
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		name string
		a    AuthOptions
		want []string
	}{
		{"user without password", AuthOptions{User: "w"}, []string{"--user", "needs --password"}},
		{"password without user", AuthOptions{Password: "p"}, []string{"--password needs --user"}},
		{"two methods", AuthOptions{Token: "t", NkeyFile: seed}, []string{"--token and --nkey", "choose one"}},
		{"user and creds", AuthOptions{User: "u", Password: "p", CredsFile: junk}, []string{"--user/--password and --creds"}},
		{"cert without key", AuthOptions{TLSCert: junk}, []string{"--tlscert", "needs --tlskey"}},
		{"key without cert", AuthOptions{TLSKey: junk}, []string{"--tlskey", "needs --tlscert"}},
		{"missing nkey", AuthOptions{NkeyFile: missing}, []string{"--nkey " + missing, "no such file"}},
		{"bad nkey", AuthOptions{NkeyFile: junk}, []string{"--nkey " + junk, "not an nkey seed"}},
		{"missing creds", AuthOptions{CredsFile: missing}, []string{"--creds " + missing, "no such file"}},
		{"bad creds", AuthOptions{CredsFile: junk}, []string{"--creds " + junk, "not a credentials file"}},
		{"seed as creds", AuthOptions{CredsFile: seed}, []string{"--creds " + seed, "not a credentials file"}},
		{"bad cert", AuthOptions{TLSCert: junk, TLSKey: junk}, []string{"--tlscert " + junk, "--tlskey " + junk}},
		{"missing ca", AuthOptions{TLSCA: missing}, []string{"--tlsca " + missing, "no such file"}},
		{"bad ca", AuthOptions{TLSCA: junk}, []string{"--tlsca " + junk, "no PEM certificate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts, err := tc.a.Options()
			require.ErrorIs(t, err, ErrAuth)
			require.Nil(t, opts)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestAuthOptionsAcceptsValidFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	seed, _ := userSeed(t, dir)
	certs := newTestCerts(t)
	for _, a := range []AuthOptions{
		{User: "u", Password: "p"},
		{Token: "t"},
		{NkeyFile: seed},
		{CredsFile: userCreds(t, dir)},
		{TLSCA: certs.ca, TLSCert: certs.clientCert, TLSKey: certs.clientKey, TLSFirst: true},
	} {
		opts, err := a.Options()
		require.NoError(t, err, a.String())
		require.NotEmpty(t, opts)
	}
}

func TestAuthOptionsNeverPrintSecrets(t *testing.T) {
	t.Parallel()
	a := AuthOptions{User: "worker", Password: "pw-secret", Token: "tok-secret", TLSCA: "/etc/ca.pem"}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("connect", "auth", a)
	js, err := json.Marshal(map[string]any{"auth": a})
	require.NoError(t, err)
	for _, out := range []string{fmt.Sprint(a), fmt.Sprintf("%+v", a), fmt.Sprintf("%#v", a), logged.String(), string(js)} {
		require.NotContains(t, out, "pw-secret")
		require.NotContains(t, out, "tok-secret")
		require.Contains(t, out, "user worker")
	}
	require.Equal(t, "user worker, password set, token set, tls ca /etc/ca.pem", a.String())
	require.Equal(t, "no credentials", AuthOptions{}.String())
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// userSeed writes a new user nkey seed file and returns its path and the
// user's public key.
func userSeed(t *testing.T, dir string) (path, pub string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	require.NoError(t, err)
	seed, err := kp.Seed()
	require.NoError(t, err)
	pub, err = kp.PublicKey()
	require.NoError(t, err)
	return writeFile(t, dir, "user-"+pub[:8]+".nk", string(seed)), pub
}

// userCreds writes a credentials file: a user JWT signed by a new account
// key, and the user's seed.
func userCreds(t *testing.T, dir string) string {
	t.Helper()
	akp, err := nkeys.CreateAccount()
	require.NoError(t, err)
	ukp, err := nkeys.CreateUser()
	require.NoError(t, err)
	upub, err := ukp.PublicKey()
	require.NoError(t, err)
	token, err := jwt.NewUserClaims(upub).Encode(akp)
	require.NoError(t, err)
	seed, err := ukp.Seed()
	require.NoError(t, err)
	creds, err := jwt.FormatUserConfig(token, seed)
	require.NoError(t, err)
	return writeFile(t, dir, "user.creds", string(creds))
}
