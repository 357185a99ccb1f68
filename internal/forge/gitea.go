package forge

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/droverhq/drover/subjects"
)

// giteaPages bounds the pages of open pull requests find reads (giteaPage
// each), and of labels.
const (
	giteaPages = 20
	giteaPage  = 50
)

// gitea is the Gitea (and Forgejo) REST API: pulls of
// /repos/{owner}/{repo}. A draft is a title starting with "WIP: ".
type gitea struct{ c *Client }

type giteaPull struct {
	Number  int    `json:"number"`
	HTMLURL string `json:"html_url"`
	Head    struct {
		Ref    string `json:"ref"`
		RepoID int64  `json:"repo_id"`
	} `json:"head"`
	Base struct {
		RepoID int64 `json:"repo_id"`
	} `json:"base"`
}

func (g *gitea) result(p *giteaPull) *subjects.PullRequestResult {
	return &subjects.PullRequestResult{URL: p.HTMLURL, Number: p.Number, Draft: g.c.cfg.Draft}
}

func (g *gitea) auth(h http.Header, token string) {
	h.Set("Authorization", "token "+token)
	h.Set("Accept", "application/json")
}

func (g *gitea) title(t string) string { return g.c.draftTitle("WIP: ", t) }

// find lists the open pull requests page by page (Gitea's list has no
// head filter) and takes the one from branch in the same repository.
func (g *gitea) find(ctx context.Context, branch string) (*subjects.PullRequestResult, error) {
	for page := 1; page <= giteaPages; page++ {
		q := url.Values{"state": {"open"}, "page": {strconv.Itoa(page)}, "limit": {strconv.Itoa(giteaPage)}}
		var pulls []giteaPull
		if err := g.c.call(ctx, http.MethodGet, g.c.repoPath()+"/pulls", q, nil, &pulls); err != nil {
			return nil, err
		}
		for i := range pulls {
			if p := &pulls[i]; p.Head.Ref == branch && p.Head.RepoID == p.Base.RepoID {
				return g.result(p), nil
			}
		}
		if len(pulls) < giteaPage {
			break
		}
	}
	return nil, nil
}

func (g *gitea) create(ctx context.Context, r Request) (*subjects.PullRequestResult, error) {
	in := map[string]any{"title": g.title(r.Title), "head": r.Branch, "base": r.Base, "body": r.Body}
	if len(g.c.cfg.Labels) > 0 {
		ids, err := g.labelIDs(ctx)
		if err != nil {
			return nil, err
		}
		in["labels"] = ids
	}
	var pull giteaPull
	if err := g.c.call(ctx, http.MethodPost, g.c.repoPath()+"/pulls", nil, in, &pull); err != nil {
		return nil, err
	}
	return g.result(&pull), nil
}

func (g *gitea) update(ctx context.Context, pr *subjects.PullRequestResult, r Request) (*subjects.PullRequestResult, error) {
	in := map[string]any{"title": g.title(r.Title), "body": r.Body}
	var pull giteaPull
	if err := g.c.call(ctx, http.MethodPatch, g.c.repoPath()+"/pulls/"+strconv.Itoa(pr.Number), nil, in, &pull); err != nil {
		return nil, err
	}
	return g.result(&pull), nil
}

// labelIDs are the IDs of the configured labels that exist in the
// repository (Gitea takes IDs, not names).
func (g *gitea) labelIDs(ctx context.Context) ([]int64, error) {
	ids := []int64{}
	for page := 1; page <= giteaPages; page++ {
		q := url.Values{"page": {strconv.Itoa(page)}, "limit": {strconv.Itoa(giteaPage)}}
		var labels []struct {
			ID   int64  `json:"id"`
			Name string `json:"name"`
		}
		if err := g.c.call(ctx, http.MethodGet, g.c.repoPath()+"/labels", q, nil, &labels); err != nil {
			return nil, err
		}
		for _, l := range labels {
			if slices.Contains(g.c.cfg.Labels, l.Name) {
				ids = append(ids, l.ID)
			}
		}
		if len(labels) < giteaPage {
			break
		}
	}
	return ids, nil
}
