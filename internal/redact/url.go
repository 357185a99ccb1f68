package redact

import (
	"net/url"
	"strings"
)

// URL returns a comma-separated list of URLs with their credentials
// masked: the userinfo (user and password) and the values of query
// parameters that name a secret (token=, api_key=, ...). It works for URLs
// without a scheme too (user:pass@host:4222). Text that does not parse as
// a URL is returned with anything before an '@' masked, so it never leaks
// a password either.
func URL(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		parts[i] = oneURL(p)
	}
	return strings.Join(parts, ",")
}

func oneURL(raw string) string {
	s := strings.TrimSpace(raw)
	if s == "" {
		return raw
	}
	u := parseLoose(s)
	if u == nil {
		if at := strings.LastIndexByte(s, '@'); at >= 0 {
			return Mask + s[at:]
		}
		return s
	}
	changed := false
	if u.User != nil {
		u.User = url.User(Mask)
		changed = true
	}
	q := u.Query()
	for k, vs := range q {
		if SecretEnvName(k) || strings.EqualFold(k, "auth") || strings.EqualFold(k, "sig") {
			for j := range vs {
				vs[j] = Mask
			}
			changed = true
		}
	}
	if !changed {
		return s
	}
	if u.RawQuery != "" {
		u.RawQuery = q.Encode()
	}
	out := u.String()
	out = strings.ReplaceAll(out, url.PathEscape(Mask), Mask) // keep the mask readable
	out = strings.ReplaceAll(out, url.QueryEscape(Mask), Mask)
	if u.Scheme == "" {
		out = strings.TrimPrefix(out, "//")
	}
	return out
}

// parseLoose parses s as a URL, taking one without "scheme://" as
// host[:port][/path] with optional userinfo. It returns nil when s does
// not parse.
func parseLoose(s string) *url.URL {
	if !strings.Contains(s, "://") {
		u, err := url.Parse("//" + s)
		if err != nil || u.Host == "" {
			return nil
		}
		u.Scheme = ""
		return u
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil
	}
	return u
}
