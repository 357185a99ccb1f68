// Package forgetest is an in-process fake of the forges' pull request
// APIs (GitHub, Gitea/Forgejo, GitLab) for tests: an httptest server on
// loopback that holds its pull requests as state and checks every request
// it gets (method, path, query, headers, JSON body fields), reporting
// whatever is off as a test error.
package forgetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// PR is a pull request the fake holds.
type PR struct {
	Number                  int
	Head, Base, Title, Body string
	Draft                   bool
	Labels                  []string
}

// Call is one request the fake got.
type Call struct {
	Method, Path, Query string
	// Auth is the token header's value as sent.
	Auth string
}

// Answer is a canned answer; a zero Status lets the fake answer.
type Answer struct {
	Status int
	Header http.Header
	Body   string
}

// Server is the fake forge.
type Server struct {
	*httptest.Server
	t            testing.TB
	forge, token string
	owner, name  string

	mu     sync.Mutex
	pulls  []*PR
	calls  []Call
	reject map[string]string
	// before answers a request before the fake does (rate limits, server
	// errors); a zero Answer lets the fake answer.
	before func(r *http.Request) Answer
	// lose is how many more creates are carried out and then answered
	// 502, as by a proxy that lost the forge's answer.
	lose int
	// afterCreate runs once a create is carried out, before it is
	// answered (without the lock held: it may block).
	afterCreate func()
}

