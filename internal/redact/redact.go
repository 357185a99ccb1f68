package redact

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// Mask replaces every secret.
const Mask = "[REDACTED]"

// MinSecretLen is the shortest secret a Redactor masks: shorter values
// (an empty or one-letter password) would shred ordinary text.
const MinSecretLen = 4

// secretName matches the environment variable names taken as secret by
// default.
var secretName = regexp.MustCompile(`(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)`)

// SecretEnvName reports whether an environment variable's name says it
// holds a secret: it contains KEY, TOKEN, SECRET, PASSWORD, PASSWD or
// CREDENTIAL, in any case.
func SecretEnvName(name string) bool { return secretName.MatchString(name) }

// Redactor replaces secrets with Mask. The zero value and nil redact
// nothing. It is immutable and safe for concurrent use.
type Redactor struct {
	secrets  []string // every form of every secret, longest first
	replacer *strings.Replacer
}

// New returns a Redactor for secrets. Values shorter than MinSecretLen
// bytes (after trimming white space) are ignored. Each secret is matched
// as is, JSON-escaped (as it appears inside a JSON string) and
// percent-encoded (as in a URL); a URL's credentials are added by
// URLSecrets, not here.
func New(secrets ...string) *Redactor {
	seen := map[string]bool{}
	var forms []string
	add := func(s string) {
		if len(s) >= MinSecretLen && !seen[s] {
			seen[s] = true
			forms = append(forms, s)
		}
	}
	for _, s := range secrets {
		s = strings.TrimSpace(s)
		if len(s) < MinSecretLen {
			continue
		}
		add(s)
		add(jsonEscaped(s, true))
		add(jsonEscaped(s, false))
		add(url.QueryEscape(s))
		add(url.PathEscape(s))
	}
	if len(forms) == 0 {
		return &Redactor{}
	}
	// The replacer tries the old strings in argument order at each
	// position: longest first, so a secret that contains another is
	// masked whole.
	sort.Slice(forms, func(i, j int) bool {
		if len(forms[i]) != len(forms[j]) {
			return len(forms[i]) > len(forms[j])
		}
		return forms[i] < forms[j]
	})
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Mask)
	}
	return &Redactor{secrets: forms, replacer: strings.NewReplacer(pairs...)}
}

// jsonEscaped is s as it appears between the quotes of a JSON string.
func jsonEscaped(s string, html bool) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(s) // a string always encodes
	out := strings.TrimSuffix(b.String(), "\n")
	return out[1 : len(out)-1]
}

// Empty reports whether r masks nothing.
func (r *Redactor) Empty() bool { return r == nil || r.replacer == nil }

// String returns s with every secret replaced by Mask.
func (r *Redactor) String(s string) string {
	if r.Empty() || s == "" {
		return s
	}
	return r.replacer.Replace(s)
}

// Contains reports whether s holds a secret in any of its forms.
func (r *Redactor) Contains(s string) bool {
	if r.Empty() {
		return false
	}
	for _, f := range r.secrets {
		if strings.Contains(s, f) {
			return true
		}
	}
	return false
}

// JSON returns raw, a JSON document, with every secret in its strings
// (keys included) replaced by Mask. raw is returned as is when it holds no
// secret. Otherwise the document is decoded and encoded again (numbers
// kept exactly; object keys sorted), so the result stays valid JSON even
// when a secret straddles an escape sequence. Text that is not JSON is
// redacted as a string and returned as a JSON string.
func (r *Redactor) JSON(raw []byte) []byte {
	if r.Empty() || !r.Contains(string(raw)) {
		return raw
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err == nil && !dec.More() {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if enc.Encode(r.value(v)) == nil {
			return []byte(strings.TrimSuffix(b.String(), "\n"))
		}
	}
	out, _ := json.Marshal(r.String(string(raw))) // a string always encodes
	return out
}

// value redacts the strings of a decoded JSON value.
func (r *Redactor) value(v any) any {
	switch v := v.(type) {
	case string:
		return r.String(v)
	case []any:
		for i := range v {
			v[i] = r.value(v[i])
		}
		return v
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[r.String(k)] = r.value(e)
		}
		return out
	}
	return v
}

// Error returns err with its text redacted; errors.Is and errors.As still
// see err. It returns err itself when its text holds no secret, and nil
// for nil.
func (r *Redactor) Error(err error) error {
	if err == nil || r.Empty() {
		return err
	}
	msg := err.Error()
	red := r.String(msg)
	if red == msg {
		return err
	}
	return &redactedError{msg: red, err: err}
}

// redactedError is an error whose text was redacted; it unwraps to the
// original.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// URLSecrets returns the credentials in a comma-separated list of URLs
// (with or without a scheme): each userinfo's password, the base64 of
// "user:password" (as sent in a basic Authorization header), and the
// values of query parameters that name a secret (token=, api_key=,
// password= and the like, see SecretEnvName). Feed them to New.
func URLSecrets(urls string) []string {
	var out []string
	for _, p := range strings.Split(urls, ",") {
		u := parseLoose(strings.TrimSpace(p))
		if u == nil {
			continue
		}
		if u.User != nil {
			name := u.User.Username()
			if pw, ok := u.User.Password(); ok {
				out = append(out, pw, base64.StdEncoding.EncodeToString([]byte(name+":"+pw)))
			} else {
				out = append(out, name) // a token given as the user name
			}
		}
		for k, vs := range u.Query() {
			if SecretEnvName(k) || strings.EqualFold(k, "auth") || strings.EqualFold(k, "sig") {
				out = append(out, vs...)
			}
		}
	}
	return out
}
