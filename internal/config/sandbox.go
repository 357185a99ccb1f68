package config

import (
	"fmt"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/droverhq/drover/internal/sandbox"
	"github.com/droverhq/drover/subjects"
)

// Sandbox is the file's sandbox: block, which contains every process that
// runs agent-controlled code (exec runners, workspace setup and cleanup,
// the merge check):
//
//	sandbox:
//	  mode: bubblewrap   # the default; or none: uncontained, with a warning
//	  read_only: [/opt/toolchain]
//	  tmp_bytes: 1073741824  # the private /tmp, which is memory; 0: 1 GiB
//
// `sandbox: none` is short for `sandbox: {mode: none}`. Absent: bubblewrap,
// which the worker checks at start when it runs agents.
type Sandbox struct {
	sandbox.Config `yaml:",inline"`
}

// UnmarshalYAML decodes a mode alone (sandbox: none) or the block, whose
// keys are checked as strictly as the rest of the file.
func (s *Sandbox) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&s.Mode)
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			switch k := n.Content[i]; k.Value {
			case "mode", "read_only", "tmp_bytes":
			default:
				return fmt.Errorf("line %d: unknown field %s in sandbox", k.Line, k.Value)
			}
		}
	}
	var c struct {
		Mode     string   `yaml:"mode"`
		ReadOnly []string `yaml:"read_only"`
		TmpBytes int64    `yaml:"tmp_bytes"`
	}
	if err := n.Decode(&c); err != nil {
		return err
	}
	s.Mode, s.ReadOnly, s.TmpBytes = c.Mode, c.ReadOnly, c.TmpBytes
	return nil
}

// None reports whether the file turns the sandbox off.
func (s Sandbox) None() bool { return s.Mode == sandbox.ModeNone }

func (s Sandbox) validate(v *validator) {
	switch s.Mode {
	case "", sandbox.ModeBubblewrap, sandbox.ModeNone:
	default:
		v.add("sandbox.mode", "%.40q: want bubblewrap or none", s.Mode)
	}
	if s.TmpBytes < 0 {
		v.add("sandbox.tmp_bytes", "%d is negative", s.TmpBytes)
	}
	for i, p := range s.ReadOnly {
		path := fmt.Sprintf("sandbox.read_only[%d]", i)
		switch {
		case !filepath.IsAbs(p):
			v.add(path, "%.80q must be an absolute path", p)
		case strings.ContainsAny(p, "\x00\n"):
			v.add(path, "%.80q holds a NUL or a line break", p)
		case filepath.Clean(p) == "/":
			v.add(path, "%q would make the whole file system visible", p)
		}
	}
}

// ExecRoles reports whether a role runs on the exec runner: an agent
// process the sandbox contains.
func (f *File) ExecRoles() bool {
	for _, r := range subjects.Roles {
		if f.Roles.For(r).RunnerName() == RunnerExec {
			return true
		}
	}
	return false
}