// New starts a fake of forge (github, gitea or gitlab) for repo
// (owner/name) that accepts token only; it stops when the test ends.
func New(t testing.TB, forge, repo, token string) *Server {
	owner, name, _ := strings.Cut(repo, "/")
	s := &Server{t: t, forge: forge, token: token, owner: owner, name: name, reject: map[string]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// APIURL is the API root to configure (api_url).
func (s *Server) APIURL() string {
	switch s.forge {
	case "gitea":
		return s.URL + "/api/v1"
	case "gitlab":
		return s.URL + "/api/v4"
	}
	return s.URL
}

// Reject makes creating a request from head fail with 422 and message (as
// "no commits between" does).
func (s *Server) Reject(head, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reject[head] = message
}

// LoseCreates makes the next n creates open their request and then answer
// 502 Bad Gateway (the answer lost on its way back).
func (s *Server) LoseCreates(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lose = n
}

// AfterCreate sets a function run after each create is carried out and
// before it is answered; it may block (a worker killed meanwhile).
func (s *Server) AfterCreate(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.afterCreate = f
}

// Before sets a function that may answer each request first.
func (s *Server) Before(f func(r *http.Request) Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.before = f
}

// Pulls returns copies of the requests the fake holds, in opening order.
func (s *Server) Pulls() []PR {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PR, len(s.pulls))
	for i, p := range s.pulls {
		out[i] = *p
		out[i].Labels = slices.Clone(p.Labels)
	}
	return out
}

// Calls returns the requests the fake got, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Count is how many requests had method and path (as sent, escaped).
func (s *Server) Count(method, path string) int {
	n := 0
	for _, c := range s.Calls() {
		if c.Method == method && c.Path == path {
			n++
		}
	}
	return n
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Auth: s.authValue(r.Header)})
	before := s.before
	s.mu.Unlock()
	if before != nil {
		if a := before(r); a.Status != 0 {
			for k, vs := range a.Header {
				w.Header()[k] = vs
			}
			w.WriteHeader(a.Status)
			_, _ = io.WriteString(w, a.Body)
			return
		}
	}
	if !s.authorized(w, r) {
		return
	}
	if len(raw) > 0 && r.Header.Get("Content-Type") != "application/json" {
		s.errorf(w, r, http.StatusUnsupportedMediaType, "Content-Type %q, want application/json", r.Header.Get("Content-Type"))
		return
	}
	rec := httptest.NewRecorder()
	s.mu.Lock()
	switch s.forge {
	case "github":
		s.github(rec, r, raw)
	case "gitea":
		s.gitea(rec, r, raw)
	case "gitlab":
		s.gitlab(rec, r, raw)
	}
	created := rec.Code == http.StatusCreated && r.Method == http.MethodPost
	lose := created && s.lose > 0
	if lose {
		s.lose--
	}
	after := s.afterCreate
	s.mu.Unlock()
	if created && after != nil {
		after()
	}
	if lose {
		writeJSON(w, http.StatusBadGateway, map[string]any{"message": "bad gateway"})
		return
	}
	for k, vs := range rec.Header() {
		w.Header()[k] = vs
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

func (s *Server) authValue(h http.Header) string {
	switch s.forge {
	case "gitlab":
		return h.Get("PRIVATE-TOKEN")
	}
	return h.Get("Authorization")
}

// authorized checks the forge's headers: a wrong token is a 401 (not a
// test error: tests send one on purpose); a missing or wrong other header
// is a test error.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	var want string
	switch s.forge {
	case "github":
		want = "Bearer " + s.token
		if got := r.Header.Get("Accept"); got != "application/vnd.github+json" {
			s.errorf(w, r, http.StatusBadRequest, "Accept %q", got)
			return false
		}
		if got := r.Header.Get("X-GitHub-Api-Version"); got != "2022-11-28" {
			s.errorf(w, r, http.StatusBadRequest, "X-GitHub-Api-Version %q", got)
			return false
		}
	case "gitea":
		want = "token " + s.token
	case "gitlab":
		want = s.token
		if r.Header.Get("Authorization") != "" {
			s.errorf(w, r, http.StatusBadRequest, "an Authorization header besides PRIVATE-TOKEN")
			return false
		}
	}
	if s.authValue(r.Header) != want {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"message":"Bad credentials"}`)
		return false
	}
	return true
}

// errorf reports a request the fake did not expect as a test error and
// answers 400.
func (s *Server) errorf(w http.ResponseWriter, r *http.Request, status int, format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	s.t.Errorf("forgetest %s: %s %s?%s: %s", s.forge, r.Method, r.URL.EscapedPath(), r.URL.RawQuery, msg)
	writeJSON(w, status, map[string]any{"message": "forgetest: " + msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decode reads a JSON body into v strictly: unknown fields are errors.
func decode(raw []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// byHead is the open request from head, nil if none (s.mu held).
func (s *Server) byHead(head string) *PR {
	for _, p := range s.pulls {
		if p.Head == head {
			return p
		}
	}
	return nil
}

func (s *Server) byNumber(n string) *PR {
	num, err := strconv.Atoi(n)
	if err != nil {
		return nil
	}
	for _, p := range s.pulls {
		if p.Number == num {
			return p
		}
	}
	return nil
}

// open adds a request, or refuses it as the forge would (s.mu held).
func (s *Server) open(w http.ResponseWriter, p *PR) bool {
	if msg, ok := s.reject[p.Head]; ok {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "errors": []map[string]string{{"message": msg}}})
		return false
	}
	if s.byHead(p.Head) != nil {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "A pull request already exists for " + p.Head})
		return false
	}
	p.Number = len(s.pulls) + 1
	s.pulls = append(s.pulls, p)
	return true
}

// need reports a missing or empty field as a test error.
func (s *Server) need(w http.ResponseWriter, r *http.Request, fields map[string]*string) bool {
	for k, v := range fields {
		if v == nil || *v == "" {
			s.errorf(w, r, http.StatusUnprocessableEntity, "field %q missing or empty", k)
			return false
		}
	}
	return true
}

func (s *Server) url(p *PR) string {
	switch s.forge {
	case "gitlab":
		return fmt.Sprintf("%s/%s/%s/-/merge_requests/%d", s.URL, s.owner, s.name, p.Number)
	}
	return fmt.Sprintf("%s/%s/%s/pull/%d", s.URL, s.owner, s.name, p.Number)
}
