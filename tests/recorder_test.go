package tests

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// recorder is a loopback HTTP listener through which the scripted agents
// of tests/testdata record their calls. A contained agent (drover serve
// runs exec roles in the sandbox) sees only its worktree and read-only
// paths: it cannot write a call log or a request file anywhere the test
// reads, and the test must not open a writable hole in the sandbox to let
// it. So the agent sends what it records here (with curl, see
// testdata/record.sh) and the recorder writes it to its directory, where
// the test reads it as it read the agent's own files before.
//
//	POST /<name>  appends the body to <dir>/<name>; a reader sees the file
//	              before or after the append, never part of it
//	GET /<dir>/   lists the names in <dir>, one a line (token_agent.sh
//	              counts its earlier calls so)
type recorder struct {
	dir string
	url string
	mu  sync.Mutex
}

// newRecorder serves dir until the test ends.
func newRecorder(t *testing.T, dir string) *recorder {
	t.Helper()
	r := &recorder{dir: dir}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

// URL is the address that records to path, which must lie in the
// recorder's directory.
func (r *recorder) URL(t *testing.T, path string) string {
	t.Helper()
	rel, err := filepath.Rel(r.dir, path)
	require.NoError(t, err)
	require.False(t, rel == ".." || strings.HasPrefix(rel, "../"), "%s is not in the recorder's directory %s", path, r.dir)
	if rel == "." {
		return r.url
	}
	return r.url + "/" + filepath.ToSlash(rel)
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	name := strings.TrimPrefix(req.URL.Path, "/")
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			http.Error(w, "no .. in a name", http.StatusBadRequest)
			return
		}
	}
	path := filepath.Join(r.dir, filepath.FromSlash(name))
	switch req.Method {
	case http.MethodGet:
		entries, err := os.ReadDir(path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		var names []string
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".tmp") {
				names = append(names, e.Name()+"\n")
			}
		}
		sort.Strings(names)
		_, _ = io.WriteString(w, strings.Join(names, ""))
	case http.MethodPost:
		body, err := io.ReadAll(io.LimitReader(req.Body, 16<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := r.append(path, body); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	default:
		http.Error(w, "GET or POST", http.StatusMethodNotAllowed)
	}
}

// append adds body to path: the old content and body go to a temporary
// file, renamed over path, so a reader never sees half a record.
func (r *recorder) append(path string, body []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(old, body...), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
