// Package forge opens pull requests for approved task branches: on GitHub
// (its REST API), Gitea and Forgejo (their REST API, /api/v1) and GitLab
// (merge requests, /api/v4). It is small hand-written net/http code rather
// than a client library: each forge needs three calls (find the open
// request for a branch, create one, update one), and owning the transport
// lets one place bound every request, refuse to send a token over plain
// http to a host that is not loopback, never follow a redirect with a
// token, and keep the token out of every error.
//
// Opening is idempotent: Open first looks for the open request whose head
// is the branch and updates it; only when there is none does it create
// one, so a redelivered task never opens a second request.
//
// Errors: a request the forge refuses (422 and other 4xx but 408) wraps
// ErrRejected, a token it does not accept (401, 403) wraps
// ErrUnauthorized; both wrap ErrPermanent, which no retry can fix. Server
// errors (5xx), a request timeout (408), network errors and rate limits
// (429, or 403 with the rate limit spent) are retried with backoff within
// Open, honouring Retry-After and X-RateLimit-Reset; when the tries run out
// the error wraps neither, and the caller may try again later.
package forge
