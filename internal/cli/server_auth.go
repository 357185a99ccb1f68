package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/droverhq/drover/internal/broker"
)

// serverAuthFlags are the flags of an embedded server's authentication,
// shared by serve (without --nats-url) and server.
type serverAuthFlags struct {
	user, password, passwordFile, token, tokenFile string
	config                                         string

	// Set by resolve.
	auth broker.ServerAuth
}

// maxSecretFile bounds a password or token file.
const maxSecretFile = 4 << 10

func addServerAuthFlags(fl *pflag.FlagSet, a *serverAuthFlags) {
	fl.StringVar(&a.user, "server-user", "", "embedded server: user clients must log in as; needs a password (env DROVER_SERVER_USER)")
	fl.StringVar(&a.password, "server-password", "", "embedded server: that user's password; a flag shows in ps, use the env variable or --server-password-file (env DROVER_SERVER_PASSWORD)")
	fl.StringVar(&a.passwordFile, "server-password-file", "", "embedded server: file holding that user's password")
	fl.StringVar(&a.token, "server-token", "", "embedded server: token clients must present; use the env variable or --server-token-file (env DROVER_SERVER_TOKEN)")
	fl.StringVar(&a.tokenFile, "server-token-file", "", "embedded server: file holding the token")
	fl.StringVar(&a.config, "server-config", "", "embedded server: nats-server configuration file (accounts, users, permissions, TLS); serve's worker logs in with --user/--password, --nkey or --creds")
}

// resolve reads the secret files and checks that the flags fit together.
// With --server-config and no --listen, the file's listen applies: *listen
// is emptied.
func (a *serverAuthFlags) resolve(fl *pflag.FlagSet, listen *string) error {
	password, err := secret(a.password, "--server-password", a.passwordFile, "--server-password-file")
	if err != nil {
		return err
	}
	token, err := secret(a.token, "--server-token", a.tokenFile, "--server-token-file")
	if err != nil {
		return err
	}
	a.auth = broker.ServerAuth{User: a.user, Password: password, Token: token}
	switch {
	case a.config != "" && !a.auth.IsZero():
		return fmt.Errorf("--server-config %s and --server-user/--server-token: set the users in the file", a.config)
	case a.auth.Token != "" && a.auth.User != "":
		return errors.New("--server-user and --server-token: choose one")
	case a.auth.User != "" && a.auth.Password == "":
		return fmt.Errorf("--server-user %q needs --server-password-file or DROVER_SERVER_PASSWORD", a.auth.User)
	case a.auth.Password != "" && a.auth.User == "":
		return errors.New("--server-password needs --server-user (env DROVER_SERVER_USER)")
	}
	if a.config != "" && !fl.Changed("listen") {
		*listen = ""
	}
	return nil
}

// clientAuth is what a client of this process logs in to the embedded
// server with: the server's own user or token, else (with --server-config)
// the global credentials, global.
func (a *serverAuthFlags) clientAuth(global broker.AuthOptions) broker.AuthOptions {
	switch {
	case a.config != "":
		return global
	case a.auth.User != "":
		return broker.AuthOptions{User: a.auth.User, Password: a.auth.Password}
	case a.auth.Token != "":
		return broker.AuthOptions{Token: a.auth.Token}
	}
	return broker.AuthOptions{}
}

// secret is value, or the content of file (without its trailing newline);
// not both.
func secret(value, valueFlag, file, fileFlag string) (string, error) {
	if file == "" {
		return value, nil
	}
	if value != "" {
		return "", fmt.Errorf("%s and %s: choose one", valueFlag, fileFlag)
	}
	f, err := os.Open(file)
	if err != nil {
		return "", fmt.Errorf("%s: %w", fileFlag, err)
	}
	defer func() { _ = f.Close() }() // read only
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return "", fmt.Errorf("%s: %w", fileFlag, err)
	}
	if len(b) > maxSecretFile {
		return "", fmt.Errorf("%s %s: over %d bytes: not a password or token", fileFlag, file, maxSecretFile)
	}
	s := strings.TrimRight(string(b), "\r\n")
	if s == "" {
		return "", fmt.Errorf("%s %s: empty", fileFlag, file)
	}
	return s, nil
}
