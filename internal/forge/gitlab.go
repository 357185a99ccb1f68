package forge

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/droverhq/drover/subjects"
)

// gitlab is GitLab's REST API (v4): merge requests of
// /projects/{id}, the ID being the project's number or its path escaped
// as one segment. A draft is a title starting with "Draft: ".
type gitlab struct{ c *Client }

type gitlabMR struct {
	IID    int    `json:"iid"`
	WebURL string `json:"web_url"`
	Draft  bool   `json:"draft"`
}

func (g *gitlabMR) result() *subjects.PullRequestResult {
	return &subjects.PullRequestResult{URL: g.WebURL, Number: g.IID, Draft: g.Draft}
}

func (g *gitlab) auth(h http.Header, token string) {
	h.Set("PRIVATE-TOKEN", token)
	h.Set("Accept", "application/json")
}

func (g *gitlab) mrPath() string {
	return "/projects/" + url.PathEscape(g.c.cfg.Repo) + "/merge_requests"
}

func (g *gitlab) title(t string) string { return g.c.draftTitle("Draft: ", t) }

func (g *gitlab) find(ctx context.Context, branch string) (*subjects.PullRequestResult, error) {
	q := url.Values{"source_branch": {branch}, "state": {"opened"}}
	var mrs []gitlabMR
	if err := g.c.call(ctx, http.MethodGet, g.mrPath(), q, nil, &mrs); err != nil {
		return nil, err
	}
	if len(mrs) == 0 {
		return nil, nil
	}
	return mrs[0].result(), nil
}

func (g *gitlab) create(ctx context.Context, r Request) (*subjects.PullRequestResult, error) {
	in := map[string]any{"source_branch": r.Branch, "target_branch": r.Base, "title": g.title(r.Title), "description": r.Body}
	if len(g.c.cfg.Labels) > 0 {
		in["labels"] = strings.Join(g.c.cfg.Labels, ",")
	}
	var mr gitlabMR
	if err := g.c.call(ctx, http.MethodPost, g.mrPath(), nil, in, &mr); err != nil {
		return nil, err
	}
	return mr.result(), nil
}

func (g *gitlab) update(ctx context.Context, pr *subjects.PullRequestResult, r Request) (*subjects.PullRequestResult, error) {
	in := map[string]any{"title": g.title(r.Title), "description": r.Body, "target_branch": r.Base}
	if len(g.c.cfg.Labels) > 0 {
		in["add_labels"] = strings.Join(g.c.cfg.Labels, ",")
	}
	var mr gitlabMR
	if err := g.c.call(ctx, http.MethodPut, g.mrPath()+"/"+strconv.Itoa(pr.Number), nil, in, &mr); err != nil {
		return nil, err
	}
	return mr.result(), nil
}
