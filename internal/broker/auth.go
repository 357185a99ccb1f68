package broker

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// AuthOptions are the credentials and TLS settings of a NATS connection,
// one field per global flag of the drover command (named in brackets).
// Errors of Options name the fields by those flags. The zero value
// connects without credentials and without TLS.
//
// AuthOptions never prints its secrets: String, GoString, LogValue and
// MarshalJSON show which settings are present, never the password or token.
type AuthOptions struct {
	// User and Password authenticate with a user name and password
	// (--user, --password); each needs the other.
	User, Password string
	// Token authenticates with a token (--token).
	Token string
	// NkeyFile is the path of a user nkey seed file (--nkey).
	NkeyFile string
	// CredsFile is the path of a user credentials file: a JWT and its
	// nkey seed (--creds).
	CredsFile string
	// TLSCert and TLSKey are the PEM files of a client certificate and its
	// private key (--tlscert, --tlskey); each needs the other.
	TLSCert, TLSKey string
	// TLSCA is a PEM file of the certificate authorities that sign the
	// server's certificate (--tlsca); empty trusts the system's.
	TLSCA string
	// TLSFirst performs the TLS handshake before the server's greeting
	// (--tlsfirst); the server must be configured with handshake_first.
	TLSFirst bool
	// InboxPrefix is the prefix of the connection's reply subjects
	// (--inbox-prefix). Empty means "_INBOX_<user>" when --user is a plain
	// name (letters, digits, "-" and "_"), else nats' "_INBOX": with
	// deploy/nats/profiles.conf each profile may subscribe to its own
	// inboxes only, so no client reads another's replies.
	InboxPrefix string
}

// inboxName is a user name that can stand in an inbox prefix.
var inboxName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// inboxToken is one token of an explicit inbox prefix.
var inboxToken = regexp.MustCompile(`^[A-Za-z0-9_$-]+$`)

// Inbox returns the inbox prefix the connection uses ("" for nats' default,
// "_INBOX"): InboxPrefix, or "_INBOX_<user>" for a plain user name.
func (a AuthOptions) Inbox() string {
	switch {
	case a.InboxPrefix != "":
		return a.InboxPrefix
	case inboxName.MatchString(a.User):
		return "_INBOX_" + a.User
	}
	return ""
}

// ErrAuth is wrapped by every error of Options.
var ErrAuth = errors.New("nats auth options")

// Options checks a and returns the nats.Option values it stands for. It
// reads every file it names, so a missing, unreadable or malformed file is
// reported here, naming its flag, rather than at the first connect.
func (a AuthOptions) Options() ([]nats.Option, error) {
	if err := a.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAuth, err)
	}
	var opts []nats.Option
	switch {
	case a.User != "":
		opts = append(opts, nats.UserInfo(a.User, a.Password))
	case a.Token != "":
		opts = append(opts, nats.Token(a.Token))
	case a.NkeyFile != "":
		opt, err := nats.NkeyOptionFromSeed(a.NkeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: --nkey %s: %w", ErrAuth, a.NkeyFile, err)
		}
		opts = append(opts, opt)
	case a.CredsFile != "":
		opts = append(opts, nats.UserCredentials(a.CredsFile))
	}
	if a.TLSCert != "" {
		opts = append(opts, nats.ClientCert(a.TLSCert, a.TLSKey))
	}
	if a.TLSCA != "" {
		opts = append(opts, nats.RootCAs(a.TLSCA))
	}
	if a.TLSFirst {
		opts = append(opts, nats.TLSHandshakeFirst())
	}
	if p := a.Inbox(); p != "" {
		opts = append(opts, nats.CustomInboxPrefix(p))
	}
	return opts, nil
}

