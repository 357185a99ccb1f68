package forgetest

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// giteaLabels are the labels the fake Gitea repository has.
var giteaLabels = []map[string]any{{"id": 7, "name": "drover"}, {"id": 9, "name": "agent"}}

func (s *Server) giteaPull(p *PR) map[string]any {
	return map[string]any{"number": p.Number, "html_url": s.url(p), "title": p.Title,
		"head": map[string]any{"ref": p.Head, "repo_id": 1}, "base": map[string]any{"ref": p.Base, "repo_id": 1}}
}

// gitea answers Gitea's pulls API under /api/v1/repos/{owner}/{name}.
func (s *Server) gitea(w http.ResponseWriter, r *http.Request, raw []byte) {
	repo := "/api/v1/repos/" + url.PathEscape(s.owner) + "/" + url.PathEscape(s.name)
	path, ok := strings.CutPrefix(r.URL.EscapedPath(), repo)
	if !ok {
		s.errorf(w, r, http.StatusNotFound, "not under %s", repo)
		return
	}
	q := r.URL.Query()
	page, _ := strconv.Atoi(q.Get("page"))
	limit, _ := strconv.Atoi(q.Get("limit"))
	switch {
	case r.Method == http.MethodGet && path == "/pulls":
		if q.Get("state") != "open" || page < 1 || limit < 1 || limit > 50 {
			s.errorf(w, r, http.StatusBadRequest, "want state=open, page and limit (at most 50)")
			return
		}
		out := []map[string]any{}
		for i, p := range s.pulls {
			if i >= (page-1)*limit && i < page*limit {
				out = append(out, s.giteaPull(p))
			}
		}
		writeJSON(w, http.StatusOK, out)
	case r.Method == http.MethodGet && path == "/labels":
		if page < 1 || limit < 1 {
			s.errorf(w, r, http.StatusBadRequest, "want page and limit")
			return
		}
		writeJSON(w, http.StatusOK, giteaLabels)
	case r.Method == http.MethodPost && path == "/pulls":
		var in struct {
			Title, Head, Base, Body *string
			Labels                  []int
		}
		if err := decode(raw, &in); err != nil || in.Body == nil {
			s.errorf(w, r, http.StatusUnprocessableEntity, "body %s: want title, head, base and body (%v)", raw, err)
			return
		}
		if !s.need(w, r, map[string]*string{"title": in.Title, "head": in.Head, "base": in.Base}) {
			return
		}
		p := &PR{Head: *in.Head, Base: *in.Base, Title: *in.Title, Body: *in.Body, Draft: strings.HasPrefix(*in.Title, "WIP: ")}
		for _, id := range in.Labels {
			for _, l := range giteaLabels {
				if l["id"] == id {
					p.Labels = append(p.Labels, l["name"].(string))
				}
			}
		}
		if s.open(w, p) {
			writeJSON(w, http.StatusCreated, s.giteaPull(p))
		}
	case r.Method == http.MethodPatch && strings.HasPrefix(path, "/pulls/"):
		p := s.byNumber(strings.TrimPrefix(path, "/pulls/"))
		var in struct{ Title, Body *string }
		if err := decode(raw, &in); err != nil || p == nil || in.Body == nil {
			s.errorf(w, r, http.StatusUnprocessableEntity, "body %s: want title and body of an existing request (%v)", raw, err)
			return
		}
		if !s.need(w, r, map[string]*string{"title": in.Title}) {
			return
		}
		p.Title, p.Body = *in.Title, *in.Body
		writeJSON(w, http.StatusCreated, s.giteaPull(p))
	default:
		s.errorf(w, r, http.StatusNotFound, "no such call")
	}
}
