package sandbox

import (
	"path/filepath"
	"sort"
	"strings"
)

// privateTmp is the TMPDIR of every contained process: a tmpfs of its own
// under bubblewrap.
const privateTmp = "/tmp"

// freshHome is HOME inside bubblewrap when Paths.Home is empty: a
// directory in the process's own /tmp.
const freshHome = "/tmp/home"

// freshWork is the working directory inside bubblewrap when Paths.Work is
// empty: a directory in the process's own /tmp.
const freshWork = "/tmp/work"

// ownedVars are the variables Command sets; the same names in Spec.Env are
// dropped.
var ownedVars = []string{"HOME", "TMPDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"}

// buildEnv is env without the owned variables (and without entries that
// are not NAME=value; a later entry of a name replaces an earlier one),
// plus HOME=home, the XDG directories under it and TMPDIR; sorted.
func buildEnv(env []string, home, tmp string) []string {
	vars := make(map[string]string, len(env)+len(ownedVars))
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" || strings.IndexByte(kv, 0) >= 0 {
			continue
		}
		vars[name] = value
	}
	vars["HOME"] = home
	vars["XDG_CONFIG_HOME"] = filepath.Join(home, ".config")
	vars["XDG_CACHE_HOME"] = filepath.Join(home, ".cache")
	vars["XDG_DATA_HOME"] = filepath.Join(home, ".local", "share")
	vars["XDG_STATE_HOME"] = filepath.Join(home, ".local", "state")
	vars["TMPDIR"] = tmp
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
