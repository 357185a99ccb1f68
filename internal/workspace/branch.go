package workspace

import (
	"fmt"
	"strings"

	"github.com/droverhq/drover/subjects"
)

// Branch returns the branch of a task: requested when it is not empty (it
// must pass subjects.ValidBranch), else the BranchTemplate with {workflow}
// and {task} replaced by the IDs escaped for ref names (EscapeRef).
func (m *Manager) Branch(workflow, task, requested string) (string, error) {
	if requested != "" {
		if err := subjects.ValidBranch(requested); err != nil {
			return "", err
		}
		return requested, nil
	}
	name := expand(m.cfg.BranchTemplate, EscapeRef(workflow), EscapeRef(task))
	if err := subjects.ValidBranch(name); err != nil {
		return "", fmt.Errorf("branch template: %w", err)
	}
	return name, nil
}

func expand(template, workflow, task string) string {
	return strings.NewReplacer("{workflow}", workflow, "{task}", task).Replace(template)
}

// EscapeRef escapes an ID into one component of a ref name, injectively:
// [A-Za-z0-9_-] and '.' are kept, every other byte becomes %XX, and so does a
// '.' that would start the component, follow another '.', end it, or begin a
// trailing ".lock". "T1.3" stays "T1.3"; "a/b" becomes "a%2Fb".
func EscapeRef(id string) string {
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		keep := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
		if c == '.' {
			keep = i > 0 && id[i-1] != '.' && i < len(id)-1 && id[i:] != ".lock"
		}
		if keep {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	if b.Len() == 0 {
		return "%"
	}
	return b.String()
}
