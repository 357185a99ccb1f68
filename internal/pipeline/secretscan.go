package pipeline

import (
	"errors"

	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// ErrSecretInChange is wrapped by the error of an implementer attempt
// whose change holds a configured secret (as is, base64 or hex): the task
// fails with role_failed before the change is recorded, cached, judged or
// pushed.
var ErrSecretInChange = errors.New("the change holds a configured secret")

// scanChange refuses a change that holds one of Deps.Secrets in its patch
// or its agent commits' log (ErrSecretInChange). The error names the
// secret's variable (or its position in the configured list), the form and
// the file, never the value; the file's name has secrets masked. (An agent
// commit carrying a Drover-* trailer never gets here: the workspace refuses
// it, workspace.ErrChangeRefused.)
//
// It is permanent: the agent that wrote a secret into its change has it in
// reach and may do it again, and the feedback a retry would carry (which
// file, which secret) helps a hostile agent more than an honest one. The
// secret stays in the failed attempt's local commit only; the record and
// the remote never get it.
func (p *Pipeline) scanChange(d WorkspaceDiff) error {
	f, ok := p.d.Secrets.ScanPatch(d.Patch)
	if !ok && d.Log != "" {
		if found, in := p.d.Secrets.Scan(d.Log); in {
			f, ok = redact.PatchFinding{Found: found, File: "a commit message"}, true
		}
	}
	if !ok {
		return nil
	}
	return runner.Permanentf("%w (%s, %s) in %s", ErrSecretInChange,
		subjects.HeaderSafe(f.Name, 128), f.Form, subjects.HeaderSafe(f.File, 256))
}
