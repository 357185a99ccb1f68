package forge

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/droverhq/drover/subjects"
)

// GitHubAPIVersion is the REST API version asked for.
const GitHubAPIVersion = "2022-11-28"

// github is GitHub's REST API: pulls of /repos/{owner}/{repo}.
type github struct{ c *Client }

type githubPull struct {
	Number  int    `json:"number"`
	HTMLURL string `json:"html_url"`
	Draft   bool   `json:"draft"`
}

func (g *githubPull) result() *subjects.PullRequestResult {
	return &subjects.PullRequestResult{URL: g.HTMLURL, Number: g.Number, Draft: g.Draft}
}

func (g *github) auth(h http.Header, token string) {
	h.Set("Authorization", "Bearer "+token)
	h.Set("Accept", "application/vnd.github+json")
	h.Set("X-GitHub-Api-Version", GitHubAPIVersion)
}

func (g *github) find(ctx context.Context, branch string) (*subjects.PullRequestResult, error) {
	owner, _, _ := strings.Cut(g.c.cfg.Repo, "/")
	q := url.Values{"head": {owner + ":" + branch}, "state": {"open"}}
	var pulls []githubPull
	if err := g.c.call(ctx, http.MethodGet, g.c.repoPath()+"/pulls", q, nil, &pulls); err != nil {
		return nil, err
	}
	if len(pulls) == 0 {
		return nil, nil
	}
	return pulls[0].result(), nil
}

func (g *github) create(ctx context.Context, r Request) (*subjects.PullRequestResult, error) {
	in := map[string]any{"title": r.Title, "head": r.Branch, "base": r.Base, "body": r.Body, "draft": g.c.cfg.Draft}
	var pull githubPull
	if err := g.c.call(ctx, http.MethodPost, g.c.repoPath()+"/pulls", nil, in, &pull); err != nil {
		return nil, err
	}
	return pull.result(), g.label(ctx, pull.Number)
}

func (g *github) update(ctx context.Context, pr *subjects.PullRequestResult, r Request) (*subjects.PullRequestResult, error) {
	in := map[string]any{"title": r.Title, "body": r.Body, "base": r.Base}
	var pull githubPull
	if err := g.c.call(ctx, http.MethodPatch, g.c.repoPath()+"/pulls/"+strconv.Itoa(pr.Number), nil, in, &pull); err != nil {
		return nil, err
	}
	return pull.result(), g.label(ctx, pull.Number)
}

// label adds the configured labels (a pull request is an issue for them);
// adding labels it has already is a no-op.
func (g *github) label(ctx context.Context, number int) error {
	if len(g.c.cfg.Labels) == 0 {
		return nil
	}
	in := map[string]any{"labels": g.c.cfg.Labels}
	return g.c.call(ctx, http.MethodPost, g.c.repoPath()+"/issues/"+strconv.Itoa(number)+"/labels", nil, in, nil)
}
