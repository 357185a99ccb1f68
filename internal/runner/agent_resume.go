package runner

import (
	"fmt"
	"slices"
	"strings"
)

// AgentResumeArgv returns argv (a preset's, or a role's own for that
// agent) changed to resume the CLI's session: Claude Code and Gemini CLI
// with --resume <session>, Codex with `exec ... resume <session> -`. ok
// is false for an agent that cannot resume this way, or an argv whose
// shape it does not know. session must look like a session ID the CLIs print (letters,
// digits, '-' and '_', not starting with '-'), so that it is never read
// as a flag.
func AgentResumeArgv(agent string, argv []string, session string) (out []string, ok bool, err error) {
	if err := validSession(session); err != nil {
		return nil, false, err
	}
	switch agent {
	case AgentClaudeCode:
		if slices.Contains(argv, "--resume") || slices.Contains(argv, "-r") {
			return nil, false, nil
		}
		return append(slices.Clone(argv), "--resume", session), true, nil
	case AgentGemini:
		// --resume takes the session's ID (or an index, or "latest");
		// it excludes --session-id and --session-file.
		for _, a := range argv {
			if a == "-r" || a == "--resume" || strings.HasPrefix(a, "--resume=") || strings.HasPrefix(a, "--session-") {
				return nil, false, nil
			}
		}
		return append(slices.Clone(argv), "--resume", session), true, nil
	case AgentCodex:
		// codex exec [OPTIONS] resume <SESSION_ID> -: the prompt from
		// stdin stays last.
		if len(argv) < 2 || argv[1] != "exec" || argv[len(argv)-1] != "-" || slices.Contains(argv, "resume") {
			return nil, false, nil
		}
		out = slices.Clone(argv[:len(argv)-1])
		return append(out, "resume", session, "-"), true, nil
	}
	return nil, false, nil
}

func validSession(s string) error {
	if s == "" || len(s) > 128 || s[0] == '-' {
		return fmt.Errorf("session %q: want 1 to 128 letters, digits, '-' or '_', not starting with '-'", s)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("session %q: want 1 to 128 letters, digits, '-' or '_', not starting with '-'", s)
		}
	}
	return nil
}
