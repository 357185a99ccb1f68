package forgetest

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
)

func (s *Server) gitlabMR(p *PR) map[string]any {
	return map[string]any{"id": 1000 + p.Number, "iid": p.Number, "web_url": s.url(p), "title": p.Title, "draft": p.Draft,
		"source_branch": p.Head, "target_branch": p.Base, "labels": p.Labels}
}

// gitlab answers GitLab's merge requests API under
// /api/v4/projects/{owner%2Fname}.
func (s *Server) gitlab(w http.ResponseWriter, r *http.Request, raw []byte) {
	project := "/api/v4/projects/" + url.PathEscape(s.owner+"/"+s.name) + "/merge_requests"
	path, ok := strings.CutPrefix(r.URL.EscapedPath(), project)
	if !ok {
		s.errorf(w, r, http.StatusNotFound, "not under %s", project)
		return
	}
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodGet && path == "":
		if q.Get("source_branch") == "" || q.Get("state") != "opened" || len(q) != 2 {
			s.errorf(w, r, http.StatusBadRequest, "want exactly source_branch=<branch>&state=opened")
			return
		}
		out := []map[string]any{}
		if p := s.byHead(q.Get("source_branch")); p != nil {
			out = append(out, s.gitlabMR(p))
		}
		writeJSON(w, http.StatusOK, out)
	case r.Method == http.MethodPost && path == "":
		var in struct {
			SourceBranch *string `json:"source_branch"`
			TargetBranch *string `json:"target_branch"`
			Title        *string `json:"title"`
			Description  *string `json:"description"`
			Labels       string  `json:"labels"`
		}
		if err := decode(raw, &in); err != nil || in.Description == nil {
			s.errorf(w, r, http.StatusUnprocessableEntity, "body %s: want source_branch, target_branch, title and description (%v)", raw, err)
			return
		}
		if !s.need(w, r, map[string]*string{"source_branch": in.SourceBranch, "target_branch": in.TargetBranch, "title": in.Title}) {
			return
		}
		p := &PR{Head: *in.SourceBranch, Base: *in.TargetBranch, Title: *in.Title, Body: *in.Description, Draft: strings.HasPrefix(*in.Title, "Draft: ")}
		if in.Labels != "" {
			p.Labels = strings.Split(in.Labels, ",")
		}
		if s.open(w, p) {
			writeJSON(w, http.StatusCreated, s.gitlabMR(p))
		}
	case r.Method == http.MethodPut && strings.HasPrefix(path, "/"):
		p := s.byNumber(strings.TrimPrefix(path, "/"))
		var in struct {
			Title        *string `json:"title"`
			Description  *string `json:"description"`
			TargetBranch *string `json:"target_branch"`
			AddLabels    string  `json:"add_labels"`
		}
		if err := decode(raw, &in); err != nil || p == nil || in.Description == nil {
			s.errorf(w, r, http.StatusUnprocessableEntity, "body %s: want title, description and target_branch of an existing request (%v)", raw, err)
			return
		}
		if !s.need(w, r, map[string]*string{"title": in.Title, "target_branch": in.TargetBranch}) {
			return
		}
		p.Title, p.Body, p.Base = *in.Title, *in.Description, *in.TargetBranch
		p.Draft = strings.HasPrefix(p.Title, "Draft: ")
		for _, l := range strings.Split(in.AddLabels, ",") {
			if l != "" && !slices.Contains(p.Labels, l) {
				p.Labels = append(p.Labels, l)
			}
		}
		writeJSON(w, http.StatusOK, s.gitlabMR(p))
	default:
		s.errorf(w, r, http.StatusNotFound, "no such call")
	}
}
