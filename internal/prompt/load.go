package prompt

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/droverhq/drover/subjects"
)

// ext is the file name extension of a template: <role>.tmpl.
const ext = ".tmpl"

// Load parses the embedded default templates and, when dir is not "",
// overrides each role that has a file <dir>/<role>.tmpl. Any other entry in
// dir is an error naming it, so a misspelt file name is never silently
// ignored. Errors name the file and line: "prompts/judge.tmpl:12: ...".
// Every template is also executed once against sample data, so a bad field
// reference fails here rather than at the first task.
func Load(dir string) (*Set, error) {
	s := &Set{roles: make(map[subjects.Role]*entry, len(subjects.Roles))}
	overrides, err := readDir(dir)
	if err != nil {
		return nil, err
	}
	for _, role := range subjects.Roles {
		file := "defaults/" + string(role) + ext
		var src []byte
		if path, ok := overrides[role]; ok {
			file = path
			src, err = os.ReadFile(path)
		} else {
			src, err = defaultFS.ReadFile(file)
		}
		if err != nil {
			return nil, fmt.Errorf("prompt: %w", err)
		}
		e, err := parse(role, file, string(src))
		if err != nil {
			return nil, err
		}
		s.roles[role] = e
	}
	return s, nil
}

// readDir maps each role overridden in dir to its file's path.
func readDir(dir string) (map[subjects.Role]string, error) {
	out := map[subjects.Role]string{}
	if dir == "" {
		return out, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("prompt: template directory: %w", err)
	}
	var bad []string
	for _, de := range entries {
		path := filepath.Join(dir, de.Name())
		role := subjects.Role(strings.TrimSuffix(de.Name(), ext))
		if !strings.HasSuffix(de.Name(), ext) || !role.Valid() || !isFile(path) {
			bad = append(bad, path)
			continue
		}
		out[role] = path
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("prompt: %s: unexpected in the template directory; it may hold only planner%s, implementer%s and judge%s",
			strings.Join(bad, ", "), ext, ext, ext)
	}
	return out, nil
}

// isFile reports whether path is a regular file or a symlink to one.
func isFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}
