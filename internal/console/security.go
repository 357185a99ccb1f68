package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// Auth is how the console checks who is asking. The zero value lets anyone
// in (for a loopback address only: the command refuses another without
// auth).
type Auth struct {
	// User and Password enable HTTP basic auth.
	User, Password string
	// Token enables "Authorization: Bearer <token>".
	Token string
}

// Enabled reports whether any check is configured.
func (a Auth) Enabled() bool { return a.Password != "" || a.Token != "" }

// ErrAuthIncomplete is returned for a basic auth with a user and no
// password, or a password and no user.
var ErrAuthIncomplete = errors.New("console: basic auth needs both a user and a password")

// Validate checks the configuration.
func (a Auth) Validate() error {
	if (a.User == "") != (a.Password == "") {
		return ErrAuthIncomplete
	}
	return nil
}

// check returns the user of r, or ok false. Without auth every request is
// the user "anonymous".
func (a Auth) check(r *http.Request) (user string, ok bool) {
	if !a.Enabled() {
		return "anonymous", true
	}
	if a.Token != "" {
		if h, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found &&
			subtle.ConstantTimeCompare([]byte(h), []byte(a.Token)) == 1 {
			return "token", true
		}
	}
	if a.Password != "" {
		u, p, found := r.BasicAuth()
		if found && subtle.ConstantTimeCompare([]byte(u), []byte(a.User)) == 1 &&
			subtle.ConstantTimeCompare([]byte(p), []byte(a.Password)) == 1 {
			return u, true
		}
	}
	return "", false
}

// contentSecurityPolicy allows the console's own scripts, styles and
// images only: no inline script, no other origin, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// sessionCookie names the cookie that holds the session's ID; the CSRF
// token of a form is an HMAC of it.
const sessionCookie = "drover_console"

// guard wraps every route: security headers, auth, and a session cookie.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin") // "no-referrer" would make the browser send Origin: null with a form
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		user, ok := s.auth.check(r)
		if !ok {
			if s.auth.Password != "" {
				h.Set("WWW-Authenticate", `Basic realm="drover console", charset="UTF-8"`)
			}
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		sid := ""
		if c, err := r.Cookie(sessionCookie); err == nil && len(c.Value) == 43 {
			sid = c.Value
		} else {
			var b [32]byte
			_, _ = rand.Read(b[:])
			sid = base64.RawURLEncoding.EncodeToString(b[:])
			http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: sid, Path: s.base + "/", HttpOnly: true,
				SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
		}
		ctx := withSession(r.Context(), session{user: user, id: sid})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// csrfToken is the token of the forms of a session: an HMAC of the
// session's ID under the server's key (a synchronizer token that needs no
// storage).
func (s *Server) csrfToken(sid string) string {
	m := hmac.New(sha256.New, s.key[:])
	m.Write([]byte("csrf:" + sid))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// ErrCSRF is why a state-changing request without a valid token, or from
// another origin, is refused.
var ErrCSRF = errors.New("console: missing or invalid CSRF token, or a request from another origin")

// checkPost checks a state-changing request: it names its origin (Origin,
// or Referer when a browser sends no Origin), that origin is this host and
// one the console serves, its Sec-Fetch-Site (when sent) is same-origin,
// and its form's csrf field is the session's token. A request with
// neither Origin nor Referer is refused: every browser sends one of them
// on a form's POST. The form must be parsed.
func (s *Server) checkPost(r *http.Request) error {
	if !s.sameOrigin(r) {
		return ErrCSRF
	}
	if sf := r.Header.Get("Sec-Fetch-Site"); sf != "" && sf != "same-origin" {
		return ErrCSRF
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return ErrCSRF
	}
	want := s.csrfToken(c.Value)
	if subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(want)) != 1 {
		return ErrCSRF
	}
	return nil
}

// sameOrigin reports whether r's Origin (else its Referer) is an http(s)
// URL of r's own Host, and that host is one the console serves.
func (s *Server) sameOrigin(r *http.Request) bool {
	src := r.Header.Get("Origin")
	if src == "" {
		src = r.Header.Get("Referer")
	}
	if src == "" || src == "null" {
		return false
	}
	u, err := url.Parse(src)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || !strings.EqualFold(u.Host, r.Host) {
		return false
	}
	return s.hostAllowed(u.Host, localPort(r), u.Scheme == "https")
}
