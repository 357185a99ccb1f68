package forgetest

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
)

func (s *Server) githubPull(p *PR) map[string]any {
	return map[string]any{"number": p.Number, "html_url": s.url(p), "draft": p.Draft, "title": p.Title,
		"head": map[string]any{"ref": p.Head}, "base": map[string]any{"ref": p.Base}}
}

// github answers GitHub's pulls API under /repos/{owner}/{name}.
func (s *Server) github(w http.ResponseWriter, r *http.Request, raw []byte) {
	repo := "/repos/" + url.PathEscape(s.owner) + "/" + url.PathEscape(s.name)
	path, ok := strings.CutPrefix(r.URL.EscapedPath(), repo)
	if !ok {
		s.errorf(w, r, http.StatusNotFound, "not under %s", repo)
		return
	}
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodGet && path == "/pulls":
		owner, head, ok := strings.Cut(q.Get("head"), ":")
		if !ok || owner != s.owner || head == "" || q.Get("state") != "open" || len(q) != 2 {
			s.errorf(w, r, http.StatusBadRequest, "want exactly head=%s:<branch>&state=open", s.owner)
			return
		}
		out := []map[string]any{}
		if p := s.byHead(head); p != nil {
			out = append(out, s.githubPull(p))
		}
		writeJSON(w, http.StatusOK, out)
	case r.Method == http.MethodPost && path == "/pulls":
		var in struct {
			Title, Head, Base, Body *string
			Draft                   *bool
		}
		if err := decode(raw, &in); err != nil || in.Draft == nil || in.Body == nil {
			s.errorf(w, r, http.StatusUnprocessableEntity, "body %s: want title, head, base, body and draft (%v)", raw, err)
			return
		}
		if !s.need(w, r, map[string]*string{"title": in.Title, "head": in.Head, "base": in.Base}) {
			return
		}
		p := &PR{Head: *in.Head, Base: *in.Base, Title: *in.Title, Body: *in.Body, Draft: *in.Draft}
		if s.open(w, p) {
			writeJSON(w, http.StatusCreated, s.githubPull(p))
		}
	case r.Method == http.MethodPatch && strings.HasPrefix(path, "/pulls/"):
		p := s.byNumber(strings.TrimPrefix(path, "/pulls/"))
		var in struct{ Title, Body, Base *string }
		if err := decode(raw, &in); err != nil || p == nil || in.Body == nil {
			s.errorf(w, r, http.StatusUnprocessableEntity, "body %s: want title, body and base of an existing request (%v)", raw, err)
			return
		}
		if !s.need(w, r, map[string]*string{"title": in.Title, "base": in.Base}) {
			return
		}
		p.Title, p.Body, p.Base = *in.Title, *in.Body, *in.Base
		writeJSON(w, http.StatusOK, s.githubPull(p))
	case r.Method == http.MethodPost && strings.HasPrefix(path, "/issues/") && strings.HasSuffix(path, "/labels"):
		p := s.byNumber(strings.TrimSuffix(strings.TrimPrefix(path, "/issues/"), "/labels"))
		var in struct{ Labels []string }
		if err := decode(raw, &in); err != nil || p == nil || len(in.Labels) == 0 {
			s.errorf(w, r, http.StatusUnprocessableEntity, "body %s: want labels of an existing request (%v)", raw, err)
			return
		}
		for _, l := range in.Labels {
			if !slices.Contains(p.Labels, l) {
				p.Labels = append(p.Labels, l)
			}
		}
		writeJSON(w, http.StatusOK, []any{})
	default:
		s.errorf(w, r, http.StatusNotFound, "no such call")
	}
}
