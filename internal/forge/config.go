package forge

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The forges Open talks to.
const (
	GitHub = "github"
	Gitea  = "gitea" // and Forgejo, whose API is Gitea's
	GitLab = "gitlab"
)

// Forges lists the forge names Config.Forge accepts.
var Forges = []string{GitHub, Gitea, GitLab}

// Default API URLs; Gitea and Forgejo have no default (each instance is
// its own host).
const (
	DefaultGitHubAPI = "https://api.github.com"
	DefaultGitLabAPI = "https://gitlab.com/api/v4"
)

// Bounds of one request and of the retries within one Open.
const (
	// DefaultTimeout bounds one HTTP request.
	DefaultTimeout = 30 * time.Second
	// DefaultTries is how many times Open tries when a request fails for
	// a transient reason (5xx, network, rate limit).
	DefaultTries = 6
	// MaxWait caps one wait for a rate limit (Retry-After,
	// X-RateLimit-Reset); a longer limit is waited for in steps of this,
	// each counting as a try.
	MaxWait = 5 * time.Minute
	// maxLabels bounds the labels put on a request.
	maxLabels = 20
)

// Config is the pull_request section of the worker's config: where and
// how approved branches are proposed with delivery pull_request.
type Config struct {
	// Forge is github, gitea (also for Forgejo) or gitlab. Required.
	Forge string `yaml:"forge"`
	// APIURL is the API's root: default https://api.github.com for github,
	// https://gitlab.com/api/v4 for gitlab; required for gitea (such as
	// https://gitea.example/api/v1). It must be https, or http to a
	// loopback host (tests): the token is never sent over plain http.
	APIURL string `yaml:"api_url"`
	// Repo is the repository: owner/name (github, gitea), or a GitLab
	// project's numeric ID or path (group/sub/name). Required.
	Repo string `yaml:"repo"`
	// Base is the branch requests are opened against. Empty: the
	// workspace's base ref (which then must be a branch name).
	Base string `yaml:"base"`
	// Draft opens requests as drafts (GitHub's draft flag; on Gitea a
	// "WIP: " title, on GitLab a "Draft: " title). Default false.
	Draft bool `yaml:"draft"`
	// TokenEnv names the environment variable holding the token. Required;
	// the value is read at start-up, and is masked wherever Drover records
	// or logs text.
	TokenEnv string `yaml:"token_env"`
	// Labels are put on each opened request (at most 20). GitLab and GitHub
	// create missing labels; Gitea needs them to exist (missing ones are
	// left off).
	Labels []string `yaml:"labels"`
}

// Validate fills the defaults and checks the fields; errors name the
// field.
func (c *Config) Validate() error {
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("%w: pull_request.%s: %s", ErrInvalidConfig, field, fmt.Sprintf(format, a...))
	}
	if !slices.Contains(Forges, c.Forge) {
		return bad("forge", "%q is not one of %s", c.Forge, strings.Join(Forges, ", "))
	}
	if c.APIURL == "" {
		switch c.Forge {
		case GitHub:
			c.APIURL = DefaultGitHubAPI
		case GitLab:
			c.APIURL = DefaultGitLabAPI
		default:
			return bad("api_url", "required for %s", c.Forge)
		}
	}
	if err := checkAPIURL(c.APIURL); err != nil {
		return bad("api_url", "%v", err)
	}
	c.APIURL = strings.TrimRight(c.APIURL, "/")
	if err := checkRepo(c.Forge, c.Repo); err != nil {
		return bad("repo", "%v", err)
	}
	if c.TokenEnv == "" {
		return bad("token_env", "required: the name of the variable holding the token")
	}
	if len(c.Labels) > maxLabels {
		return bad("labels", "%d labels; at most %d", len(c.Labels), maxLabels)
	}
	for _, l := range c.Labels {
		if l == "" || len(l) > 100 || strings.ContainsAny(l, ",\r\n") {
			return bad("labels", "%q: a label is 1 to 100 bytes without commas or newlines", l)
		}
	}
	return nil
}

// checkAPIURL accepts https, and http to a loopback host only.
func checkAPIURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not an absolute URL", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("no credentials, query or fragment in the URL (the token comes from token_env)")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if loopback(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("http to %s: the token is sent over https only (or to a loopback host)", u.Hostname())
	}
	return fmt.Errorf("scheme %q: https only", u.Scheme)
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkRepo checks the repository's form: owner/name for github and gitea,
// a project ID or path for gitlab.
func checkRepo(forge, repo string) error {
	if repo == "" {
		return fmt.Errorf("required")
	}
	if len(repo) > 255 || strings.ContainsAny(repo, " \t\r\n?#%\\") || strings.Contains(repo, "..") {
		return fmt.Errorf("%q is not a repository", repo)
	}
	parts := strings.Split(repo, "/")
	if slices.Contains(parts, "") {
		return fmt.Errorf("%q has an empty part", repo)
	}
	if forge != GitLab && len(parts) != 2 {
		return fmt.Errorf("%q: want owner/name", repo)
	}
	return nil
}