// validate checks that the settings fit together and that every file they
// name can be read and parsed.
func (a AuthOptions) validate() error {
	var methods []string
	if a.User != "" || a.Password != "" {
		methods = append(methods, "--user/--password")
	}
	if a.Token != "" {
		methods = append(methods, "--token")
	}
	if a.NkeyFile != "" {
		methods = append(methods, "--nkey")
	}
	if a.CredsFile != "" {
		methods = append(methods, "--creds")
	}
	switch {
	case len(methods) > 1:
		return fmt.Errorf("%s: choose one way to authenticate", strings.Join(methods, " and "))
	case a.User != "" && a.Password == "":
		return fmt.Errorf("--user %q needs --password (env NATS_PASSWORD); for a token use --token", a.User)
	case a.Password != "" && a.User == "":
		return errors.New("--password needs --user (env NATS_USER)")
	case a.TLSCert != "" && a.TLSKey == "":
		return fmt.Errorf("--tlscert %s needs --tlskey (env NATS_KEY)", a.TLSCert)
	case a.TLSKey != "" && a.TLSCert == "":
		return fmt.Errorf("--tlskey %s needs --tlscert (env NATS_CERT)", a.TLSKey)
	}
	if a.InboxPrefix != "" {
		for _, tok := range strings.Split(a.InboxPrefix, ".") {
			if !inboxToken.MatchString(tok) {
				return fmt.Errorf("--inbox-prefix %q: a subject without wildcards or white space, such as _INBOX_producer", a.InboxPrefix)
			}
		}
	}
	if a.NkeyFile != "" {
		if err := checkSeedFile(a.NkeyFile); err != nil {
			return fmt.Errorf("--nkey %s: %w", a.NkeyFile, err)
		}
	}
	if a.CredsFile != "" {
		if err := checkCredsFile(a.CredsFile); err != nil {
			return fmt.Errorf("--creds %s: %w", a.CredsFile, err)
		}
	}
	if a.TLSCert != "" {
		if _, err := tls.LoadX509KeyPair(a.TLSCert, a.TLSKey); err != nil {
			return fmt.Errorf("--tlscert %s / --tlskey %s: %w", a.TLSCert, a.TLSKey, err)
		}
	}
	if a.TLSCA != "" {
		if err := checkCAFile(a.TLSCA); err != nil {
			return fmt.Errorf("--tlsca %s: %w", a.TLSCA, err)
		}
	}
	return nil
}

// checkSeedFile reads a user nkey seed, then wipes it from memory.
func checkSeedFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	defer wipe(b)
	kp, err := nkeys.ParseDecoratedNKey(b)
	if err != nil {
		return fmt.Errorf("not an nkey seed file: %w", err)
	}
	defer kp.Wipe()
	pub, err := kp.PublicKey()
	if err != nil || !nkeys.IsValidPublicUserKey(pub) {
		return errors.New("not a user nkey seed (it must start with SU)")
	}
	return nil
}

// checkCredsFile reads a credentials file, checks that it holds a JWT and a
// seed, then wipes it from memory.
func checkCredsFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	defer wipe(b)
	// ParseDecoratedJWT returns an undecorated file whole: require the
	// three dot-separated parts of a JWT.
	if tok, err := nkeys.ParseDecoratedJWT(b); err != nil || strings.Count(tok, ".") != 2 {
		return errors.New("not a credentials file: no user JWT")
	}
	kp, err := nkeys.ParseDecoratedNKey(b)
	if err != nil {
		return fmt.Errorf("not a credentials file (no nkey seed): %w", err)
	}
	kp.Wipe()
	return nil
}

// checkCAFile checks that a file holds at least one PEM certificate.
func checkCAFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !x509.NewCertPool().AppendCertsFromPEM(b) {
		return errors.New("no PEM certificate in the file")
	}
	return nil
}

func wipe(b []byte) {
	for i := range b {
		b[i] = 'x'
	}
}

// String describes a without its secrets, e.g. "user worker, password
// set, tls ca /etc/ca.pem".
func (a AuthOptions) String() string {
	var parts []string
	add := func(ok bool, s string) {
		if ok {
			parts = append(parts, s)
		}
	}
	add(a.User != "", "user "+a.User)
	add(a.Password != "", "password set")
	add(a.Token != "", "token set")
	add(a.NkeyFile != "", "nkey "+a.NkeyFile)
	add(a.CredsFile != "", "creds "+a.CredsFile)
	add(a.TLSCert != "", "tls cert "+a.TLSCert)
	add(a.TLSKey != "", "tls key "+a.TLSKey)
	add(a.TLSCA != "", "tls ca "+a.TLSCA)
	add(a.TLSFirst, "tls first")
	add(a.InboxPrefix != "", "inbox prefix "+a.InboxPrefix)
	if len(parts) == 0 {
		return "no credentials"
	}
	return strings.Join(parts, ", ")
}

// GoString keeps %#v from printing the secrets too.
func (a AuthOptions) GoString() string { return "broker.AuthOptions{" + a.String() + "}" }

// LogValue logs a as String does, so slog never sees the secrets.
func (a AuthOptions) LogValue() slog.Value { return slog.StringValue(a.String()) }

// MarshalJSON encodes a as String does, so a config dump carrying it does
// not leak the secrets either.
func (a AuthOptions) MarshalJSON() ([]byte, error) { return json.Marshal(a.String()) }
