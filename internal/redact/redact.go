package redact

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"regexp"
	"sort"
	"strconv"
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
	forms    []form   // every form of every secret, longest first
	names    []string // each secret's name, by index
	match    *matcher
	replacer *strings.Replacer
	scan     *Redactor // the secrets ScanPatch looks for (see MinScanLen)
}

// form is one way a secret is written: the text to match, the secret's
// index and what encoding gives it.
type form struct {
	text   string
	secret int
	kind   string
}

// Secret is a configured secret and the name it is reported under (the
// variable that holds it, never its value).
type Secret struct {
	Name, Value string
}

// New returns a Redactor for secrets, named by their position ("secret
// #1" for the first). Values shorter than MinSecretLen bytes (after
// trimming white space) are ignored. Each secret is matched in the forms
// an agent or a tool may print it (see NewNamed); a URL's credentials are
// added by URLSecrets, not here.
func New(secrets ...string) *Redactor {
	named := make([]Secret, len(secrets))
	for i, s := range secrets {
		named[i] = Secret{Name: "secret #" + strconv.Itoa(i+1), Value: s}
	}
	return NewNamed(named...)
}

// NewNamed returns a Redactor for secrets. Values shorter than
// MinSecretLen bytes (after trimming white space) are ignored. Each secret
// is matched as is, JSON-escaped (as inside a JSON string), percent-encoded
// (as in a URL), as hex (lower and upper case), and as base64 (standard and
// URL alphabets, padded or not): encoded on its own, and inside a longer
// base64 stream at each of the three byte alignments (the characters that
// depend only on the secret's bytes; the one or two at each end that mix
// in neighbouring bytes are left). Every form is computed here, once.
func NewNamed(secrets ...Secret) *Redactor {
	r := build(secrets)
	var long []Secret
	for _, s := range secrets {
		if len(strings.TrimSpace(s.Value)) >= MinScanLen {
			long = append(long, s)
		}
	}
	if len(long) == len(secrets) {
		r.scan = r
	} else {
		r.scan = build(long)
	}
	return r
}

// build is NewNamed without the scan's subset.
func build(secrets []Secret) *Redactor {
	seen := map[string]bool{}
	r := &Redactor{}
	add := func(text string, secret int, kind string, minLen int) {
		if len(text) >= minLen && !seen[text] {
			seen[text] = true
			r.forms = append(r.forms, form{text: text, secret: secret, kind: kind})
		}
	}
	for _, sec := range secrets {
		s := strings.TrimSpace(sec.Value)
		if len(s) < MinSecretLen {
			continue
		}
		i := len(r.names)
		r.names = append(r.names, sec.Name)
		add(s, i, "plain", MinSecretLen)
		add(jsonEscaped(s, true), i, "json", MinSecretLen)
		add(jsonEscaped(s, false), i, "json", MinSecretLen)
		add(url.QueryEscape(s), i, "url", MinSecretLen)
		add(url.PathEscape(s), i, "url", MinSecretLen)
		for _, f := range encodedForms(s) {
			add(f.text, i, f.kind, minEncodedLen)
		}
	}
	if len(r.forms) == 0 {
		return &Redactor{}
	}
	// The replacer tries the old strings in argument order at each
	// position: longest first, so a secret that contains another, or a
	// form that contains a shorter form, is masked whole.
	sort.Slice(r.forms, func(i, j int) bool {
		a, b := r.forms[i].text, r.forms[j].text
		if len(a) != len(b) {
			return len(a) > len(b)
		}
		return a < b
	})
	pairs := make([]string, 0, 2*len(r.forms))
	for _, f := range r.forms {
		pairs = append(pairs, f.text, Mask)
	}
	r.replacer = strings.NewReplacer(pairs...)
	r.match = newMatcher(r.forms)
	return r
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
	if !r.Contains(s) {
		return s // the common case, without the replacer's copy
	}
	return r.replacer.Replace(s)
}

// Contains reports whether s holds a secret in any of its forms.
func (r *Redactor) Contains(s string) bool {
	if r.Empty() {
		return false
	}
	return r.match.first(s, r.forms) >= 0
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
