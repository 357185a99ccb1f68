package subjects

// PullRequestResult is result.pull_request of a completed task delivered
// as a pull request (delivery pull_request): the request's web URL, its
// number on the forge (GitLab: the merge request's iid), the forge
// (github, gitea or gitlab) and whether it was opened as a draft.
type PullRequestResult struct {
	URL    string `json:"url"`
	Number int    `json:"number"`
	Forge  string `json:"forge"`
	Draft  bool   `json:"draft"`
}
