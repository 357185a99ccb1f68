package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// geminiTmp is where Gemini CLI keeps each project's state, relative to
// HOME (its GEMINI_CLI_HOME unset): .gemini/tmp/<project>/, a directory
// named after the working directory's base name whose .project_root
// file holds the working directory's path. A session is a file
// chats/session-<YYYY-MM-DDThh-mm>-<the session ID's first 8
// characters>.jsonl of its project, which `gemini --resume <session
// ID>` finds by the ID its first line holds, in the project of the
// directory it runs in.
const geminiTmp = ".gemini/tmp"

// geminiSessionFile is the session file of session id for a run in dir,
// relative to the home that root opens: the one in dir's project, or ""
// when there is none. For a restore (create), where there is none, it is
// a new one, in a project "drover-<id's first 8 characters>" made for dir
// when dir has none: another worker's worktree path, and so its project,
// may differ from the run that kept the session.
func geminiSessionFile(root *os.Root, dir, id string, create bool) (string, error) {
	if err := validSession(id); err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	dir = filepath.Clean(dir)
	short := id[:min(len(id), 8)]
	proj, err := geminiProject(root, dir)
	if err != nil {
		return "", err
	}
	if proj == "" {
		if !create {
			return "", nil
		}
		proj = filepath.Join(geminiTmp, "drover-"+short)
		if err := root.MkdirAll(proj, 0o700); err != nil {
			return "", err
		}
		marker := filepath.Join(proj, ".project_root")
		_ = root.Remove(marker) // a link or another project's, planted by the agent
		if err := root.WriteFile(marker, []byte(dir), 0o600); err != nil {
			return "", err
		}
	}
	chats := filepath.Join(proj, "chats")
	names, err := readDirNames(root, chats)
	if err != nil {
		return "", err
	}
	suffix, found := "-"+short+".jsonl", ""
	for _, n := range names {
		if strings.HasPrefix(n, "session-") && strings.HasSuffix(n, suffix) && n > found {
			found = n // the latest, should two sessions share the prefix
		}
	}
	switch {
	case found != "":
		return filepath.Join(chats, found), nil
	case !create:
		return "", nil
	}
	return filepath.Join(chats, "session-"+time.Now().UTC().Format("2006-01-02T15-04")+suffix), nil
}

// geminiProject is the project directory (relative to root) whose
// .project_root names dir, or "" when there is none.
func geminiProject(root *os.Root, dir string) (string, error) {
	names, err := readDirNames(root, geminiTmp)
	if err != nil {
		return "", err
	}
	for _, n := range names {
		marker := filepath.Join(geminiTmp, n, ".project_root")
		if fi, err := root.Lstat(marker); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		f, err := root.Open(marker)
		if err != nil {
			continue
		}
		owner, err := io.ReadAll(io.LimitReader(f, 4<<10))
		_ = f.Close() // read only
		if err == nil && strings.TrimSpace(string(owner)) == dir {
			return filepath.Join(geminiTmp, n), nil
		}
	}
	return "", nil
}

// readDirNames is the names of the directory rel under root, at most
// maxRolloutWalk (an agent can fill its HOME with files); none when it
// does not exist.
func readDirNames(root *os.Root, rel string) ([]string, error) {
	f, err := root.Open(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	ents, err := f.ReadDir(maxRolloutWalk + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if len(ents) > maxRolloutWalk {
		return nil, fmt.Errorf("more than %d entries under %s", maxRolloutWalk, rel)
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names, nil
}

// geminiOnceAnswered is a kept Gemini CLI session file without the user
// messages that only repeat tool results its gemini messages' toolCalls
// already hold. Gemini CLI 0.61.0 records each result both ways and,
// resuming, sends both: two function responses for one call, which the
// Gemini API refuses ("Please ensure that the number of function response
// parts is equal to the number of function call parts", 400). A message
// with a response no toolCalls holds is kept.
func geminiOnceAnswered(data []byte) []byte {
	type record struct {
		Type      string          `json:"type"`
		Content   json.RawMessage `json:"content"`
		ToolCalls []struct {
			ID     string          `json:"id"`
			Result json.RawMessage `json:"result"`
		} `json:"toolCalls"`
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	answered := map[string]bool{}
	for _, l := range lines {
		var r record
		if json.Unmarshal(l, &r) == nil && r.Type == "gemini" {
			for _, c := range r.ToolCalls {
				if c.ID != "" && len(c.Result) > 0 && string(c.Result) != "null" {
					answered[c.ID] = true
				}
			}
		}
	}
	out := make([]byte, 0, len(data))
	for _, l := range lines {
		var r record
		var parts []struct {
			FunctionResponse *struct {
				ID string `json:"id"`
			} `json:"functionResponse"`
		}
		if json.Unmarshal(l, &r) == nil && r.Type == "user" && json.Unmarshal(r.Content, &parts) == nil && len(parts) > 0 {
			repeated := true
			for _, p := range parts {
				repeated = repeated && p.FunctionResponse != nil && answered[p.FunctionResponse.ID]
			}
			if repeated {
				continue
			}
		}
		out = append(out, l...)
	}
	return out
}
