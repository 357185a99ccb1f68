package pipeline

import (
	"errors"
	"regexp"

	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// ErrSecretInChange is wrapped by the error of an implementer attempt
// whose change holds a configured secret (as is, base64 or hex): the task
// fails with role_failed before the change is recorded, cached, judged or
// pushed.
var ErrSecretInChange = errors.New("the change holds a configured secret")

// ErrDroverTrailer is wrapped by the error of an implementer attempt whose
// own commits carry a Drover-* trailer (Drover-Merge-Head, Drover-Task,
// ...): only Drover writes them, and a forged one could make a branch look
// like Drover's or claim another task's merge. The task fails with
// role_failed.
var ErrDroverTrailer = errors.New("an agent's commit carries a Drover trailer")

// droverTrailer finds a Drover-* trailer line in a commit log (git matches
// trailer keys without regard to case).
var droverTrailer = regexp.MustCompile(`(?im)^[ \t]*(drover-[a-z0-9-]+)[ \t]*:`)

// scanChange refuses a change whose agent commits carry a Drover trailer
// (ErrDroverTrailer), or that holds one of Deps.Secrets in its patch or its
// agent commits' log (ErrSecretInChange). The error names the secret's
// variable (or its position in the configured list), the form and the file,
// never the value; the file's name and the trailer's key have secrets
// masked.
//
// It is permanent: the agent that wrote a secret into its change has it in
// reach and may do it again, and the feedback a retry would carry (which
// file, which secret) helps a hostile agent more than an honest one. The
// secret stays in the failed attempt's local commit only; the record and
// the remote never get it.
func (p *Pipeline) scanChange(d WorkspaceDiff) error {
	if m := droverTrailer.FindStringSubmatch(d.Log); m != nil {
		return runner.Permanentf("%w: %s", ErrDroverTrailer, subjects.HeaderSafe(p.d.Secrets.String(m[1]), 64))
	}
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
